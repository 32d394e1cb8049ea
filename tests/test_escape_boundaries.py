"""Characters at the UTF-8 and str-width boundaries, each the only non-ASCII character of its
string, at every offset around the 16- and 32-byte blocks the SIMD paths read, through every
path that builds or checks strings: ``decode`` (bytes and str lines), ``Receiver.feed``,
``Receiver.receive`` and ``Receiver.scan``; in string values, object keys, the text fields a
receiver reuses from the line before (``delta``, ``summary``), the repeated fields it caches
(``model``) and values nested in tool arguments. Written as ``\\u`` escapes (surrogate pairs
included), as raw UTF-8, and as raw UTF-8 after an escape (the escaped-string path). Each
message must be orjson's (and ``json.loads``'s); a lone or misordered surrogate escape, or an
encoded surrogate, is rejected as orjson rejects it. On the Rust backend no str may fall back from
its one-pass build (``Receiver.fast_path_counters``)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import assert_strict_equal

#: (name, the character as a JSON ``\\u`` escape, the character, or None when it is not one).
ESCAPED: list[tuple[str, str, str | None]] = [
    ("U+007F", "\\u007F", "\x7f"),
    ("U+0080", "\\u0080", "\x80"),
    ("U+00FF", "\\u00FF", "\xff"),
    ("U+0100", "\\u0100", "\u0100"),
    ("U+07FF", "\\u07FF", "\u07ff"),
    ("U+0800", "\\u0800", "\u0800"),
    ("U+D7FF", "\\uD7FF", "\ud7ff"),
    ("U+E000", "\\uE000", "\ue000"),
    ("U+FFFF", "\\uFFFF", "\uffff"),
    ("pair D800 DC00", "\\uD800\\uDC00", "\U00010000"),
    ("pair DBFF DFFF", "\\uDBFF\\uDFFF", "\U0010ffff"),
    ("lone high", "\\uD800", None),
    ("lone high last", "\\uDBFF", None),
    ("lone low", "\\uDC00", None),
    ("low then high", "\\uDC00\\uD800", None),
    ("high then not low", "\\uD800\\u0041", None),
    ("high then high", "\\uD800\\uD800", None),
]

#: (name, the character's bytes, the character, or None when the bytes are not UTF-8).
RAW: list[tuple[str, bytes, str | None]] = [
    *[(name, c.encode(), c) for name, _, c in ESCAPED if c is not None and name != "U+007F"],
    ("encoded D800", b"\xed\xa0\x80", None),
    ("encoded DFFF", b"\xed\xbf\xbf", None),
]

#: The prefix lengths before the character (every offset across the 16- and 32-byte blocks of
#: the string and, with the fixed bytes before it, of the line) and the suffix lengths after it.
PREFIXES = range(0, 41)
SUFFIXES = (0, 1, 17)

#: Where in a message the string goes; ``%s`` is the JSON string (quotes included).
PLACES: dict[str, tuple[bytes, str]] = {
    "value": (b'"type":"tool-call","run":"r","name":"grep","id":"c","arguments":{"path":%s}', "arguments"),
    "key": (b'"type":"tool-call","run":"r","name":"grep","id":"c","arguments":{%s:1,"b":2}', "arguments"),
    "text": (b'"type":"assistant-text-delta","run":"r","content-index":0,"delta":%s,"summary":%s', "delta"),
    "repeated": (b'"type":"llm-start","run":"r","provider":"anthropic","model":%s', "model"),
    "nested": (
        b'"type":"tool-call","run":"r","name":"edit","id":"c","arguments":{"a":[1,{"b":%s,"c":[%s]}],"d":{"e":%s}}',
        "arguments",
    ),
}


def strings(encoding: str, char: bytes) -> list[bytes]:
    """The JSON strings (with quotes) holding ``char`` (as written in the line) at every offset."""
    out = []
    for p in PREFIXES:
        for q in SUFFIXES:
            c = char.lower() if encoding != "raw" and p % 2 else char  # either case of hex digit
            lead = b"\\t" if encoding == "raw after an escape" else b""
            out.append(b'"' + lead + b"a" * p + c + b"b" * q + b'"')
    return out


def lines_for(place: str, encoding: str, char: bytes) -> list[bytes]:
    """Each string in its place, twice in a row (the second line reuses what a receiver cached
    from the first), with increasing seqs."""
    body, _ = PLACES[place]
    out = []
    for s in strings(encoding, char):
        for _ in range(2):
            fill = (s,) * body.count(b"%s")
            out.append(b'{"v":1,"seq":%d,' % (len(out) + 1) + body % fill + b"}")
    return out


CASES: list[tuple[str, str, bytes, bool]] = [
    *[(name, "escaped", text.encode(), c is not None) for name, text, c in ESCAPED],
    *[(name, "raw", raw, c is not None) for name, raw, c in RAW],
    *[(name, "raw after an escape", raw, c is not None) for name, raw, c in RAW],
]
IDS = [f"{encoding}-{name}" for name, encoding, _, _ in CASES]


def expected(line: bytes) -> Any:
    """orjson's message, or None when orjson refuses the line."""
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    assert msg == json.loads(line)
    return msg


