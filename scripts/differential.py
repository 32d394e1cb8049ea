#!/usr/bin/env python3
"""Differential test: the Rust backend (`fenwire_fast._native`) against the pure one (`_pure`).

Feeds both backends the same random, mutated and adversarial inputs and compares every field of
every result, type for type: decoded messages (key order, int vs float vs bool, the sign of
-0.0), rejections (code, reason, fatal, seq, type, run, errors), `validate` and `encode` of
Python dicts, `Sender.next`, the receiver's `seq` after every line, `Receiver.feed` and `Framer`
over random splits of a stream (output, `buffered` and `plain` after every piece), `Receiver.scan` (the
backends against each other, and each against its own `feed` line for line, with `feed` and
`scan` calls alternating on one receiver), `Receiver.scan_batch` (every column of the backends'
batches, each batch against `scan`, its `foreign` lines against the runs `feed` decodes, mixed with
`feed` and `scan` calls; also over streams whose lines repeat `run`, `type`, `seq` or `v` in
escaped spellings), and the text primitives. Exits 1 on the first difference(s), printing a reproducer.

    python scripts/differential.py -n 20000 --seed 1
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson
from fenwire_fast import _native as rust
from fenwire_fast import _pure as pure
from fenwire_fast._schema import CONTROL_SCHEMAS, ENUMS, EVENT_SCHEMAS
from fenwire_fast._types import CONTROL_TYPE_ORDER, EVENT_TYPE_ORDER, MAX_LINE_BYTES, Rejection, Scanned

# ---------------------------------------------------------------------------------------------
# Strict comparison


#: types compared by ``==`` alone once both sides have the type (the common leaves, checked first)
_PLAIN = frozenset({str, bytes, int, bool, type(None)})


def same(a: Any, b: Any) -> bool:
    """Equal, with equal types all the way down (1 != 1.0 != True, -0.0 != 0.0, key order)."""
    t = type(a)
    if t is not type(b):
        return False
    if t in _PLAIN:
        return bool(a == b)
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, Rejection):
        return all(
            same(getattr(a, f), getattr(b, f)) for f in ("code", "reason", "fatal", "seq", "type", "run", "errors")
        )
    return bool(a == b)


def outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - an exception is a result to compare
        return ("raised", type(exc).__name__)


# ---------------------------------------------------------------------------------------------
# Inputs

SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    1.0,
    2.0,
    0.5,
    -0.0,
    1.5,
    1e300,
    -1e300,
    2**53 - 1,
    2**53,
    2**63 - 1,
    2**63,
    2**64 - 1,
    -(2**63),
    "",
    "x",
    "é",
    "日本",
    "😀",
    "\u2028",
    'a"b\\c',
    "\x00\x1f\x7f\x85",
    "accepted",
    "rejected",
    "applied",
    "done",
    "cancelled",
    "failed",
    "timed-out",
    "ok",
    [],
    {},
    [1],
    [1, 2.0],
    [0],
    [1.5],
    ["x"],
    [2**53],
    {"a": 1},
    {"": None},
    [[]],
    [{}],
]
# Python-only values for validate/encode (not JSON).
PY_ONLY: list[Any] = [
    float("nan"),
    float("inf"),
    -float("inf"),
    2**64,
    -(2**63) - 1,
    2**100,
    (1, 2),
    {1, 2},
    b"bytes",
    "\ud800",
    "a\udfffb",
    {1: 2},
    {"k": "\udc00"},
    {"\ud800": 1},
    object(),
    [float("nan")],
    {"a": [1, {"b": 2**70}]},
    frozenset(),
]
RAW_TOKENS = [
    "1e400",
    "-1e400",
    "1.7976931348623159e308",
    "1e-400",
    "-1e-400",
    "-0",
    "-0.0",
    "1E2",
    "1e-0",
    "1.0",
    "01",
    "-01",
    "1.",
    ".5",
    "+1",
    "1e",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    '"\\ud800"',
    '"\\udc00"',
    '"\\ud83d\\ude00"',
    '"\\ud800\\u0041"',
    '"\\u0000"',
    '"\\/"',
    '"\\x"',
    '"\\U0041"',
    '"a\x01b"',
    '"\x7f"',
    "[]",
    "{}",
    "[ ]",
    "{ }",
    "[1,]",
    '{"a":1,}',
    "null",
    "true",
    "false",
    "tru",
    "nul",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "9007199254740991",
    "9007199254740992",
    "1" + "0" * 400,
    "0.1e1",
    "4.9e-324",
    "2.4e-324",
    '"' + "é" * 3 + '"',
    "[1 2]",
    "[" * 1024 + "]" * 1024,
    "[" * 1025 + "]" * 1025,
]
WS = ["", "", "", " ", "\t", "\r", "\n", " \r\n\t"]
ALL_TYPES = sorted(EVENT_SCHEMAS) + sorted(CONTROL_SCHEMAS) + ["nope", "subagent-start", ""]


def good_value(rng: random.Random, kind: str) -> Any:
    if kind == "string":
        return rng.choice(["", "text", "héllo", "line\nbreak", "😀" * 3, "x" * rng.randint(0, 50)])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "number":
        return rng.choice([0, 1, -3, 2.5, 1e10, 0.125])
    if kind == "integer":
        return rng.choice([0, 1, -1, 7, 2.0, -4.0])
    if kind == "pos":
        return rng.choice([1, 2, 9007199254740991, 5.0])
    if kind == "object":
        return rng.choice([{}, {"input": 1, "output": 2}, []])
    if kind == "array":
        return rng.choice([[], {}, [1, 2]])
    if kind == "refs":
        return rng.choice([[], [1, 2, 3], {}, [4.0]])
    if kind == "any":
        return rng.choice([None, 1, "x", [1, {"a": None}], {"content": [{"text": "t"}]}])
    if kind in ENUMS:
        return rng.choice(ENUMS[kind])
    raise AssertionError(kind)


def random_message(rng: random.Random) -> dict[str, Any]:
    direction_tables = [EVENT_SCHEMAS, CONTROL_SCHEMAS]
    table = rng.choice(direction_tables)
    type_name = rng.choice(sorted(table)) if rng.random() < 0.9 else rng.choice(ALL_TYPES)
    msg: dict[str, Any] = {"v": 1, "seq": rng.randint(1, 50), "type": type_name, "run": "r"}
    schema = table.get(type_name)
    if schema is not None:
        for name, kind in schema.fields:
            if name in schema.required or rng.random() < 0.5:
                msg[name] = good_value(rng, kind)
    if rng.random() < 0.2:
        msg["extra"] = rng.choice(SCALARS)
    keys = list(msg)
    if rng.random() < 0.3:
        rng.shuffle(keys)
        msg = {k: msg[k] for k in keys}
    return msg


def mutate_dict(rng: random.Random, msg: dict[str, Any], python_values: bool) -> dict[str, Any]:
    msg = dict(msg)
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        keys = list(msg)
        pool = SCALARS + PY_ONLY if python_values else SCALARS
        if r < 0.45 and keys:
            msg[rng.choice(keys)] = rng.choice(pool)
        elif r < 0.6 and keys:
            del msg[rng.choice(keys)]
        elif r < 0.8:
            msg[
                rng.choice(
                    [
                        "v",
                        "seq",
                        "type",
                        "run",
                        "status",
                        "ref",
                        "refs",
                        "turn",
                        "text",
                        "final?",
                        "usage",
                        "content-index",
                        "stop-reason",
                    ]
                )
            ] = rng.choice(pool)
        else:
            msg[rng.choice(["type"])] = rng.choice(ALL_TYPES)
    return msg


def to_json_text(rng: random.Random, msg: dict[str, Any], raw: dict[str, str] | None = None) -> str:
    """JSON text for `msg`, with optional raw tokens for some keys and random whitespace."""
    parts = []
    for key, value in msg.items():
        token = raw[key] if raw and key in raw else orjson.dumps(value).decode()
        ws = [rng.choice(WS) for _ in range(4)]
        parts.append(f"{ws[0]}{orjson.dumps(key).decode()}{ws[1]}:{ws[2]}{token}{ws[3]}")
    return rng.choice(WS) + "{" + ",".join(parts) + "}" + rng.choice(WS)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        pos = rng.randint(0, len(b)) if b else 0
        if r < 0.3 and b:
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif r < 0.5:
            b[pos:pos] = bytes([rng.choice(b'{}[]",:\\ \t\r01e.-+nulltrfaxs\xc3\xa9\xff\xc3\xed\xa0\x80\xef\xbb\xbf')])
        elif r < 0.65 and b:
            del b[pos : pos + rng.randint(1, 4)]
        elif r < 0.75:
            b = b[: rng.randint(0, len(b))]
        elif r < 0.85:
            b[pos:pos] = rng.choice(RAW_TOKENS).encode()
        else:
            b[pos:pos] = rng.choice(["é", "😀", "\u2028", "\x00"]).encode()
    return bytes(b)


def random_line(rng: random.Random) -> bytes | str:
    r = rng.random()
    msg = random_message(rng)
    if r < 0.35:
        line = to_json_text(rng, msg).encode()
    elif r < 0.55:
        keys = list(msg) + ["v", "seq", "type", "run", "status", "refs", "turn", "ref"]
        raw = {rng.choice(keys): rng.choice(RAW_TOKENS) for _ in range(rng.randint(1, 2))}
        for k in raw:
            msg.setdefault(k, None)
        line = to_json_text(rng, msg, raw).encode()
    elif r < 0.75:
        line = mutate_bytes(rng, orjson.dumps(msg))
    elif r < 0.82:
        line = orjson.dumps(mutate_dict(rng, msg, False))
    elif r < 0.86:
        # duplicate keys
        items = list(msg.items())
        k, _ = rng.choice(items)
        text = to_json_text(rng, msg)[:-1].rstrip()
        if text.endswith("}"):
            text = text[:-1]
        line = (text + f",{orjson.dumps(k).decode()}:{orjson.dumps(rng.choice(SCALARS)).decode()}}}").encode()
    elif r < 0.9:
        line = (
            rng.choice(RAW_TOKENS).encode()
            if rng.random() < 0.7
            else bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))
        )
    elif r < 0.93:
        # near the line limit
        pad = MAX_LINE_BYTES - rng.randint(-3, 60)
        msg["text"] = "x" * max(0, pad)
        line = orjson.dumps(msg)
        line = line[: rng.choice([len(line), MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1])]
    elif r < 0.95:
        line = rng.choice([b"", b" ", b"\t", b"\r", b" \r\n ", b"\xef\xbb\xbf{}", b"{}", b"[]", b"1"])
    else:
        # str lines, some with lone surrogates
        text = to_json_text(rng, msg)
        if rng.random() < 0.5:
            pos = rng.randint(0, len(text))
            text = text[:pos] + rng.choice(["\ud800", "\udfff", "é", "\x00"]) + text[pos:]
        return text
    return line


def random_text(rng: random.Random) -> str:
    alphabet = [
        "a",
        "b",
        " ",
        "\n",
        "\t",
        "\r",
        "\x00",
        "\x01",
        "\x1f",
        "\x7f",
        "\x85",
        "\x9f",
        "\xa0",
        "é",
        "…",
        "日",
        "😀",
        "\ud800",
        "\udfff",
        "\u2028",
        "\\",
    ]
    n = rng.choice([0, 1, 2, 5, 20, 100, 500])
    return "".join(rng.choice(alphabet) for _ in range(n))


# Pieces of a JSON string's raw text: plain runs, every escape, every UTF-8 length (1-4 bytes)
# raw and as `\u` escapes (surrogate pairs included), and what must be refused.
STRING_OK: list[bytes] = [
    *(p.encode() for p in ["a", "xyz ", "q" * 15, "w" * 16, "k" * 33, "\x7f", " "]),
    *(p.encode() for p in ["\\n", '\\"', "\\\\", "\\/", "\\b", "\\f", "\\r", "\\t", "\\u0041", "\\u0000", "\\u001f"]),
    *(p.encode() for p in ["\\u007f", "\\u0080", "\\u00e9", "\\u00ff", "\\u0100", "\\u07ff", "\\u0800", "\\u2028"]),
    *(p.encode() for p in ["\\uFFFF", "\\ud83d\\ude00", "\\uD800\\uDC00", "\\udbff\\udfff", "\\uE000"]),
    *(p.encode() for p in ["\x80", "é", "\xff", "\u0100", "\u07ff", "\u0800", "日", "…", "\uffff"]),
    *(p.encode() for p in ["😀", "\U00010000", "\U0010ffff", "Привет", "テスト", "— “q” ’"]),
    # Runs of 16 bytes or more with non-ASCII inside (copied 16 bytes at a time after an escape).
    *(p.encode() for p in ["a naïve café, 20+ bytes", "日本語のテキストです。", "    return x  # 😀 ok"]),
]
STRING_BAD: list[bytes] = [
    b"\\ud800",
    b"\\udc00",
    b"\\ud800\\u0041",
    b"\\ud800\\ud800",
    b"\\udbffx",
    b"\\x",
    b"\\u12",
    b"\\u12g4",
    b"\\U0041",
    b"\x01",
    b"\x1f",
    b"\n",
    b"\xff",
    b"\xc3",
    b"\xc3(",
    b"\xe6\x97",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\xf0\x9f\x98",
    b"\x80",
]


def random_string_raw(rng: random.Random, bad: float = 0.1) -> list[bytes]:
    """The raw pieces of a JSON string's text (without quotes); now and then one is invalid."""
    pieces = [b"p" * rng.randint(0, 20)] if rng.random() < 0.5 else []
    pieces += [rng.choice(STRING_OK) for _ in range(rng.choice([0, 1, 2, 3, 5, 10, 30]))]
    if rng.random() < bad:
        pieces.insert(rng.randint(0, len(pieces)), rng.choice(STRING_BAD))
    return pieces


