"""Hypothesis properties, run against each backend (``backend`` fixture) and differentially
(the same input to ``_pure`` and ``_native``, every field of every result compared strictly: dict
key order, exact types, float bits, rejections, receiver seq after every line, framer output).

Profiles: ``HYPOTHESIS_PROFILE=ci`` (derandomized, 200 examples) or ``dev`` (conftest.py).
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import orjson
from conftest import assert_strict_equal, short_repr, strict
from fenwire_fast import MAX_LINE_BYTES, MAX_SAFE_INTEGER, REJECTION_CODES, Rejection
from fenwire_fast._schema import CONTROL_SCHEMAS, ENUMS, EVENT_SCHEMAS
from hypothesis import assume, given
from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------------
# Strategies

INT64 = st.integers(-(2**63), 2**64 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(max_size=30)
MULTIBYTE = st.text(alphabet=st.sampled_from('a\u00e9\u20ac\U0001f600\u2028\x00\x1f"\\/'), max_size=40)
KEYS = st.text(max_size=10)

json_values = st.recursive(
    st.none() | st.booleans() | INT64 | FLOATS | TEXT,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=15,
)

POS = st.integers(1, MAX_SAFE_INTEGER) | st.integers(1, 2**53).map(float).filter(lambda f: f <= MAX_SAFE_INTEGER)
INTEGRAL = st.integers(-(2**63), 2**64 - 1) | st.integers(-(2**60), 2**60).map(float)

KIND_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "string": TEXT | MULTIBYTE,
    "boolean": st.booleans(),
    "number": INT64 | FLOATS,
    "integer": INTEGRAL,
    "pos": POS,
    "object": st.dictionaries(KEYS, json_values, max_size=4) | st.just([]),
    "array": st.lists(json_values, max_size=4) | st.just({}),
    "refs": st.lists(POS, max_size=5) | st.just({}),
    "any": json_values,
    **{name: st.sampled_from(choices) for name, choices in ENUMS.items()},
}

ENVELOPE_KEYS = ("v", "seq", "type", "run")


@st.composite
def valid_messages(draw: st.DrawFn, direction: str | None = None) -> tuple[dict[str, Any], str]:
    if direction is None:
        direction = draw(st.sampled_from(["event", "control"]))
    schemas = EVENT_SCHEMAS if direction == "event" else CONTROL_SCHEMAS
    type_name = draw(st.sampled_from(sorted(schemas)))
    schema = schemas[type_name]
    payload: dict[str, Any] = {}
    for name, kind in schema.fields:
        if name in schema.required or draw(st.booleans()):
            payload[name] = draw(KIND_STRATEGIES[kind])
    if type_name == "control-ack" and "ref" not in payload and payload["status"] != "rejected":
        payload["ref"] = draw(POS)
    known = {name for name, _ in schema.fields} | set(ENVELOPE_KEYS)
    extras = draw(st.dictionaries(KEYS.filter(lambda k: k not in known), json_values, max_size=3))
    envelope = {
        "v": draw(st.sampled_from([1, 1.0])),
        "seq": draw(POS),
        "type": type_name,
        "run": draw(TEXT),
    }
    items = list(envelope.items()) + list(payload.items()) + list(extras.items())
    if draw(st.booleans()):
        items = draw(st.permutations(items))
    msg = dict(items)
    assume(len(orjson.dumps(msg)) < MAX_LINE_BYTES)
    return msg, direction


INTERESTING = [
    None, True, False, 0, -1, 1, 1.0, -0.0, 0.5, 1.5, 2**53 - 1, 2**53, 2**63, 2**64 - 1, -(2**63),
    1e300, -1e300, 5e-324, "", "1", "x", [], {}, [1], [0], {"a": 1}, [None], "\U0001F600",
]  # fmt: skip

NUMERALS = st.sampled_from(
    ["0", "-0", "1", "1.0", "-1", "1e400", "-1e400", "1e-400", "01", "1.", ".5", "+1", "NaN", "Infinity",
     "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
     "9007199254740991", "9007199254740992", "9007199254740991.0", "1e300", "2e0", "0.1e1", "1E+0", "-0.0",
     "123456789012345678901234567890", "1.7976931348623157e308", "1.7976931348623159e308", "4.9e-324", "2.5e-324"]
) | st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)  # fmt: skip


@st.composite
def swapped_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    """A valid message with one field's value replaced by another JSON value."""
    msg, direction = draw(valid_messages())
    key = draw(st.sampled_from(list(msg)))
    msg[key] = draw(st.sampled_from(INTERESTING) | json_values)
    if draw(st.booleans()):
        del msg[draw(st.sampled_from(list(msg)))]
    return orjson.dumps(msg), direction


