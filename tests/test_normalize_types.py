"""normalize: the reference's per-type table with our fixes (docs/design-decisions.md, "normalize").

normalize is written once above the backend boundary; the text primitives under it come from the
selected backend, so these run under both CI legs.
"""

from __future__ import annotations

import math

import fenwire_fast as fw
import orjson
import pytest
from fenwire_fast.normalize import DEPTH_LIMIT_TEXT, normalize, summarize, timestamp

NOW = 1_790_000_000  # 2026-09-21T...Z


def wire_ok(out: dict) -> bytes:
    """The normalized event, stamped and encoded: it must validate and fit the line with room."""
    line, rejection = fw.Sender("event", "run").next(out["type"], out)
    assert rejection is None, rejection
    assert len(line) < fw.MAX_LINE_BYTES // 2
    return line


def test_timestamp_formats() -> None:
    assert timestamp(0) == "1970-01-01T00:00:00Z"
    assert timestamp(86400.9) == "1970-01-02T00:00:00Z"
    assert timestamp("given") == "given"
    assert len(timestamp()) == 20


def test_tool_call() -> None:
    out = normalize({"type": "tool-call", "name": "read", "id": "c1", "arguments": {"path": "R.md"}}, now=0)
    assert out == {
        "type": "tool-call",
        "timestamp": "1970-01-01T00:00:00Z",
        "name": "read",
        "id": "c1",
        "arguments": {"path": "R.md"},
        "summary": '{"path":"R.md"}',
    }
    wire_ok(out)


def test_tool_call_without_name_gets_empty_name() -> None:
    out = normalize({"type": "tool-call"}, now=0)
    assert out["name"] == ""
    assert "arguments" not in out
    wire_ok(out)


def test_tool_result_summary_from_content_and_error_flag_from_result() -> None:
    ev = {
        "type": "tool-result",
        "name": "read",
        "duration-seconds": 0.5,
        "result": {"content": "# fen", "is-error?": True},
    }
    out = normalize(ev, now=0)
    assert out["is-error?"] is True
    assert out["summary"] == "# fen"
    assert out["duration-seconds"] == 0.5
    assert out["result"] == {"content": "# fen", "is-error?": True}
    assert "transport-truncated?" not in out
    wire_ok(out)


@pytest.mark.parametrize("result", [None, 5, True, "text", [1, 2], 1.5])
def test_tool_result_is_total_on_non_dict_results(result: object) -> None:
    out = normalize({"type": "tool-result", "name": "x", "result": result}, now=0)
    assert out["is-error?"] is False
    assert out["result"] == result
    wire_ok(out)


def test_big_tool_result_is_cut_within_budget() -> None:
    ev = {"type": "tool-result", "name": "read", "result": {"content": [{"type": "text", "text": "x" * 50_000}]}}
    out = normalize(ev, now=0)
    assert out["transport-truncated?"] is True
    text = out["result"]["content"][0]["text"]
    assert len(text.encode()) <= fw.EVENT_STRING_BYTES
    assert "kept" in text
    wire_ok(out)


def test_payload_budget_spans_all_strings() -> None:
    ev = {"type": "tool-call", "name": "n", "arguments": {f"k{i}": "y" * 4000 for i in range(10)}}
    out = normalize(ev, now=0)
    total = sum(len(k) + len(v) for k, v in out["arguments"].items())
    assert total <= fw.EVENT_PAYLOAD_BYTES
    assert out["transport-truncated?"] is True
    wire_ok(out)


def test_entries_budget() -> None:
    out = normalize({"type": "tool-call", "name": "n", "arguments": list(range(200))}, now=0)
    assert out["arguments"] == list(range(fw.EVENT_TABLE_ENTRIES))
    assert out["transport-truncated?"] is True


def test_depth_limit() -> None:
    value: object = 1
    for _ in range(12):
        value = [value]
    out = normalize({"type": "tool-call", "name": "n", "arguments": value}, now=0)
    inner = out["arguments"]
    depth = 0
    while isinstance(inner, list):
        inner = inner[0]
        depth += 1
    assert inner == DEPTH_LIMIT_TEXT
    assert depth == fw.EVENT_MAX_DEPTH + 1
    assert out["transport-truncated?"] is True


def test_nulls_and_empty_arrays_survive() -> None:
    out = normalize({"type": "tool-call", "name": "n", "arguments": {"a": None, "b": [], "c": {}}}, now=0)
    assert out["arguments"] == {"a": None, "b": [], "c": {}}
    assert "transport-truncated?" not in out
    assert b'"b":[]' in wire_ok(out)


def test_unencodable_values_become_strings() -> None:
    args = {"nan": math.nan, "inf": math.inf, "big": 2**70, "obj": object, 3: "int key", "t": (1, 2)}
    out = normalize({"type": "tool-call", "name": "n", "arguments": args}, now=0)
    assert out["arguments"]["nan"] == "nan"
    assert out["arguments"]["big"] == str(2**70)
    assert out["arguments"]["3"] == "int key"
    assert out["arguments"]["t"] == [1, 2]
    assert out["transport-truncated?"] is True
    wire_ok(out)


