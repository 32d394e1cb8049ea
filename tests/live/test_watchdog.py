"""The progress watchdog: a running child that delivers no event for ``stall_timeout`` seconds gets
``cancel``, then the kill backstop; its error says so. Events are progress; an idle child (waiting
for the parent) is not watched."""

from __future__ import annotations

import pytest
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import spawn
from fenwire_fast.live.proc.wakeups import kernel_unavailable
from live_harness import HANG_GUARD, child_env, wait_for_event, wait_gate_blocked


def test_a_stalled_turn_is_cancelled(tmp_path: object) -> None:
    """The mock's tool hangs cooperatively (it yields ``Wait`` and writes nothing): ``cancel`` is
    accepted and the child ends on its own."""
    child = spawn("go", mock={"hang_step": 1}, stall_timeout=0.5, grace=15.0, env=child_env())
    try:
        assert child.wait(HANG_GUARD) == "cancelled"
        assert not child.killed and child.returncode == 1
        assert child.error == "stalled: no event for 0.5 s"
        assert child.cancel_sent
    finally:
        child.cleanup()


def test_a_stalled_turn_that_reads_no_control_is_killed(tmp_path: object) -> None:
    """The tool blocks (no control is read): ``cancel``, then SIGTERM after the grace."""
    gate = str(tmp_path) + "/gate"  # type: ignore[operator]
    child = spawn(
        "go", mock={"hang_step": 1, "hang": "block", "gate_path": gate}, stall_timeout=1, grace=0.2, env=child_env()
    )
    try:
        wait_gate_blocked(gate)
        assert child.wait(HANG_GUARD) == "cancelled"
        assert child.killed
        assert child.error is not None and child.error.startswith(
            "stalled: no event for 1 s; child was killed by signal"
        )
    finally:
        child.cleanup()


def test_the_watchdog_is_quiet_while_events_come() -> None:
    """Events every 50 ms for about 3 s, and a watchdog of 1.5 s: it never fires."""
    mock = {"steps": 2, "deltas": 30, "delay": 0.05}
    child = spawn("go", mock=mock, stall_timeout=1.5, grace=15.0, env=child_env())
    try:
        wait_for_event(child, lambda e: e["type"] == "turn-complete")
        child.close()
        assert child.wait(HANG_GUARD) == "done"
        assert child.stalled is None and child.error is None and not child.cancel_sent
    finally:
        child.cleanup()


def test_an_idle_child_is_not_watched() -> None:
    """A child in ``ready`` with every control acknowledged waits for the parent: no timer; a
    control puts the watchdog back on."""
    child = spawn(None, stall_timeout=5.0, grace=15.0, env=child_env())
    try:
        wait_for_event(child, lambda e: e["type"] == "ready")
        child.poll()
        assert child.channel.status == "ready" and child.next_timer() is None
        child.prompt("go")
        timer = child.next_timer()
        assert timer is not None and timer <= child.last_event + 5.0
        child.close()
        child.wait(HANG_GUARD)
        assert child.stalled is None
    finally:
        child.cleanup()


@pytest.mark.parametrize("wakeups", ["kernel", "poll"])
def test_a_hub_wakes_for_the_watchdog(wakeups: str) -> None:
    """``Hub(stall_timeout=...)`` watches the children it spawns; a sleeping hub wakes for it."""
    if wakeups == "kernel" and kernel_unavailable() is not None:
        pytest.skip(f"no kernel wake-ups: {kernel_unavailable()}")
    with Hub(wakeups=wakeups, stall_timeout=0.3) as hub:
        stalled = hub.spawn("go", run="stalled", mock={"hang_step": 1}, grace=15.0, env=child_env())
        busy = hub.spawn("go", run="busy", mock={"steps": 1}, stall_timeout=None, grace=15.0, env=child_env())
        busy.close()
        assert hub.wait(HANG_GUARD) == {"stalled": "cancelled", "busy": "done"}
        assert stalled.error == "stalled: no event for 0.3 s"
        assert busy.stall_timeout is None


def test_stall_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="stall_timeout"):
        spawn(None, stall_timeout=0)