@st.composite
def numeral_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    """Extreme numbers in the places that matter: v, seq, turn, ref, refs, content-index, ..."""
    num = draw(NUMERALS)
    template = draw(
        st.sampled_from(
            [
                ('{"v":%s,"seq":1,"type":"cancel","run":"r"}', "control"),
                ('{"v":1,"seq":%s,"type":"cancel","run":"r"}', "control"),
                ('{"v":1,"seq":1,"type":"turn-started","run":"r","turn":%s}', "event"),
                ('{"v":1,"seq":1,"type":"control-ack","run":"r","ref":%s,"status":"applied"}', "event"),
                ('{"v":1,"seq":1,"type":"info","run":"r","refs":[1,%s]}', "event"),
                ('{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","content-index":%s}', "event"),
                (
                    '{"v":1,"seq":1,"type":"tool-result","run":"r","name":"n","is-error?":false,"duration-seconds":%s}',
                    "event",
                ),
                ('{"v":1,"seq":1,"type":"tool-call","run":"r","name":"n","arguments":{"x":[%s]}}', "event"),
            ]
        )
    )
    return (template[0] % num).encode(), template[1]


@st.composite
def deep_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    depth = draw(st.integers(1015, 1030))
    pattern = draw(st.lists(st.sampled_from(["[", '{"k":', "[1,", '{"a":null,"k":']), min_size=1, max_size=6))
    opens = [pattern[i % len(pattern)] for i in range(depth)]
    closes = ["]" if o.startswith("[") else "}" for o in reversed(opens)]
    leaf = draw(st.sampled_from(["1", "[]", "{}", '"x"', "null"]))
    line = (
        '{"v":1,"seq":1,"type":"tool-call","run":"r","name":"n","arguments":'
        + "".join(opens)
        + leaf
        + "".join(closes)
        + "}"
    )
    return line.encode(), "event"


@st.composite
def long_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    """Lines near the limit, made of multibyte characters."""
    ch = draw(st.sampled_from(["a", "\u00e9", "\u20ac", "\U0001f600"]))
    size = draw(st.integers(MAX_LINE_BYTES - 8, MAX_LINE_BYTES + 8))
    head = '{"v":1,"seq":1,"type":"prompt","run":"r","text":"'
    n = (size - len(head) - 2) // len(ch.encode())
    line = (head + ch * n + '"}').encode()
    return line, "control"


@st.composite
def mutated_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    msg, direction = draw(valid_messages())
    data = bytearray(orjson.dumps(msg))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "replace"]))
        i = draw(st.integers(0, len(data)))
        if op == "flip" and i < len(data):
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(
                st.binary(min_size=1, max_size=4)
                | st.sampled_from(
                    [
                        b"\xff",
                        b"\xc3",
                        b"\xed\xa0\x80",
                        b"\n",
                        b"\x00",
                        b'"',
                        b"{",
                        b"]",
                        b",",
                        b"\\",
                        b"\\u",
                        b"\\ud800",
                    ]
                )
            )
        elif op == "delete" and data:
            j = draw(st.integers(i, min(len(data), i + 5)))
            del data[i:j]
        elif op == "replace":
            data[i : i + 1] = draw(st.sampled_from([b"1e400", b"NaN", b"-0", b"01", b"\xef\xbb\xbf", b"\t", b" "]))
    return bytes(data), direction


