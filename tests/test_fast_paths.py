"""``Receiver.fast_path_counters`` (docs/codec.md, "Diagnostics"): the Rust drain's fast paths
fall back silently to slower, equally correct ones, so these tests read the counters to hold
realistic streams to the fast paths, and to check that the fallbacks happen only where they
should. A template key check that misses a key, or a str width off by one, leaves every output
right and shows up here only."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import assert_strict_equal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))
import realistic
import streams

KEYS = [
    "dict_template_hits",
    "dict_template_misses",
    "dict_template_fallbacks",
    "dict_unfit",
    "str_one_pass_hits",
    "str_one_pass_fallbacks",
    "scan_quick_accepted",
    "scan_quick_deferred",
]
DICT_KEYS = KEYS[:4]
LINES = 3000

#: The dict templates write into the private dict layout of CPython 3.11 to 3.13 (with the GIL).
templates = pytest.mark.skipif(
    not (3, 11) <= sys.version_info[:2] <= (3, 13), reason="dict templates are for CPython 3.11 to 3.13"
)

STREAMS: dict[str, Callable[[], bytes]] = {
    "realistic mixed": lambda: realistic.realistic_mixed_stream(n=LINES),
    "realistic deltas": lambda: realistic.realistic_deltas_stream(n=LINES),
    "non-English": lambda: realistic.non_english_stream(n=LINES),
    "ASCII mixed": lambda: streams.to_stream(streams.mixed_messages(n=LINES)),
}


def counters(rx: Any) -> dict[str, int]:
    got = rx.fast_path_counters()
    assert type(got) is dict and list(got) == KEYS
    assert all(type(v) is int and v >= 0 for v in got.values())
    return dict(got)


def delta(rx: Any, before: dict[str, int]) -> dict[str, int]:
    """What changed since ``before`` (only the keys that did)."""
    now = counters(rx)
    return {k: now[k] - before[k] for k in KEYS if now[k] != before[k]}


def dicts_in(value: Any) -> int:
    n = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            n += 1
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return n


def lines_of(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


# ---------------------------------------------------------------------------------------------
# Both backends: the same method, the same keys


def test_a_new_receiver_counts_nothing(backend: ModuleType) -> None:
    for direction in ("event", "control"):
        assert counters(backend.Receiver(direction)) == dict.fromkeys(KEYS, 0)


def test_a_fresh_dict_each_call(backend: ModuleType) -> None:
    rx = backend.Receiver("event")
    first = rx.fast_path_counters()
    first["dict_template_hits"] = 99
    assert rx.fast_path_counters()["dict_template_hits"] == 0
    assert rx.fast_path_counters() is not rx.fast_path_counters()


@pytest.mark.parametrize("call", [lambda rx: rx.fast_path_counters(1), lambda rx: rx.fast_path_counters(reset=True)])
def test_arguments_are_refused(backend: ModuleType, call: Callable[[Any], Any]) -> None:
    # A TypeError on both backends; the wording is each interpreter's own for a method taking no
    # arguments (a C method's "takes no arguments", a Python method's positional count).
    with pytest.raises(TypeError, match="fast_path_counters"):
        call(backend.Receiver("event"))


def test_the_pure_backend_counts_zeros(pure: ModuleType) -> None:
    data = STREAMS["non-English"]()
    rx = pure.Receiver("event")
    rx.feed(data)
    rx.receive(lines_of(data)[-1])
    pure.Receiver("event").scan(data)
    assert counters(rx) == dict.fromkeys(KEYS, 0)


# ---------------------------------------------------------------------------------------------
# Rust: realistic streams take the fast paths


@templates
@pytest.mark.parametrize("name", list(STREAMS))
def test_realistic_streams_take_the_fast_paths_in_feed(native: ModuleType, name: str) -> None:
    data = STREAMS[name]()
    rx = native.Receiver("event")
    out = [m for chunk in streams.chunks(data, 16 * 1024) for m in rx.feed(chunk)]
    assert all(type(m) is dict for m in out) and len(out) == LINES
    got = counters(rx)
    dicts = sum(got[k] for k in DICT_KEYS)
    # Every dict built is counted once, in exactly one way.
    assert dicts == sum(map(dicts_in, out))
    assert got["dict_template_fallbacks"] == 0, got
    assert got["str_one_pass_fallbacks"] == 0, got
    # A template per key order (message types, nested objects): a miss for each one's first two
    # sightings, a hit for nearly every other dict (one-key dicts such as bash's arguments are
    # too small to template).
    assert got["dict_template_misses"] <= 80, got
    assert got["dict_template_hits"] >= 0.9 * dicts, got
    assert got["dict_template_hits"] + got["dict_template_misses"] + got["dict_unfit"] == dicts
    assert got["str_one_pass_hits"] > 0, got
    if name == "non-English":
        assert got["str_one_pass_hits"] >= LINES // 2, got
    # feed builds no scan verdicts.
    assert got["scan_quick_accepted"] == got["scan_quick_deferred"] == 0


@templates
@pytest.mark.parametrize("name", ["realistic mixed", "non-English"])
def test_receive_counts_as_feed_does(native: ModuleType, name: str) -> None:
    data = STREAMS[name]()
    fed = native.Receiver("event")
    fed.feed(data)
    received = native.Receiver("event")
    for line in lines_of(data):
        msg, rejection = received.receive(line)
        assert rejection is None
    assert counters(received) == counters(fed)


@pytest.mark.parametrize("name", list(STREAMS))
def test_realistic_streams_take_the_quick_path_in_scan(native: ModuleType, name: str) -> None:
    data = STREAMS[name]()
    rx = native.Receiver("event")
    out = [s for chunk in streams.chunks(data, 16 * 1024) for s in rx.scan(chunk)]
    assert len(out) == LINES
    # Every realistic line is accepted by the one-pass check alone; scan builds no objects.
    assert counters(rx) == {**dict.fromkeys(KEYS, 0), "scan_quick_accepted": LINES}
    rx.scan_rejections(b"")
    assert counters(rx)["scan_quick_accepted"] == LINES


# ---------------------------------------------------------------------------------------------
# Rust: the quick path defers exactly the unusual lines


def event(seq: int, tail: bytes = b"", head: bytes | None = None) -> bytes:
    start = head if head is not None else b'{"v":1,"seq":%d,' % seq
    return start + b'"type":"assistant-text-delta","run":"r","content-index":0,"delta":"d"' + tail + b"}"


QUICK_CASES: list[tuple[str, bytes, bool]] = [
    ("plain", event(1), True),
    ("non-ASCII raw", event(1, b',"summary":"caf\xc3\xa9 \xe2\x80\x94"'), True),
    ("simple escapes", event(1, b',"summary":"a\\n\\"b\\\\"'), True),
    (
        "keys in another order",
        b'{"type":"assistant-text-delta","seq":1,"run":"r","v":1,"content-index":0,"delta":"d"}',
        True,
    ),
    ("unicode escape", event(1, b',"summary":"caf\\u00e9"'), False),
    ("exponent seq", event(1, head=b'{"v":1,"seq":1e0,'), False),
    ("float seq", event(1, head=b'{"v":1,"seq":1.0,'), False),
    ("duplicate key", event(1, b',"delta":"e"'), False),
    ("not JSON", b"{nope", False),
    ("wrong direction", b'{"v":1,"seq":1,"type":"prompt","run":"r","text":"t"}', False),
    ("missing field", b'{"v":1,"seq":1,"type":"tool-call","run":"r","id":"c","arguments":{}}', False),
    ("wrong kind", event(1, head=b'{"v":1,"seq":1,"summary":5,'), False),
]


@pytest.mark.parametrize("name,line,quick", QUICK_CASES, ids=[c[0] for c in QUICK_CASES])
def test_quick_verdicts(native: ModuleType, name: str, line: bytes, quick: bool) -> None:
    rx = native.Receiver("event")
    rx.scan(line + b"\n")
    want = {"scan_quick_accepted": 1} if quick else {"scan_quick_deferred": 1}
    assert {k: v for k, v in counters(rx).items() if v} == want
    # Accepted by the quick path, or judged exactly: the same verdict as feed either way.
    scanned = native.Receiver("event").scan(line + b"\n")
    fed = native.Receiver("event").feed(line + b"\n")
    assert [type(o).__name__ for o in scanned] == ["Scanned" if type(m) is dict else "Rejection" for m in fed]


def test_a_seq_that_does_not_increase_goes_to_the_exact_check(native: ModuleType) -> None:
    rx = native.Receiver("event")
    out = rx.scan(event(5) + b"\n" + event(5) + b"\n" + event(4) + b"\n" + event(6) + b"\n")
    assert [type(o).__name__ for o in out] == ["Scanned", "Rejection", "Rejection", "Scanned"]
    assert delta(rx, dict.fromkeys(KEYS, 0)) == {"scan_quick_accepted": 2, "scan_quick_deferred": 2}
    rx.scan_rejections(event(7) + b"\n" + b"oops\n")
    assert delta(rx, dict.fromkeys(KEYS, 0)) == {"scan_quick_accepted": 3, "scan_quick_deferred": 3}


# ---------------------------------------------------------------------------------------------
# Rust: dict templates fall back only where they should


def tool_call(seq: int, arguments: bytes) -> bytes:
    return b'{"v":1,"seq":%d,"type":"tool-call","run":"r","name":"grep","id":"c","arguments":%s}' % (seq, arguments)


def feed_each(rx: Any, lines: list[bytes]) -> Iterator[tuple[Any, dict[str, int]]]:
    """Each line's message (checked against orjson) and the counters it moved."""
    for line in lines:
        before = counters(rx)
        (msg,) = rx.feed(line + b"\n")
        assert_strict_equal(msg, orjson.loads(line))
        yield msg, delta(rx, before)


