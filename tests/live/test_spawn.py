"""spawn(): private files, the first prompt written before the child starts, the four variables,
the kill-after-grace backstop after ``exit``; Channel.send refusing invalid controls."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from fenwire_fast.live.parent.channel import SendError
from fenwire_fast.live.parent.spawn import spawn
from live_harness import child_env

PROBE = """
import json, os, sys
names = ("FEN_WIRE_CONTROL_PATH", "FEN_WIRE_EVENT_PATH", "FEN_WIRE_RUN_ID", "FEN_WIRE_DEADLINE", "FENWIRE_MOCK")
with open(os.environ["FEN_WIRE_CONTROL_PATH"], "rb") as f:
    control = f.read().decode()
out = {"env": {n: os.environ.get(n) for n in names}, "control": control}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


def test_files_are_private_and_the_prompt_comes_first(tmp_path: Path) -> None:
    probe_out = tmp_path / "probe.json"
    deadline = time.time() + 100
    child = spawn(
        "the task",
        command=[sys.executable, "-c", PROBE, str(probe_out)],
        run="r-7",
        deadline=deadline,
        mock={"steps": 2},
    )
    try:
        assert stat.S_IMODE(os.stat(child.directory).st_mode) == 0o700
        for path in (child.control_path, child.event_path, child.log_path):
            st = os.lstat(path)
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
            assert os.path.dirname(path) == child.directory
        child.process.wait(timeout=30)
        seen = json.loads(probe_out.read_text())
        # the prompt was in the control file before the child ran
        assert seen["control"] == ('{"v":1,"seq":1,"type":"prompt","run":"r-7","text":"the task"}\n')
        env = seen["env"]
        assert env["FEN_WIRE_CONTROL_PATH"] == child.control_path
        assert env["FEN_WIRE_EVENT_PATH"] == child.event_path
        assert env["FEN_WIRE_RUN_ID"] == "r-7"
        assert float(env["FEN_WIRE_DEADLINE"]) == pytest.approx(deadline)
        assert json.loads(env["FENWIRE_MOCK"])["steps"] == 2
        # it wrote no exit line: the run is reported failed, with why
        assert child.wait(timeout=10) == "failed"
        assert (child.error or "").startswith("child exited with code 0 without an exit line")
    finally:
        child.cleanup()
    assert not os.path.exists(child.directory)


def test_a_child_that_lingers_after_exit_is_terminated(tmp_path: Path) -> None:
    script = (
        "import json, os, time\n"
        "with open(os.environ['FEN_WIRE_EVENT_PATH'], 'a') as f:\n"
        "    f.write(json.dumps({'v': 1, 'seq': 1, 'type': 'exit', 'run': 'run', 'status': 'done'}) + '\\n')\n"
        "time.sleep(60)\n"
    )
    child = spawn(None, command=[sys.executable, "-c", script], grace=0.3, term_grace=0.3)
    try:
        start = time.monotonic()
        assert child.wait(timeout=20) == "done"
        assert time.monotonic() - start < 10
        assert child.killed and child.returncode is not None and child.returncode < 0
    finally:
        child.cleanup()


def test_invalid_controls_are_refused_before_writing(tmp_path: Path) -> None:
    child = spawn(None, env=child_env())
    try:
        with pytest.raises(SendError, match="text"):
            child.send("prompt", {})
        with pytest.raises(SendError, match="unknown control type|pause"):
            child.send("pause")
        with pytest.raises(SendError):
            child.send("finalize", {"note": 3})
        assert Path(child.control_path).read_bytes() == b""
        seq = child.cancel()
        assert seq == 1  # refused controls used no seq
        assert child.wait(timeout=30) == "cancelled"
        assert child.returncode == 1
    finally:
        child.cleanup()


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("prompt", [None, "hello"])
def test_a_spawn_that_fails_to_start_leaves_no_descriptor_open(tmp_path: Path, prompt: str | None) -> None:
    missing = str(tmp_path / "no-such-agent")
    with pytest.raises(FileNotFoundError):  # first: whatever the package opens once per process
        spawn(prompt, command=[missing], directory=str(tmp_path), env=child_env())
    before = _open_descriptors()
    for _ in range(3):
        with pytest.raises(FileNotFoundError):
            spawn(prompt, command=[missing], directory=str(tmp_path), env=child_env())
    assert _open_descriptors() - before == set()
    assert os.listdir(tmp_path) == []  # the private directories are gone too