random_bytes_lines = st.tuples(st.binary(max_size=200), st.sampled_from(["event", "control"]))
random_text_lines = st.tuples(
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=100), st.sampled_from(["event", "control"])
)
json_value_lines = st.tuples(json_values.map(orjson.dumps), st.sampled_from(["event", "control"]))
valid_lines = valid_messages().map(lambda md: (orjson.dumps(md[0]), md[1]))

any_line = st.one_of(
    random_bytes_lines,
    random_text_lines,
    json_value_lines,
    valid_lines,
    swapped_lines(),
    numeral_lines(),
    mutated_lines(),
)

# ---------------------------------------------------------------------------------------------
# Checks shared by the per-backend and differential properties


def check_result_shape(result: Any) -> None:
    assert type(result) is tuple and len(result) == 2
    msg, rej = result
    assert (msg is None) != (rej is None)
    if rej is not None:
        assert type(rej) is Rejection
        assert rej.code in REJECTION_CODES and rej.code != "out-of-order"
        assert type(rej.reason) is str and rej.reason
        assert rej.fatal is (rej.code == "version-mismatch")
        assert rej.seq is None or (type(rej.seq) is int and 1 <= rej.seq <= MAX_SAFE_INTEGER)
        assert rej.type is None or type(rej.type) is str
        assert rej.run is None or type(rej.run) is str
        if rej.errors is not None:
            assert rej.code in ("invalid", "invalid-payload")
            assert type(rej.errors) is tuple and rej.errors
            assert all(type(e) is tuple and len(e) == 2 and all(type(x) is str for x in e) for e in rej.errors)
            assert rej.reason == "; ".join(f"{f} {m}" for f, m in rej.errors)
        if rej.code == "invalid-payload":
            assert rej.errors
        if rej.code in ("malformed", "too-large"):
            assert (rej.seq, rej.type, rej.run, rej.errors) == (None, None, None, None)
    else:
        assert type(msg) is dict


def check_decode(backend: ModuleType, line: bytes | str, direction: str) -> Any:
    """decode's result has the right shape, and agrees with orjson + validate on every step."""
    result = backend.decode(line, direction)
    check_result_shape(result)
    msg, rej = result
    if isinstance(line, str):
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates
            big = len(line.encode("utf-8", "surrogatepass")) >= MAX_LINE_BYTES
            assert rej == Rejection("too-large" if big else "malformed", rej.reason)
            assert rej.reason == (
                "line is 65536 bytes or more; the limit is 65535" if big else "line is not valid UTF-8"
            )
            return result
    else:
        data = line
    if len(data) >= MAX_LINE_BYTES:
        assert rej is not None and rej.code == "too-large"
        return result
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        assert rej == Rejection("malformed", "line is not valid UTF-8")
        return result
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        assert rej == Rejection("malformed", "line is not valid JSON")
        return result
    if type(parsed) is not dict:
        assert rej == Rejection("malformed", "line is not a JSON object")
        return result
    # the line parsed to an object: decode's verdict is validate's verdict
    want = backend.validate(parsed, direction)
    if want[0] is not None:
        assert rej is None
        assert_strict_equal(msg, parsed)
    else:
        assert_strict_equal(rej, want[1])
    return result


# ---------------------------------------------------------------------------------------------
# Per-backend properties


@given(any_line)
def test_decode_never_raises(backend: ModuleType, case: tuple[Any, str]) -> None:
    line, direction = case
    check_decode(backend, line, direction)
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return
        assert_strict_equal(backend.decode(text, direction), backend.decode(line, direction))


@given(st.one_of(deep_lines(), long_lines()))
def test_decode_deep_and_long(backend: ModuleType, case: tuple[bytes, str]) -> None:
    line, direction = case
    check_decode(backend, line, direction)
    check_decode(backend, line.decode("utf-8"), direction)


