"""The run state machine: ``decide``, ``advance`` and ``is_terminal``.

The tables are the protocol's, reasons included: the reasons
reach the parent in ``control-ack`` lines. Every answer is an immutable value and nothing here
raises: an unknown state or control decides ``rejected`` with a "no transition" reason, an unknown
internal event advances to ``None``, and ``is_terminal`` of an unknown state is false.

The child presenter drives the run through this module and the parent's channel mirrors it; no
other module encodes the table.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "STATES",
    "TERMINAL_STATES",
    "CONTROLS",
    "INTERNAL_EVENTS",
    "ACTIONS",
    "Decision",
    "Transition",
    "decide",
    "advance",
    "is_terminal",
]

STATES: tuple[str, ...] = (
    "starting",
    "ready",
    "running",
    "closing",
    "finalizing",
    "done",
    "cancelled",
    "failed",
    "timed-out",
)
TERMINAL_STATES: frozenset[str] = frozenset({"done", "cancelled", "failed", "timed-out"})
CONTROLS: tuple[str, ...] = ("prompt", "steer", "follow-up", "finalize", "cancel", "close")
INTERNAL_EVENTS: tuple[str, ...] = ("started", "turn-done", "final-turn-done", "deadline", "fatal")
ACTIONS: tuple[str, ...] = (
    "start-turn",
    "queue-steering",
    "queue-follow-up",
    "start-finalize-turn",
    "interrupt-turn",
    "abort",
    "finish",
    "exit",
    "none",
)


class Decision(NamedTuple):
    """What a control does in a state: ``status`` is the ack status
    (``accepted`` / ``applied`` / ``rejected``); ``next`` is the state to move to (``None`` when
    rejected); ``action`` is what the child does; ``reason`` is set only on rejections."""

    status: str
    next: str | None
    action: str
    reason: str | None = None


class Transition(NamedTuple):
    """Where an internal event moves the run, and what the child does then."""

    next: str
    action: str


def _accept(next_state: str, action: str) -> Decision:
    return Decision("accepted", next_state, action)


def _applied(next_state: str) -> Decision:
    return Decision("applied", next_state, "none")


def _reject(reason: str) -> Decision:
    return Decision("rejected", None, "none", reason)


def _build_decide_table() -> dict[tuple[str, str], Decision]:
    table: dict[tuple[str, str], Decision] = {}
    not_ready = _reject("child is not ready")
    for control in CONTROLS:
        table["starting", control] = not_ready
    table["starting", "cancel"] = _accept("cancelled", "abort")

    for control in ("prompt", "steer", "follow-up"):
        table["ready", control] = _accept("running", "start-turn")
    table["ready", "finalize"] = _accept("finalizing", "start-finalize-turn")
    table["ready", "cancel"] = _accept("cancelled", "abort")
    table["ready", "close"] = _accept("done", "finish")

    table["running", "prompt"] = _reject("a turn is running; send steer or follow-up")
    table["running", "steer"] = _accept("running", "queue-steering")
    table["running", "follow-up"] = _accept("running", "queue-follow-up")
    table["running", "finalize"] = _accept("finalizing", "interrupt-turn")
    table["running", "cancel"] = _accept("cancelled", "abort")
    table["running", "close"] = _accept("closing", "none")

    for control in ("prompt", "steer", "follow-up"):
        table["closing", control] = _reject("run is closing")
    table["closing", "finalize"] = _accept("finalizing", "interrupt-turn")
    table["closing", "cancel"] = _accept("cancelled", "abort")
    table["closing", "close"] = _applied("closing")

    for control in ("prompt", "steer", "follow-up"):
        table["finalizing", control] = _reject("run is finalizing")
    table["finalizing", "finalize"] = _applied("finalizing")
    table["finalizing", "cancel"] = _accept("cancelled", "abort")
    table["finalizing", "close"] = _applied("finalizing")

    for state in TERMINAL_STATES:
        for control in CONTROLS:
            table[state, control] = _reject(f"run is {state}")
    return table


def _build_advance_table() -> dict[tuple[str, str], Transition]:
    table: dict[tuple[str, str], Transition] = {}
    table["starting", "started"] = Transition("ready", "none")
    table["running", "turn-done"] = Transition("ready", "none")
    table["closing", "turn-done"] = Transition("done", "finish")
    table["finalizing", "turn-done"] = Transition("finalizing", "start-finalize-turn")
    table["finalizing", "final-turn-done"] = Transition("done", "finish")
    for state in ("starting", "ready", "running", "closing", "finalizing"):
        table[state, "deadline"] = Transition("timed-out", "abort")
        table[state, "fatal"] = Transition("failed", "abort")
    for state in TERMINAL_STATES:
        table[state, "turn-done"] = Transition(state, "exit")
        table[state, "final-turn-done"] = Transition(state, "exit")
        table[state, "deadline"] = Transition(state, "abort")
        table[state, "fatal"] = Transition(state, "abort")
    return table


_DECIDE: dict[tuple[str, str], Decision] = _build_decide_table()
_ADVANCE: dict[tuple[str, str], Transition] = _build_advance_table()


def decide(state: object, control: object) -> Decision:
    """Look up what ``control`` (a control type) does in ``state``. Never raises."""
    try:
        found = _DECIDE.get((state, control))  # type: ignore[arg-type]
    except TypeError:  # unhashable input
        found = None
    if found is not None:
        return found
    return _reject(f"no transition for {control} in state {state}")


def advance(state: object, event: object) -> Transition | None:
    """Look up where an internal child event moves ``state``; ``None`` when it cannot happen."""
    try:
        return _ADVANCE.get((state, event))  # type: ignore[arg-type]
    except TypeError:
        return None


def is_terminal(state: object) -> bool:
    """True for the exit statuses ``done``, ``cancelled``, ``failed`` and ``timed-out``."""
    try:
        return state in TERMINAL_STATES
    except TypeError:
        return False