def string_line(rng: random.Random) -> bytes:
    """A message whose strings are full of escapes and non-ASCII, in the places the Rust backend
    treats specially (`delta`/`text` then `summary`, repeated fields, nested values and keys)."""
    text = random_string_raw(rng)
    r = rng.random()
    if r < 0.3:
        summary = text  # the same text
    elif r < 0.6:
        summary = text[: rng.randint(0, len(text))]  # a prefix, at a piece boundary
    elif r < 0.7:
        raw = b"".join(text)
        summary = [raw[: rng.randint(0, len(raw))]]  # a prefix cut anywhere
    else:
        summary = random_string_raw(rng)

    def q(pieces: list[bytes]) -> bytes:
        return b'"' + b"".join(pieces) + b'"'

    seq = rng.randint(1, 3)
    kind = rng.random()
    if kind < 0.6:
        etype = rng.choice([b"assistant-text-delta", b"assistant-thinking-delta"])
        body = b'"content-index":0,"delta":' + q(text) + b',"summary":' + q(summary)
    elif kind < 0.75:
        body = b'"final?":true,"text":' + q(text) + b',"summary":' + q(summary)
        etype = b"assistant-text"
    elif kind < 0.9:
        etype = b"tool-call"
        key = q(random_string_raw(rng, 0.05))
        body = b'"name":' + q(random_string_raw(rng, 0.02)) + b',"arguments":{' + key + b":" + q(text) + b"}"
    else:
        etype = b"error"
        body = b'"error":' + q(text) + b',"summary":' + q(summary)
    run = q(rng.choice([[b"run-1"], [b"r\\u00e9"], [b"r\xc3\xa9"], random_string_raw(rng, 0.02)]))
    return b'{"v":1,"seq":%d,"type":"%s","run":%s,' % (seq, etype, run) + body + b"}"