@given(valid_messages(), st.data())
def test_every_prefix_of_a_valid_line_is_malformed(
    backend: ModuleType, md: tuple[dict[str, Any], str], data: st.DataObject
) -> None:
    msg, direction = md
    line = orjson.dumps(msg)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(line) - 1), min_size=1, max_size=20))))
    for cut in cuts:
        rej = backend.decode(line[:cut], direction)[1]
        assert rej is not None and rej.code == "malformed", (cut, rej)


@given(st.sampled_from(["a\u00e9\u20ac\U0001f600", "\U0001f600" * 4, "\u00e9\u00e9x"]))
def test_multibyte_strings_cut_at_every_point(backend: ModuleType, chars: str) -> None:
    text = chars * 3
    line = ('{"v":1,"seq":1,"type":"prompt","run":"r","text":"' + text + '"}').encode()
    start = line.index(text.encode())
    for cut in range(start, start + len(text.encode()) + 1):
        cut_line = line[:cut] + b'"}'
        msg, rej = backend.decode(cut_line, "control")
        try:
            value = line[start:cut].decode("utf-8")
        except UnicodeDecodeError:
            assert rej == Rejection("malformed", "line is not valid UTF-8")
        else:
            assert rej is None and msg["text"] == value


@given(valid_messages())
def test_valid_messages_round_trip(backend: ModuleType, md: tuple[dict[str, Any], str]) -> None:
    msg, direction = md
    got, rej = backend.validate(msg, direction)
    assert rej is None and got is msg
    line, rej = backend.encode(msg, direction)
    assert rej is None
    assert line == orjson.dumps(msg)
    back, rej = backend.decode(line, direction)
    assert rej is None
    assert_strict_equal(back, msg)
    back, rej = backend.decode(line.decode(), direction)
    assert_strict_equal(back, msg)


@given(valid_messages())
def test_valid_messages_wrong_direction_unknown_type(backend: ModuleType, md: tuple[dict[str, Any], str]) -> None:
    msg, direction = md
    other = "control" if direction == "event" else "event"
    _, rej = backend.decode(orjson.dumps(msg), other)
    assert rej.code == "unknown-type" and rej.type == msg["type"]


@given(st.one_of(valid_messages().map(lambda md: md[0]), json_values), st.sampled_from(["event", "control"]))
def test_encode_never_raises_and_matches_orjson(backend: ModuleType, msg: Any, direction: str) -> None:
    result = backend.encode(msg, direction)
    assert type(result) is tuple and len(result) == 2
    line, rej = result
    assert (line is None) != (rej is None)
    valid = backend.validate(msg, direction)
    if valid[1] is not None:
        assert_strict_equal(rej, valid[1])
    elif line is not None:
        assert line == orjson.dumps(msg) and len(line) < MAX_LINE_BYTES
    else:
        assert rej.code in ("invalid", "too-large")


# framing ---------------------------------------------------------------------------------------

stream_lines = st.lists(
    st.one_of(
        valid_messages("control").map(lambda md: orjson.dumps(md[0])),
        st.builds(lambda s: b'{"v":1,"seq":%d,"type":"cancel","run":"r"}' % s, st.integers(0, 12)),
        st.builds(lambda s: b'{"v":1,"seq":%d,"type":"pause","run":"r"}' % s, st.integers(1, 12)),
        st.builds(lambda s: b'{"v":2,"seq":%d,"type":"cancel","run":"r"}' % s, st.integers(1, 12)),
        st.sampled_from(
            [b"", b" ", b"\r", b"nope", b"[]", b"{}", b"\xff", b'{"v":1,"seq":3.0,"type":"close","run":"r"}']
        ),
        mutated_lines().map(lambda c: c[0].replace(b"\n", b"")),
        st.builds(lambda n, c: c * n, st.integers(65530, 70000), st.sampled_from([b"x", b"\xc3\xa9"])),
    ),
    max_size=12,
)


