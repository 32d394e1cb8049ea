"""What a parent that let go of its runs (``Hub.detach``) keeps, and what a new parent
(``Hub.attach``) finds: a detached handle sends and supervises nothing, the parent's own children
it let go of are still reaped when they end, and an attached run's ``last_seq`` is known at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fenwire_fast.live.parent import durable
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import ChildDetached
from live_harness import HANG_GUARD, recorded_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")


@pytest.mark.parametrize("committed", [4, 2])
def test_last_seq_is_known_right_after_attach(tmp_path: Path, committed: int) -> None:
    """Every event committed: ``last_seq`` is the committed seq before any poll (it was 0 until a
    new event arrived); some not: it is the last seq read (those after the commit come next)."""
    other = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        fields = {"pid": other.pid, "start": durable.process_start(other.pid), "boot": durable.boot_id()}
        recorded_run(tmp_path / "state", "r", committed_seq=committed, **fields)
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


def _controls(path: str) -> list[tuple[int, str]]:
    with open(path, encoding="utf-8") as handle:
        return [(line["seq"], line["type"]) for line in map(json.loads, handle)]


def test_a_detached_handle_refuses_to_send_poll_or_kill(tmp_path: Path) -> None:
    """After ``hub.detach()`` the old handle raises ``ChildDetached`` instead of sending a control
    with a ``seq`` the attached parent already used; ``cleanup`` leaves the child alone."""
    hub = Hub(state_dir=tmp_path / "state")
    try:
        old = hub.spawn("go", command=["sleep", "600"])
    finally:
        hub.detach()
    assert old.detached
    with Hub.attach(tmp_path / "state") as again:
        (new,) = again.children
        assert new.steer("from the new parent") == 2
        for use in (lambda: old.steer("from the old handle"), old.cancel, old.poll, old.poll_raw, old.wait, old.kill):
            with pytest.raises(ChildDetached, match="this handle was detached"):
                use()
        old.cleanup()  # nothing: the child is the new parent's
        old.detach()  # again: nothing
        assert _controls(new.control_path) == [(1, "prompt"), (2, "steer")]
        assert new.process.poll() is None  # still running, the new parent's to stop
        new.kill()


def _zombie(pid: int) -> bool:
    """``pid`` is a zombie: ended, not reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped before the open, or between open and read
        return False


def _reaped(pids: list[int]) -> None:
    """Wait (on a condition; ``HANG_GUARD`` only against a hang) until every pid is gone: ended
    and reaped, not a zombie."""
    end = time.monotonic() + HANG_GUARD
    while any(os.path.exists(f"/proc/{pid}") for pid in pids):
        left = {pid: _zombie(pid) for pid in pids if os.path.exists(f"/proc/{pid}")}
        assert time.monotonic() < end, f"not reaped (pid: zombie?): {left}"
        time.sleep(0.01)


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "plain"])
def test_a_parent_that_detached_still_reaps_the_children_it_started(tmp_path: Path, durable: bool) -> None:
    """The children end after ``detach`` (each waits for a release file): none stays a zombie of
    this process, which lives on."""
    release = tmp_path / "release"
    wait = ["sh", "-c", f'while [ ! -e "{release}" ]; do sleep 0.01; done']
    hub = Hub(state_dir=tmp_path / "state") if durable else Hub()
    try:
        pids = [hub.spawn(None, command=wait).pid for _ in range(3)]
        ended = hub.spawn(None, command=["true"]).pid  # ended before the detach
        os.waitid(os.P_PID, ended, os.WEXITED | os.WNOWAIT)
    finally:
        hub.detach()
    assert not any(_zombie(pid) for pid in pids)
    release.touch()
    _reaped([*pids, ended])


def test_a_run_attached_again_in_the_same_process_and_detached_again_is_reaped(tmp_path: Path) -> None:
    """Detached, attached (its new handle adopts it), detached again: still reaped when it ends."""
    release = tmp_path / "release"
    wait = ["sh", "-c", f'while [ ! -e "{release}" ]; do sleep 0.01; done']
    hub = Hub(state_dir=tmp_path / "state")
    try:
        pid = hub.spawn(None, command=wait).pid
    finally:
        hub.detach()
    again = Hub.attach(tmp_path / "state")
    (child,) = again.children
    assert child.adopted and child.pid == pid
    again.detach()
    release.touch()
    _reaped([pid])
