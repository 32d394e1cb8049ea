"""The transcript oracle (``fenwire_fast.testing.check_transcript``): independent of the code under test, strict about
which script each turn follows, and able to tell a damaged transcript from a good one.

Real transcripts come from live mock children; each damage is applied to a copy, and (unless the
damage is the seq itself) the seqs are renumbered afterwards so that only the content checks can
catch it.
"""

from __future__ import annotations

import ast
import copy
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from fenwire_fast.live.child import mock_agent
from fenwire_fast.live.child.mock_agent import config_from_mapping
from fenwire_fast.testing import check_transcript, transcript, wire_form
from live_harness import Ctx, Outcome, Scenario, at_gate, gated, run_scenarios, seen, unwinding

Events = list[dict[str, Any]]

MOCKS: dict[str, dict[str, Any]] = {
    "finalize": {"steps": 2, "deltas": 3, "thinking": 1, "tools": 2},
    "big": {
        "steps": 2,
        "deltas": 2,
        "delta_bytes": 5000,
        "thinking": 1,
        "tools": 1,
        "tool_result_bytes": 9000,
        "final_bytes": 300,
    },
    "cancel-in-tool": {"steps": 2, "deltas": 2, "tools": 2, "hang_step": 1},
    # held at the gate of step 2 when finalize arrives, and again on its way out
    "finalize-mid-turn": gated({"steps": 2, "deltas": 20, "tools": 1}, [2], unwind=True),
}


def _finalize_when_idle(ctx: Ctx) -> Any:
    yield seen("turn-complete")
    yield lambda c: c.child.channel.idle
    ctx.send("finalize", {"note": "wrap up"})


def _close_when_idle(ctx: Ctx) -> Any:
    yield seen("turn-complete")
    yield lambda c: c.child.channel.idle
    ctx.send("close")


def _cancel_in_tool(ctx: Ctx) -> Any:
    yield seen("tool-call")
    ctx.send("cancel")


def _finalize_mid_turn(ctx: Ctx) -> Any:
    yield at_gate(1, 2)
    ctx.send("finalize")
    yield unwinding(1)
    ctx.release()


@pytest.fixture(scope="module")
def out() -> dict[str, Outcome]:
    scripts = {
        "finalize": _finalize_when_idle,
        "big": _close_when_idle,
        "cancel-in-tool": _cancel_in_tool,
        "finalize-mid-turn": _finalize_mid_turn,
    }
    return run_scenarios([Scenario(name, scripts[name], mock=MOCKS[name]) for name in MOCKS])


def _check(name: str, events: Events, controls: Any = "real", o: Outcome | None = None) -> list[str]:
    mock = MOCKS[name]
    if mock.get("gate_steps") or mock.get("unwind_gate"):
        mock = {**mock, "gate_path": "gate"}  # where the gate file is does not change the script
    config = config_from_mapping(mock)
    if controls == "real":
        assert o is not None
        controls = o.child.channel.controls
    return check_transcript(config, events, controls=controls)


# -- real runs are exact -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MOCKS))
def test_real_transcripts_pass(out: dict[str, Outcome], name: str) -> None:
    o = out[name]
    assert not o.timed_out and o.script_error is None, o.describe()
    assert _check(name, o.events, o=o) == [], o.describe()
    assert _check(name, o.events, controls=None) == []  # the lenient mode accepts them too


def test_the_real_runs_cover_what_the_oracle_models(out: dict[str, Outcome]) -> None:
    assert out["finalize"].status == "done" and out["big"].status == "done"
    big = out["big"].events
    assert any(e.get("transport-truncated?") for e in big)
    assert any("[fenwire: kept " in str(e.get("delta", "")) for e in big)
    assert any(e.get("summary", "").endswith("\u2026") for e in big)
    cancelled = out["cancel-in-tool"]
    assert cancelled.status == "cancelled"
    assert any(e["type"] == "tool-result" and e.get("result") == "cancelled" for e in cancelled.events)
    mid = out["finalize-mid-turn"]
    assert [e["stop-reason"] for e in mid.events if e["type"] == "turn-complete"] == ["aborted", "stop"]


# -- the script each turn must follow ------------------------------------------------------------


