"""The pure backend's compiled accept-checks (``fenwire_fast._fast_checks``).

A check may say "not sure" as often as it likes, but must never say "sure" of a line the full path
rejects: these properties hold every check (per type, and every shape learned so far) to the full
validator and, where the extension is built, to the Rust backend's verdict; and feed streams that
teach a shape and then break it to both backends.
"""

from __future__ import annotations

import itertools
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import strict
from fenwire_fast import _pure
from fenwire_fast._fast_checks import FAST_CHECKS, MAX_SHAPE_KEYS, FastChecks
from fenwire_fast._schema import CONTROL_SCHEMAS, EVENT_SCHEMAS
from hypothesis import given
from hypothesis import strategies as st
from test_properties import INTERESTING, json_values, swapped_lines, valid_messages

LAST = st.sampled_from([0, 1, 5, 2**53 - 2, 2**53 - 1]) | st.integers(0, 2**53)


def every_check(direction: str, type_name: str) -> list[Any]:
    fast = FAST_CHECKS[direction]
    checks = [fast._by_type[type_name]]
    checks += [by_type[type_name] for by_type in fast._by_count if type_name in by_type]
    return checks


def assert_never_wrongly_sure(line: bytes, direction: str, last: int) -> None:
    msg = orjson.loads(line)  # the objects the drain sees
    if type(msg) is not dict or type(msg.get("type")) is not str:
        return
    schemas = EVENT_SCHEMAS if direction == "event" else CONTROL_SCHEMAS
    if msg["type"] not in schemas:
        assert FAST_CHECKS[direction].check(msg, last) == 0
        return
    FAST_CHECKS[direction].check(msg, last)  # may teach its shape
    for check in every_check(direction, msg["type"]):
        try:
            seq = check(msg, last)
        except KeyError:
            continue  # a shape with other keys: "not this shape"
        if seq > 0:
            assert _pure.validate(msg, direction) == (msg, None), check
            assert type(seq) is int and seq == msg["seq"] and last < seq


@given(st.one_of(valid_messages(), swapped_lines().map(lambda c: (orjson.loads(c[0]), c[1]))), LAST)
def test_a_check_is_never_sure_of_a_line_the_validator_rejects(case: tuple[dict[str, Any], str], last: int) -> None:
    msg, direction = case
    assert_never_wrongly_sure(orjson.dumps(msg), direction, last)


@given(valid_messages(), st.data())
def test_every_field_swapped_after_its_shape_is_learned(case: tuple[dict[str, Any], str], data: st.DataObject) -> None:
    msg, direction = case
    line = orjson.dumps(msg)
    FAST_CHECKS[direction].check(orjson.loads(line), 0)  # teach this shape, if its slot is free
    for key in msg:
        swapped = dict(msg)
        swapped[key] = data.draw(st.sampled_from(INTERESTING) | json_values, label=key)
        assert_never_wrongly_sure(orjson.dumps(swapped), direction, data.draw(LAST, label="last"))


def feed_both(backend: ModuleType, direction: str, lines: list[bytes]) -> list[Any]:
    rx = backend.Receiver(direction)
    out = []
    for line in lines:
        out.append(strict(rx.feed(line + b"\n")))
        out.append(rx.seq)
    return out


@given(valid_messages(), st.lists(st.tuples(st.integers(0, 30), st.sampled_from(INTERESTING)), min_size=1, max_size=6))
def test_a_taught_shape_then_broken_gives_the_same_results_on_both_backends(
    pure: ModuleType, native: ModuleType, case: tuple[dict[str, Any], str], swaps: list[tuple[int, Any]]
) -> None:
    msg, direction = case
    lines = [orjson.dumps(msg)]
    for i, (index, value) in enumerate(swaps):
        broken = dict(msg)
        broken["seq"] = msg["seq"] + i + 1 if msg["seq"] + i + 1 <= 2**53 - 1 else msg["seq"]
        key = list(broken)[index % len(broken)]
        broken[key] = value
        lines += [orjson.dumps(broken), orjson.dumps(msg)]
    assert feed_both(pure, direction, lines) == feed_both(native, direction, lines)


def tool_result(seq: int, **fields: Any) -> bytes:
    return orjson.dumps(
        {"v": 1, "seq": seq, "type": "tool-result", "run": "r", "name": "n", "is-error?": False, **fields}
    )


def test_two_shapes_with_one_key_count_are_both_checked(backend: ModuleType) -> None:
    lines = [
        tool_result(1, id="a"),
        tool_result(2, **{"tool-call-id": "b"}),
        tool_result(3, id=7),  # the first shape, its field of the wrong type
        tool_result(4, **{"tool-call-id": None}),  # the second, wrong
        tool_result(5, **{"x-unknown": [1]}),  # a key the schema does not know, same count
        tool_result(6, **{"x-unknown": "anything"}),
        tool_result(6, id="c"),  # right, but not after 6
    ]
    rx = backend.Receiver("event")
    out = rx.feed(b"\n".join(lines) + b"\n")
    assert [type(item).__name__ for item in out] == [
        "dict",
        "dict",
        "Rejection",
        "Rejection",
        "dict",
        "dict",
        "Rejection",
    ]
    assert [item.code for item in out if type(item) is not dict] == [
        "invalid-payload",
        "invalid-payload",
        "out-of-order",
    ]
    assert rx.seq == 6


def test_shapes_are_bounded_by_type_and_key_count() -> None:
    fast = FastChecks(EVENT_SCHEMAS)
    for count, extra in itertools.product(range(MAX_SHAPE_KEYS + 8), range(3)):
        msg = {"v": 1, "seq": 1, "type": "info", "run": "r"} | {f"x{extra}-{i}": i for i in range(count)}
        assert fast.check(msg, 0) == 1
    learned = [by_type for by_type in fast._by_count if "info" in by_type]
    assert len(learned) == MAX_SHAPE_KEYS + 1 - 4  # one per key count from 4 (the envelope) up
    assert list(fast.shapes) == ["info"]


def test_a_key_a_line_names_is_never_compiled() -> None:
    fast = FastChecks(EVENT_SCHEMAS)
    key = "'); raise SystemExit('compiled') #"
    msg = {"v": 1, "seq": 1, "type": "info", "run": "r", key: 1, "summary": "s"}
    assert fast.check(msg, 0) == 1
    shape = fast.shapes["info"]
    consts = [c for c in shape.__code__.co_consts if isinstance(c, str)]
    assert key not in consts and "summary" not in consts
    assert key in shape.__globals__.values()  # read through a name bound to the key object
    assert shape(msg, 0) == 1 and shape({**msg, "summary": 2}, 0) == 0


@pytest.mark.parametrize("direction", ["event", "control"])
def test_every_type_has_a_check_that_accepts_its_plainest_message(direction: str) -> None:
    schemas = EVENT_SCHEMAS if direction == "event" else CONTROL_SCHEMAS
    plain = {"string": "s", "boolean": True, "integer": 0, "number": 0.5, "pos": 3, "object": {}, "array": []}
    plain |= {"refs": [1], "any": None, "ack-status": "accepted", "exit-status": "done"}
    for type_name, schema in schemas.items():
        msg = {"v": 1, "seq": 2, "type": type_name, "run": "r"} | {name: plain[kind] for name, kind in schema.fields}
        assert _pure.validate(msg, direction) == (msg, None)
        assert FAST_CHECKS[direction]._by_type[type_name](msg, 1) == 2, type_name
        assert FAST_CHECKS[direction]._by_type[type_name](msg, 2) == 0, type_name  # seq not above