def check_strings(rng: random.Random) -> None:
    """Strings full of escapes and every UTF-8 length: `decode` line by line, then the same
    lines as one stream through `Receiver.feed` (the repeated-value caches see them in turn)."""
    lines = [string_line(rng) for _ in range(rng.randint(1, 4))]
    for line in lines:
        check_decode(rng, line)
    direction = "event"
    ra, rb = pure.Receiver(direction), rust.Receiver(direction)
    data = b"\n".join(lines) + b"\n"
    a = outcome(lambda: ra.feed(data))
    b = outcome(lambda: rb.feed(data))
    check("Receiver.feed(strings)", f"Receiver({direction!r}).feed({data!r:.2000})", a, b, wire=True)


# ---------------------------------------------------------------------------------------------
# Checks


class Diff(Exception):
    pass


def check(label: str, repro: str | Callable[[], str], a: Any, b: Any, *, wire: bool = False) -> None:
    """Raise ``Diff`` when the backends disagree, or, for ``wire`` input (a line or a chunk of bytes
    as a child writes it, with valid arguments), when either of them raised at all: the codec never
    raises on what a child writes, so two backends raising the same exception is two bugs, not an
    agreement."""
    if wire:
        for side, result in (("pure", a), ("rust", b)):
            if isinstance(result, tuple) and len(result) == 2 and result[0] == "raised":
                text = repro() if callable(repro) else repro
                raise Diff(f"{label} raised {result[1]} on wire input ({side}): {text}")
    if not same(a, b):
        text = repro() if callable(repro) else repro
        raise Diff(f"{label}: {text}\n  pure: {a!r:.2000}\n  rust: {b!r:.2000}")