def split_points(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, prev = [], 0
    for p in points:
        pieces.append(data[prev:p])
        prev = p
    pieces.append(data[prev:])
    return pieces


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12), st.booleans())
def test_framer_split_independent(backend: ModuleType, lines: list[bytes], cuts: list[int], terminated: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if terminated else b"")
    whole = backend.Framer()
    want = whole.feed(data)
    split = backend.Framer()
    got = [line for piece in split_points(data, cuts) for line in split.feed(piece)]
    assert got == want
    assert split.buffered == whole.buffered
    # and the reference for what comes out: every complete line, cut to the cap
    *complete, tail = data.split(b"\n")
    over = [tail[:MAX_LINE_BYTES]] if len(tail) >= MAX_LINE_BYTES else []  # reported before its newline
    assert want == [line[:MAX_LINE_BYTES] for line in complete] + over
    assert whole.buffered == (len(tail) if len(tail) < MAX_LINE_BYTES else 0)


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12))
def test_feed_split_independent_and_equal_to_receive(backend: ModuleType, lines: list[bytes], cuts: list[int]) -> None:
    data = b"\n".join(lines) + b"\n"
    rx_lines = backend.Receiver("control")
    want = []
    for line in lines:
        if line:
            msg, rej = rx_lines.receive(line)
            want.append(rej if msg is None else msg)
    rx_whole = backend.Receiver("control")
    assert_strict_equal(rx_whole.feed(data), want)
    rx_split = backend.Receiver("control")
    got = [x for piece in split_points(data, cuts) for x in rx_split.feed(piece)]
    assert_strict_equal(got, want)
    assert rx_whole.seq == rx_split.seq == rx_lines.seq
    assert rx_split.buffered == 0


@given(stream_lines)
def test_receiver_rules_hold_on_any_stream(backend: ModuleType, lines: list[bytes]) -> None:
    rx = backend.Receiver("control")
    for line in lines:
        before = rx.seq
        decoded = backend.decode(line, "control")
        msg, rej = rx.receive(line)
        seq = decoded[0]["seq"] if decoded[0] is not None else decoded[1].seq
        if decoded[1] is not None and decoded[1].fatal:
            assert_strict_equal(rej, decoded[1])
            assert rx.seq == before
        elif seq is None:
            assert_strict_equal((msg, rej), decoded)
            assert rx.seq == before
        elif int(seq) <= before:
            assert msg is None and rej.code == "out-of-order" and rej.seq is None
            src = decoded[0] if decoded[0] is not None else None
            assert rej.type == (src["type"] if src else decoded[1].type)
            assert rej.run == (src["run"] if src else decoded[1].run)
            assert rx.seq == before
        else:
            assert_strict_equal((msg, rej), decoded)
            assert rx.seq == int(seq) and type(rx.seq) is int


# text ------------------------------------------------------------------------------------------

small_text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=300) | MULTIBYTE
# long texts (repeats), with the budgets normalize uses
any_text = small_text | st.builds(lambda t, n: t * n, small_text, st.integers(1, 400))
limits = st.integers(-3, 700) | st.sampled_from([159, 160, 4095, 4096, 4097, 12288, 65535])


