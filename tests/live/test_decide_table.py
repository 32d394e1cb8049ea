"""Every reachable cell of the run state table, through the wire, against real child processes.

Rows ``ready``, ``running``, ``closing`` and ``finalizing`` are reached with the mock agent and a
control or two; the terminal rows ``cancelled``, ``failed`` and ``timed-out`` are observed while an
interrupted turn takes a while to unwind (the mock's ``unwind_delay``), which is the only time a
child reads controls in a terminal state. Two rows cannot be reached through the wire by design:
``starting`` (a child emits ``ready`` before it reads any control; see ``test_starting_is_never_
observed``) and ``done`` (finishing writes ``result`` and ``exit`` at once, so no later control is
read). Expected acks are written out here from the table in wire-protocol.md, not taken from
``fenwire_fast.session``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fenwire_fast.live.mock_agent import check_transcript, config_from_mapping
from live_harness import Ctx, Outcome, Scenario, run_scenarios, seen, wall_clock

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
LONG = {"steps": 2, "deltas": 30, "delay": 0.01, "tools": 1}


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
        yield seen("assistant-text-delta")
        ctx.send(control, PAYLOADS[control])
        if control in ("prompt", "steer", "close"):
            if control != "close":
                yield from _close_when_idle(ctx, 1)
        elif control == "follow-up":
            yield from _close_when_idle(ctx, 2)

    return script


def _closing_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield seen("assistant-text-delta")
        ctx.send("close", name="first")
        ctx.send(control, PAYLOADS[control])

    return script


def _finalizing_cell(control: str):
    def script(ctx: Ctx) -> Any:
        yield seen("assistant-text-delta")
        ctx.send("finalize", {"note": "first"}, name="first")
        ctx.send(control, PAYLOADS[control])

    return script


def _terminal_cell(state: str, deadline: float):
    def script(ctx: Ctx) -> Any:
        if state == "timed-out":
            # once the turn is under way and the deadline has passed, the child is unwinding the
            # interrupted turn (unwind_delay) in the timed-out state
            yield seen("assistant-text-delta")
            yield wall_clock(deadline + 0.5)
        else:
            yield seen("assistant-text-delta")
            if state == "cancelled":
                ctx.send("cancel", name="first")
            else:
                ctx.raw(json.dumps({"v": 2, "seq": 999, "type": "cancel", "run": ctx.child.run}).encode() + b"\n")
        for control in CONTROLS:
            ctx.send(control, PAYLOADS[control])

    return script


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    # The deadline scenario goes first, so its child starts before the others load the machine;
    # it needs its turn to have started before the deadline (see _terminal_cell).
    deadline = time.time() + 6.0
    scenarios = []
    for state in TERMINAL:
        mock = dict(LONG, unwind_delay=2.5)
        kwargs: dict[str, Any] = {"grace": 10.0}  # longer than the unwind, or the backstop kills it
        if state == "timed-out":
            mock.update(hang_step=1, hang="yield")
            kwargs["deadline"] = deadline
        scenarios.append(Scenario(f"{state}/*", _terminal_cell(state, deadline), mock=mock, kwargs=kwargs))
    scenarios.reverse()
    for state, control in TABLE:
        if state == "ready":
            scenarios.append(Scenario(f"{state}/{control}", _ready_cell(control), prompt=None, mock=FAST))
        elif state == "running":
            scenarios.append(Scenario(f"{state}/{control}", _running_cell(control), mock=LONG))
        elif state == "closing":
            scenarios.append(Scenario(f"{state}/{control}", _closing_cell(control), mock=LONG))
        else:
            scenarios.append(Scenario(f"{state}/{control}", _finalizing_cell(control), mock=LONG))
    scenarios.append(Scenario("starting", lambda ctx: _close_when_idle(ctx, 1), mock=FAST, prompt="early prompt"))
    return run_scenarios(scenarios, timeout=45)


def _common(o: Outcome, mock: dict[str, Any]) -> None:
    assert not o.timed_out, o.describe()
    assert o.script_error is None, f"{o.script_error!r}\n{o.describe()}"
    assert o.types[0] == "ready", o.describe()
    assert o.types[-1] == "exit", o.describe()
    # every control acknowledged exactly once, except a version-mismatch line
    refs = [a.get("ref") for a in o.acks()]
    assert sorted(refs) == sorted(o.child.channel.controls), o.describe()
    problems = check_transcript(config_from_mapping(mock), o.events)
    assert problems == [], f"{problems}\n{o.describe()}"
    want_rc = 0 if o.status == "done" else 1
    assert o.child.returncode == want_rc, o.describe()


@pytest.mark.parametrize("cell", [f"{s}/{c}" for s, c in TABLE])
def test_cell(outcomes: dict[str, Outcome], cell: str) -> None:
    state, control = cell.split("/")
    o = outcomes[cell]
    _common(o, FAST if state == "ready" else LONG)
    status, reason, final = TABLE[state, control]
    ack = o.ack(control)
    assert ack["status"] == status, o.describe()
    assert ack.get("reason") == reason, o.describe()
    assert o.status == final, o.describe()
    assert o.child.channel.status == final
    at = o.events.index(ack)
    later = o.types[at + 1 :]
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
        assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "aborted"
    problems = check_transcript(config_from_mapping(LONG), o.events)
    assert problems == [], problems


def test_starting_is_never_observed(outcomes: dict[str, Outcome]) -> None:
    """A prompt written before the child starts is read after ``ready``, i.e. in ``ready``."""
    o = outcomes["starting"]
    assert o.types[:3] == ["ready", "control-ack", "turn-started"], o.describe()
    assert o.events[1]["status"] == "accepted"
