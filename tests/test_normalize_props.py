"""normalize is total (docs/design-decisions.md, "normalize"): a normalized event of any input
validates as its type and, stamped with an envelope, encodes (on either backend) to one line well
under the line limit."""

from __future__ import annotations

import datetime
import math
from types import ModuleType
from typing import Any

from fenwire_fast import DISPLAY_EVENT_TYPES, MAX_LINE_BYTES, MAX_SAFE_INTEGER
from fenwire_fast.normalize import normalize
from hypothesis import given
from hypothesis import strategies as st


class Weird:
    def __str__(self) -> str:
        return "weird \x00 \ud800 object"


class Broken:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:  # hypothesis needs a repr to report examples
        return "Broken()"


CHARS = st.sampled_from(
    ["a", "\u00e9", "\u20ac", "\U0001f600", "\x00", "\x1b", "\x85", "\ud800", "\n", '"', "\\", "\t"]
)
SIZES = st.sampled_from([0, 1, 159, 160, 161, 1000, 2047, 4096, 4097, 6000, 12288, 20000]) | st.integers(0, 12000)
long_strings = st.builds(lambda chunk, n: "".join(chunk) * n, st.lists(CHARS, min_size=1, max_size=6), SIZES)
# the worst case for JSON size: characters JSON escapes to two bytes
escapes = st.builds(lambda c, n: c * n, st.sampled_from(['"', "\\", '\\"']), SIZES)
wide = st.one_of(
    st.builds(lambda n, s: {f"k{i}": s for i in range(n)}, st.integers(0, 100), long_strings | escapes),
    st.builds(lambda n, s: {s + str(i): i for i in range(n)}, st.integers(0, 100), escapes),
    st.builds(lambda n, s: [s] * n, st.integers(0, 100), long_strings | escapes),
    st.builds(lambda n: [2**64 - 1 - i for i in range(n)], st.integers(0, 100)),
    st.builds(lambda n: [-1.2345678901234567e-300] * n, st.integers(0, 100)),
    st.builds(lambda n: [[[[[[[[[[[[i]]]]]]]]]]] for i in range(n)], st.integers(0, 100)),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(),  # NaN and infinities included
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=40),
    long_strings,
    escapes,
    st.binary(max_size=10),
    st.sampled_from(
        [Weird(), Broken(), object(), 2**64, -(2**63) - 1, float("nan"), float("inf"), MAX_SAFE_INTEGER + 1, 1.5, -0.0]
    ),
)

hostile = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=8),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=8) | long_strings, children, max_size=8),
        st.dictionaries(st.integers() | st.none() | st.booleans() | st.floats(), children, max_size=3),
        st.lists(st.integers(), max_size=4).map(frozenset),
    ),
    max_leaves=40,
)


def deep(n: int) -> Any:
    value: Any = "bottom"
    for i in range(n):
        value = [value] if i % 2 else {"k": value}
    return value


FIELDS = [
    "name", "id", "arguments", "tool-call-id", "duration-seconds", "is-error?", "result", "final?", "content-index",
    "text", "delta", "provider", "model", "stop-reason", "usage", "cwd", "status", "error", "source", "summary", "refs",
    "timestamp", "ref", "transport-truncated?", "run-id",
]  # fmt: skip


@st.composite
def events(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(hostile)  # not even a dict
    kind = draw(
        st.sampled_from(sorted(DISPLAY_EVENT_TYPES))
        | st.sampled_from(["ready", "control-ack", "result", "exit", "subagent-start", ""])
        | scalars
    )
    ev: dict[Any, Any] = {"type": kind}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=8, unique=True)):
        ev[field] = draw(
            hostile
            | wide
            | st.integers(0, 30).map(deep)
            | st.sampled_from([None, [], {}, [1, 2, 0, -1, 2.0, True, "3"]])
        )
    if draw(st.booleans()):
        ev[draw(st.text(max_size=5))] = draw(hostile)
    return ev


metas = (
    st.none()
    | hostile
    | st.fixed_dictionaries(
        {},
        optional={k: hostile for k in ["run-id", "agent", "requested-cwd", "cwd", "physical-cwd", "other"]},
    )
)
nows = (
    st.none()
    | st.integers()
    | st.floats()
    | st.text(max_size=30)
    | st.datetimes(timezones=st.none() | st.just(datetime.UTC))
)


@given(events(), metas, nows)
def test_normalized_events_validate_and_encode(backend: ModuleType, event: Any, meta: Any, now: Any) -> None:
    out = normalize(event, meta, now=now)
    assert type(out) is dict
    assert out["type"] in DISPLAY_EVENT_TYPES
    if isinstance(event, dict) and isinstance(event.get("type"), str) and event["type"] in DISPLAY_EVENT_TYPES:
        assert out["type"] == event["type"]
    else:
        assert out["type"] == "info"
    assert out.get("transport-truncated?", True) is True  # never false on the wire
    msg = backend.message(out["type"], "run-1", MAX_SAFE_INTEGER, out)
    checked, rej = backend.validate(msg, "event")
    assert rej is None, rej
    line, rej = backend.encode(msg, "event")
    assert rej is None, rej
    assert len(line) < MAX_LINE_BYTES
    # room to spare: a whole envelope, a ref and a long run id still fit twice over
    assert len(line) <= MAX_LINE_BYTES // 2, len(line)
    back, rej = backend.decode(line, "event")
    assert rej is None and back == msg


@given(events(), metas)
def test_normalize_is_deterministic_for_a_fixed_now(event: Any, meta: Any) -> None:
    a = normalize(event, meta, now=0)
    b = normalize(event, meta, now=0)
    if not _has_nan(event) and not _has_nan(meta):
        assert a == b
    assert a["timestamp"] == "1970-01-01T00:00:00Z"


def _has_nan(value: Any, depth: int = 0) -> bool:
    if depth > 50:
        return False
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(k, depth + 1) or _has_nan(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, frozenset)):
        return any(_has_nan(v, depth + 1) for v in value)
    return False
