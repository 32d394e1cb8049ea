"""What a parent that let go of its runs (``Hub.detach``) keeps, and what a new parent
(``Hub.attach``) finds: a detached handle sends and supervises nothing, the parent's own children
it let go of are still reaped when they end, and an attached run's ``last_seq`` is known at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fenwire_fast.live import durable
from fenwire_fast.live.durable import StateDir
from fenwire_fast.live.hub import Hub

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")


def _run_with_events(state_path: Path, run: str, committed_seq: int, **fields: object) -> None:
    """A run's directory and manifest: the prompt sent, four events written, ``committed_seq``
    of them committed."""
    state = StateDir(state_path)
    try:
        name, directory = state.new_run_directory(run)
        manifest = durable.new_manifest(run, name, directory, command=["agent"], **fields)
        manifest.committed_seq = committed_seq
        control = [{"v": 1, "seq": 1, "type": "prompt", "run": run, "text": "go"}]
        events = [
            {"v": 1, "seq": 1, "type": "ready", "run": run},
            {"v": 1, "seq": 2, "type": "control-ack", "run": run, "ref": 1, "status": "accepted"},
            {"v": 1, "seq": 3, "type": "turn-started", "run": run, "turn": 1},
            {"v": 1, "seq": 4, "type": "user", "run": run, "text": "go", "summary": "go"},
        ]
        for path, lines in ((manifest.control_path, control), (manifest.event_path, events), (manifest.log_path, [])):
            with open(path, "w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(line) + "\n" for line in lines)
            os.chmod(path, 0o600)
        state.save(manifest)
    finally:
        state.close()


@pytest.mark.parametrize("committed", [4, 2])
def test_last_seq_is_known_right_after_attach(tmp_path: Path, committed: int) -> None:
    """Every event committed: ``last_seq`` is the committed seq before any poll (it was 0 until a
    new event arrived); some not: it is the last seq read (those after the commit come next)."""
    other = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        fields = {"pid": other.pid, "start": durable.process_start(other.pid), "boot": durable.boot_id()}
        _run_with_events(tmp_path / "state", "r", committed, **fields)
        with Hub.attach(tmp_path / "state") as hub:
            (child,) = hub.children
            assert child.adopted and child.process.returncode is None
            assert child.channel.last_seq == 4
            assert child.delivered_seq == committed
            assert child.channel.status == "running"
            delivered = [m["seq"] for _, batch in hub.poll_batches() for m in batch]
            assert delivered == list(range(committed + 1, 5))
            assert child.channel.last_seq == 4
            child.kill()
    finally:
        if other.poll() is None:
            other.kill()
        other.wait()