def nbytes(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


@given(any_text, limits)
def test_utf8_prefix_invariants(backend: ModuleType, text: str, limit: int) -> None:
    got = backend.utf8_prefix(text, limit)
    assert text.startswith(got)
    assert nbytes(got) <= max(limit, 0)
    if got != text:
        assert nbytes(text[: len(got) + 1]) > limit


@given(any_text, limits)
def test_truncate_line_invariants(backend: ModuleType, text: str, limit: int) -> None:
    got = backend.truncate_line(text, limit)
    if nbytes(text) <= limit:
        assert got == text
    else:
        assert nbytes(got) <= max(limit, 0)
        if limit >= 3:
            assert got.endswith("\u2026") and got[:-1] == backend.utf8_prefix(text, limit - 3)
        else:
            assert got == backend.utf8_prefix(text, limit)


@given(any_text, limits)
def test_scrub_invariants(backend: ModuleType, text: str, limit: int) -> None:
    got, changed = backend.scrub(text, limit)
    assert type(changed) is bool
    assert changed is (got != text)
    assert nbytes(got) <= max(limit, 0)
    got.encode("utf-8")  # never a lone surrogate, never a split character

    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", got)
    clean = not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", text)
    if clean and nbytes(text) <= max(limit, 0):
        assert (got, changed) == (text, False)


# ---------------------------------------------------------------------------------------------
# Differential: _pure vs _native


def same(a: Any, b: Any) -> None:
    if strict(a) != strict(b):
        raise AssertionError(f"\n  pure: {short_repr(a)}\nnative: {short_repr(b)}")


@given(st.one_of(any_line, deep_lines(), long_lines()))
def test_diff_decode(pure: ModuleType, native: ModuleType, case: tuple[Any, str]) -> None:
    line, direction = case
    same(pure.decode(line, direction), native.decode(line, direction))
    if isinstance(line, bytes):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return
        same(pure.decode(text, direction), native.decode(text, direction))


@given(st.one_of(valid_messages().map(lambda md: md[0]), json_values, swapped_lines().map(lambda c: orjson.loads(c[0]))),
       st.sampled_from(["event", "control"]))  # fmt: skip
def test_diff_validate_and_encode(pure: ModuleType, native: ModuleType, msg: Any, direction: str) -> None:
    a, b = pure.validate(msg, direction), native.validate(msg, direction)
    same(a[1], b[1])
    assert (a[0] is msg) == (b[0] is msg)
    same(pure.encode(msg, direction), native.encode(msg, direction))


@given(st.sampled_from(INTERESTING + [float("nan"), float("inf"), 2**64, -(2**63) - 1, (1,), {1}, b"x", "\ud800", {1: 2}, {"\udc00": 1}]),
       st.sampled_from(["arguments", "result", "x-extra"]))  # fmt: skip
def test_diff_encode_unencodable(pure: ModuleType, native: ModuleType, value: Any, field: str) -> None:
    msg = {"v": 1, "seq": 3, "type": "tool-result", "run": "r", "name": "n", "is-error?": False, field: {"k": [value]}}
    same(pure.encode(msg, "event"), native.encode(msg, "event"))


@given(TEXT, TEXT, st.integers(1, MAX_SAFE_INTEGER), st.none() | st.dictionaries(KEYS, json_values, max_size=6))
def test_diff_message(pure: ModuleType, native: ModuleType, type_name: str, run: str, seq: int, payload: Any) -> None:
    same(pure.message(type_name, run, seq, payload), native.message(type_name, run, seq, payload))


@given(any_line)
def test_diff_rejection_ack(pure: ModuleType, native: ModuleType, case: tuple[Any, str]) -> None:
    _, rej = pure.decode(case[0], case[1])
    if rej is not None:
        same(pure.rejection_ack(rej), native.rejection_ack(rej))


@given(st.lists(st.tuples(st.sampled_from(sorted(CONTROL_SCHEMAS) + ["ready", "pause"]), st.none() | st.dictionaries(st.sampled_from(["text", "note", "x"]), st.sampled_from(INTERESTING), max_size=2)), max_size=10))  # fmt: skip
def test_diff_sender(pure: ModuleType, native: ModuleType, calls: list[tuple[str, Any]]) -> None:
    a, b = pure.Sender("control", "r"), native.Sender("control", "r")
    for type_name, payload in calls:
        same(a.next(type_name, payload), b.next(type_name, payload))
        assert a.seq == b.seq and type(b.seq) is int


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12), st.sampled_from(["control", "event"]))
def test_diff_receiver(
    pure: ModuleType, native: ModuleType, lines: list[bytes], cuts: list[int], direction: str
) -> None:
    a, b = pure.Receiver(direction), native.Receiver(direction)
    for line in lines:
        same(a.receive(line), b.receive(line))
        assert a.seq == b.seq and type(b.seq) is int
    data = b"\n".join(lines)
    a, b = pure.Receiver(direction), native.Receiver(direction)
    for piece in split_points(data, cuts):
        same(a.feed(piece), b.feed(piece))
        assert a.seq == b.seq and a.buffered == b.buffered


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12), st.sampled_from([1, 2, 5, 100, 65536]))
def test_diff_framer(pure: ModuleType, native: ModuleType, lines: list[bytes], cuts: list[int], cap: int) -> None:
    a, b = pure.Framer(cap), native.Framer(cap)
    for piece in split_points(b"\n".join(lines), cuts):
        same(a.feed(piece), b.feed(piece))
        assert a.buffered == b.buffered