def check_message(got: Any, rejection: Any, line: bytes, valid: bool) -> None:
    want = expected(line)
    assert (want is not None) == valid, line
    if valid:
        assert rejection is None, (line, rejection)
        assert_strict_equal(got, want)
    else:
        assert got is None, line
        assert rejection.code == "malformed" and rejection.fatal is False, (line, rejection)
        assert rejection.reason in ("line is not valid JSON", "line is not valid UTF-8"), rejection


def no_fallbacks(rx: Any) -> None:
    counts = rx.fast_path_counters()
    assert counts["str_one_pass_fallbacks"] == 0, counts
    assert counts["dict_template_fallbacks"] == 0, counts


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("name,encoding,char,valid", CASES, ids=IDS)
def test_decode(backend: ModuleType, place: str, name: str, encoding: str, char: bytes, valid: bool) -> None:
    for line in lines_for(place, encoding, char):
        msg, rejection = backend.decode(line, "event")
        check_message(msg, rejection, line, valid)
        if valid:
            # A str line: the same message.
            assert_strict_equal(backend.decode(line.decode(), "event"), (msg, None))


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("name,encoding,char,valid", CASES, ids=IDS)
def test_receiver(backend: ModuleType, place: str, name: str, encoding: str, char: bytes, valid: bool) -> None:
    lines = lines_for(place, encoding, char)
    stream = b"".join(line + b"\n" for line in lines)
    # feed, in one chunk and in chunks cut anywhere.
    rx = backend.Receiver("event")
    fed = rx.feed(stream)
    assert len(fed) == len(lines)
    for line, item in zip(lines, fed, strict=True):
        is_msg = type(item) is dict
        check_message(item if is_msg else None, None if is_msg else item, line, valid)
    cut = backend.Receiver("event")
    pieces = [m for i in range(0, len(stream), 37) for m in cut.feed(stream[i : i + 37])]
    assert_strict_equal(pieces, fed)
    # receive, line by line.
    received = backend.Receiver("event")
    for line, item in zip(lines, fed, strict=True):
        msg, rejection = received.receive(line)
        assert_strict_equal(msg if rejection is None else rejection, item)
    # scan: the same verdicts, each accepted line's exact bytes.
    scanner = backend.Receiver("event")
    scanned = scanner.scan(stream)
    assert len(scanned) == len(lines)
    for line, item, s in zip(lines, fed, scanned, strict=True):
        if type(item) is dict:
            assert (s.type, s.seq, s.line) == (item["type"], item["seq"], line)
        else:
            assert_strict_equal(s, item)
    if backend.__name__.endswith("_native"):
        for r in (rx, cut, received):
            no_fallbacks(r)
