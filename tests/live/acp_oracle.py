"""An independent checker of an ACP-bridged live child's transcript (its list of event dicts).

Written from the bridge's agreed interface (``/work/acp-spec.md``: the ACP -> wire mapping, the
stop reasons, the exit errors), not from the bridge's code. :func:`check` returns the problems
found, an empty list when the transcript is accepted. It checks, for every transcript:

- ``seq`` runs 1, 2, 3, ... without gaps; exactly one ``exit``, last; a ``result`` right before it
  exactly when the status is ``done``;
- turns are numbered 1, 2, ... and bracketed by ``turn-started`` / ``turn-complete``; the agent's
  events (text, thinking, tools, ``llm-*``) only inside a turn;
- inside a turn every run of ``assistant-text-delta`` is closed by one ``assistant-text`` whose
  text is the deltas' concatenation before any other kind of agent event (the same for thinking);
  ``final?`` is false on a message that another agent event followed;
- every ``tool-call`` id gets exactly one ``tool-result`` (``tool-call-id`` equal) before the
  turn's ``turn-complete``; ``is-error?`` is true for a failed or cancelled one;
- each turn has one ``user`` event (the text sent) before its agent events;
- ``llm-start`` / ``llm-end`` bracket the prompt, with provider ``acp``; ``llm-end`` carries the
  turn's stop reason;
- every control the parent sent (``controls``: their seqs) gets exactly one ``control-ack``;

and then the per-agent :class:`Expect` (built by ``expect_*`` below from ``acp_agents/scripted.py``):
the scripted text, thoughts, tool names/ids/outcomes and infos of each turn, the stop reasons, the
exit status and error.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_agents import scripted
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import HANG_GUARD, assert_groups_empty, child_env, group_empty, group_members

Event = Mapping[str, Any]

#: events a turn's agent makes (the bridge's mapping); everything else is the child's own
_AGENT_EVENTS = (
    "assistant-text-delta",
    "assistant-text",
    "assistant-thinking-delta",
    "assistant-thinking",
    "tool-call",
    "tool-result",
    "llm-start",
    "llm-end",
)
#: events that may come outside a turn
_OUTSIDE = (
    "agent-started",
    "ready",
    "control-ack",
    "info",
    "steering-injected",
    "follow-up-injected",
    "result",
    "exit",
)

#: the bridge's cap on a line from the agent (1 MiB): a longer one is skipped with an info
LINE_CAP = 1024 * 1024

#: ACP stop reason -> wire stop reason (the spec's table)
STOP_REASONS = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "refusal": "refusal",
    "cancelled": "aborted",
}


@dataclass
class TurnExpect:
    """What one turn must show. ``None`` fields are not checked."""

    #: the turn's last ``assistant-text`` (exactly)
    text: str | None = None
    #: a test of that text instead (e.g. a prefix of an endless stream); gets None when no text came
    text_ok: Callable[[str | None], bool] | None = None
    #: the concatenation of the turn's text deltas (the whole message, even when its
    #: ``assistant-text`` was cut to the event's byte budget)
    deltas: str | None = None
    #: the ``assistant-thinking`` texts, in order
    thinking: list[str] | None = None
    #: the tool calls ``(id, name, arguments, is-error?)``, in order
    tools: list[tuple[str, str, Any, bool]] | None = None
    #: results of tool calls by id (checked for the ids listed)
    results: dict[str, Any] = field(default_factory=dict)
    #: the turn's ``info`` summaries, exactly (the child's own, with ``refs``, aside); None: unchecked
    infos: list[str] | None = None
    stop_reason: str | None = None
    #: the turn's events in order, deltas and the child's own events left out, as signatures
    #: (see :func:`signature`); None: unchecked
    order: list[str] | None = None


def signature(event: Event) -> str | None:
    """How an event of a turn shows in :attr:`TurnExpect.order`; None for the ones it leaves out."""
    etype = str(event.get("type"))
    if etype in ("assistant-text-delta", "assistant-thinking-delta", "steering-injected", "follow-up-injected"):
        return None
    if etype == "control-ack" or etype == "user" or (etype == "info" and "refs" in event):
        return None  # (a turn's ``user`` event is checked by _check_turn)
    if etype == "info":
        return f"info:{event.get('summary')}"
    if etype == "tool-call":
        return f"tool-call:{event.get('id')}"
    if etype == "tool-result":
        return f"tool-result:{event.get('tool-call-id')}"
    return etype


@dataclass
class Expect:
    """What the whole run must show."""

    #: one entry per turn (the number of turns must match); None: any number, unchecked
    turns: list[TurnExpect] | None = None
    status: str = "done"
    #: the exit error must start with this (None: no check; for ``done`` there must be no error)
    error_prefix: str | None = None
    #: the model named by ``llm-start`` (the agent's name from initialize)
    model: str | None = None
    #: ``info`` summaries that must appear anywhere (in this order)
    infos: list[str] = field(default_factory=list)
    #: summaries matching this regex must appear (once at least)
    info_patterns: list[str] = field(default_factory=list)


def check(events: Sequence[Event], expect: Expect | None = None, *, controls: Iterable[int] = ()) -> list[str]:
    """The problems of ``events`` (empty: accepted). ``controls``: the seqs of the controls sent."""
    if not events:
        return ["no events"]
    problems: list[str] = []
    problems += _check_frame(events)
    problems += _check_acks(events, controls)
    turns, outside = _split_turns(events, problems)
    for number, (start, body, complete) in enumerate(turns, 1):
        problems += [f"turn {number}: {p}" for p in _check_turn(number, start, body, complete)]
    if expect is not None:
        problems += _check_expect(events, turns, expect)
    return problems


def _check_frame(events: Sequence[Event]) -> list[str]:
    problems: list[str] = []
    for i, event in enumerate(events, 1):
        if event.get("seq") != i:
            problems.append(f"event {i} ({event.get('type')}) has seq {event.get('seq')!r}, expected {i}")
            break
    readies = [i for i, e in enumerate(events) if e.get("type") == "ready"]
    starts = [i for i, e in enumerate(events) if e.get("type") == "turn-started"]
    if len(readies) != 1 and events[-1].get("status") != "failed":
        problems.append(f"{len(readies)} ready events, expected 1")
    if len(readies) > 1 or (readies and starts and starts[0] < readies[0]):
        problems.append(f"ready at {readies}, turns start at {starts}: one ready, before the first turn")
    acks = [i for i, e in enumerate(events) if e.get("type") == "control-ack"]
    if readies and acks and acks[0] < readies[0]:
        problems.append("a control-ack before ready")
    for n, start in enumerate(starts, 1):
        accepted = sum(1 for i in acks if i < start and events[i].get("status") == "accepted")
        if accepted < n:
            problems.append(f"turn {n} started after only {accepted} accepted controls: every turn needs its own")
    exits = [i for i, e in enumerate(events) if e.get("type") == "exit"]
    if len(exits) != 1:
        problems.append(f"{len(exits)} exit events, expected 1")
    if events[-1].get("type") != "exit":
        problems.append(f"the last event is {events[-1].get('type')}, not exit")
    status = events[-1].get("status") if events[-1].get("type") == "exit" else None
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    if status == "done":
        if results != [len(events) - 2]:
            problems.append(f"a done run needs one result right before exit; results at {results}")
    elif results:
        problems.append(f"a {status} run with a result")
    return problems


def _check_acks(events: Sequence[Event], controls: Iterable[int]) -> list[str]:
    acks: dict[Any, int] = {}
    for e in events:
        if e.get("type") == "control-ack":
            acks[e.get("ref")] = acks.get(e.get("ref"), 0) + 1
    problems = []
    for seq in controls:
        if acks.get(seq, 0) != 1:
            problems.append(f"control {seq} acked {acks.get(seq, 0)} times, expected once")
    return problems


Turn = tuple[Event, list[Event], Event | None]


def _split_turns(events: Sequence[Event], problems: list[str]) -> tuple[list[Turn], list[Event]]:
    turns: list[Turn] = []
    outside: list[Event] = []
    start: Event | None = None
    body: list[Event] = []
    for event in events:
        etype = event.get("type")
        if etype == "turn-started":
            if start is not None:
                problems.append(f"turn {len(turns) + 2} started inside turn {len(turns) + 1}")
                turns.append((start, body, None))
            start, body = event, []
            if event.get("turn") != len(turns) + 1:
                problems.append(f"turn-started says {event.get('turn')!r}, expected {len(turns) + 1}")
        elif etype == "turn-complete":
            if start is None:
                problems.append("turn-complete outside a turn")
                continue
            if event.get("turn") != len(turns) + 1:
                problems.append(f"turn-complete says {event.get('turn')!r}, expected {len(turns) + 1}")
            turns.append((start, body, event))
            start, body = None, []
        elif start is not None and etype not in ("result", "exit"):
            body.append(event)
        else:
            if etype not in _OUTSIDE:
                problems.append(f"{etype} (seq {event.get('seq')}) outside a turn")
            outside.append(event)
    if start is not None:
        turns.append((start, body, None))
        if events[-1].get("status") == "done":
            problems.append(f"turn {len(turns)} never completed in a done run")
    return turns, outside


def _check_turn(number: int, start: Event, body: list[Event], complete: Event | None) -> list[str]:
    problems: list[str] = []
    open_text: dict[str, list[str]] = {"text": [], "thinking": []}
    last_message: dict[str, Any] | None = None  # the last closed message, until another agent event
    calls: dict[str, Event] = {}
    results: dict[str, list[Event]] = {}
    llm = [e.get("type") for e in body if e.get("type") in ("llm-start", "llm-end")]
    # an interrupted turn's open tool calls are paired by the presenter after the agent's events
    pairing: list[Event] = []
    if complete is not None and complete.get("stop-reason") in ("aborted", "error"):
        for event in reversed(body):
            if event.get("type") == "tool-result" and event.get("is-error?") is True:
                pairing.append(event)
            elif event.get("type") in _AGENT_EVENTS:
                break
    for event in body:
        etype = str(event.get("type"))
        if any(event is p for p in pairing):
            etype = "paired-tool-result"
        kind = "thinking" if etype.startswith("assistant-thinking") else "text"
        if etype in ("assistant-text-delta", "assistant-thinking-delta"):
            other = "text" if kind == "thinking" else "thinking"
            if open_text[other]:
                problems.append(f"a {kind} delta while a {other} message is open (seq {event.get('seq')})")
            open_text[kind].append(str(event.get("delta", "")))
        elif etype in ("assistant-text", "assistant-thinking"):
            want = "".join(open_text[kind])
            got = event.get("text")
            cut = event.get("transport-truncated?") or event.get("truncated?")
            truncated = cut and isinstance(got, str) and want.startswith(_uncut(got))
            if got != want and not truncated:
                problems.append(f"{etype} (seq {event.get('seq')}) text {got!r} is not its deltas' {want!r}")
            if not open_text[kind]:
                problems.append(f"{etype} (seq {event.get('seq')}) without deltas")
            open_text[kind] = []
            last_message = dict(event)
            continue
        elif etype in _AGENT_EVENTS:
            for k, parts in open_text.items():
                if parts and etype != "llm-end":
                    problems.append(f"{etype} (seq {event.get('seq')}) while a {k} message is open")
            if etype == "llm-end":
                for k, parts in open_text.items():
                    if parts:
                        problems.append(f"llm-end while a {k} message is open (never closed)")
                        open_text[k] = []
            if etype == "llm-end" and last_message is not None and not last_message.get("final?"):
                if event.get("stop-reason") != "aborted":
                    problems.append(
                        f"{last_message.get('type')} seq {last_message.get('seq')} ended the turn, not final?"
                    )
        if etype in ("tool-call", "tool-result", "assistant-text-delta", "assistant-thinking-delta"):
            if last_message is not None and last_message.get("final?"):
                problems.append(
                    f"{last_message.get('type')} seq {last_message.get('seq')} says final? but {etype} followed"
                )
            last_message = None
        if etype == "tool-call":
            cid = event.get("id")
            if cid in calls:
                problems.append(f"tool call {cid!r} started twice")
            calls[str(cid)] = event
        elif etype in ("tool-result", "paired-tool-result"):
            cid = event.get("tool-call-id")
            if cid not in calls:
                problems.append(f"tool-result for {cid!r} before (or without) its tool-call")
            results.setdefault(str(cid), []).append(event)
            if event.get("id") not in (None, cid):
                problems.append(f"tool-result id {event.get('id')!r} is not its tool-call-id {cid!r}")
    for k, parts in open_text.items():
        if parts:
            problems.append(f"a {k} message never closed")
    for cid, call in calls.items():
        got = results.get(cid, [])
        if len(got) != 1:
            problems.append(f"tool call {cid!r} has {len(got)} results, expected 1")
            continue
        if got[0].get("name") not in (None, call.get("name")):
            problems.append(f"tool-result {cid!r} name {got[0].get('name')!r} != {call.get('name')!r}")
    users = [i for i, e in enumerate(body) if e.get("type") == "user"]
    firsts = [i for i, e in enumerate(body) if e.get("type") in _AGENT_EVENTS]
    failed_early = not firsts and complete is not None and complete.get("stop-reason") == "error"
    if (len(users) != 1 and not (failed_early and not users)) or (
        users and not isinstance(body[users[0]].get("text"), str)
    ):
        problems.append(f"a turn has one user event (the prompt's text), got {len(users)}")
    elif firsts and users and users[0] > firsts[0]:
        problems.append("the turn's user event comes after its agent events")
    agent = [e.get("type") for e in body if e.get("type") in _AGENT_EVENTS and not any(e is p for p in pairing)]
    if llm.count("llm-start") > 1 or llm.count("llm-end") > 1:
        problems.append(f"llm events {llm}: one prompt per turn, so at most one llm-start and one llm-end")
    if agent and agent[0] != "llm-start":
        problems.append(f"the turn's first agent event is {agent[0]}, not llm-start")
    if "llm-end" in agent and agent[-1] != "llm-end":
        problems.append(f"{agent[-1]} after llm-end")
    if complete is None:
        return problems
    reason = complete.get("stop-reason")
    if reason not in ("aborted", "error") and llm != ["llm-start", "llm-end"]:
        problems.append(f"a turn ended {reason!r} needs one llm-start and one llm-end, got {llm}")
    ends = [e for e in body if e.get("type") == "llm-end"]
    # a turn the bridge failed (the run fails) may have closed its prompt as aborted first
    if (
        ends
        and ends[-1].get("stop-reason") != reason
        and not (reason == "error" and ends[-1].get("stop-reason") == "aborted")
    ):
        problems.append(f"llm-end stop-reason {ends[-1].get('stop-reason')!r} != turn-complete's {reason!r}")
    for e in body:
        if e.get("type") == "llm-start" and e.get("provider") != "acp":
            problems.append(f"llm-start provider {e.get('provider')!r}, expected 'acp'")
    return problems


_CUT_NOTE = re.compile(r"\n\n\[fenwire: kept \d+ of \d+ bytes\]\Z")


def _uncut(text: str) -> str:
    """A string the wire cut to its byte budget, without the note (or ellipsis) that says so."""
    return _CUT_NOTE.sub("", text).rstrip("\u2026")


def _turn_events(turn: Turn, etype: str) -> list[Event]:
    return [e for e in turn[1] if e.get("type") == etype]


def _subsequence(want: Sequence[str], got: Sequence[str]) -> bool:
    it = iter(got)
    return all(any(w == g for g in it) for w in want)


def _check_expect(events: Sequence[Event], turns: list[Turn], expect: Expect) -> list[str]:
    problems: list[str] = []
    last = events[-1]
    if last.get("type") == "exit":
        if last.get("status") != expect.status:
            problems.append(
                f"exit status {last.get('status')!r} (error {last.get('error')!r}), expected {expect.status!r}"
            )
        error = last.get("error")
        if expect.error_prefix is not None:
            if not (isinstance(error, str) and error.startswith(expect.error_prefix)):
                problems.append(f"exit error {error!r} does not start with {expect.error_prefix!r}")
        elif expect.status == "done" and error:
            problems.append(f"a done run with error {error!r}")
    infos = [str(e.get("summary")) for e in events if e.get("type") == "info"]
    if not _subsequence(expect.infos, infos):
        problems.append(f"infos {infos} lack {expect.infos} (in order)")
    for pattern in expect.info_patterns:
        if not any(re.search(pattern, s) for s in infos):
            problems.append(f"no info matching {pattern!r} in {infos}")
    if expect.model is not None:
        for e in events:
            if e.get("type") == "llm-start" and e.get("model") != expect.model:
                problems.append(f"llm-start model {e.get('model')!r}, expected {expect.model!r}")
    if expect.turns is None:
        return problems
    if len(turns) != len(expect.turns):
        problems.append(f"{len(turns)} turns, expected {len(expect.turns)}")
    for number, (turn, want) in enumerate(zip(turns, expect.turns, strict=False), 1):
        problems += [f"turn {number}: {p}" for p in _check_turn_expect(turn, want)]
    return problems


def _check_turn_expect(turn: Turn, want: TurnExpect) -> list[str]:
    problems: list[str] = []
    texts = [e.get("text") for e in _turn_events(turn, "assistant-text")]
    text = texts[-1] if texts else None
    if want.text is not None and text != want.text:
        problems.append(f"text {text!r}, expected {want.text!r}")
    if want.text_ok is not None and not want.text_ok(text):
        problems.append(f"text {text!r} is not what the script allows")
    if want.deltas is not None:
        got_deltas = "".join(str(e.get("delta")) for e in _turn_events(turn, "assistant-text-delta"))
        if got_deltas != want.deltas:
            problems.append(f"text deltas make {len(got_deltas)} chars, not the script's {len(want.deltas)}")
    if want.thinking is not None:
        got = [e.get("text") for e in _turn_events(turn, "assistant-thinking")]
        if got != want.thinking:
            problems.append(f"thinking {got!r}, expected {want.thinking!r}")
    if want.tools is not None:
        calls = [(e.get("id"), e.get("name"), e.get("arguments")) for e in _turn_events(turn, "tool-call")]
        if calls != [t[:3] for t in want.tools]:
            problems.append(f"tool calls {calls!r}, expected {[t[:3] for t in want.tools]!r}")
        errors = {e.get("tool-call-id"): e.get("is-error?") for e in _turn_events(turn, "tool-result")}
        for cid, _, _, is_error in want.tools:
            if cid in errors and errors[cid] is not is_error:
                problems.append(f"tool {cid!r} is-error? {errors[cid]!r}, expected {is_error}")
    results = {e.get("tool-call-id"): e.get("result") for e in _turn_events(turn, "tool-result")}
    for cid, result in want.results.items():
        if results.get(cid) != result:
            problems.append(f"tool {cid!r} result {results.get(cid)!r}, expected {result!r}")
    infos = [str(e.get("summary")) for e in _turn_events(turn, "info") if "refs" not in e]
    if want.infos is not None and infos != want.infos:
        problems.append(f"infos {infos}, expected {want.infos}")
    if want.order is not None:
        order = [sig for sig in map(signature, turn[1]) if sig is not None]
        if order != want.order:
            problems.append(f"events in the order {order}, expected {want.order}")
    complete = turn[2]
    if want.stop_reason is not None:
        got_reason = complete.get("stop-reason") if complete is not None else None
        if got_reason != want.stop_reason:
            problems.append(f"stop reason {got_reason!r}, expected {want.stop_reason!r}")
    return problems


# -- per-agent expectations (from acp_agents/scripted.py) ------------------------------------------------

FINALIZE_PREFIX_WORDS = "plain text"


def expect_stream(prompts: Sequence[str], stop: str = "end_turn", flood: int = 0) -> Expect:
    """stream_agent answering ``prompts`` (one turn each), every turn with the ACP stop reason
    ``stop`` (``flood``: its ``--flood``; the message's ``assistant-text`` may then be cut)."""
    turns = [
        TurnExpect(
            text=None if flood else scripted.stream_text(i, p),
            deltas=scripted.stream_text(i, p, flood),
            thinking=["".join(scripted.STREAM_THOUGHTS)],
            tools=[],
            infos=[],
            order=["llm-start", "assistant-thinking", "assistant-text", "llm-end"],
            stop_reason=STOP_REASONS[stop],
        )
        for i, p in enumerate(prompts, 1)
    ]
    return Expect(turns=turns, model="stream-agent")


def tool_result(raw_output: Any, text: str | None) -> Any:
    """The wire ``result`` of a finished tool: its raw output, else the text of its content."""
    return raw_output if raw_output is not None else text


def expect_tools() -> Expect:
    tools = [(cid, title, raw or {}, status == "failed") for cid, title, raw, _, status, _, _ in scripted.TOOLS]
    results = {cid: tool_result(out, text) for cid, _, _, _, _, out, text in scripted.TOOLS}
    infos = ["plan: " + "; ".join(scripted.TOOLS_PLAN)]
    order = ["llm-start", "info:" + infos[0]]
    for cid, _, _, progress, _, _, _ in scripted.TOOLS:
        infos += [f"tool {cid} in_progress"] * progress
        order += [f"tool-call:{cid}", *[f"info:tool {cid} in_progress"] * progress, f"tool-result:{cid}"]
    order += ["assistant-text", "llm-end"]
    turn = TurnExpect(
        text=scripted.TOOLS_TEXT,
        thinking=[],
        tools=tools,
        results=results,
        infos=infos,
        stop_reason="stop",
        order=order,
    )
    return Expect(turns=[turn], model="tools-agent")


def cancel_stream_ok(text: str | None) -> bool:
    """cancel_agent's text so far: ticks 1..n (n >= 0)."""
    if text is None:
        return True
    n = text.count("\n")
    return text == "".join(scripted.cancel_chunk(i) for i in range(1, n + 1))


def expect_cancelled(*, status: str = "cancelled", error_prefix: str | None = None) -> Expect:
    """cancel_agent's run, its one turn interrupted: the open tool call paired as an error."""
    cid, title = scripted.CANCEL_TOOL
    turn = TurnExpect(text_ok=cancel_stream_ok, tools=[(cid, title, {"event": "cancel"}, True)], stop_reason="aborted")
    return Expect(turns=[turn], status=status, error_prefix=error_prefix, model="cancel-agent")


#: (permission policy, options) -> (option id chosen, option name or cancelled)
#: (``options`` is the agent's flag: ``""``, ``--no-reject-once`` or ``--allow-only``)
PERMISSION_CHOICES: dict[tuple[str, str], tuple[str | None, str]] = {
    ("deny", ""): ("opt-reject", "Reject"),
    ("allow-once", ""): ("opt-once", "Allow once"),
    ("allow-always", ""): ("opt-always", "Allow always"),
    ("deny", "--no-reject-once"): ("opt-never", "Never allow"),
    ("deny", "--allow-only"): (None, "cancelled"),
}


def expect_permission(policy: str, options: str = "") -> Expect:
    option, name = PERMISSION_CHOICES[(policy, options)]
    allowed = policy != "deny"
    cid, title, raw = scripted.PERMISSION_TOOL
    turn = TurnExpect(
        text=scripted.permission_text(allowed, option),
        tools=[(cid, title, raw, not allowed)],
        results={cid: {"written": 12} if allowed else "not permitted"},
        infos=[f"permission asked: {title}; answered: {name}"],
        stop_reason="stop",
        order=[
            "llm-start",
            f"tool-call:{cid}",
            f"info:permission asked: {title}; answered: {name}",
            f"tool-result:{cid}",
            "assistant-text",
            "llm-end",
        ],
    )
    return Expect(turns=[turn], model="permission-agent")


def expect_bad(mode: str, *, init_timeout: float | None = None) -> Expect:
    """bad_agent's run in ``mode`` (as the spec says it must end)."""
    message = "".join(scripted.BAD_MESSAGE)
    if mode == "no-init":
        return Expect(turns=[], status="failed", error_prefix="ACP agent did not answer initialize")
    if mode in ("no-session", "exit-at-start"):
        # the spec names no exact text for these: a clear error that starts with "ACP agent"
        return Expect(turns=[], status="failed", error_prefix="ACP agent")
    if mode == "exit-mid-turn":
        turn = TurnExpect(text_ok=lambda t: t in (None, scripted.BAD_MESSAGE[0]), tools=[], stop_reason="error")
        return Expect(turns=[turn], status="failed", error_prefix="ACP agent exited with code 3 during a turn")
    not_json = "ACP agent wrote a line that is not JSON-RPC; skipped"
    infos = {
        "garbage": [not_json],
        "banner": [not_json],
        "long-line": [f"ACP agent wrote a line of {LINE_CAP} bytes or more; skipped"],
        "unknown-session": [f"ACP update for unknown session {scripted.BAD_UNKNOWN_SESSION} skipped"],
        "stderr-flood": [],
    }[mode]
    patterns: list[str] = []
    # the others come inside the turn, exactly once; the banner before initialize is answered (the
    # spec does not say where its info goes: before ready or in the first turn)
    turn = TurnExpect(text=message, tools=[], infos=None if mode == "banner" else infos, stop_reason="stop")
    return Expect(turns=[turn], model="bad-agent", infos=infos, info_patterns=patterns)


#: raw_agent's modes -> the infos (regexes) its run must show; the first ones go in the message
_ID = "an id that is not a string, number or null"
RAW_INFOS = {
    "deep-line": [r"^ACP agent wrote a message nested more than \d+ levels deep; skipped$"],
    "list-id": [rf"^ACP agent answered with {_ID} \(\[\d+\]\); skipped$"],
    "object-id": [rf"^ACP agent answered with {_ID} \(\{{\"id\": \d+\}}\); skipped$"],
    "bool-id": [rf"^ACP agent answered with {_ID} \(true\); skipped$"],
    "error-string": [r'^ACP agent answered request \d+ with a malformed error \("boom"\); read as error -32603$'],
    "unknown-id": [
        rf"^ACP agent answered a request the bridge did not send or that had its answer \(id {scripted.RAW_UNKNOWN_ID}\); skipped$",
        r"^ACP agent answered a request the bridge did not send or that had its answer \(id 1\); skipped$",
    ],
    "bad-method": [
        r"^ACP agent sent a message whose method is not a string \(5\); skipped$",
        r'^ACP agent sent a message whose method is not a string \(\["session/request_permission"\]\); skipped$',
    ],
    "bad-notification": [
        r"^ACP agent sent a session/update that is not valid ACP \(update: Input tag 'bogus' .*\); skipped$",
        r'^ACP agent sent a notification the bridge does not know \("foo/bar"\); skipped$',
    ],
    "bad-params": [
        r'^ACP agent sent "session/update" with params that are not an object or array; skipped$',
        r'^ACP agent sent "session/request_permission" with params that are not an object or array; skipped$',
    ],
}


#: raw_agent lone-surrogate's answer: the wire escapes the lone surrogate and says so
RAW_LONE_TEXT = "".join(scripted.BAD_MESSAGE) + "\\uD800\n\n[fenwire: 1 unsafe character escaped]"


def expect_raw(mode: str) -> Expect:
    """raw_agent's run in ``mode``: the infos of :data:`RAW_INFOS`; the answer whole and the run
    ``done``, except ``error-string``, whose error answer fails the run."""
    if mode == "lone-surrogate":
        turn = TurnExpect(text=RAW_LONE_TEXT, tools=[], infos=[], stop_reason="stop")
        return Expect(turns=[turn], model="raw-agent")
    patterns = RAW_INFOS[mode]
    if mode == "error-string":
        turn = TurnExpect(text_ok=lambda t: t in (None, scripted.BAD_MESSAGE[0]), tools=[], stop_reason="error")
        return Expect(
            turns=[turn],
            status="failed",
            error_prefix="ACP agent answered session/prompt with error -32603: malformed error answer",
            model="raw-agent",
            info_patterns=patterns,
        )
    turn = TurnExpect(text="".join(scripted.BAD_MESSAGE), tools=[], stop_reason="stop")
    return Expect(turns=[turn], model="raw-agent", info_patterns=patterns)


# -- driving bridged children (for the tests) -------------------------------------------------------------

AGENTS = Path(__file__).resolve().parent / "acp_agents"
Condition = Callable[["Run"], bool]
Script = Callable[["Run"], Generator[Condition, None, None]]


def agent_command(file: str, *args: str) -> list[str]:
    """The argv of a test agent in ``acp_agents/``."""
    return [sys.executable, str(AGENTS / file), *args]


def with_pid(command: list[str], pid_file: str) -> list[str]:
    """``command`` (a test agent's) started through ``with_pid.py``: its pid lands in ``pid_file``."""
    return [command[0], str(AGENTS / "with_pid.py"), pid_file, *command[1:]]


def read_pid(pid_file: str) -> int | None:
    try:
        with open(pid_file, encoding="utf-8") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


@dataclass
class Run:
    """One bridged child being driven: its events (with their arrival times), the controls a
    script sent (by name) and, once finished, its log (the child's stdout/stderr)."""

    name: str
    child: LiveChild
    expect: Expect | None = None
    pid_file: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)
    sent_at: dict[str, float] = field(default_factory=dict)
    log: str = ""
    #: the size of the child's log (its stdout and stderr) on disk when it finished
    log_bytes: int = 0
    timed_out: bool = False
    script_error: BaseException | None = None
    agent_pid: int | None = None
    _script: Generator[Condition, None, None] | None = None
    _waiting: Condition | None = None

    def send(self, type_: str, payload: dict[str, Any] | None = None, *, name: str | None = None) -> int:
        seq = self.child.send(type_, payload)
        self.sent[name or type_] = seq
        self.sent_at[name or type_] = time.monotonic()
        return seq

    def count(self, type_: str, **fields: Any) -> int:
        return sum(1 for e in self.events if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()))

    def arrival(self, type_: str) -> float:
        """When the first event of ``type_`` arrived (monotonic seconds)."""
        return next(t for t, e in zip(self.arrivals, self.events, strict=True) if e["type"] == type_)

    def index(self, type_: str, **fields: Any) -> int:
        for i, e in enumerate(self.events):
            if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()):
                return i
        raise AssertionError(f"{self.name}: no {type_} {fields}\n{self.describe()}")

    @property
    def controls(self) -> list[int]:
        """The seqs of every control the parent sent (the initial prompt included)."""
        return sorted(self.child.channel.controls)

    def problems(self) -> list[str]:
        return check(self.events, self.expect, controls=self.controls)

    def describe(self) -> str:
        lines = [f"{self.name}: status {self.child.status}, error {self.child.error!r}, timed out {self.timed_out}"]
        for e in self.events:
            short = {k: v for k, v in e.items() if k not in ("v", "run", "timestamp", "summary") or e["type"] == "info"}
            text = repr(short)
            lines.append("  " + (text if len(text) < 240 else text[:240] + "..."))
        lines.append("  log: " + self.log[-3000:])
        return "\n".join(lines)