def check_decode(rng: random.Random, line: bytes | str) -> None:
    if isinstance(line, bytes) and rng.random() < 0.05:
        line = BytesSub(line)
    elif isinstance(line, str) and rng.random() < 0.1:
        line = StrSub(line)
    direction = rng.choice(["event", "control"]) if rng.random() < 0.97 else rng.choice(["x", None, 1])
    a = outcome(lambda: pure.decode(line, direction))
    b = outcome(lambda: rust.decode(line, direction))
    check("decode", f"decode({line!r:.300}, {direction!r})", a, b, wire=direction in ("event", "control"))
    if a[0] == "ok" and a[1][0] is not None:
        msg = a[1][0]
        va = outcome(lambda: pure.validate(msg, direction))
        vb = outcome(lambda: rust.validate(msg, direction))
        check("validate(decoded)", f"validate({msg!r:.300}, {direction!r})", va, vb)
        ea = outcome(lambda: pure.encode(msg, direction))
        eb = outcome(lambda: rust.encode(msg, direction))
        check("encode(decoded)", f"encode({msg!r:.300}, {direction!r})", ea, eb)


class IntSub(int):
    pass


class StrSub(str):
    pass


class FloatSub(float):
    pass


class DictSub(dict):  # type: ignore[type-arg]
    pass


class ListSub(list):  # type: ignore[type-arg]
    pass


class BytesSub(bytes):
    pass


# Subclasses of the JSON types: both backends take them like their base.
SUBCLASSED: list[Any] = [
    IntSub(3),
    StrSub("s"),
    DictSub(a=1),
    ListSub([1]),
    DictSub(),
    ListSub(),
    FloatSub(1.5),
    {StrSub("k"): 1},
    {"a": {StrSub("k"): 1}},
]


def check_dict(rng: random.Random) -> None:
    msg = mutate_dict(rng, random_message(rng), True) if rng.random() < 0.8 else random_message(rng)
    if rng.random() < 0.1:
        extra = SUBCLASSED
        msg[rng.choice(["extra", "seq", "v", "text", "refs", "usage", "type"])] = rng.choice(extra)
    direction = rng.choice(["event", "control"])
    if rng.random() < 0.03:
        msg = rng.choice([[], "x", None, 1, (1,)])  # not a dict
    va = outcome(lambda: pure.validate(msg, direction))
    vb = outcome(lambda: rust.validate(msg, direction))
    check("validate", f"validate({msg!r:.300}, {direction!r})", va, vb)
    if va[0] == "ok" and va[1][0] is not None:
        assert va[1][0] is msg and vb[1][0] is msg, "validate must return the same object"
    ea = outcome(lambda: pure.encode(msg, direction))
    eb = outcome(lambda: rust.encode(msg, direction))
    check("encode", f"encode({msg!r:.300}, {direction!r})", ea, eb)