@templates
def test_first_and_second_sightings_miss_then_every_copy_hits(native: ModuleType) -> None:
    rx = native.Receiver("event")
    args = b'{"path":"a.py","pattern":"x","limit":3}'
    moved = [d for _, d in feed_each(rx, [tool_call(i, args) for i in range(1, 6)])]
    # Two dicts a line (the message, its arguments), both new key orders on line 1.
    assert moved[0] == {"dict_template_misses": 2}
    assert moved[1] == {"dict_template_misses": 2}
    assert moved[2:] == [{"dict_template_hits": 2}] * 3


@templates
def test_key_orders_that_differ_only_in_the_last_key(native: ModuleType) -> None:
    rx = native.Receiver("event")
    abc = [tool_call(i, b'{"a":1,"b":2,"c":3}') for i in range(1, 4)]
    abd = [tool_call(i, b'{"a":1,"b":2,"d":3}') for i in range(4, 8)]
    abdc = [tool_call(i, b'{"a":1,"b":2,"d":3,"c":4}') for i in range(8, 12)]
    moved = [d for _, d in feed_each(rx, abc + abd + abdc)]
    new_inner = {"dict_template_hits": 1, "dict_template_misses": 1}
    assert moved[2] == {"dict_template_hits": 2}
    # A new key order, although its first keys are those of the template just copied.
    assert moved[3:7] == [new_inner, new_inner, {"dict_template_hits": 2}, {"dict_template_hits": 2}]
    assert moved[7:] == [new_inner, new_inner, {"dict_template_hits": 2}, {"dict_template_hits": 2}]
    assert counters(rx)["dict_template_fallbacks"] == 0


