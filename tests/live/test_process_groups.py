"""No process started by a child outlives the child's supervision, nor the parent process.

The agent (``live_agents:spawner``) starts ``sleep 600`` from a tool and leaves it running, and
writes its own pid and the grandchild's to a file. Each test waits for that file (a condition),
ends the child one way or another, and then waits, bounded, until both are gone. The group of
every child is checked to be empty after each test (``conftest.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import HANG_GUARD, child_env, group_empty, process_gone, wait_for_event, wait_gone

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def _pids(path: Path, *, timeout: float = HANG_GUARD) -> tuple[int, int]:
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"no pid file {path} within {timeout} s"
        time.sleep(0.01)
    child, grandchild = path.read_text().split()
    return int(child), int(grandchild)


def _spawner(tmp_path: Path, then: str, *, stubborn: bool = False, **kwargs: object) -> tuple[LiveChild, Path]:
    pid_file = tmp_path / "pids"
    config = {"pid_file": str(pid_file), "then": then, "stubborn": stubborn}
    kwargs.setdefault("grace", 15.0)
    child = spawn("go", agent="live_agents:spawner", agent_config=config, env=child_env(), **kwargs)  # type: ignore[arg-type]
    return child, pid_file


def _started(child: LiveChild, pid_file: Path) -> int:
    """Wait until the tool has started its subprocess (its pid file is written: the events of a
    blocked turn may never be); return the grandchild's pid."""
    pid, grandchild = _pids(pid_file)
    assert pid == child.pid
    assert os.getpgid(grandchild) == child.pgid == child.pid  # the tool's subprocess is in the child's group
    return grandchild


def test_the_child_leads_its_own_group(tmp_path: Path) -> None:
    child, pid_file = _spawner(tmp_path, "yield")
    try:
        _started(child, pid_file)
        assert os.getpgid(child.pid) == child.pid != os.getpgrp()
        assert os.getsid(child.pid) == child.pid  # a session of its own: no controlling terminal
    finally:
        child.cleanup()


def test_kill_takes_the_grandchild(tmp_path: Path) -> None:
    child, pid_file = _spawner(tmp_path, "yield")
    try:
        grandchild = _started(child, pid_file)
        child.kill()
        assert child.wait(HANG_GUARD) == "failed" and child.killed
        wait_gone([child.pid, grandchild])
    finally:
        child.cleanup()


def test_cancel_takes_the_grandchild(tmp_path: Path) -> None:
    child, pid_file = _spawner(tmp_path, "yield")
    try:
        grandchild = _started(child, pid_file)
        child.cancel()
        assert child.wait(HANG_GUARD) == "cancelled"
        assert child.returncode == 1 and not child.killed  # the child ended on its own
        wait_gone([grandchild])
    finally:
        child.cleanup()


def test_done_takes_the_grandchild(tmp_path: Path) -> None:
    child, pid_file = _spawner(tmp_path, "done")
    try:
        grandchild = _started(child, pid_file)
        wait_for_event(child, lambda e: e["type"] == "turn-complete")
        child.close()
        assert child.wait(HANG_GUARD) == "done" and child.returncode == 0 and not child.killed
        wait_gone([grandchild])
    finally:
        child.cleanup()


def test_a_grandchild_that_ignores_sigterm_gets_sigkill_after_term_grace(tmp_path: Path) -> None:
    """The leader ended (``done``) but a member remains: SIGTERM, then SIGKILL ``term_grace`` later,
    and the child is finished only then."""
    child, pid_file = _spawner(tmp_path, "done", stubborn=True, term_grace=0.3)
    try:
        grandchild = _started(child, pid_file)
        wait_for_event(child, lambda e: e["type"] == "turn-complete")
        child.close()
        assert child.wait(HANG_GUARD) == "done" and child.returncode == 0
        assert child.group.kill_sent  # SIGTERM was not enough
        wait_gone([grandchild])
    finally:
        child.cleanup()


def test_the_backstop_takes_the_grandchild(tmp_path: Path) -> None:
    """The agent blocks (no control is read): ``cancel``, then SIGTERM to the group after the grace."""
    child, pid_file = _spawner(tmp_path, "block", grace=0.2)
    try:
        grandchild = _started(child, pid_file)
        child.cancel()
        assert child.wait(HANG_GUARD) == "cancelled"
        assert child.killed and child.returncode == -signal.SIGTERM
        wait_gone([grandchild])
    finally:
        child.cleanup()