def check_sender(rng: random.Random) -> None:
    direction = rng.choice(["event", "control"])
    run = rng.choice(["r", "run-1", "é", 5])
    sa, sb = pure.Sender(direction, run), rust.Sender(direction, run)
    for _ in range(rng.randint(1, 8)):
        msg = random_message(rng) if rng.random() < 0.7 else mutate_dict(rng, random_message(rng), False)
        t = msg.pop("type", rng.choice(ALL_TYPES))
        for k in ("v", "seq", "run"):
            if rng.random() < 0.8:
                msg.pop(k, None)
        payload: Any = msg if rng.random() < 0.9 else rng.choice([None, {}, [1], "x"])
        a = outcome(lambda: sa.next(t, payload))
        b = outcome(lambda: sb.next(t, payload))
        check("Sender.next", f"Sender({direction!r}, {run!r}).next({t!r}, {payload!r:.300})", a, b)
        check("Sender.seq", "after next", sa.seq, sb.seq)


def check_receiver(rng: random.Random) -> None:
    direction = rng.choice(["event", "control"])
    ra, rb = pure.Receiver(direction), rust.Receiver(direction)
    lines = []
    seq = 0
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.6:
            msg = random_message(rng)
            seq += rng.choice([1, 1, 1, 2, 0, -1, 5])
            msg["seq"] = max(seq, 0) if rng.random() < 0.9 else rng.choice([1.0, float(seq), 0, -1, "3", 2**60])
            line: bytes | str = orjson.dumps(msg)
        else:
            line = random_line(rng)
        lines.append(line)
        a = outcome(lambda: ra.receive(line))
        b = outcome(lambda: rb.receive(line))
        check("Receiver.receive", lambda: f"lines={lines!r:.600}", a, b, wire=True)
        check("Receiver.seq", lambda: f"lines={lines!r:.600}", ra.seq, rb.seq)


def random_stream(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.randint(0, 15)):
        r = rng.random()
        if r < 0.7:
            line = random_line(rng)
            if isinstance(line, str):
                line = line.encode("utf-8", "surrogatepass")
            parts.append(line)
        elif r < 0.8:
            parts.append(b"")
        elif r < 0.9:
            parts.append(b"x" * rng.choice([65535, 65536, 65537, 70000, 140000]))
        else:
            parts.append(b"\r")
    data = b"\n".join(parts)
    if rng.random() < 0.7:
        data += b"\n"
    return data


def splits(rng: random.Random, data: bytes) -> list[bytes]:
    cuts = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(0, 6)))
    if rng.random() < 0.2 and data:
        cuts = list(range(0, len(data), rng.choice([1, 7, 4096, 65536]) if len(data) < 20000 else 4096))
    pieces, last = [], 0
    for c in cuts + [len(data)]:
        pieces.append(data[last:c])
        last = c
    return pieces


def check_feed(rng: random.Random) -> None:
    data = random_stream(rng)
    pieces = splits(rng, data)
    direction = rng.choice(["event", "control"])
    # the run a plain batch must belong to: none, one the stream names (mostly), or another
    named = re.findall(rb'"run":\s*"([^"\\]*)"', data)
    run = rng.choice([None, "other", *[n.decode("utf-8", "replace") for n in named[:3]] * 2])
    ra, rb = pure.Receiver(direction, run=run), rust.Receiver(direction, run=run)
    for i, piece in enumerate(pieces):
        kind = rng.choice([bytes, bytes, bytes, bytearray, memoryview])
        arg = kind(piece)
        a = outcome(lambda: ra.feed(arg))
        b = outcome(lambda: rb.feed(arg))

        def repro(i: int = i) -> str:
            return f"Receiver({direction!r}, run={run!r}).feed over pieces {[p[:200] for p in pieces[: i + 1]]!r:.900}"

        check("Receiver.feed", repro, a, b, wire=True)
        check("Receiver.seq", repro, ra.seq, rb.seq)
        check("Receiver.buffered", repro, ra.buffered, rb.buffered)
        check("Receiver.plain", repro, ra.plain, rb.plain)
    cap = rng.choice([1, 2, 5, 64, 65536, None])
    fa = pure.Framer() if cap is None else pure.Framer(cap)
    fb = rust.Framer() if cap is None else rust.Framer(cap)
    for i, piece in enumerate(pieces):
        a = outcome(lambda: fa.feed(piece))
        b = outcome(lambda: fb.feed(piece))

        def repro(i: int = i) -> str:
            return f"Framer({cap}).feed over pieces {[p[:200] for p in pieces[: i + 1]]!r:.900}"

        check("Framer.feed", repro, a, b, wire=True)
        check("Framer.buffered", repro, fa.buffered, fb.buffered)