def test_a_finalize_turn_must_be_tool_free_and_a_prompt_turn_full(out: dict[str, Outcome]) -> None:
    o = out["finalize"]
    types = {seq: sent.type for seq, sent in o.child.channel.controls.items()}
    assert sorted(types.values()) == ["finalize", "prompt"]
    assert _check("finalize", o.events, controls=types) == []
    # said the other way round, both turns are wrong
    swapped = {seq: ("prompt" if t == "finalize" else "finalize") for seq, t in types.items()}
    problems = _check("finalize", o.events, controls=swapped)
    assert any(p.startswith("turn 1 ") and "tool-free script" in p for p in problems), problems
    assert any(p.startswith("turn 2 ") and "full script" in p for p in problems), problems


def test_a_prompt_turn_cut_to_the_tool_free_script_is_caught(out: dict[str, Outcome]) -> None:
    """Turn 1 replaced by a copy of the tool-free turn 2 (renumbered): fine only for the lenient mode."""
    o = out["finalize"]
    events = copy.deepcopy(o.events)
    starts = [i for i, e in enumerate(events) if e["type"] == "turn-started"]
    ends = [i for i, e in enumerate(events) if e["type"] == "turn-complete"]
    turn2 = copy.deepcopy(events[starts[1] + 1 : ends[1] + 1])
    for e in turn2:
        if e["type"] == "turn-complete":
            e["turn"] = 1
        for key in ("summary", "text"):
            if e["type"] == "user":
                e[key] = events[starts[0] + 1][key]
    for e in turn2:  # turn 2's answer and usage, as turn 1 would have had them
        if e["type"] == "assistant-text":
            e["text"] = mock_agent.final_text(config_from_mapping(MOCKS["finalize"]), 1)
            e["summary"] = e["text"]
        if e["type"] in ("llm-end", "turn-complete"):
            e["usage"] = {"input": 101, "output": 4}
    events[starts[0] + 1 : ends[0] + 1] = turn2
    events = _renumber(events)
    problems = _check("finalize", events, o=o)
    assert any(p.startswith("turn 1 ") and "full script" in p for p in problems), problems


# -- damage is caught ----------------------------------------------------------------------------


def _renumber(events: Events) -> Events:
    for i, e in enumerate(events, 1):
        e["seq"] = i
    return events


def _index(events: Events, type_: str, n: int = 1) -> int:
    return [i for i, e in enumerate(events) if e["type"] == type_][n - 1]


def _drop(events: Events) -> Events:
    del events[_index(events, "assistant-text-delta", 2)]
    return _renumber(events)


def _duplicate(events: Events) -> Events:
    i = _index(events, "tool-result")
    events.insert(i, copy.deepcopy(events[i]))
    return _renumber(events)


def _reorder(events: Events) -> Events:
    i = _index(events, "assistant-text-delta", 2)
    events[i], events[i + 1] = events[i + 1], events[i]
    return _renumber(events)


def _alter_text(events: Events) -> Events:
    events[_index(events, "assistant-text-delta", 3)]["delta"] += "!"
    return events


def _alter_summary(events: Events) -> Events:
    e = events[_index(events, "tool-result")]
    e["summary"] = e["summary"][:-1]
    return events


def _mark_truncated(events: Events) -> Events:
    events[_index(events, "assistant-text", 1)]["transport-truncated?"] = True
    return events


def _drop_field(events: Events) -> Events:
    del events[_index(events, "llm-start")]["model"]
    return events


def _alter_final_flag(events: Events) -> Events:
    e = events[_index(events, "assistant-stream-end")]
    e["final?"] = not e["final?"]
    return events


def _wrong_seq(events: Events) -> Events:
    events[4]["seq"] = 7
    return events


def _missing_exit(events: Events) -> Events:
    events.pop()
    return events


def _result_not_before_exit(events: Events) -> Events:
    result = events.pop(-2)
    events.insert(_index(events, "turn-complete", 2), result)
    return _renumber(events)


def _result_dropped(events: Events) -> Events:
    del events[-2]
    return _renumber(events)


def _two_exits(events: Events) -> Events:
    events.append(copy.deepcopy(events[-1]))
    return _renumber(events)