@given(any_text, limits)
def test_diff_text(pure: ModuleType, native: ModuleType, text: str, limit: int) -> None:
    same(pure.utf8_prefix(text, limit), native.utf8_prefix(text, limit))
    same(pure.truncate_line(text, limit), native.truncate_line(text, limit))
    same(pure.scrub(text, limit), native.scrub(text, limit))


# Python values JSON cannot carry, and subclasses of the JSON types ---------------------------


class _S(str):
    pass


class _I(int):
    pass


class _F(float):
    pass


class _D(dict):  # type: ignore[type-arg]
    pass


class _L(list):  # type: ignore[type-arg]
    pass


py_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(alphabet=st.characters(codec=None, categories=None), max_size=10),
    st.binary(max_size=3), st.sampled_from([object(), (1,), frozenset([1]), complex(1, 1), _S("s"), _I(7), _F(1.5), _F(float("nan"))]),
)  # fmt: skip
py_values = st.recursive(
    py_scalars,
    lambda c: st.one_of(
        st.lists(c, max_size=4),
        st.lists(c, max_size=3).map(tuple),
        st.lists(c, max_size=3).map(_L),
        st.dictionaries(st.text(max_size=5), c, max_size=4),
        st.dictionaries(st.text(max_size=5), c, max_size=3).map(_D),
        st.dictionaries(st.integers() | st.none() | st.text(max_size=3).map(_S), c, max_size=2),
    ),
    max_leaves=12,
)


@st.composite
def py_messages(draw: st.DrawFn) -> Any:
    msg, _ = draw(valid_messages())
    for key in draw(st.lists(st.sampled_from(list(msg)), max_size=3)):
        msg[key] = draw(py_values)
    if draw(st.booleans()):
        msg[draw(st.text(max_size=4))] = draw(py_values)
    return msg


@given(py_messages() | py_values, st.sampled_from(["event", "control"]))
def test_validate_and_encode_never_raise_on_python_values(backend: ModuleType, msg: Any, direction: str) -> None:
    got, rej = backend.validate(msg, direction)
    assert (got is msg) if rej is None else (got is None and type(rej) is Rejection)
    line, rej2 = backend.encode(msg, direction)
    assert (line is None) != (rej2 is None)
    if rej is not None:
        assert_strict_equal(rej2, rej)
    elif line is not None:
        assert type(line) is bytes and len(line) < MAX_LINE_BYTES
        assert backend.decode(line, direction)[1] is None


@given(py_messages() | py_values, st.sampled_from(["event", "control"]))
def test_diff_python_values(pure: ModuleType, native: ModuleType, msg: Any, direction: str) -> None:
    a, b = pure.validate(msg, direction), native.validate(msg, direction)
    same(a[1], b[1])
    assert (a[0] is msg) == (b[0] is msg)
    same(pure.encode(msg, direction), native.encode(msg, direction))


# Event streams shaped like real traffic (repeated keys and values, near-miss type and enum
# strings, escapes at SIMD-block boundaries): what a fast drain specialises on -----------------

