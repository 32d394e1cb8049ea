#!/usr/bin/env python3
"""Write the golden wire fixtures in tests/fixtures/wire/ (run from anywhere; no package import).

Every expectation here is written out by hand from docs/wire-protocol.md and docs/design-decisions.md
(the envelope/payload tables, the check order, the rejection fields and our reason texts); it is
*not* produced by running either backend. The tests load the files and assert them for both.

- ``events.jsonl`` / ``controls.jsonl``: valid wire lines (compact, orjson-identical bytes), every
  one of the 22 event and 6 control types, with all their optional fields, minimal variants and the
  edge values the dialect allows. ``seq`` increases through each file, so a Receiver accepts all.
- ``invalid.jsonl``: one JSON record per bad line: ``direction``, ``line`` (or ``line_hex`` for
  bytes that are not UTF-8, or ``line_repeat`` = [prefix, filler, count, suffix] for huge lines),
  ``code``, ``fatal``, ``seq``, ``type``, ``run``, ``reason`` and ``errors`` (a list of
  [field, message] pairs, or null), and optionally ``before``: lines fed to the same Receiver
  first (for ``out-of-order``), in which case the record is checked through ``Receiver.receive``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "wire"
MAX_SAFE = 2**53 - 1
RUN = "run-7"

R_TOO_LARGE = "line is 65536 bytes or more; the limit is 65535"
R_NOT_UTF8 = "line is not valid UTF-8"
R_NOT_JSON = "line is not valid JSON"
R_NOT_OBJECT = "line is not a JSON object"
R_DIRECTION = 'direction must be "event" or "control"'
R_V_REQUIRED = "v is required"


def compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


DISPLAY = {
    "timestamp": "2026-09-25T00:00:00Z",
    "summary": "short summary \u2026",
    "run-id": "subagent-1",
    "agent": "scout",
    "requested-cwd": "~/work",
    "cwd": "/work",
    "physical-cwd": "/srv/work",
    "transport-truncated?": True,
}

# (type, payload) for events, in file order; seq is stamped 1, 2, 3, ...
EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("ready", {}),
    ("control-ack", {"ref": 1, "status": "accepted"}),
    ("control-ack", {"ref": 2, "status": "rejected", "reason": "run is closing"}),
    ("control-ack", {"status": "rejected", "reason": "line is not valid JSON"}),
    ("control-ack", {"ref": 3, "status": "applied", "reason": "already finalizing"}),
    ("turn-started", {"turn": 1}),
    ("agent-started", {**DISPLAY, "provider": "anthropic", "model": "claude"}),
    ("agent-started", {}),
    ("user", {**DISPLAY, "text": "Inspect the README, caf\u00e9 \u2603 \U0001f600."}),
    ("user", {}),
    ("llm-start", {**DISPLAY, "provider": "anthropic", "model": "claude"}),
    ("llm-start", {}),
    ("assistant-thinking-delta", {**DISPLAY, "content-index": 1, "delta": "Look"}),
    ("assistant-thinking-delta", {}),
    ("assistant-thinking", {**DISPLAY, "final?": False, "content-index": 1, "text": "Look at the file."}),
    ("assistant-thinking", {"final?": True}),
    ("assistant-text-delta", {**DISPLAY, "content-index": 2, "delta": "Read"}),
    ("assistant-text-delta", {"content-index": -1}),
    ("assistant-text", {**DISPLAY, "final?": True, "content-index": 2, "text": "Reading it."}),
    ("assistant-text", {"final?": False, "content-index": 0}),
    ("assistant-stream-end", {**DISPLAY, "final?": False}),
    ("assistant-stream-end", {"final?": True}),
    ("llm-end", {**DISPLAY, "stop-reason": "tool-use", "usage": {"input": 120, "output": 30, "cost": 0.0125}}),
    ("llm-end", {"usage": []}),
    ("llm-end", {}),
    (
        "tool-call",
        {**DISPLAY, "name": "read", "id": "call-1", "arguments": {"path": "README.md", "lines": [1, 20], "opt": None}},
    ),
    ("tool-call", {"name": "noop"}),
    ("tool-call", {"name": "raw", "arguments": "not an object"}),
    ("tool-call", {"name": "null-args", "arguments": None}),
    (
        "tool-result",
        {
            **DISPLAY,
            "name": "read",
            "id": "call-1",
            "tool-call-id": "call-1",
            "duration-seconds": 0.01,
            "is-error?": False,
            "result": {"content": [{"type": "text", "text": "# fen"}], "details": None},
        },
    ),
    ("tool-result", {"name": "read", "is-error?": True}),
    ("tool-result", {"name": "sleep", "is-error?": False, "duration-seconds": 3, "result": 42}),
    ("tool-result", {"name": "n", "is-error?": False, "result": None}),
    ("steering-injected", {**DISPLAY, "text": "Also check docs/.", "ref": 2}),
    ("steering-injected", {}),
    ("follow-up-injected", {**DISPLAY, "text": "Summarize.", "ref": MAX_SAFE}),
    ("follow-up-injected", {"text": ""}),
    ("error", {**DISPLAY, "error": "rate limited", "source": "provider"}),
    ("error", {}),
    ("info", {**DISPLAY, "refs": [2, 3, MAX_SAFE]}),
    ("info", {"refs": []}),
    ("info", {"refs": {}}),
    ("info", {"summary": "dropped 2 queued input line(s)"}),
    ("agent-turn-complete", {**DISPLAY, "status": "done", "error": "none"}),
    ("agent-turn-complete", {}),
    ("turn-complete", {"turn": 1, "stop-reason": "stop", "usage": {"input": 240, "output": 60}}),
    ("turn-complete", {"turn": 2, "stop-reason": "aborted"}),
    ("turn-complete", {"turn": MAX_SAFE, "stop-reason": "none", "usage": {}}),
    ("turn-complete", {"turn": 3, "stop-reason": "error", "usage": []}),
    (
        "result",
        {
            "final-text": "The README describes fen. \u2014 \U0001f600",
            "stop-reason": "stop",
            "usage": {"input": 240, "output": 60},
            "truncated?": True,
            "final-text-path": "/tmp/fenwire-final-abc123.txt",
        },
    ),
    ("result", {"stop-reason": "none"}),
    ("result", {"final-text": "x", "stop-reason": "stop", "context": "complete", "truncated?": False}),
    ("exit", {"status": "done"}),
    ("exit", {"status": "cancelled", "error": "cancelled by parent"}),
    ("exit", {"status": "failed", "error": "control file truncated below offset 120"}),
    ("exit", {"status": "timed-out", "error": "run deadline exceeded"}),
    ("ready", {"x-extension": {"nested": [1, None, {"deep": [True, False]}]}, "x-number": -0.5}),
]

CONTROLS: list[tuple[str, dict[str, Any]]] = [
    ("prompt", {"text": "Inspect the README."}),
    ("prompt", {"text": ""}),
    ("steer", {"text": "Also check docs/. \u2603"}),
    ("follow-up", {"text": "Summarize."}),
    ("finalize", {"note": "Turn budget reached; answer with what you have."}),
    ("finalize", {}),
    ("cancel", {}),
    ("close", {}),
    ("cancel", {"x-why": ["user", "pressed", "ctrl-c"]}),
    ("prompt", {"text": "big \U0001f600 numbers", "x-big": 18446744073709551615, "x-neg": -9223372036854775808}),
]


def stamp(kind: list[tuple[str, dict[str, Any]]]) -> list[str]:
    lines = []
    for i, (type_name, payload) in enumerate(kind, start=1):
        msg = {"v": 1, "seq": i, "type": type_name, "run": RUN}
        msg.update(payload)
        lines.append(compact(msg))
    return lines


# --------------------------------------------------------------------------------------------
# invalid.jsonl


INVALID: list[dict[str, Any]] = []


def bad(
    direction: str,
    line: str | None,
    code: str,
    reason: str,
    *,
    seq: int | None = None,
    type: str | None = None,
    run: str | None = None,
    errors: list[tuple[str, str]] | None = None,
    line_hex: str | None = None,
    line_repeat: list[Any] | None = None,
    before: list[str] | None = None,
    note: str = "",
) -> None:
    rec: dict[str, Any] = {"direction": direction}
    if line is not None:
        rec["line"] = line
    if line_hex is not None:
        rec["line_hex"] = line_hex
    if line_repeat is not None:
        rec["line_repeat"] = line_repeat
    if before is not None:
        rec["before"] = before
    rec.update(
        {
            "code": code,
            "fatal": code == "version-mismatch",
            "seq": seq,
            "type": type,
            "run": run,
            "reason": reason,
            "errors": [list(e) for e in errors] if errors is not None else None,
        }
    )
    if note:
        rec["note"] = note
    INVALID.append(rec)


def env(type_name: str, extra: str = "", seq: int = 7) -> str:
    """A line with a good envelope (``seq`` 7, run ``RUN``) and ``extra`` JSON members appended."""
    return '{"v":1,"seq":%d,"type":"%s","run":"%s"%s}' % (seq, type_name, RUN, ("," + extra) if extra else "")


def payload(direction: str, type_name: str, extra: str, errors: list[tuple[str, str]], note: str = "") -> None:
    bad(
        direction,
        env(type_name, extra),
        "invalid-payload",
        "; ".join(f"{f} {m}" for f, m in errors),
        seq=7,
        type=type_name,
        run=RUN,
        errors=errors,
        note=note,
    )


GOOD_CANCEL = '{"v":1,"seq":1,"type":"cancel","run":"%s"}' % RUN


def build_invalid() -> None:
    # ---- malformed: not JSON (strict RFC 8259 dialect) -------------------------------------
    for line, note in [
        ('{"v":1,"seq":1,', "truncated JSON"),
        ("", "empty line"),
        ("   ", "whitespace-only line"),
        ("\t", "whitespace-only line (tab)"),
        ("\ufeff" + GOOD_CANCEL, "byte-order mark"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":NaN}' % RUN, "NaN literal"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":Infinity}' % RUN, "Infinity literal"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":-Infinity}' % RUN, "-Infinity literal"),
        ('{"v":1,"seq":1e400,"type":"cancel","run":"%s"}' % RUN, "number overflowing a double"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":-1e400}' % RUN, "negative overflow"),
        ('{"v":1,"seq":01,"type":"cancel","run":"%s"}' % RUN, "leading zero"),
        ('{"v":1,"seq":0x10,"type":"cancel","run":"%s"}' % RUN, "hex number"),
        ('{"v":1,"seq":+1,"type":"cancel","run":"%s"}' % RUN, "leading plus"),
        ('{"v":1,"seq":.5,"type":"cancel","run":"%s"}' % RUN, "no integer part"),
        ('{"v":1,"seq":1.,"type":"cancel","run":"%s"}' % RUN, "no fraction digits"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"a\tb"}' % RUN, "raw tab inside a string"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"a\u0001b"}' % RUN, "raw control character"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"a\u001fb"}' % RUN, "raw unit separator"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"\\ud800"}' % RUN, "lone high surrogate escape"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"\\udc00x"}' % RUN, "lone low surrogate escape"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"\\ude00\\ud83d"}' % RUN, "reversed surrogate pair"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"\\x41"}' % RUN, "invalid escape"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":"\\u12"}' % RUN, "short unicode escape"),
        (GOOD_CANCEL + "x", "trailing garbage"),
        (GOOD_CANCEL + GOOD_CANCEL, "two objects on one line"),
        (GOOD_CANCEL + "}", "extra closing brace"),
        (GOOD_CANCEL + "\u000b", "trailing vertical tab (not JSON whitespace)"),
        (GOOD_CANCEL + "\u00a0", "trailing no-break space"),
        ("{'v':1}", "single quotes"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s",}' % RUN, "trailing comma"),
        ('{"v":1 /* c */,"seq":1,"type":"cancel","run":"%s"}' % RUN, "comment"),
        ('{v:1,"seq":1,"type":"cancel","run":"%s"}' % RUN, "unquoted key"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":True}' % RUN, "capitalised literal"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":[1,2}' % RUN, "mismatched brackets"),
        ('{"v":1,"seq":1,"type":"cancel","run":"%s","x":' % RUN + "[" * 1024 + "]" * 1024 + "}", "depth 1025 (arrays)"),
        (
            '{"v":1,"seq":1,"type":"cancel","run":"%s","x":' % RUN + '{"a":' * 1024 + "1" + "}" * 1024 + "}",
            "depth 1025 (objects)",
        ),
    ]:
        bad("control", line, "malformed", R_NOT_JSON, note=note)

    # ---- malformed: not UTF-8 (given as hex) ------------------------------------------------
    good = GOOD_CANCEL.encode()
    prefix = b'{"v":1,"seq":1,"type":"cancel","run":"%s","x":"' % RUN.encode()
    for raw, note in [
        (prefix + b'\xff"}', "byte 0xFF"),
        (prefix + b'\x80"}', "lone continuation byte"),
        (prefix + b'\xc3"}', "truncated 2-byte sequence"),
        (prefix + b'\xe2\x82"}', "truncated 3-byte sequence"),
        (prefix + b'\xc0\xaf"}', "overlong encoding"),
        (prefix + b'\xed\xa0\x80"}', "UTF-8-encoded surrogate"),
        (prefix + b'\xf4\x90\x80\x80"}', "beyond U+10FFFF"),
        (prefix + b'\xf8\x88\x80\x80\x80"}', "5-byte form"),
        (good[:-1] + b',"\xfe":1}', "invalid byte inside a key"),
        (good + b"\xff", "invalid byte after the object"),
    ]:
        bad("control", None, "malformed", R_NOT_UTF8, line_hex=raw.hex(), note=note)

    # ---- malformed: valid JSON, not an object ----------------------------------------------
    for line in ["[]", "  []  ", "[1,2,3]", '[{"v":1}]', "1", "-0.5", '"{}"', "null", "true", "false", "  7  "]:
        bad("event", line, "malformed", R_NOT_OBJECT, note="not an object")

    # ---- too-large: decided on byte length before parsing ----------------------------------
    pad_prefix = '{"v":1,"seq":1,"type":"prompt","run":"%s","text":"' % RUN
    # 65536 bytes exactly: prefix + filler + '"}'
    filler = 65536 - len(pad_prefix.encode()) - 2
    bad(
        "control",
        None,
        "too-large",
        R_TOO_LARGE,
        line_repeat=[pad_prefix, "a", filler, '"}'],
        note="65536-byte valid JSON",
    )
    # 65536 bytes made of 3-byte characters plus ASCII: counts bytes, not characters
    n3 = (65536 - len(pad_prefix.encode()) - 2) // 3
    rest = 65536 - len(pad_prefix.encode()) - 2 - 3 * n3
    bad(
        "control",
        None,
        "too-large",
        R_TOO_LARGE,
        line_repeat=[pad_prefix + "b" * rest, "\u20ac", n3, '"}'],
        note="65536 bytes of which most are 3-byte characters (21000-odd characters)",
    )
    bad(
        "control",
        None,
        "too-large",
        R_TOO_LARGE,
        line_repeat=["", "x", 70000, ""],
        note="huge garbage: too-large wins over malformed",
    )
    bad(
        "sideways",
        None,
        "too-large",
        R_TOO_LARGE,
        line_repeat=["", " ", 65536, ""],
        note="too-large wins over a bad direction",
    )

    # ---- invalid: bad direction (after JSON parse and the object check) --------------------
    for direction in ["sideways", "", "Event", "events", "CONTROL"]:
        bad(direction, GOOD_CANCEL, "invalid", R_DIRECTION, note="unknown direction")
    bad("sideways", "[]", "malformed", R_NOT_OBJECT, note="not-an-object wins over a bad direction")
    bad("sideways", '{"v":2}', "invalid", R_DIRECTION, note="bad direction wins over version-mismatch")

    # ---- invalid: v missing or null (before the version check) -----------------------------
    bad("control", "{}", "invalid", R_V_REQUIRED)
    bad("control", '{"seq":4,"type":"cancel","run":"%s"}' % RUN, "invalid", R_V_REQUIRED, seq=4, type="cancel", run=RUN)
    bad(
        "control",
        '{"v":null,"seq":4,"type":"cancel","run":"%s"}' % RUN,
        "invalid",
        R_V_REQUIRED,
        seq=4,
        type="cancel",
        run=RUN,
    )
    bad(
        "event", '{"v":null,"seq":0,"type":5,"run":null}', "invalid", R_V_REQUIRED, note="v checked before the envelope"
    )

    # ---- version-mismatch: fatal; any v but the number 1 -----------------------------------
    vm = "wire version %s is not supported; expected 1"
    vk = "wire version must be the number 1, not %s"
    for v_json, reason in [
        ("2", vm % "2"),
        ("2.0", vm % "2"),
        ("0", vm % "0"),
        ("-1", vm % "-1"),
        ("1e3", vm % "1000"),
        ('"1"', vk % "a string"),
        ("true", vk % "a boolean"),
        ("false", vk % "a boolean"),
        ("1.5", vk % "a non-integral number"),
        ("[]", vk % "an array"),
        ("[1]", vk % "an array"),
        ("{}", vk % "an object"),
    ]:
        line = '{"v":%s,"seq":5,"type":"prompt","run":"%s","text":"hi"}' % (v_json, RUN)
        bad("control", line, "version-mismatch", reason, seq=5, type="prompt", run=RUN, note=f"v={v_json}")
    bad("control", '{"v":2}', "version-mismatch", vm % "2", note="version check before the envelope")
    bad(
        "event",
        '{"v":3,"seq":0,"type":1,"run":"x"}',
        "version-mismatch",
        vm % "3",
        run="x",
        note="seq/type only when usable",
    )
    bad("event", '{"v":2,"seq":2.0,"type":"nope","run":5}', "version-mismatch", vm % "2", seq=2, type="nope")

    # ---- invalid: envelope (all errors collected; required first, then seq, type, run) -----
    def envelope(
        line: str,
        errors: list[tuple[str, str]],
        *,
        seq: int | None = None,
        type: str | None = None,
        run: str | None = None,
        note: str = "",
    ) -> None:
        bad(
            "control",
            line,
            "invalid",
            "; ".join(f"{f} {m}" for f, m in errors),
            seq=seq,
            type=type,
            run=run,
            errors=errors,
            note=note,
        )

    envelope('{"v":1}', [("seq", "is required"), ("type", "is required"), ("run", "is required")])
    envelope('{"v":1,"type":"cancel","run":"%s"}' % RUN, [("seq", "is required")], type="cancel", run=RUN)
    envelope('{"v":1,"seq":1,"run":"%s"}' % RUN, [("type", "is required")], seq=1, run=RUN, note="seq usable")
    envelope('{"v":1,"seq":1,"type":"cancel"}', [("run", "is required")], seq=1, type="cancel")
    for seq_json, errs in [
        ("0", [("seq", "must be at least 1")]),
        ("-1", [("seq", "must be at least 1")]),
        ("-3.5", [("seq", "must be an integer"), ("seq", "must be at least 1")]),
        ("0.5", [("seq", "must be an integer"), ("seq", "must be at least 1")]),
        ("1.5", [("seq", "must be an integer")]),
        ("9007199254740992", [("seq", "must be at most 9007199254740991")]),
        ("9007199254740992.0", [("seq", "must be at most 9007199254740991")]),
        ("18446744073709551616", [("seq", "must be at most 9007199254740991")]),
        ("1e300", [("seq", "must be at most 9007199254740991")]),
        ('"1"', [("seq", "must be an integer")]),
        ("true", [("seq", "must be an integer")]),
        ("null", [("seq", "must be an integer")]),
        ("[]", [("seq", "must be an integer")]),
        ("{}", [("seq", "must be an integer")]),
    ]:
        envelope(
            '{"v":1,"seq":%s,"type":"cancel","run":"%s"}' % (seq_json, RUN),
            errs,
            type="cancel",
            run=RUN,
            note=f"seq={seq_json}",
        )
    envelope('{"v":1,"seq":2,"type":5,"run":"%s"}' % RUN, [("type", "must be a string")], seq=2, run=RUN)
    envelope('{"v":1,"seq":2,"type":null,"run":"%s"}' % RUN, [("type", "must be a string")], seq=2, run=RUN)
    envelope('{"v":1,"seq":2,"type":"cancel","run":["r"]}', [("run", "must be a string")], seq=2, type="cancel")
    envelope('{"v":1,"seq":2,"type":"cancel","run":false}', [("run", "must be a string")], seq=2, type="cancel")
    envelope(
        '{"v":1,"run":5,"seq":0}',
        [("type", "is required"), ("seq", "must be at least 1"), ("run", "must be a string")],
        note="required before type errors; seq, type, run order regardless of key order",
    )
    envelope(
        '{"run":{},"type":[],"seq":"x","v":1.0}',
        [("seq", "must be an integer"), ("type", "must be a string"), ("run", "must be a string")],
        note="v 1.0 is version 1",
    )
    envelope(
        '{"v":1,"seq":1,"seq":0,"type":"cancel","run":"%s"}' % RUN,
        [("seq", "must be at least 1")],
        type="cancel",
        run=RUN,
        note="duplicate keys: the last wins",
    )
    envelope(
        '{"v":1,"seq":1,"type":"cancel","run":"%s","type":7}' % RUN,
        [("type", "must be a string")],
        seq=1,
        run=RUN,
        note="duplicate keys: the last wins",
    )

    # ---- unknown-type ----------------------------------------------------------------------
    def unknown(direction: str, type_name: str, reason: str) -> None:
        bad(direction, env(type_name), "unknown-type", reason, seq=7, type=type_name, run=RUN)

    unknown("control", "pause", "unknown control type: pause")
    unknown("control", "", "unknown control type: ")
    unknown("control", "Prompt", "unknown control type: Prompt")
    unknown("event", "subagent-start", "unknown event type: subagent-start")
    unknown("event", "subagent-done", "unknown event type: subagent-done")
    unknown("event", "READY", "unknown event type: READY")
    for t in ["ready", "turn-started", "control-ack", "result", "exit", "tool-call", "info"]:
        unknown("control", t, f"{t} is an event type, not a control type")
    for t in ["prompt", "steer", "follow-up", "finalize", "cancel", "close"]:
        unknown("event", t, f"{t} is a control type, not an event type")
    bad(
        "control",
        '{"v":1,"seq":7,"type":"pause","run":"%s","text":5}' % RUN,
        "unknown-type",
        "unknown control type: pause",
        seq=7,
        type="pause",
        run=RUN,
        note="unknown-type before payload checks",
    )

    # ---- invalid-payload: every required field, every field kind, the ack rule -------------
    C, E = "control", "event"
    for t in ["prompt", "steer", "follow-up"]:
        payload(C, t, "", [("text", "is required")])
        payload(C, t, '"text":42', [("text", "must be a string")])
        payload(C, t, '"text":null', [("text", "must be a string")], note="null in a typed field")
        payload(C, t, '"text":["a"]', [("text", "must be a string")])
    payload(C, "finalize", '"note":true', [("note", "must be a string")])
    payload(C, "finalize", '"note":null', [("note", "must be a string")])

    payload(E, "turn-started", "", [("turn", "is required")])
    for turn_json, errs in [
        ("0", [("turn", "must be at least 1")]),
        ("1.5", [("turn", "must be an integer")]),
        ('"1"', [("turn", "must be an integer")]),
        ("true", [("turn", "must be an integer")]),
        ("9007199254740992", [("turn", "must be at most 9007199254740991")]),
        ("-2.5", [("turn", "must be an integer"), ("turn", "must be at least 1")]),
    ]:
        payload(E, "turn-started", '"turn":' + turn_json, errs)
    payload(E, "turn-complete", "", [("turn", "is required"), ("stop-reason", "is required")])
    payload(E, "turn-complete", '"turn":1', [("stop-reason", "is required")])
    payload(E, "turn-complete", '"turn":0,"stop-reason":"stop"', [("turn", "must be at least 1")])
    payload(E, "turn-complete", '"turn":1,"stop-reason":"stop","usage":"lots"', [("usage", "must be an object")])
    payload(
        E,
        "turn-complete",
        '"turn":1,"stop-reason":"stop","usage":[1]',
        [("usage", "must be an object")],
        note="only an empty array counts as an object",
    )
    payload(
        E,
        "turn-complete",
        '"usage":null,"stop-reason":1,"turn":1',
        [("stop-reason", "must be a string"), ("usage", "must be an object")],
        note="fields in schema order, not line order",
    )

    payload(E, "control-ack", "", [("status", "is required")])
    payload(E, "control-ack", '"status":"accepted"', [("ref", "is required unless status is rejected")])
    payload(E, "control-ack", '"status":"applied"', [("ref", "is required unless status is rejected")])
    payload(E, "control-ack", '"ref":3,"status":"maybe"', [("status", "must be one of accepted, rejected, applied")])
    payload(
        E,
        "control-ack",
        '"status":5',
        [("status", "must be one of accepted, rejected, applied"), ("ref", "is required unless status is rejected")],
    )
    payload(E, "control-ack", '"ref":0', [("status", "is required"), ("ref", "must be at least 1")])
    payload(E, "control-ack", '"ref":1e300,"status":"applied"', [("ref", "must be at most 9007199254740991")])
    payload(E, "control-ack", '"ref":1,"status":"accepted","reason":7', [("reason", "must be a string")])
    payload(
        E,
        "control-ack",
        '"status":"Rejected"',
        [("status", "must be one of accepted, rejected, applied"), ("ref", "is required unless status is rejected")],
    )

    payload(E, "result", "", [("stop-reason", "is required")])
    payload(E, "result", '"final-text":"x"', [("stop-reason", "is required")])
    payload(
        E,
        "result",
        '"context":"complete"',
        [("stop-reason", "is required")],
        note="the V5 context field is now just an extra",
    )
    payload(
        E,
        "result",
        '"final-text":1,"stop-reason":"stop","usage":"u","truncated?":"yes","final-text-path":2',
        [
            ("final-text", "must be a string"),
            ("usage", "must be an object"),
            ("truncated?", "must be a boolean"),
            ("final-text-path", "must be a string"),
        ],
    )
    payload(E, "exit", "", [("status", "is required")])
    payload(E, "exit", '"status":"paused"', [("status", "must be one of done, cancelled, failed, timed-out")])
    payload(E, "exit", '"status":"done","error":1', [("error", "must be a string")])

    payload(E, "tool-call", '"arguments":{}', [("name", "is required")])
    payload(E, "tool-call", '"name":1,"id":2', [("name", "must be a string"), ("id", "must be a string")])
    payload(E, "tool-result", '"name":"read"', [("is-error?", "is required")])
    payload(E, "tool-result", "", [("name", "is required"), ("is-error?", "is required")])
    payload(
        E,
        "tool-result",
        '"name":"r","is-error?":0,"duration-seconds":"1","tool-call-id":3',
        [
            ("tool-call-id", "must be a string"),
            ("duration-seconds", "must be a number"),
            ("is-error?", "must be a boolean"),
        ],
    )
    payload(
        E,
        "tool-result",
        '"name":"r","is-error?":false,"duration-seconds":true',
        [("duration-seconds", "must be a number")],
        note="a boolean is not a number",
    )
    for t in ["assistant-text", "assistant-thinking"]:
        payload(E, t, '"text":"x"', [("final?", "is required")])
        payload(E, t, '"final?":1', [("final?", "must be a boolean")])
        payload(E, t, '"final?":true,"content-index":1.5', [("content-index", "must be an integer")])
        payload(E, t, '"final?":true,"content-index":true', [("content-index", "must be an integer")])
    for t in ["assistant-text-delta", "assistant-thinking-delta"]:
        payload(
            E,
            t,
            '"content-index":"0","delta":7',
            [("content-index", "must be an integer"), ("delta", "must be a string")],
        )
    payload(E, "assistant-stream-end", "", [("final?", "is required")])
    payload(E, "assistant-stream-end", '"final?":"false"', [("final?", "must be a boolean")])
    payload(E, "user", '"text":{}', [("text", "must be a string")])
    for t in ["steering-injected", "follow-up-injected"]:
        payload(E, t, '"ref":0', [("ref", "must be at least 1")])
        payload(E, t, '"ref":"2","text":3', [("text", "must be a string"), ("ref", "must be an integer")])
    payload(
        E, "llm-start", '"provider":1,"model":null', [("provider", "must be a string"), ("model", "must be a string")]
    )
    payload(E, "llm-end", '"usage":"lots"', [("usage", "must be an object")])
    payload(
        E,
        "llm-end",
        '"usage":[{}],"stop-reason":false',
        [("stop-reason", "must be a string"), ("usage", "must be an object")],
    )
    payload(E, "agent-started", '"cwd":1', [("cwd", "must be a string")])
    payload(
        E,
        "agent-turn-complete",
        '"status":1,"error":[]',
        [("status", "must be a string"), ("error", "must be a string")],
    )
    payload(E, "error", '"error":null,"source":1', [("error", "must be a string"), ("source", "must be a string")])
    payload(E, "info", '"refs":"1"', [("refs", "must be an array")])
    payload(E, "info", '"refs":{"a":1}', [("refs", "must be an array")], note="only an empty object counts as an array")
    payload(E, "info", '"refs":null', [("refs", "must be an array")])
    payload(
        E,
        "info",
        '"refs":[0,1.5,"2",true,9007199254740992,null,3,-0.5]',
        [
            ("refs[0]", "must be at least 1"),
            ("refs[1]", "must be an integer"),
            ("refs[2]", "must be an integer"),
            ("refs[3]", "must be an integer"),
            ("refs[4]", "must be at most 9007199254740991"),
            ("refs[5]", "must be an integer"),
            ("refs[7]", "must be an integer"),
            ("refs[7]", "must be at least 1"),
        ],
        note="0-based indices",
    )
    # every display field on a display event
    payload(
        E,
        "user",
        '"physical-cwd":1,"cwd":2,"requested-cwd":3,"agent":4,"run-id":5,"summary":6,"timestamp":7,"transport-truncated?":"true"',
        [
            ("timestamp", "must be a string"),
            ("summary", "must be a string"),
            ("run-id", "must be a string"),
            ("agent", "must be a string"),
            ("requested-cwd", "must be a string"),
            ("cwd", "must be a string"),
            ("physical-cwd", "must be a string"),
            ("transport-truncated?", "must be a boolean"),
        ],
        note="display fields after the type's own fields, in table order",
    )
    payload(
        E,
        "tool-result",
        '"timestamp":1,"duration-seconds":true',
        [
            ("name", "is required"),
            ("is-error?", "is required"),
            ("duration-seconds", "must be a number"),
            ("timestamp", "must be a string"),
        ],
    )
    # display fields are not checked on lifecycle events (unknown extras are allowed)
    # so they cannot appear here; see events.jsonl's "ready" with extras.

    # ---- out-of-order (Receiver.receive; no seq, type/run from the message or rejection) ----
    five = env("cancel", seq=5)
    bad(
        "control",
        env("cancel", seq=5),
        "out-of-order",
        "seq 5 does not follow 5",
        type="cancel",
        run=RUN,
        before=[five],
    )
    bad("control", env("close", seq=3), "out-of-order", "seq 3 does not follow 5", type="close", run=RUN, before=[five])
    bad(
        "control",
        '{"v":1,"seq":4,"type":"prompt","run":"%s"}' % RUN,
        "out-of-order",
        "seq 4 does not follow 5",
        type="prompt",
        run=RUN,
        before=[five],
        note="a stale invalid-payload line is out-of-order",
    )
    bad(
        "control",
        '{"v":1,"seq":5,"type":"pause","run":7}',
        "out-of-order",
        "seq 5 does not follow 5",
        type="pause",
        before=[five],
        note="stale unknown-type: type from the rejection, no run (not a string)",
    )
    bad(
        "control",
        '{"v":1,"seq":2,"run":"%s"}' % RUN,
        "out-of-order",
        "seq 2 does not follow 5",
        run=RUN,
        before=[five],
        note="stale invalid envelope with a usable seq",
    )
    bad(
        "control",
        '{"v":1,"seq":9,"type":"pause","run":"%s"}' % RUN,
        "out-of-order",
        "seq 9 does not follow 9",
        type="pause",
        run=RUN,
        before=['{"v":1,"seq":9,"type":"prompt","run":"%s"}' % RUN],
        note="a rejected line (invalid-payload) consumed seq 9",
    )
    bad(
        "control",
        '{"v":1,"seq":5.0,"type":"cancel","run":"%s"}' % RUN,
        "out-of-order",
        "seq 5 does not follow 5",
        type="cancel",
        run=RUN,
        before=[five],
        note="seq 5.0 is 5",
    )
    bad(
        "control",
        '{"v":2,"seq":1,"type":"cancel","run":"%s"}' % RUN,
        "version-mismatch",
        vm % "2",
        seq=1,
        type="cancel",
        run=RUN,
        before=[five],
        note="fatal: returned untouched, no ordering check",
    )
    bad(
        "control",
        '{"v":1,"seq":0,"type":"cancel","run":"%s"}' % RUN,
        "invalid",
        "seq must be at least 1",
        type="cancel",
        run=RUN,
        errors=[("seq", "must be at least 1")],
        before=[five],
        note="no usable seq: no ordering check",
    )


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "events.jsonl").write_text("\n".join(stamp(EVENTS)) + "\n", encoding="utf-8")
    (OUT / "controls.jsonl").write_text("\n".join(stamp(CONTROLS)) + "\n", encoding="utf-8")
    build_invalid()
    with (OUT / "invalid.jsonl").open("w", encoding="ascii") as fh:
        for rec in INVALID:
            fh.write(json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n")
    print(f"wrote {len(EVENTS)} events, {len(CONTROLS)} controls, {len(INVALID)} invalid records to {OUT}")


if __name__ == "__main__":
    main()
