"""The transcript oracle: a child's event stream checked against what it must be.

- :func:`check_stream`: what holds for any agent's transcript, so that no event was lost, repeated
  or reordered: ``seq`` runs 1, 2, 3, ... without gaps; one ``exit``, last; a ``result`` right
  before it exactly when the status is ``done``; turns numbered 1, 2, ..., each started once and
  completed once, in order.
- :func:`check_transcript`: those checks, and the scripted mock agent's
  (:mod:`fenwire_fast.live.child.mock_agent`) script received exactly, turn by turn, with its
  result.

Tests, ``fenwire demo`` and the benchmarks check their children with these. The oracle does not
use the code under test: each scripted event's wire form comes from :mod:`.wire_form`, written from
the wire contract, and only the mock's script is taken from the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..live.child.agent import TurnInput
from ..live.child.mock_agent import MockConfig, final_text, gate_label, reported_traceparent, script_events
from .wire_form import cancelled_result, strip_envelope, wire_event

__all__ = ["check_stream", "check_transcript"]

#: what the child writes of its own inside a turn (the mock's script has none of it)
_CHILD_MADE = ("control-ack", "steering-injected", "follow-up-injected")
Event = Mapping[str, Any]


@dataclass
class _Reading:
    """A transcript read once: the problems any transcript can have, and its turns."""

    problems: list[str]
    #: each completed turn: its number, the events between its turn-started and its turn-complete,
    #: and that turn-complete
    turns: list[tuple[int, list[Event], Event]] = field(default_factory=list)
    #: each event outside a turn, with the number of turns started before it
    outside: list[tuple[int, Event]] = field(default_factory=list)


def check_stream(events: Sequence[Event]) -> list[str]:
    """What holds for any agent's transcript (see the module docstring); returns the problems
    (empty: none). It is how ``fenwire demo`` checks the children of an agent whose answers are not
    scripted; :func:`check_transcript` checks these and the mock's script."""
    if not events:
        return ["no events"]
    return _read(events).problems


def _read(events: Sequence[Event]) -> _Reading:
    """Check ``seq``, the exit, the result and the turns' brackets; split the events into turns."""
    reading = _Reading(_envelope_problems(events))
    problems = reading.problems
    last = events[-1]
    done = last.get("type") == "exit" and last.get("status") == "done"
    turn = 0
    body: list[Event] | None = None
    for event in events:
        etype = event.get("type")
        if etype == "turn-started":
            if body is not None:
                problems.append(f"turn {turn + 1} started inside turn {turn}")
            turn += 1
            if event.get("turn") != turn:
                problems.append(f"turn-started says {event.get('turn')!r}, expected {turn}")
            body = []
        elif etype == "turn-complete":
            if body is None:
                problems.append("turn-complete outside a turn")
                continue
            if event.get("turn") != turn:
                problems.append(f"turn-complete says {event.get('turn')!r}, expected {turn}")
            reading.turns.append((turn, body, event))
            body = None
        elif body is None:
            reading.outside.append((turn, event))
        else:
            body.append(event)
    if body is not None and done:
        problems.append(f"turn {turn} never completed")
    return reading


def _envelope_problems(events: Sequence[Event]) -> list[str]:
    """``seq`` without gaps; one ``exit``, last; a ``result`` right before it exactly when done."""
    problems: list[str] = []
    for i, event in enumerate(events, 1):
        if event.get("seq") != i:
            problems.append(f"event {i} has seq {event.get('seq')!r}, expected {i}")
            break
    exits = [i for i, e in enumerate(events) if e.get("type") == "exit"]
    last = events[-1]
    if last.get("type") != "exit":
        problems.append(f"last event is {last.get('type')}, not exit")
    if len(exits) > 1:
        problems.append(f"{len(exits)} exit events")
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    if len(results) > 1:
        problems.append("more than one result")
    if results and results[0] != len(events) - 2:
        problems.append("result is not right before exit")
    done = last.get("type") == "exit" and last.get("status") == "done"
    if done and not results:
        problems.append("a done run without a result")
    if results and last.get("type") == "exit" and not done:
        problems.append(f"a {last.get('status')} run with a result")
    return problems