def test_the_backstop_kills_a_group_that_ignores_sigterm(tmp_path: Path) -> None:
    """A leader that ignores SIGTERM, and its subprocess: SIGKILL to the group ``term_grace`` later."""
    script = textwrap.dedent(
        """
        import os, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sub = subprocess.Popen(["sleep", "600"])
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {sub.pid}")
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(3600)
        """
    )
    pid_file = tmp_path / "pids"
    child = spawn(None, command=[sys.executable, "-c", script, str(pid_file)], grace=0.1, term_grace=0.3)
    try:
        pid, grandchild = _pids(pid_file)
        assert os.getpgid(grandchild) == child.pgid == pid
        child.cancel()
        assert child.wait(HANG_GUARD) == "cancelled"
        assert child.killed and child.returncode == -signal.SIGKILL
        wait_gone([grandchild])
    finally:
        child.cleanup()


def test_a_hub_takes_the_grandchildren(tmp_path: Path) -> None:
    with Hub() as hub:
        children = []
        for i in range(3):
            pid_file = tmp_path / f"pids-{i}"
            config = {"pid_file": str(pid_file), "then": "done"}
            children.append(
                (
                    hub.spawn("go", agent="live_agents:spawner", agent_config=config, env=child_env(), grace=15.0),
                    pid_file,
                )
            )
        for child, _ in children:
            child.close()  # queued: the turn ends, then the run is closed
        assert set(hub.wait(HANG_GUARD).values()) == {"done"}
        wait_gone([_pids(pid_file)[1] for _, pid_file in children])


PARENT = textwrap.dedent(
    """
    import json, os, sys, time
    from fenwire_fast.live.parent.spawn import spawn
    out, mode, pid_file = sys.argv[1], sys.argv[2], sys.argv[3]
    env = json.loads(sys.argv[4])
    # the private directory under the test's own: a SIGKILLed parent cannot remove it
    where = {"env": env, "term_grace": 0.3, "directory": os.path.dirname(out)}
    if mode == "own":
        config = {"pid_file": pid_file, "then": "yield"}
        child = spawn("go", agent="live_agents:spawner", agent_config=config, **where)
    else:
        child = spawn(None, command=[sys.executable, "-c", sys.argv[5], pid_file], **where)
    while not os.path.exists(pid_file):
        child.poll()
        time.sleep(0.01)
    with open(out + ".tmp", "w") as f:
        f.write(open(pid_file).read())
    os.replace(out + ".tmp", out)
    time.sleep(3600)
    """
)

FOREIGN = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sub = subprocess.Popen(["sleep", "600"])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {sub.pid}")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(3600)
    """
)


@pytest.mark.parametrize("mode", ["own", "foreign"])
def test_a_parent_killed_with_sigkill_leaves_no_orphans(tmp_path: Path, mode: str) -> None:
    """A parent process spawns a child whose tool starts ``sleep 600``; the parent is SIGKILLed;
    the child and the grandchild are gone within 10 s (our own child watches the lifeline pipe; a
    foreign command is taken down by the parent's keeper)."""
    import json

    out = tmp_path / "out"
    env = child_env()
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(out), mode, str(tmp_path / "pids"), json.dumps(env), FOREIGN],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )
    try:
        pid, grandchild = _pids(out)
        assert not process_gone(pid) and not process_gone(grandchild)
        pgid = os.getpgid(pid)
        assert pgid == pid and os.getpgid(grandchild) == pgid
        parent.kill()
        parent.wait()
        wait_gone([pid, grandchild], timeout=10)
        end = time.monotonic() + 10
        while not group_empty(pgid):
            assert time.monotonic() < end, f"group {pgid} not empty 10 s after its parent died"
            time.sleep(0.02)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@pytest.mark.parametrize("value", ["abc", "99999", "-1", "0"])
def test_a_bad_parent_fd_is_reported_and_ignored(tmp_path: Path, value: str) -> None:
    """``FEN_WIRE_PARENT_FD`` that is not an open pipe: one line on stderr, no traceback, and the
    run goes on (fd 0 here is ``/dev/null``, not a pipe)."""
    control, events = tmp_path / "c.jsonl", tmp_path / "e.jsonl"
    control.write_text(
        '{"v":1,"seq":1,"type":"prompt","run":"run","text":"go"}\n{"v":1,"seq":2,"type":"close","run":"run"}\n'
    )
    env = {
        **os.environ,
        **child_env(),
        "FEN_WIRE_CONTROL_PATH": str(control),
        "FEN_WIRE_EVENT_PATH": str(events),
        "FEN_WIRE_RUN_ID": "run",
        "FEN_WIRE_PARENT_FD": value,
        "FENWIRE_MOCK": '{"steps":1}',
    }
    env.pop("FEN_WIRE_DEADLINE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "child"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"ignoring FEN_WIRE_PARENT_FD={value!r}" in proc.stderr and "Traceback" not in proc.stderr
    assert '"status":"done"' in events.read_text()