def _wrong_usage(events: Events) -> Events:
    e = events[_index(events, "turn-complete")]
    e["usage"] = {**e["usage"], "output": e["usage"]["output"] + 1}
    return events


def _wrong_turn_stop(events: Events) -> Events:
    events[_index(events, "turn-complete")]["stop-reason"] = "tool-use"
    return events


def _wrong_turn_number(events: Events) -> Events:
    events[_index(events, "turn-complete", 2)]["turn"] = 1
    return events


def _result_usage(events: Events) -> Events:
    events[-2]["usage"] = {"input": 1}
    return events


def _result_text(events: Events) -> Events:
    events[-2]["final-text"] = "something else"
    return events


def _cut_whole_turn(events: Events) -> Events:
    """The end of turn 1 goes missing but its turn-complete says it ran to its end."""
    del events[_index(events, "turn-complete") - 3 : _index(events, "turn-complete")]
    return _renumber(events)


DAMAGE: dict[str, tuple[Callable[[Events], Events], str]] = {
    "dropped event": (_drop, "turn 1 event"),
    "duplicated event": (_duplicate, "turn 1 event"),
    "reordered events": (_reorder, "turn 1 event"),
    "altered text": (_alter_text, "turn 1 event"),
    "altered summary": (_alter_summary, "turn 1 event"),
    "a false transport-truncated?": (_mark_truncated, "turn 1 event"),
    "a dropped field": (_drop_field, "turn 1 event"),
    "a flipped final?": (_alter_final_flag, "turn 1 event"),
    "wrong seq": (_wrong_seq, "event 5 has seq 7, expected 5"),
    "missing exit": (_missing_exit, "last event is result, not exit"),
    "result not right before exit": (_result_not_before_exit, "result is not right before exit"),
    "a done run without its result": (_result_dropped, "a done run without a result"),
    "two exits": (_two_exits, "2 exit events"),
    "turn-complete with wrong usage": (_wrong_usage, "turn 1 usage"),
    "turn-complete with wrong stop-reason": (_wrong_turn_stop, "turn 1 stop-reason 'tool-use', expected 'stop'"),
    "turn-complete with the wrong turn": (_wrong_turn_number, "turn-complete says 1, expected 2"),
    "result with wrong usage": (_result_usage, "result usage"),
    "result with the wrong answer": (_result_text, "result final-text 'something else'"),
    "a turn cut short but not aborted": (_cut_whole_turn, "turn 1: got"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_is_caught(out: dict[str, Outcome], damage: str) -> None:
    o = out["finalize"]
    harm, expected = DAMAGE[damage]
    events = harm(copy.deepcopy(o.events))
    for controls in ("real", None):
        problems = _check("finalize", events, controls=controls, o=o)
        assert any(expected in p for p in problems), f"{damage}: {problems}"


# -- a cut-short turn: a prefix, then one cancelled result per open call -------------------------


def test_a_prefix_passes_only_where_the_turn_was_cut_short(out: dict[str, Outcome]) -> None:
    o = out["cancel-in-tool"]
    events = o.events
    assert _check("cancel-in-tool", events, o=o) == []
    complete = _index(events, "turn-complete")
    assert events[complete - 1]["result"] == "cancelled"
    # the cancelled result is owed: without it the aborted turn is wrong
    without = _renumber(copy.deepcopy(events[: complete - 1] + events[complete:]))
    assert any("turn 1" in p for p in _check("cancel-in-tool", without, o=o))
    # two of them are one too many
    twice = copy.deepcopy(events)
    twice.insert(complete, copy.deepcopy(events[complete - 1]))
    assert any("turn 1" in p for p in _check("cancel-in-tool", _renumber(twice), o=o))
    # the same prefix with a stop reason other than aborted / error is wrong
    stopped = copy.deepcopy(events)
    stopped[complete]["stop-reason"] = "stop"
    assert any("turn 1" in p for p in _check("cancel-in-tool", stopped, o=o))
    # "error" is the other way a turn is cut short
    failed = copy.deepcopy(events)
    failed[complete]["stop-reason"] = "error"
    assert _check("cancel-in-tool", failed, o=o) == []


def test_an_aborted_turn_must_still_match_its_prefix(out: dict[str, Outcome]) -> None:
    o = out["finalize-mid-turn"]
    assert _check("finalize-mid-turn", o.events, o=o) == []
    events = copy.deepcopy(o.events)
    events[_index(events, "assistant-text-delta", 2)]["delta"] = "not the script"
    problems = _check("finalize-mid-turn", events, o=o)
    assert any(re.match(r"turn 1\b", p) for p in problems), problems


# -- the mock's gate announcements are part of the script -----------------------------------------


def test_gate_announcements_are_checked_exactly(out: dict[str, Outcome]) -> None:
    o = out["finalize-mid-turn"]
    events = o.events
    gate = _index(events, "info")
    assert events[gate]["summary"] == "mock gate: turn 1 step 2"
    unwind = _index(events, "info", 2)
    assert events[unwind]["summary"] == "mock gate: turn 1 unwinding"
    assert events[unwind - 1]["type"] == "control-ack"  # the finalize, read while held at the gate
    assert _check("finalize-mid-turn", events, o=o) == []
    # (without its step-2 announcement the turn would still be a valid prefix: cut just before it)
    dropped = _renumber(copy.deepcopy(events[:unwind] + events[unwind + 1 :]))
    assert any(p.startswith("turn 1") for p in _check("finalize-mid-turn", dropped, o=o))
    for i in (gate, unwind):
        altered = copy.deepcopy(events)
        altered[i]["summary"] = "mock gate: turn 1 step 1"
        assert any(p.startswith("turn 1") for p in _check("finalize-mid-turn", altered, o=o)), i
    # the child's own info (dropped input, with refs) may come anywhere; the mock's may not
    extra = copy.deepcopy(events)
    extra.insert(gate, {**events[gate], "refs": [7], "summary": "dropped 1 queued input line(s)"})
    assert _check("finalize-mid-turn", _renumber(extra), o=o) == []
    stray = copy.deepcopy(events)
    stray.insert(1, copy.deepcopy(events[gate]))
    assert "info outside a turn" in _check("finalize-mid-turn", _renumber(stray), o=o)


# -- the oracle's own wire forms, spelled out ----------------------------------------------------


def test_wire_string_and_summary_are_the_documented_bounds() -> None:
    assert wire_form.wire_string("short") == ("short", False)
    cut, was_cut = wire_form.wire_string("a" * 5000)
    assert was_cut and cut == "a" * 4060 + "\n\n[fenwire: kept 4060 of 5000 bytes]"
    assert len(cut.encode()) == 4096
    assert wire_form.wire_summary("line one\nline two") == "line one"
    assert wire_form.wire_summary("é" * 100) == "é" * 78 + "\u2026"  # 156 + 3 bytes: never half a character
    assert wire_form.wire_summary("x" * 160) == "x" * 160
    with pytest.raises(ValueError, match="escaped"):
        wire_form.wire_string("bell \x07")


def test_the_oracle_uses_none_of_the_code_under_test() -> None:
    """The wire model imports nothing of the package and the checker only the mock's script, and
    neither names anything from normalize, the text bounds or the codec (``str.encode`` /
    ``bytes.decode`` are Python's, not the package's)."""
    allowed = {
        wire_form: {"__future__", "json", "collections.abc", "typing"},
        transcript: {
            "__future__",
            "collections.abc",
            "dataclasses",
            "typing",
            "live.child.agent",
            "live.child.mock_agent",
            "wire_form",
        },
    }
    for module, may_import in allowed.items():
        tree = ast.parse(inspect.getsource(module))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert imported <= may_import, (module.__name__, imported - may_import)
        _names_none_of_the_package(tree)


def _names_none_of_the_package(tree: ast.AST) -> None:
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    package = {
        "normalize",
        "summarize",
        "scrub",
        "first_line",
        "truncate_line",
        "utf8_prefix",
        "Receiver",
        "Sender",
        "validate",
        "message",
        "SUMMARY_BYTES",
        "EVENT_STRING_BYTES",
    }
    assert not (names | attributes) & package, (names | attributes) & package
    assert not names & {"encode", "decode"}
