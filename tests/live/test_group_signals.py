"""Whatever ends a run signals its whole process group, not only the group's leader.

Each run here has a member in its group besides the leader: the child's tool started ``sleep
600`` (``live_agents:spawner``), or an ACP agent started one before it ran
(``acp_agents/with_grandchild.py``). A leader that alone got the signal would end, and the run with
it, while that member kept running; so each test, once the run has ended one way or another, waits
(bounded) until the group itself is empty (``os.killpg(pgid, 0)`` raises ``ProcessLookupError``)
and the member is gone, before anything cleans up.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import HANG_GUARD, child_env, group_empty, group_members, process_gone, wait_for_event

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")

AGENTS = Path(__file__).resolve().parent / "acp_agents"
#: how long a group may take to empty once its run has ended (a killed member may stay a zombie
#: until its new parent reaps it)
EMPTY_WITHIN = 10.0


def _pids(path: Path) -> tuple[int, int]:
    end = time.monotonic() + HANG_GUARD
    while not path.exists():
        assert time.monotonic() < end, f"no pid file {path}"
        time.sleep(0.01)
    leader, member = path.read_text().split()
    return int(leader), int(member)


def _assert_group_ends(pgid: int, member: int) -> None:
    """The group ``pgid`` empties within :data:`EMPTY_WITHIN` seconds, ``member`` with it."""
    end = time.monotonic() + EMPTY_WITHIN
    while not group_empty(pgid):
        assert time.monotonic() < end, f"group {pgid} not empty after its run ended: {group_members(pgid)}"
        time.sleep(0.02)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert process_gone(member)


def _take_down(pgid: int) -> None:
    """Clean up after a failed test: SIGKILL what this test started (``pgid`` is its own run's)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


# -- a child's own group: the tool's subprocess ---------------------------------------------------

WAYS = ["kill", "cancel", "done", "backstop", "stubborn", "cleanup"]


def _spawner(tmp_path: Path, way: str) -> tuple[LiveChild, Path]:
    pid_file = tmp_path / "pids"
    then = {"backstop": "block", "done": "done", "stubborn": "done"}.get(way, "yield")
    config = {"pid_file": str(pid_file), "then": then, "stubborn": way == "stubborn"}
    grace = 0.2 if way == "backstop" else 15.0
    child = spawn("go", agent="live_agents:spawner", agent_config=config, env=child_env(), grace=grace, term_grace=0.3)
    return child, pid_file


def _end(child: LiveChild, way: str) -> None:
    """End the run ``way``; return once it has finished (nothing cleaned up yet, but for ``cleanup``)."""
    if way == "kill":
        child.kill()
        assert child.wait(HANG_GUARD) == "failed" and child.killed
    elif way in ("cancel", "backstop"):  # the child ends on its own, or the backstop's SIGTERM ends it
        child.cancel()
        assert child.wait(HANG_GUARD) == "cancelled"
        assert child.killed == (way == "backstop")
    elif way in ("done", "stubborn"):  # the leader exits 0; its member is left (and ignores SIGTERM)
        wait_for_event(child, lambda e: e["type"] == "turn-complete")
        child.close()
        assert child.wait(HANG_GUARD) == "done" and child.returncode == 0
        if way == "stubborn":
            assert child.group.kill_sent  # SIGTERM was not enough
    else:
        child.cleanup()


@pytest.mark.parametrize("way", WAYS)
def test_the_childs_group_is_empty_when_its_run_ends(tmp_path: Path, way: str) -> None:
    child, pid_file = _spawner(tmp_path, way)
    try:
        leader, member = _pids(pid_file)
        assert leader == child.pid == child.pgid and os.getpgid(member) == child.pgid
        _end(child, way)
        _assert_group_ends(child.pgid, member)
    finally:
        if not group_empty(child.pgid):
            _take_down(child.pgid)
        child.cleanup()


# -- an ACP agent's group: the bridge in the child signals it -------------------------------------


def _acp_child(tmp_path: Path, agent: str, *args: str, **kwargs: float) -> tuple[LiveChild, Path]:
    pid_file = tmp_path / "agent-pids"
    command = [sys.executable, str(AGENTS / "with_grandchild.py"), str(pid_file), str(AGENTS / agent), *args]
    child = spawn("Do the task.", acp=command, env=child_env(), timeout=HANG_GUARD, **kwargs)
    return child, pid_file


@pytest.mark.parametrize("way", ["done", "ignored-cancel"])
def test_the_acp_agents_group_is_empty_when_its_run_ends(tmp_path: Path, way: str) -> None:
    """``done``: the bridge closes the agent (which exits) and then kills its group; with the
    cancel ignored, it kills the group once ``acp_grace`` has passed."""
    pytest.importorskip("acp")
    if way == "done":
        child, pid_file = _acp_child(tmp_path, "echo_agent.py")
    else:
        child, pid_file = _acp_child(tmp_path, "cancel_agent.py", "--ignore-cancel", acp_grace=1.0)
    agent = 0
    try:
        agent, member = _pids(pid_file)
        assert os.getpgid(member) == agent != child.pgid  # the agent leads a group of its own
        if way == "done":
            wait_for_event(child, lambda e: e["type"] == "turn-complete")
            child.close()
            assert child.wait(HANG_GUARD) == "done", child.error
        else:
            wait_for_event(child, lambda e: e["type"] == "assistant-text-delta")
            child.cancel()
            assert child.wait(HANG_GUARD) == "cancelled", child.error
        _assert_group_ends(agent, member)
    finally:
        if agent and not group_empty(agent):
            _take_down(agent)
        child.cleanup()