def close_after_turns(n: int = 1) -> Script:
    """A script: once ``n`` turns completed, close the run (it ends ``done``)."""

    def script(run: Run) -> Generator[Condition, None, None]:
        yield lambda r: r.count("turn-complete") >= n
        run.send("close")

    return script


def spawn_run(
    name: str,
    command: list[str],
    *,
    prompt: str | None = "Do the task.",
    expect: Expect | None = None,
    script: Script | None = None,
    pid_dir: str | None = None,
    via_cli: bool = False,
    **kwargs: Any,
) -> Run:
    """Spawn one bridged child (``spawn(acp=command)``); with ``pid_dir`` the agent is started
    through ``with_pid.py``, which writes its pid there (so its process group can be checked
    afterwards). ``via_cli``: the child is started as ``fenwire child --acp [options] -- COMMAND``
    (``spawn(command=...)``), the ``acp_*`` keywords becoming its options."""
    pid_file = None
    if pid_dir is not None:
        pid_file = os.path.join(pid_dir, name + ".pid")
        command = with_pid(command, pid_file)
    kwargs.setdefault("timeout", HANG_GUARD)
    if via_cli:  # the CLI sugar: fenwire child --acp [--acp-OPTION VALUE ...] -- COMMAND
        flags: list[str] = []
        for key in ("acp_permissions", "acp_grace", "acp_init_timeout"):
            if key in kwargs:
                flags += ["--" + key.replace("_", "-"), str(kwargs.pop(key))]
        argv = [sys.executable, "-m", "fenwire_fast", "child", "--acp", *flags, "--", *command]
        child = spawn(prompt, command=argv, env=child_env(), run=f"run-{name}", **kwargs)
    else:
        child = spawn(prompt, acp=command, env=child_env(), run=f"run-{name}", **kwargs)
    run = Run(name, child, expect=expect, pid_file=pid_file)
    if script is not None:
        run._script = script(run)
        _advance(run)
    return run