def scan_stream(rng: random.Random, direction: str) -> bytes:
    """A stream for `scan`: random lines mixed with valid messages whose seq mostly increases (so
    many lines are accepted), empty lines, `\r`, over-long lines; sometimes bytes mutated."""
    parts: list[bytes] = []
    seq = rng.choice([0, 60])  # random lines carry seqs up to 50
    for _ in range(rng.randint(0, 20)):
        r = rng.random()
        if r < 0.45:
            msg = random_message(rng)
            while rng.random() < 0.9 and msg["type"] not in (
                EVENT_SCHEMAS if direction == "event" else CONTROL_SCHEMAS
            ):
                msg = random_message(rng)
            seq += rng.choice([1, 1, 1, 1, 1, 2, 0, -1])
            msg["seq"] = max(seq, 0) if rng.random() < 0.9 else rng.choice([float(max(seq, 1)), 2**53, "3"])
            parts.append(orjson.dumps(msg))
        elif r < 0.8:
            line = random_line(rng)
            parts.append(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line)
        elif r < 0.88:
            parts.append(rng.choice([b"", b"\r", b" ", b"\t"]))
        elif r < 0.93:
            parts.append(b"x" * rng.choice([65535, 65536, 65537, 70000]))
        else:
            msg = random_message(rng)
            seq += 1
            msg["seq"] = seq
            msg["pad"] = "\u00e9\\n" * rng.choice([10, 3000, 21000])
            parts.append(orjson.dumps(msg))
    data = bytearray(b"\n".join(parts))
    for _ in range(rng.choice([0, 0, 0, 0, 0, 1, 3])):
        if data:
            data[rng.randrange(len(data))] = rng.choice([0, 10, 13, 34, 92, 0xC3, 0xFF, rng.randrange(256)])
    if rng.random() < 0.8:
        data += b"\n"
    return bytes(data)


#: The keys whose later duplicate changes what a line is, and values such a duplicate may carry.
DUP_VALUES: dict[str, list[Any]] = {
    "run": ["r", "other", "r\u00e9", "", 5, None],
    "type": ["info", "exit", "turn-started", "ready", "result", "prompt", "nope", 1],
    "seq": [1, 2, 7, 60, 2**53, 0, -1, 2.0, "3", None],
    "v": [1, 2, 1.0, "1", True],
}


def spelled(rng: random.Random, key: str) -> str:
    """``key`` as the raw text of a JSON key: each character as it is or as a ``\\u`` escape (hex
    in either case), all of them now and then."""
    every = rng.random() < 0.2
    out = []
    for ch in key:
        if every or rng.random() < 0.4:
            code = f"{ord(ch):04x}"
            out.append("\\u" + (code.upper() if rng.random() < 0.5 else code))
        else:
            out.append(ch)
    return "".join(out)


def near_miss(rng: random.Random, key: str) -> str:
    """Raw key text that only looks like ``key``: a letter more or less, another case, an escaped
    backslash, an escape of another letter."""
    return rng.choice(
        [
            spelled(rng, key) + "x",
            "x" + spelled(rng, key),
            spelled(rng, key[:-1]),
            key.upper(),
            "\\\\" + spelled(rng, key),
            spelled(rng, key[:-1]) + "\\u" + f"{ord(key[-1]) ^ 0x20:04x}",
        ]
    )


def dup_key_line(rng: random.Random, msg: dict[str, Any]) -> bytes:
    """``msg`` written with one to three more keys: a duplicate of ``run``, ``type``, ``seq`` or
    ``v`` in any spelling (mostly after the first, which it then overrides: the last key wins),
    or a key that only looks like one."""
    compact = rng.random() < 0.8
    sep, colon = (",", ":") if compact else (", ", ": ")
    items = [f"{orjson.dumps(k).decode()}{colon}{orjson.dumps(v).decode()}" for k, v in msg.items()]
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(list(DUP_VALUES))
        text = spelled(rng, key) if rng.random() < 0.8 else near_miss(rng, key)
        value = rng.choice(DUP_VALUES[key])
        if key == "seq" and rng.random() < 0.5 and isinstance(msg.get("seq"), int):
            value = msg["seq"] + rng.choice([0, 1, 5])
        at = len(items) if rng.random() < 0.7 else rng.randint(0, len(items))
        items.insert(at, f'"{text}"{colon}{orjson.dumps(value).decode()}')
    return ("{" + sep.join(items) + "}").encode()


def dup_key_stream(rng: random.Random, direction: str) -> bytes:
    """A stream of in-order messages (a writer's key order, mostly), many written with a later
    duplicate key in an escaped spelling, some plain: what a hostile child may write to pass for
    another run, type or seq."""
    table = EVENT_SCHEMAS if direction == "event" else CONTROL_SCHEMAS
    parts: list[bytes] = []
    seq = 0
    for _ in range(rng.randint(1, 12)):
        msg = random_message(rng)
        while msg["type"] not in table:
            msg = random_message(rng)
        seq += rng.choice([1, 1, 1, 2])
        rest = {k: v for k, v in msg.items() if k not in ("v", "seq", "type", "run")}
        msg = {"v": 1, "seq": seq, "type": msg["type"], "run": "r", **rest}
        if rng.random() < 0.1:
            msg["run"] = rng.choice(["other", "r\u00e9"])
        parts.append(dup_key_line(rng, msg) if rng.random() < 0.8 else orjson.dumps(msg))
    data = b"\n".join(parts)
    return data + b"\n" if rng.random() < 0.9 else data


def as_scanned(results: list[Any], lines: list[bytes]) -> list[Any]:
    """`feed`'s results as `scan` must give them: each dict as `Scanned(type, int(seq), line)`."""
    assert len(results) == len(lines), (len(results), len(lines))
    return [
        r if isinstance(r, Rejection) else Scanned(r["type"], int(r["seq"]), ln)
        for r, ln in zip(results, lines, strict=True)
    ]


