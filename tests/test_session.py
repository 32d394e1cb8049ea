"""The run state machine (fenwire_fast.session): every cell of decide and advance against the table in
docs/wire-protocol.md ("The run state machine"), reasons included, written out literally here."""

from __future__ import annotations

import pytest
from fenwire_fast import session
from fenwire_fast.session import Decision, Transition, advance, decide, is_terminal

STATES = ["starting", "ready", "running", "closing", "finalizing", "done", "cancelled", "failed", "timed-out"]
CONTROLS = ["prompt", "steer", "follow-up", "finalize", "cancel", "close"]
EVENTS = ["started", "turn-done", "final-turn-done", "deadline", "fatal"]

NR = ("rejected", None, "none", "child is not ready")
RUNNING = ("rejected", None, "none", "a turn is running; send steer or follow-up")
CLOSING = ("rejected", None, "none", "run is closing")
FINALIZING = ("rejected", None, "none", "run is finalizing")
CANCEL = ("accepted", "cancelled", "abort", None)

# (state, control) -> (status, next, action, reason)
DECIDE = {
    ("starting", "prompt"): NR,
    ("starting", "steer"): NR,
    ("starting", "follow-up"): NR,
    ("starting", "finalize"): NR,
    ("starting", "cancel"): CANCEL,
    ("starting", "close"): NR,
    ("ready", "prompt"): ("accepted", "running", "start-turn", None),
    ("ready", "steer"): ("accepted", "running", "start-turn", None),
    ("ready", "follow-up"): ("accepted", "running", "start-turn", None),
    ("ready", "finalize"): ("accepted", "finalizing", "start-finalize-turn", None),
    ("ready", "cancel"): CANCEL,
    ("ready", "close"): ("accepted", "done", "finish", None),
    ("running", "prompt"): RUNNING,
    ("running", "steer"): ("accepted", "running", "queue-steering", None),
    ("running", "follow-up"): ("accepted", "running", "queue-follow-up", None),
    ("running", "finalize"): ("accepted", "finalizing", "interrupt-turn", None),
    ("running", "cancel"): CANCEL,
    ("running", "close"): ("accepted", "closing", "none", None),
    ("closing", "prompt"): CLOSING,
    ("closing", "steer"): CLOSING,
    ("closing", "follow-up"): CLOSING,
    ("closing", "finalize"): ("accepted", "finalizing", "interrupt-turn", None),
    ("closing", "cancel"): CANCEL,
    ("closing", "close"): ("applied", "closing", "none", None),
    ("finalizing", "prompt"): FINALIZING,
    ("finalizing", "steer"): FINALIZING,
    ("finalizing", "follow-up"): FINALIZING,
    ("finalizing", "finalize"): ("applied", "finalizing", "none", None),
    ("finalizing", "cancel"): CANCEL,
    ("finalizing", "close"): ("applied", "finalizing", "none", None),
    ("done", "prompt"): ("rejected", None, "none", "run is done"),
    ("done", "steer"): ("rejected", None, "none", "run is done"),
    ("done", "follow-up"): ("rejected", None, "none", "run is done"),
    ("done", "finalize"): ("rejected", None, "none", "run is done"),
    ("done", "cancel"): ("rejected", None, "none", "run is done"),
    ("done", "close"): ("rejected", None, "none", "run is done"),
    ("cancelled", "prompt"): ("rejected", None, "none", "run is cancelled"),
    ("cancelled", "steer"): ("rejected", None, "none", "run is cancelled"),
    ("cancelled", "follow-up"): ("rejected", None, "none", "run is cancelled"),
    ("cancelled", "finalize"): ("rejected", None, "none", "run is cancelled"),
    ("cancelled", "cancel"): ("rejected", None, "none", "run is cancelled"),
    ("cancelled", "close"): ("rejected", None, "none", "run is cancelled"),
    ("failed", "prompt"): ("rejected", None, "none", "run is failed"),
    ("failed", "steer"): ("rejected", None, "none", "run is failed"),
    ("failed", "follow-up"): ("rejected", None, "none", "run is failed"),
    ("failed", "finalize"): ("rejected", None, "none", "run is failed"),
    ("failed", "cancel"): ("rejected", None, "none", "run is failed"),
    ("failed", "close"): ("rejected", None, "none", "run is failed"),
    ("timed-out", "prompt"): ("rejected", None, "none", "run is timed-out"),
    ("timed-out", "steer"): ("rejected", None, "none", "run is timed-out"),
    ("timed-out", "follow-up"): ("rejected", None, "none", "run is timed-out"),
    ("timed-out", "finalize"): ("rejected", None, "none", "run is timed-out"),
    ("timed-out", "cancel"): ("rejected", None, "none", "run is timed-out"),
    ("timed-out", "close"): ("rejected", None, "none", "run is timed-out"),
}