def check_transcript(
    config: MockConfig,
    events: Sequence[Mapping[str, Any]],
    *,
    controls: Mapping[int, Any] | None = None,
) -> list[str]:
    """Check a child's event stream against the mock's script; return the problems (empty = exact).

    ``controls``: the controls the parent sent, by ``seq`` (e.g. ``Channel.controls``; values are
    ``SentControl`` objects, control dicts or type strings). With them every turn must follow the
    script its input calls for: the turn a ``finalize`` starts the tool-free one, any other the
    full one. Without them (or for a turn started by a control not listed) either script passes.

    Checks: ``seq`` runs 1, 2, 3, ... without gaps; one ``exit``, last; a ``result`` right before
    it exactly when the status is ``done``, with the usage of every turn and, when the last turn
    that spoke ran to its end, that turn's scripted answer; turns are numbered 1, 2, ... and
    bracketed; inside every turn the agent's events are exactly the wire form of the turn's script
    -- or, only when the turn ended ``aborted`` or ``error``, a prefix of it followed (with
    ``unwind_gate``, for an aborted turn) by the unwinding announcement and then by one
    ``cancelled`` tool result per tool call the prefix left open; ``turn-complete`` carries the
    stop reason and the usage of the ``llm-end`` events the turn sent. The mock's gate
    announcements are part of the script; the child's own ``info`` (the dropped input it lists in
    ``refs``) and the mock's traceparent report may come anywhere."""
    if not events:
        return ["no events"]
    reading = _read(events)
    problems = reading.problems
    problems.extend(_outside_problems(config, reading.outside))
    kinds = _turn_kinds(events, controls)
    spoke: tuple[int, Event, bool] | None = None  # last turn that spoke: number, complete, ran to its end
    for turn, body, complete in reading.turns:
        said = [e for e in body if not _aside(e)]
        turn_problems, whole = _check_turn(config, turn, kinds.get(turn), said, complete)
        problems.extend(turn_problems)
        if any(e.get("type") in ("llm-end", "assistant-text") for e in said):
            spoke = (turn, complete, whole)
    results = [e for e in events if e.get("type") == "result"]
    if results:
        problems.extend(_check_result(config, results[0], events, spoke))
    return problems


def _aside(event: Event) -> bool:
    """An event that is not the agent's and may come anywhere: the run's own (``ready``, ``result``,
    ``exit``), the child's answers to controls, its dropped input, the mock's traceparent report."""
    etype = event.get("type")
    return etype in ("ready", "result", "exit") or etype in _CHILD_MADE or _dropped_input(event) or _traced(event)


def _outside_problems(config: MockConfig, outside: list[tuple[int, Event]]) -> list[str]:
    """Outside the turns, only :func:`_aside` events, and the announced ``agent-started`` before the first."""
    problems: list[str] = []
    for turn, event in outside:
        etype = event.get("type")
        if etype == "agent-started" and config.announce and not turn:
            want = wire_event({"type": "agent-started", "provider": "mock", "model": "mock-1"})
            if strip_envelope(event) != want:
                problems.append(f"agent-started is {strip_envelope(event)!r}, expected {want!r}")
        elif not _aside(event):
            problems.append(f"{etype} outside a turn")
    return problems


def _dropped_input(event: Mapping[str, Any]) -> bool:
    """The child's own ``info`` (the queued input it dropped, listed in ``refs``); the mock's
    ``info`` events (its gate announcements) have no ``refs`` and belong to the script."""
    return event.get("type") == "info" and "refs" in event