def assert_new_order_then_hits(moved: list[dict[str, int]], case: object) -> None:
    """Three lines of one key order, then three of another that differs in one key: never a
    fallback; the new order misses (its first sighting), and its third sighting is copied. (The
    exact counts also depend on which slot each order hashes to: a new order may take over the
    slot of another, whose next dict then misses.)"""
    assert not any("dict_template_fallbacks" in d for d in moved), (case, moved)
    assert moved[2].get("dict_template_hits", 0) >= 1, (case, moved)
    assert moved[3].get("dict_template_misses", 0) >= 1, (case, moved)
    assert moved[5].get("dict_template_hits", 0) >= 1, (case, moved)


def with_extra(seq: int, keys: list[bytes]) -> bytes:
    """A tool-call whose top level ends with ``keys`` (unknown fields, which events may carry),
    with no other dict templated (arguments of one key): the template copied last is always the
    message of the line before."""
    return tool_call(seq, b'{"a":1}')[:-1] + b"".join(b',"%s":0' % k for k in keys) + b"}"


@templates
@pytest.mark.parametrize("extra", range(1, 18))
def test_every_key_counts_in_the_key_check(native: ModuleType, extra: int) -> None:
    # The message of the line before is the last template copied, and is tried first: a message
    # that differs from it in one key only, wherever, is a new key order (7 + extra keys).
    keys = [b"x%d" % i for i in range(extra)]
    for place in range(extra):
        other = list(keys)
        other[place] = b"other"
        rx = native.Receiver("event")
        lines = [with_extra(i, keys) for i in (1, 2, 3)] + [with_extra(i, other) for i in (4, 5, 6)]
        moved = [d for _, d in feed_each(rx, lines)]
        assert_new_order_then_hits(moved, (extra, place))


@templates
def test_nested_dicts_that_differ_in_one_key(native: ModuleType) -> None:
    for n in range(2, 25):
        for place in range(n):
            keys = [b'"k%d":%d' % (i, i) for i in range(n)]
            other = list(keys)
            other[place] = b'"other":0'
            rx = native.Receiver("event")
            lines = [tool_call(i, b"{" + b",".join(keys) + b"}") for i in (1, 2, 3)]
            lines += [tool_call(i, b"{" + b",".join(other) + b"}") for i in (4, 5, 6)]
            moved = [d for _, d in feed_each(rx, lines)]
            assert_new_order_then_hits(moved, (n, place))