def test_control_characters_and_surrogates_are_escaped() -> None:
    out = normalize({"type": "assistant-text-delta", "delta": "a\x01b\ud800c", "content-index": 1}, now=0)
    assert out["delta"].startswith("a\\x01b\\uD800c")
    assert out["transport-truncated?"] is True
    wire_ok(out)


def test_assistant_text_and_deltas() -> None:
    out = normalize({"type": "assistant-text", "text": "Hello\nworld", "content-index": 2}, now=0)
    assert out == {
        "type": "assistant-text",
        "timestamp": "1970-01-01T00:00:00Z",
        "final?": False,
        "content-index": 2,
        "text": "Hello\nworld",
        "summary": "Hello",
    }
    delta = normalize({"type": "assistant-thinking-delta", "delta": "hm", "content-index": 1.5}, now=0)
    assert "content-index" not in delta
    assert delta["delta"] == "hm"


@pytest.mark.parametrize(
    "value,want",
    [
        (0, False),
        (0.0, False),
        ("", False),
        ([], False),
        (None, False),
        (1, True),
        ("false", True),
        ("no", True),
        ([0], True),
    ],
)
def test_flags_are_coerced_with_python_truthiness(value: object, want: bool) -> None:
    """``final?`` and ``is-error?`` become ``bool(value)``: ``0`` and ``""`` are false (the reference,
    with Lua's truthiness, makes ``0`` true); any non-empty string, ``"false"`` included, is true
    (docs/design-decisions.md, "Where we differ")."""
    assert normalize({"type": "assistant-text", "text": "x", "final?": value}, now=NOW)["final?"] is want
    assert normalize({"type": "assistant-stream-end", "final?": value}, now=NOW)["final?"] is want
    assert (
        normalize({"type": "tool-result", "name": "t", "result": "r", "is-error?": value}, now=NOW)["is-error?"] is want
    )
    assert normalize({"type": "tool-result", "name": "t", "result": {"is-error?": value}}, now=NOW)["is-error?"] is want


def test_stream_end_llm_and_agent_started_have_no_summary() -> None:
    assert normalize({"type": "assistant-stream-end", "final?": 1}, now=0) == {
        "type": "assistant-stream-end",
        "timestamp": "1970-01-01T00:00:00Z",
        "final?": True,
    }
    llm = normalize({"type": "llm-end", "stop-reason": "stop", "usage": {"input": 3}}, now=0)
    assert llm["usage"] == {"input": 3} and "summary" not in llm
    started = normalize({"type": "agent-started", "provider": "p", "model": "m"}, {"cwd": "/meta"}, now=0)
    assert "cwd" not in started  # agent-started's own cwd replaces the meta one, even when absent


def test_meta_fields() -> None:
    meta = {"run-id": "r", "agent": "scout", "cwd": "/w", "physical-cwd": "/p", "requested-cwd": "", "other": "x"}
    out = normalize({"type": "user", "text": "hi"}, meta, now=0)
    assert [k for k in out] == [
        "type",
        "timestamp",
        "run-id",
        "agent",
        "requested-cwd",
        "cwd",
        "physical-cwd",
        "text",
        "summary",
    ]
    assert out["requested-cwd"] == ""


def test_summary_is_first_line_and_utf8_safe() -> None:
    text = "é" * 200
    s = summarize(text)
    assert len(s.encode()) <= fw.SUMMARY_BYTES
    assert s.endswith("\u2026")
    assert summarize("line one\nline two") == "line one"
    assert summarize(None) == ""
    assert summarize({"a": 1}) == '{"a":1}'


def test_error_and_agent_turn_complete() -> None:
    err = normalize({"type": "error", "text": "boom", "source": "provider"}, now=0)
    assert err["error"] == "boom" and err["source"] == "provider"
    done = normalize({"type": "agent-turn-complete", "status": "done", "error": "oops"}, now=0)
    assert done["summary"] == "oops" and done["error"] == "oops"
    wire_ok(err)
    wire_ok(done)


def test_info_keeps_summary_and_valid_refs() -> None:
    out = normalize({"type": "info", "summary": "dropped 2", "refs": [3, 0, "x", 5]}, now=0)
    assert out["summary"] == "dropped 2"
    assert out["refs"] == [3, 5]
    wire_ok(out)


@pytest.mark.parametrize(
    "event", [None, 5, "text", [1], {"type": "ready"}, {"type": 7}, {"type": "subagent-start", "task": "t"}, {}]
)
def test_non_display_input_becomes_info(event: object) -> None:
    out = normalize(event, now=0)
    assert out["type"] == "info"
    wire_ok(out)


def test_steering_events_carry_no_ref_from_normalize() -> None:
    out = normalize({"type": "steering-injected", "text": "t", "ref": 4}, now=0)
    assert "ref" not in out


def test_output_is_json_safe_for_huge_strings() -> None:
    out = normalize({"type": "user", "text": '\\"' * 30_000}, now=0)
    line = wire_ok(out)
    assert orjson.loads(line)["text"] == out["text"]