def check_scan(rng: random.Random) -> None:
    direction = rng.choice(["event", "control"])
    data = scan_stream(rng, direction)
    pieces = splits(rng, data)
    sa, sb = pure.Receiver(direction), rust.Receiver(direction)  # scan only
    fa, fb = pure.Receiver(direction), rust.Receiver(direction)  # feed only: the reference
    ma, mb = pure.Receiver(direction), rust.Receiver(direction)  # feed and scan alternating
    framer = pure.Framer()
    for i, piece in enumerate(pieces):
        kind = rng.choice([bytes, bytes, bytes, bytearray, memoryview])
        arg = kind(piece)

        def repro(i: int = i) -> str:
            return f"Receiver({direction!r}).scan over pieces {[p[:200] for p in pieces[: i + 1]]!r:.900}"

        a = outcome(lambda: sa.scan(arg))
        b = outcome(lambda: sb.scan(arg))
        check("Receiver.scan", repro, a, b, wire=True)
        check("Receiver.scan seq", repro, sa.seq, sb.seq)
        check("Receiver.scan buffered", repro, sa.buffered, sb.buffered)
        lines = [ln for ln in framer.feed(piece) if ln]
        want_a = ("ok", as_scanned(fa.feed(piece), lines))
        want_b = ("ok", as_scanned(fb.feed(piece), lines))
        check("pure scan vs pure feed", repro, want_a, a)
        check("rust scan vs rust feed", repro, want_b, b)
        method = rng.choice(["feed", "scan"])
        ma_out = outcome(lambda: getattr(ma, method)(arg))
        mb_out = outcome(lambda: getattr(mb, method)(arg))
        check(f"alternating {method}", repro, ma_out, mb_out, wire=True)
        if method == "feed" and ma_out[0] == "ok":
            ma_out = ("ok", as_scanned(ma_out[1], lines))
            mb_out = ("ok", as_scanned(mb_out[1], lines))
        check(f"alternating {method} vs scan", repro, b, mb_out)
        check("alternating seq", repro, (ma.seq, ma.buffered), (sb.seq, sb.buffered))
        check("alternating seq", repro, (mb.seq, mb.buffered), (sb.seq, sb.buffered))


def batch_columns(batch: Any) -> tuple[Any, ...]:
    """Every column of a `ScanBatch`, as plain values."""
    return (
        type(batch).__name__,
        batch.lines,
        batch.ends.typecode,
        batch.ends.tolist(),
        batch.seqs.typecode,
        batch.seqs.tolist(),
        batch.types,
        batch.rejections,
        batch.foreign,
        len(batch),
        repr(batch),
    )


def batch_as_scan(batch: Any, direction: str) -> list[Any]:
    """`scan`'s list rebuilt from a batch's columns."""
    names = CONTROL_TYPE_ORDER if direction == "control" else EVENT_TYPE_ORDER
    records: list[Any] = []
    start = 0
    for end, seq, t in zip(batch.ends, batch.seqs, batch.types, strict=True):
        records.append(Scanned(names[t], seq, batch.lines[start : end - 1]))
        start = end
    out: list[Any] = []
    i = 0
    for before, rejection in batch.rejections:
        out.extend(records[i:before])
        out.append(rejection)
        i = before
    out.extend(records[i:])
    return out