def drive(runs: Iterable[Run], *, timeout: float = HANG_GUARD) -> dict[str, Run]:
    """Drain every run until all have finished (the timeout only guards against a hang; runs still
    going then are marked ``timed_out`` and killed), advancing their scripts; keep each child's log
    and the pid of its agent; clean the children up. Returns the runs by name."""
    runs = list(runs)
    try:
        end = time.monotonic() + timeout
        while any(not r.child.finished for r in runs):
            progressed = False
            for run in runs:
                if run.child.finished:
                    continue
                messages, _ = run.child.poll()
                if messages:
                    now = time.monotonic()
                    run.events.extend(messages)
                    run.arrivals.extend([now] * len(messages))
                    progressed = True
                _advance(run)
            if time.monotonic() > end:
                for run in runs:
                    run.timed_out = not run.child.finished
                break
            if not progressed:
                time.sleep(0.005)
    finally:
        for run in runs:
            run.log = run.child.log_text()
            try:
                run.log_bytes = os.path.getsize(run.child.log_path)
            except OSError:
                pass
            if run.pid_file is not None:
                run.agent_pid = read_pid(run.pid_file)
            run.child.cleanup()
    return {r.name: r for r in runs}


def _advance(run: Run) -> None:
    while run._script is not None:
        if run._waiting is not None and not run._waiting(run):
            return
        try:
            run._waiting = next(run._script)
        except StopIteration:
            run._script = None
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            run.script_error = exc
            run._script = None


def wait_group_gone(pgid: int, *, timeout: float = 10.0) -> None:
    """Wait (bounded) until no process is left in group ``pgid``; fail naming what is left."""
    end = time.monotonic() + timeout
    while not group_empty(pgid):
        if time.monotonic() > end:
            raise AssertionError(f"process group {pgid} not empty after {timeout} s: {group_members(pgid)}")
        time.sleep(0.02)


def assert_clean(run: Run) -> None:
    """The run left nothing behind: no traceback in its log, its group and its agent's group gone."""
    assert not run.timed_out, run.describe()
    assert run.script_error is None, f"{run.script_error!r}\n{run.describe()}"
    assert "Traceback" not in run.log, run.describe()
    assert_groups_empty([run.child])
    if run.pid_file is not None:
        assert run.agent_pid is not None, f"the agent never wrote its pid\n{run.describe()}"
        wait_group_gone(run.agent_pid)