ATOMS = [b"a", b"Z", b" ", b"\\n", b"\\\\", b'\\"', b"\\u00e9", b"\\ud83d\\ude00", b"\xc3\xa9", b"\xe2\x82\xac",
         b"\xf0\x9f\x98\x80", b"\x01", b"\xff", b"\\u0000", b"\\/", b"\t", b"\x7f", b"\\ud800"]  # fmt: skip


@st.composite
def block_strings(draw: st.DrawFn) -> bytes:
    size = draw(st.sampled_from([0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200]))
    out = [b"x"] * size
    for _ in range(draw(st.integers(0, 3))):
        if out:
            out[draw(st.integers(0, size - 1))] = draw(st.sampled_from(ATOMS))
    return b"".join(out)


@st.composite
def traffic_lines(draw: st.DrawFn, seq: int) -> bytes:
    head = draw(st.sampled_from([b'{"v":1,"seq":%d,', b'{"seq":%d,"v":1,', b'{"v":1.0,"seq":%d.0,'])) % seq
    kind = draw(st.integers(0, 4))
    if kind == 0:
        body = b'"type":"assistant-text-delta","run":"%s","content-index":%s,"delta":"%s"' % (
            draw(st.sampled_from([b"run-1", b"run-1", b"run-2"])),
            draw(st.sampled_from([b"0", b"1", b"2.0", b"true"])),
            draw(block_strings()),
        )
    elif kind == 1:
        body = b'"type":"%s","run":"r"' % draw(
            st.sampled_from([b"ready", b"readyx", b"read", b"t\\u006fol-call", b"steer", b"exit"])
        )
    elif kind == 2:
        body = b'"type":"control-ack","run":"r","status":"%s"%s' % (
            draw(st.sampled_from([b"accepted", b"rejected", b"applied", b"acceptedx", b"Applied", b"rejected\\u0000"])),
            draw(st.sampled_from([b"", b',"ref":3', b',"ref":0'])),
        )
    elif kind == 3:
        body = b'"type":"tool-call","run":"r","name":"%s","arguments":{"%s":"%s"}' % (
            draw(block_strings()),
            draw(block_strings()),
            draw(block_strings()),
        )
    else:
        body = b'"type":"user","run":"r","text":"%s","summary":"%s"' % (draw(block_strings()), draw(block_strings()))
    return head + body + draw(st.sampled_from([b"", b',"x":{}', b',"run":5', b',"type":"ready"'])) + b"}"


@st.composite
def traffic(draw: st.DrawFn) -> list[bytes]:
    lines, seq = [], 0
    for _ in range(draw(st.integers(1, 20))):
        seq += draw(st.sampled_from([1, 1, 1, 0, 2, -1]))
        lines.append(draw(traffic_lines(seq)))
    return lines


@given(traffic(), st.lists(st.integers(0, 10**5), max_size=6))
def test_diff_traffic_feed(pure: ModuleType, native: ModuleType, lines: list[bytes], cuts: list[int]) -> None:
    data = b"\n".join(lines) + b"\n"
    a, b = pure.Receiver("event"), native.Receiver("event")
    same(a.feed(data), b.feed(data))
    assert a.seq == b.seq
    a, b = pure.Receiver("event"), native.Receiver("event")
    for piece in split_points(data, cuts):
        same(a.feed(piece), b.feed(piece))
        assert a.seq == b.seq and a.buffered == b.buffered


@given(traffic())
def test_traffic_feed_equals_receive(backend: ModuleType, lines: list[bytes]) -> None:
    rx1, rx2 = backend.Receiver("event"), backend.Receiver("event")
    want = []
    for line in lines:
        msg, rej = rx1.receive(line)
        want.append(rej if msg is None else msg)
    assert_strict_equal(rx2.feed(b"\n".join(lines) + b"\n"), want)
    assert rx1.seq == rx2.seq