def check_scan_batch(rng: random.Random, stream: Callable[[random.Random, str], bytes] = scan_stream) -> None:
    direction = rng.choice(["event", "control"])
    data = stream(rng, direction)
    for line in data.split(b"\n")[:3] if stream is dup_key_stream else []:
        check_decode(rng, line)
    pieces = splits(rng, data)
    # foreign lines are listed against a run: none, one the stream names (mostly), or another
    named = re.findall(rb'"run":\s*"([^"\\]*)"', data)
    run = rng.choice([None, "other", *[n.decode("utf-8", "replace") for n in named[:3]] * 2])
    ba, bb = pure.Receiver(direction, run=run), rust.Receiver(direction, run=run)  # scan_batch only
    sa, sb = pure.Receiver(direction), rust.Receiver(direction)  # scan only: the reference
    ma, mb = pure.Receiver(direction), rust.Receiver(direction)  # scan_batch, scan and feed mixed
    fa, fb = pure.Receiver(direction, run=run), rust.Receiver(direction, run=run)  # feed: the runs
    for i, piece in enumerate(pieces):
        kind = rng.choice([bytes, bytes, bytes, bytearray, memoryview])
        arg = kind(piece)

        def repro(i: int = i) -> str:
            return f"Receiver({direction!r}).scan_batch over pieces {[p[:200] for p in pieces[: i + 1]]!r:.900}"

        a = outcome(lambda: ba.scan_batch(arg))
        b = outcome(lambda: bb.scan_batch(arg))
        check("ScanBatch type", repro, a[0], b[0])
        if a[0] != "ok":
            check("Receiver.scan_batch error", repro, a, b, wire=True)
            continue
        check("Receiver.scan_batch", repro, batch_columns(a[1]), batch_columns(b[1]), wire=True)
        check("Receiver.scan_batch seq", repro, (ba.seq, ba.buffered), (bb.seq, bb.buffered))
        n = len(b[1])
        for at in (0, n - 1, -1, rng.randint(-n - 2, n + 2)):
            check("ScanBatch.line", repro, outcome(lambda: a[1].line(at)), outcome(lambda: b[1].line(at)))
        lo, hi = rng.randint(-1, n + 1), rng.randint(-1, n + 1)
        sliced = [outcome(lambda x=x: batch_columns(x[1].slice(lo, hi))) for x in (a, b)]
        check("ScanBatch.slice", repro, sliced[0], sliced[1])
        for side, batch, feeder in (("pure", a[1], fa), ("rust", b[1], fb)):
            fed = [m for m in feeder.feed(arg) if type(m) is dict]
            runs = [m["run"] for m in fed] if run is not None else []
            check(
                f"{side} scan_batch foreign vs feed", repro, batch.foreign, [i for i, r in enumerate(runs) if r != run]
            )
        check("feed plain", repro, fa.plain, fb.plain)
        want = outcome(lambda: sb.scan(arg))
        check("pure scan_batch vs scan", repro, ("ok", batch_as_scan(a[1], direction)), outcome(lambda: sa.scan(arg)))
        check("rust scan_batch vs scan", repro, ("ok", batch_as_scan(b[1], direction)), want)
        check("scan_batch seq vs scan", repro, (bb.seq, bb.buffered), (sb.seq, sb.buffered))
        method = rng.choice(["feed", "scan", "scan_batch"])
        ma_out = outcome(lambda: getattr(ma, method)(arg))
        mb_out = outcome(lambda: getattr(mb, method)(arg))
        if method == "scan_batch":
            check("mixed scan_batch", repro, batch_columns(ma_out[1]), batch_columns(mb_out[1]), wire=True)
            check("mixed scan_batch vs scan", repro, ("ok", batch_as_scan(mb_out[1], direction)), want)
        else:
            check(f"mixed {method}", repro, ma_out, mb_out, wire=True)
        check("mixed seq", repro, (ma.seq, ma.buffered), (sb.seq, sb.buffered))
        check("mixed seq", repro, (mb.seq, mb.buffered), (sb.seq, sb.buffered))


def check_text(rng: random.Random) -> None:
    text = random_text(rng)
    limit = rng.choice([-5, -1, 0, 1, 2, 3, 4, 5, 6, 10, 40, 60, 100, 160, 4096, 2**40])
    for name in ("utf8_prefix", "truncate_line", "scrub"):
        a = outcome(lambda: getattr(pure, name)(text, limit))
        b = outcome(lambda: getattr(rust, name)(text, limit))
        check(name, f"{name}({text!r}, {limit})", a, b)


def check_misc(rng: random.Random) -> None:
    for args in [
        (rng.choice(ALL_TYPES), "r", rng.randint(0, 9), random_message(rng)),
        ("t", "r", 1, None),
        ("t", "r", 1, {}),
        ("t", 5, "x", {"v": 2, "seq": 9, "type": "u", "run": "q", "a": 1}),
    ]:
        a = outcome(lambda: pure.message(*args))
        b = outcome(lambda: rust.message(*args))
        check("message", f"message{args!r}", a, b)
    line = random_line(rng)
    _, rej = pure.decode(line, "control")
    if rej is not None:
        check("rejection_ack", f"rejection_ack({rej!r})", pure.rejection_ack(rej), rust.rejection_ack(rej))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=20000, help="number of cases (default 20000)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time-based)")
    parser.add_argument("--max-diffs", type=int, default=5, help="stop after this many differences")
    parser.add_argument("--only", default="", help="comma-separated case kinds to run (default: all)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    kinds: list[tuple[str, Callable[[], None], float]] = [
        ("decode", lambda: check_decode(rng, random_line(rng)), 0.45),
        ("strings", lambda: check_strings(rng), 0.2),
        ("dict", lambda: check_dict(rng), 0.17),
        ("sender", lambda: check_sender(rng), 0.06),
        ("receiver", lambda: check_receiver(rng), 0.1),
        ("feed", lambda: check_feed(rng), 0.07),
        ("scan", lambda: check_scan(rng), 0.07),
        ("scan_batch", lambda: check_scan_batch(rng), 0.07),
        ("dup_keys", lambda: check_scan_batch(rng, dup_key_stream), 0.07),
        ("text", lambda: check_text(rng), 0.12),
        ("misc", lambda: check_misc(rng), 0.03),
    ]
    if args.only:
        kinds = [k for k in kinds if k[0] in args.only.split(",")]
    names = [k[0] for k in kinds]
    weights = [k[2] for k in kinds]
    funcs = {k[0]: k[1] for k in kinds}
    counts = {name: 0 for name in names}
    diffs: list[str] = []
    start = time.time()
    for _ in range(args.n):
        name = rng.choices(names, weights)[0]
        counts[name] += 1
        try:
            funcs[name]()
        except Diff as d:
            diffs.append(str(d))
            if len(diffs) >= args.max_diffs:
                break
    elapsed = time.time() - start
    print(
        f"differential: seed={seed} cases={sum(counts.values())} ({', '.join(f'{k} {v}' for k, v in counts.items())}) "
        f"in {elapsed:.1f}s: {len(diffs)} difference(s)"
    )
    for d in diffs:
        print("DIFF", d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