@templates
def test_a_repeated_key_is_never_templated(native: ModuleType) -> None:
    rx = native.Receiver("event")
    moved = [d for _, d in feed_each(rx, [tool_call(i, b'{"a":1,"b":2,"a":3}') for i in range(1, 6)])]
    assert moved[2:] == [{"dict_template_hits": 1, "dict_template_misses": 1}] * 3


@templates
@pytest.mark.parametrize("n", [0, 1, 2, 24, 25, 40])
def test_dicts_of_too_few_or_too_many_keys_are_built_by_insert(native: ModuleType, n: int) -> None:
    rx = native.Receiver("event")
    args = b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(n)) + b"}"
    moved = [d for _, d in feed_each(rx, [tool_call(i, args) for i in range(1, 5)])]
    if 2 <= n <= 24:
        assert moved == [{"dict_template_misses": 2}] * 2 + [{"dict_template_hits": 2}] * 2
    else:
        first = {"dict_template_misses": 1, "dict_unfit": 1}
        assert moved == [first, first] + [{"dict_template_hits": 1, "dict_unfit": 1}] * 2


@templates
def test_nested_objects_of_one_shape_share_a_template(native: ModuleType) -> None:
    rx = native.Receiver("event")
    item = b'{"type":"text","text":"x"}'
    args = b'{"content":[%s],"more":{"is":[%s,%s],"at":1}}' % (item, item, item)
    moved = [d for _, d in feed_each(rx, [tool_call(i, args) for i in range(1, 4)])]
    # The message, its arguments, "more" and three items: 4 key orders, 6 dicts; the third item
    # is the third sighting of its key order already.
    assert moved[0] == {"dict_template_misses": 5, "dict_template_hits": 1}
    assert moved[1] == {"dict_template_misses": 3, "dict_template_hits": 3}
    assert moved[2] == {"dict_template_hits": 6}


# ---------------------------------------------------------------------------------------------
# Rust: non-ASCII strs are written in one pass, at every width


WIDTH_CHARS = [
    "\x80",
    "é",
    "\xff",
    "\u0100",
    "ı",
    "\u07ff",
    "\u0800",
    "—",
    "日",
    "\uffff",
    "\U00010000",
    "😀",
    "\U0010ffff",
]


@pytest.mark.parametrize("char", WIDTH_CHARS, ids=[f"U+{ord(c):04X}" for c in WIDTH_CHARS])
def test_non_ascii_strs_are_written_in_one_pass(native: ModuleType, char: str) -> None:
    rx = native.Receiver("event")
    seq = 0
    for n in range(0, 40):
        for text in ("a" * n + char, char + "b" * n, "a" * n + char + "b" * (40 - n), char * (n + 1)):
            seq += 1
            # A nested value (no cache in front of it), a new one each line.
            line = tool_call(seq, orjson.dumps({"path": text, "n": seq}))
            before = counters(rx)
            (msg,) = rx.feed(line + b"\n")
            assert_strict_equal(msg["arguments"]["path"], text)
            moved = delta(rx, before)
            assert moved.get("str_one_pass_hits") == 1 and "str_one_pass_fallbacks" not in moved, (text, moved)


@templates
def test_two_alternating_key_orders_both_get_templates(native: ModuleType) -> None:
    """Two key orders that alternate, in a fresh receiver, both get templates whatever slots
    their keys hash to: a new order takes a free neighbouring slot rather than evict an order
    seen once. 1,500 pairs: about one in 256 shares its first slot (6 expected; none, 0.3 % of
    the time), and such a pair used to evict each other for ever (no hit beyond the message's)."""
    stuck = []
    for k in range(1500):
        a = b'{"alpha_%d":1,"beta_%d":2}' % (k, k)
        b = b'{"gamma_%d":1,"delta_%d":2,"eps_%d":3}' % (k, k, k)
        rx = native.Receiver("event")
        lines = [tool_call(i, a if i % 2 else b) for i in range(1, 13)]
        list(feed_each(rx, lines))
        got = counters(rx)
        # 24 dicts: the 12 messages (one order, hits from the third) and 12 arguments, 6 of
        # each order (hits from each one's third).
        if got["dict_template_hits"] < 10 + 8:
            stuck.append((k, got))
    assert not stuck, stuck[:3]