# (state, event) -> (next, action) or None
ADVANCE = {
    ("starting", "started"): ("ready", "none"),
    ("starting", "turn-done"): None,
    ("starting", "final-turn-done"): None,
    ("starting", "deadline"): ("timed-out", "abort"),
    ("starting", "fatal"): ("failed", "abort"),
    ("ready", "started"): None,
    ("ready", "turn-done"): None,
    ("ready", "final-turn-done"): None,
    ("ready", "deadline"): ("timed-out", "abort"),
    ("ready", "fatal"): ("failed", "abort"),
    ("running", "started"): None,
    ("running", "turn-done"): ("ready", "none"),
    ("running", "final-turn-done"): None,
    ("running", "deadline"): ("timed-out", "abort"),
    ("running", "fatal"): ("failed", "abort"),
    ("closing", "started"): None,
    ("closing", "turn-done"): ("done", "finish"),
    ("closing", "final-turn-done"): None,
    ("closing", "deadline"): ("timed-out", "abort"),
    ("closing", "fatal"): ("failed", "abort"),
    ("finalizing", "started"): None,
    ("finalizing", "turn-done"): ("finalizing", "start-finalize-turn"),
    ("finalizing", "final-turn-done"): ("done", "finish"),
    ("finalizing", "deadline"): ("timed-out", "abort"),
    ("finalizing", "fatal"): ("failed", "abort"),
    ("done", "started"): None,
    ("done", "turn-done"): ("done", "exit"),
    ("done", "final-turn-done"): ("done", "exit"),
    ("done", "deadline"): ("done", "abort"),
    ("done", "fatal"): ("done", "abort"),
    ("cancelled", "started"): None,
    ("cancelled", "turn-done"): ("cancelled", "exit"),
    ("cancelled", "final-turn-done"): ("cancelled", "exit"),
    ("cancelled", "deadline"): ("cancelled", "abort"),
    ("cancelled", "fatal"): ("cancelled", "abort"),
    ("failed", "started"): None,
    ("failed", "turn-done"): ("failed", "exit"),
    ("failed", "final-turn-done"): ("failed", "exit"),
    ("failed", "deadline"): ("failed", "abort"),
    ("failed", "fatal"): ("failed", "abort"),
    ("timed-out", "started"): None,
    ("timed-out", "turn-done"): ("timed-out", "exit"),
    ("timed-out", "final-turn-done"): ("timed-out", "exit"),
    ("timed-out", "deadline"): ("timed-out", "abort"),
    ("timed-out", "fatal"): ("timed-out", "abort"),
}


def test_tables_are_complete() -> None:
    assert len(DECIDE) == 54 and set(DECIDE) == {(s, c) for s in STATES for c in CONTROLS}
    assert len(ADVANCE) == 45 and set(ADVANCE) == {(s, e) for s in STATES for e in EVENTS}
    assert list(session.STATES) == STATES
    assert list(session.CONTROLS) == CONTROLS
    assert list(session.INTERNAL_EVENTS) == EVENTS
    assert session.TERMINAL_STATES == {"done", "cancelled", "failed", "timed-out"}


