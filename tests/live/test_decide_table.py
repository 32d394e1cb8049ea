"""Every reachable cell of the run state table, through the wire, against real child processes.

Rows ``ready``, ``running``, ``closing`` and ``finalizing`` are reached with the mock agent and a
control or two. A control "arrives while running" by arrangement, not by a race: the mock's turn
stops at its gate (step 1), the script waits for the gate's announcement, sends the controls, waits
for their acks and only then releases the gate. The terminal rows ``cancelled``, ``failed`` and
``timed-out`` are observed while the interrupted turn is held at the gate on its way out (the
mock's ``unwind_gate``), which is the only time a child reads controls in a terminal state. Two
rows cannot be reached through the wire by design: ``starting`` (a child emits ``ready`` before it
reads any control; see ``test_starting_is_never_observed``) and ``done`` (finishing writes
``result`` and ``exit`` at once, so no later control is read). Expected acks are written out here
from the table in wire-protocol.md, not taken from ``fenwire_fast.session``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fenwire_fast.testing import check_transcript
from live_harness import (
    Ctx,
    Outcome,
    Scenario,
    acked,
    at_gate,
    gated,
    rerun_until_arranged,
    run_scenarios,
    seen,
    unwinding,
)

CONTROLS = ("prompt", "steer", "follow-up", "finalize", "cancel", "close")
PAYLOADS: dict[str, dict[str, Any]] = {
    "prompt": {"text": "another prompt"},
    "steer": {"text": "steer text"},
    "follow-up": {"text": "follow-up text"},
    "finalize": {"note": "wrap up"},
    "cancel": {},
    "close": {},
}

# (state, control) -> (ack status, reason or None, final exit status)
TABLE: dict[tuple[str, str], tuple[str, str | None, str]] = {
    ("ready", "prompt"): ("accepted", None, "done"),
    ("ready", "steer"): ("accepted", None, "done"),
    ("ready", "follow-up"): ("accepted", None, "done"),
    ("ready", "finalize"): ("accepted", None, "done"),
    ("ready", "cancel"): ("accepted", None, "cancelled"),
    ("ready", "close"): ("accepted", None, "done"),
    ("running", "prompt"): ("rejected", "a turn is running; send steer or follow-up", "done"),
    ("running", "steer"): ("accepted", None, "done"),
    ("running", "follow-up"): ("accepted", None, "done"),
    ("running", "finalize"): ("accepted", None, "done"),
    ("running", "cancel"): ("accepted", None, "cancelled"),
    ("running", "close"): ("accepted", None, "done"),
    ("closing", "prompt"): ("rejected", "run is closing", "done"),
    ("closing", "steer"): ("rejected", "run is closing", "done"),
    ("closing", "follow-up"): ("rejected", "run is closing", "done"),
    ("closing", "finalize"): ("accepted", None, "done"),
    ("closing", "cancel"): ("accepted", None, "cancelled"),
    ("closing", "close"): ("applied", None, "done"),
    ("finalizing", "prompt"): ("rejected", "run is finalizing", "done"),
    ("finalizing", "steer"): ("rejected", "run is finalizing", "done"),
    ("finalizing", "follow-up"): ("rejected", "run is finalizing", "done"),
    ("finalizing", "finalize"): ("applied", None, "done"),
    ("finalizing", "cancel"): ("accepted", None, "cancelled"),
    ("finalizing", "close"): ("applied", None, "done"),
}
TERMINAL = ("cancelled", "failed", "timed-out")

FAST = {"steps": 2, "deltas": 2, "tools": 1}
#: every turn stops at the start of its step 1 until the script releases the gate
GATED = gated(FAST, [1])
#: ... and an interrupted turn stops again on its way out
UNWIND = gated(FAST, [1], unwind=True)
#: the deadline of the timed-out row, in seconds from the child's start. The turn must have reached
#: its gate by then; if it has not, the scenario is run again with more time (rerun_until_arranged)
DEADLINE = 8.0


def _close_when_idle(ctx: Ctx, turns: int) -> Any:
    yield seen("turn-complete", turns)
    yield lambda c: c.child.channel.idle
    ctx.send("close", name="final-close")


def _ready_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield seen("ready")
        ctx.send(control, PAYLOADS[control])
        if control in ("prompt", "steer", "follow-up"):
            yield from _close_when_idle(ctx, 1)

    return script


def _running_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield at_gate(1, 1)
        ctx.send(control, PAYLOADS[control])
        yield acked(control)
        ctx.release()
        if control in ("prompt", "steer"):
            yield from _close_when_idle(ctx, 1)
        elif control == "follow-up":
            yield from _close_when_idle(ctx, 2)

    return script


def _closing_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield at_gate(1, 1)
        ctx.send("close", name="first")
        ctx.send(control, PAYLOADS[control])
        yield acked("first", control)
        ctx.release()

    return script


def _finalizing_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield at_gate(1, 1)
        ctx.send("finalize", {"note": "first"}, name="first")
        # turn 1 is interrupted at once; the finalize turn then stops at its own gate
        yield at_gate(2, 1)
        ctx.send(control, PAYLOADS[control])
        yield acked(control)
        ctx.release()

    return script


def _terminal_cell(state: str):
    def script(ctx: Ctx) -> Any:
        yield at_gate(1, 1)
        if state == "cancelled":
            ctx.send("cancel", name="first")
        elif state == "failed":
            ctx.raw(json.dumps({"v": 2, "seq": 999, "type": "cancel", "run": ctx.child.run}).encode() + b"\n")
        # timed-out: the deadline passes while the turn waits at the gate
        yield unwinding(1)
        for control in CONTROLS:
            ctx.send(control, PAYLOADS[control])
        yield acked(*CONTROLS)
        ctx.release()

    return script


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    # the deadline scenario goes first, so its child starts before the others load the machine
    scenarios = [_timed_out(DEADLINE)]
    for state in ("cancelled", "failed"):
        scenarios.append(Scenario(f"{state}/*", _terminal_cell(state), mock=UNWIND))
    for state, control in TABLE:
        if state == "ready":
            scenarios.append(Scenario(f"{state}/{control}", _ready_cell(control), prompt=None, mock=FAST))
        elif state == "running":
            scenarios.append(Scenario(f"{state}/{control}", _running_cell(control), mock=GATED))
        elif state == "closing":
            scenarios.append(Scenario(f"{state}/{control}", _closing_cell(control), mock=GATED))
        else:
            scenarios.append(Scenario(f"{state}/{control}", _finalizing_cell(control), mock=GATED))
    scenarios.append(Scenario("starting", lambda ctx: _close_when_idle(ctx, 1), mock=FAST, prompt="early prompt"))
    outcomes = run_scenarios(scenarios)
    outcomes["timed-out/*"] = rerun_until_arranged(outcomes["timed-out/*"], _timed_out, _gated_in_time, DEADLINE)
    return outcomes


def _timed_out(deadline: float) -> Scenario:
    return Scenario("timed-out/*", _terminal_cell("timed-out"), mock=UNWIND, kwargs={"timeout": deadline})


def _gated_in_time(o: Outcome) -> bool:
    """The timed-out row was arranged: the turn reached its gate before the deadline passed."""
    return any(e["type"] == "info" and e.get("summary") == "mock gate: turn 1 step 1" for e in o.events)


def _common(o: Outcome) -> None:
    assert not o.timed_out, o.describe()
    assert o.script_error is None, f"{o.script_error!r}\n{o.describe()}"
    assert o.types[0] == "ready", o.describe()
    assert o.types[-1] == "exit", o.describe()
    # every control acknowledged exactly once, except a version-mismatch line
    refs = [a.get("ref") for a in o.acks()]
    assert sorted(refs) == sorted(o.child.channel.controls), o.describe()
    problems = check_transcript(o.config, o.events, controls=o.child.channel.controls)
    assert problems == [], f"{problems}\n{o.describe()}"
    want_rc = 0 if o.status == "done" else 1
    assert o.child.returncode == want_rc, o.describe()


@pytest.mark.parametrize("cell", [f"{s}/{c}" for s, c in TABLE])
def test_cell(outcomes: dict[str, Outcome], cell: str) -> None:
    state, control = cell.split("/")
    o = outcomes[cell]
    _common(o)
    status, reason, final = TABLE[state, control]
    ack = o.ack(control)
    assert ack["status"] == status, o.describe()
    assert ack.get("reason") == reason, o.describe()
    assert o.status == final, o.describe()
    assert o.child.channel.status == final
    at = o.events.index(ack)
    later = o.types[at + 1 :]
    if state != "ready":
        # the state was arranged, not raced: the control was read while turn 1 (or, finalizing,
        # the finalize turn 2) was held at its gate
        held = o.index("info", summary=f"mock gate: turn {2 if state == 'finalizing' else 1} step 1")
        done_turns = [i for i, e in enumerate(o.events) if e["type"] == "turn-complete"]
        assert held < at < done_turns[1 if state == "finalizing" else 0], o.describe()
    seq = o.ctx.sent[control]
    if status == "rejected":
        return
    if state == "ready" and control in ("prompt", "steer", "follow-up"):
        assert later[0] == "turn-started", o.describe()
        user = o.events[o.index("user")]
        assert user["text"] == PAYLOADS[control]["text"]
    if control == "finalize" and status == "accepted":
        # the tool-free final turn starts after the ack, and the result follows it
        final_turn = o.events[at + 1 :]
        last_start = max(i for i, e in enumerate(final_turn) if e["type"] == "turn-started")
        assert "tool-call" not in [e["type"] for e in final_turn[last_start:]], o.describe()
        assert later[-2:] == ["result", "exit"], o.describe()
        if state != "ready":
            aborted = [e for e in o.events if e["type"] == "turn-complete" and e["stop-reason"] == "aborted"]
            assert len(aborted) == 1, o.describe()
    if control == "cancel":
        assert "result" not in o.types, o.describe()
        if state != "ready":
            assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "aborted"
    if control == "close" and state in ("ready", "running"):
        assert later[-2:] == ["result", "exit"], o.describe()
        if state == "ready":
            assert o.events[-2]["stop-reason"] == "none"
        else:
            assert all(e.get("stop-reason") != "aborted" for e in o.events if e["type"] == "turn-complete")
    if control == "steer" and state == "running":
        injected = [e for e in o.events if e["type"] == "steering-injected"]
        assert [e.get("ref") for e in injected] == [seq], o.describe()
        assert o.events.index(injected[0]) > at
    if control == "follow-up" and state == "running":
        injected = [e for e in o.events if e["type"] == "follow-up-injected"]
        assert [e.get("ref") for e in injected] == [seq], o.describe()
        i = o.events.index(injected[0])
        assert o.events[i - 1]["type"] == "turn-started" and o.events[i - 1]["turn"] == 2


@pytest.mark.parametrize("state", TERMINAL)
def test_terminal_row(outcomes: dict[str, Outcome], state: str) -> None:
    o = outcomes[f"{state}/*"]
    assert not o.timed_out, o.describe()
    assert o.script_error is None, f"{o.script_error!r}\n{o.describe()}"
    assert all(c in o.ctx.sent for c in CONTROLS), f"the script did not run to its end\n{o.describe()}"
    assert o.status == state, o.describe()
    for control in CONTROLS:
        ack = o.ack(control)
        assert ack["status"] == "rejected", o.describe()
        assert ack["reason"] == f"run is {state}", o.describe()
    assert o.types[-1] == "exit" and o.events[-1]["status"] == state
    assert "result" not in o.types
    if state == "failed":
        assert "version" in o.events[-1].get("error", ""), o.describe()
        # the prompt and the six controls were acked; the version-mismatch line was not
        assert len(o.acks()) == 7 and all(a.get("ref") != 999 for a in o.acks()), o.describe()
    if state == "timed-out":
        assert o.events[-1]["error"] == "run deadline exceeded"
    # the turn was held at its gate, interrupted there, and acked every control while unwinding
    assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "aborted"
    unwound = o.index("info", summary="mock gate: turn 1 unwinding")
    assert all(o.events.index(o.ack(c)) > unwound for c in CONTROLS), o.describe()
    problems = check_transcript(o.config, o.events, controls=o.child.channel.controls)
    assert problems == [], problems


def test_starting_is_never_observed(outcomes: dict[str, Outcome]) -> None:
    """A prompt written before the child starts is read after ``ready``, i.e. in ``ready``."""
    o = outcomes["starting"]
    assert o.types[:3] == ["ready", "control-ack", "turn-started"], o.describe()
    assert o.events[1]["status"] == "accepted"