def _usage_sum(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for e in events:
        if e.get("type") in ("llm-end", "turn-complete"):
            for k, v in (e.get("usage") or {}).items():
                total[k] = total.get(k, 0) + v
    return total


def _control_type(sent: Any) -> str | None:
    """The type of a control the parent sent: a type string, a ``SentControl`` or a control dict."""
    if sent is None or isinstance(sent, str):
        return sent
    if isinstance(sent, Mapping):
        value = sent.get("type")
    else:
        value = getattr(sent, "type", None)
    return value if isinstance(value, str) else None


def _turn_kinds(events: Sequence[Mapping[str, Any]], controls: Mapping[int, Any] | None) -> dict[int, str | None]:
    """``{turn: "finalize" | "full" | None}``: which script each turn must follow.

    The turn that starts after a ``finalize`` was accepted is the tool-free finalize turn; a turn
    started after only controls of other known types is a full one. ``None`` (either script) when
    a control acknowledged before it is not in ``controls``, or when no controls are given."""
    kinds: dict[int, str | None] = {}
    finalize = unknown = False
    turn = 0
    for event in events:
        etype = event.get("type")
        if etype == "control-ack" and event.get("status") == "accepted":
            ctype = _control_type(controls.get(event.get("ref"))) if controls is not None else None  # type: ignore[arg-type]
            if ctype == "finalize":
                finalize = True
            elif ctype is None:
                unknown = True
        elif etype == "turn-started":
            turn += 1
            kinds[turn] = "finalize" if finalize else None if unknown or controls is None else "full"
            finalize = unknown = False
    return kinds


def _traced(event: Mapping[str, Any]) -> bool:
    return reported_traceparent([event]) is not None


def _check_result(
    config: MockConfig,
    result: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    spoke: tuple[int, Mapping[str, Any], bool] | None,
) -> list[str]:
    problems: list[str] = []
    usage = _usage_sum(e for e in events if e.get("type") == "turn-complete")
    if result.get("usage", {}) != usage:
        problems.append(f"result usage {result.get('usage')!r} is not the sum of the turns' {usage!r}")
    reason = spoke[1].get("stop-reason") if spoke is not None else "none"
    if result.get("stop-reason") != reason:
        problems.append(f"result stop-reason {result.get('stop-reason')!r}, expected {reason!r}")
    if spoke is not None and spoke[2]:
        want = final_text(config, spoke[0])
        got = result.get("final-text")
        if not (got == want or result.get("truncated?") and isinstance(got, str) and want.startswith(got)):
            problems.append(f"result final-text {got!r} is not turn {spoke[0]}'s answer {want!r}")
    return problems


def _check_turn(
    config: MockConfig,
    turn: int,
    kind: str | None,
    body: list[Mapping[str, Any]],
    complete: Mapping[str, Any],
) -> tuple[list[str], bool]:
    """The problems of one turn, and whether it ran its whole script."""
    problems: list[str] = []
    got = [strip_envelope(e) for e in body]
    cut_short = complete.get("stop-reason") in ("aborted", "error")
    aborted = complete.get("stop-reason") == "aborted"
    if not got:
        if not cut_short:
            return [*problems, f"turn {turn} does not start with the user event"], False
        if "usage" in complete:
            problems.append(f"turn {turn} usage {complete.get('usage')!r}, but it made no model call")
        return problems, False  # interrupted before its first step
    text = got[0].get("text")
    if got[0].get("type") != "user" or not isinstance(text, str):
        return [*problems, f"turn {turn} does not start with the user event"], False
    scripts = {"finalize": (False,), "full": (True,)}.get(kind or "", (True, False))
    first_mismatch: list[str] = []
    for tools in scripts:
        request = TurnInput(text=text, kind="prompt" if tools else "finalize", turn=turn, tools=tools)
        try:
            want = [wire_event(e) for e in script_events(config, request)]
        except ValueError as exc:
            return [*problems, f"turn {turn}: {exc}"], False
        if cut_short:
            n = 0
            while n < min(len(got), len(want)) and got[n] == want[n]:
                n += 1
            answered = {e["tool-call-id"] for e in want[:n] if e["type"] == "tool-result"}
            open_calls = [e for e in want[:n] if e["type"] == "tool-call" and e["id"] not in answered]
            # an aborted turn of a mock with unwind_gate announces its unwinding first
            unwind = (
                [wire_event({"type": "info", "summary": gate_label(turn)})] if config.unwind_gate and aborted else []
            )
            want = want[:n] + unwind + [cancelled_result(call) for call in open_calls]
            sent = want[:n]
        else:
            sent = want
        if got == want:
            return problems + _check_complete(turn, complete, sent, cut_short), not cut_short
        if not first_mismatch:
            first_mismatch = _first_difference(turn, got, want, "tool-free" if not tools else "full")
    return problems + first_mismatch, False


def _first_difference(turn: int, got: list[dict[str, Any]], want: list[dict[str, Any]], which: str) -> list[str]:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return [f"turn {turn} event {i}: got {a!r}, expected {b!r} ({which} script)"]
    return [f"turn {turn}: got {len(got)} agent events, expected {len(want)} ({which} script)"]


def _check_complete(turn: int, complete: Mapping[str, Any], sent: list[dict[str, Any]], cut_short: bool) -> list[str]:
    """``turn-complete``: the usage of the turn's ``llm-end`` events; a whole turn stops with the
    stop reason of its last one."""
    problems: list[str] = []
    usage = _usage_sum(sent)
    if complete.get("usage", {}) != usage:
        problems.append(f"turn {turn} usage {complete.get('usage')!r} is not the sum {usage!r}")
    if not cut_short:
        reasons = [e["stop-reason"] for e in sent if e["type"] == "llm-end"]
        want = reasons[-1] if reasons else "none"
        if complete.get("stop-reason") != want:
            problems.append(f"turn {turn} stop-reason {complete.get('stop-reason')!r}, expected {want!r}")
    return problems