@pytest.mark.parametrize("state,control", list(DECIDE))
def test_decide_cell(state: str, control: str) -> None:
    status, next_state, action, reason = DECIDE[state, control]
    got = decide(state, control)
    assert isinstance(got, Decision)
    assert (got.status, got.next, got.action, got.reason) == (status, next_state, action, reason)
    assert tuple(got) == (status, next_state, action, reason)


@pytest.mark.parametrize("state,event", list(ADVANCE))
def test_advance_cell(state: str, event: str) -> None:
    want = ADVANCE[state, event]
    got = advance(state, event)
    if want is None:
        assert got is None
    else:
        assert isinstance(got, Transition)
        assert (got.next, got.action) == want


@pytest.mark.parametrize("state", STATES)
def test_is_terminal(state: str) -> None:
    assert is_terminal(state) is (state in ("done", "cancelled", "failed", "timed-out"))


@pytest.mark.parametrize(
    "state,control",
    [
        ("bogus", "prompt"),
        ("ready", "pause"),
        ("ready", "ready"),
        ("READY", "prompt"),
        ("", ""),
        (None, None),
        (1, "prompt"),
        ("ready", ["prompt"]),
        ({}, []),
        ("running", "turn-done"),
    ],
)
def test_decide_unknown_never_raises(state: object, control: object) -> None:
    got = decide(state, control)
    assert tuple(got) == ("rejected", None, "none", f"no transition for {control} in state {state}")


@pytest.mark.parametrize(
    "state,event",
    [("bogus", "started"), ("ready", "prompt"), (None, None), ([], {}), ("running", ["turn-done"]), (1, 2)],
)
def test_advance_unknown_is_none(state: object, event: object) -> None:
    assert advance(state, event) is None


@pytest.mark.parametrize("state", ["bogus", "", None, 1, [], {}, "DONE", ("done",)])
def test_is_terminal_unknown_false(state: object) -> None:
    assert is_terminal(state) is False


def test_decisions_are_immutable_values() -> None:
    d = decide("ready", "prompt")
    with pytest.raises(AttributeError):
        d.status = "rejected"  # type: ignore[misc]
    with pytest.raises(TypeError):
        d[0] = "rejected"  # type: ignore[index]
    assert decide("ready", "prompt") == ("accepted", "running", "start-turn", None)
    t = advance("running", "turn-done")
    assert t is not None
    with pytest.raises(AttributeError):
        t.next = "done"  # type: ignore[misc]
    assert advance("running", "turn-done") == ("ready", "none")
    assert hash(d) == hash(decide("ready", "prompt"))


def test_actions_are_known() -> None:
    actions = {d[2] for d in DECIDE.values()} | {t[1] for t in ADVANCE.values() if t}
    assert actions <= set(session.ACTIONS)
    assert set(session.ACTIONS) == {
        "start-turn",
        "queue-steering",
        "queue-follow-up",
        "start-finalize-turn",
        "interrupt-turn",
        "abort",
        "finish",
        "exit",
        "none",
    }


def test_protocol_paths() -> None:
    """The state diagram of wire-protocol.md, walked through decide/advance."""

    def walk(state: str, *steps: str) -> str:
        for step in steps:
            if step in CONTROLS:
                d = decide(state, step)
                assert d.status != "rejected", (state, step)
                state = d.next  # type: ignore[assignment]
            else:
                t = advance(state, step)
                assert t is not None, (state, step)
                state = t.next
        return state

    assert walk("starting", "started", "prompt", "turn-done") == "ready"
    assert walk("starting", "started", "prompt", "close", "turn-done") == "done"
    assert walk("starting", "started", "prompt", "finalize", "turn-done", "final-turn-done") == "done"
    assert walk("starting", "started", "finalize", "final-turn-done") == "done"
    assert walk("starting", "started", "close") == "done"
    for state in ["starting", "ready", "running", "closing", "finalizing"]:
        assert walk(state, "cancel") == "cancelled"
        assert walk(state, "deadline") == "timed-out"
        assert walk(state, "fatal") == "failed"
