"""Python-level inputs beyond what JSON gives: subclasses of the JSON types, enums, non-JSON objects.

The codec never raises on bad input (docs/wire-protocol.md, "Validation and rejections"), and both
backends must treat these the same way. A subclass of a JSON type is that JSON type: it validates
like it and encodes like it.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import assert_strict_equal


class S(str):
    pass


class B(bytes):
    pass


class I(int):  # noqa: E742
    pass


class F(float):
    pass


class D(dict):  # type: ignore[type-arg]
    pass


class L(list):  # type: ignore[type-arg]
    pass


class Color(enum.IntEnum):
    ONE = 1


LINE = b'{"v":1,"seq":1,"type":"cancel","run":"r"}'


def test_bytes_subclass_line_decodes_like_bytes(backend: ModuleType) -> None:
    assert_strict_equal(backend.decode(B(LINE), "control"), backend.decode(LINE, "control"))
    assert_strict_equal(backend.decode(B(b"nope"), "control"), backend.decode(b"nope", "control"))
    rx = backend.Receiver("control")
    assert_strict_equal(rx.receive(B(LINE)), backend.decode(LINE, "control"))
    assert rx.seq == 1


def test_str_subclass_line_and_direction(backend: ModuleType) -> None:
    assert_strict_equal(backend.decode(S(LINE.decode()), "control"), backend.decode(LINE, "control"))
    assert_strict_equal(backend.decode(LINE, S("control")), backend.decode(LINE, "control"))
    assert backend.Receiver(S("control")).feed(LINE + b"\n")[0]["seq"] == 1


@pytest.mark.parametrize(
    "msg,plain",
    [
        ({"v": 1, "seq": I(3), "type": S("prompt"), "run": S("r"), "text": S("x")}, {"v": 1, "seq": 3, "type": "prompt", "run": "r", "text": "x"}),
        ({"v": Color.ONE, "seq": Color.ONE, "type": "cancel", "run": "r"}, {"v": 1, "seq": 1, "type": "cancel", "run": "r"}),
        ({"v": F(1.0), "seq": F(2.0), "type": "cancel", "run": "r"}, {"v": 1.0, "seq": 2.0, "type": "cancel", "run": "r"}),
        ({"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": F(2.5)}, {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": 2.5}),
        (D({"v": 1, "seq": 1, "type": "cancel", "run": "r"}), {"v": 1, "seq": 1, "type": "cancel", "run": "r"}),
        ({"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": L([1, S("a")])}, {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": [1, "a"]}),
        ({"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": OrderedDict(b=1, a=2)}, {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": {"b": 1, "a": 2}}),
        ({"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": {S("k"): 1}}, {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": {"k": 1}}),
        ({"v": 1, "seq": 1, "type": "cancel", "run": "r", S("x"): 1}, {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": 1}),
    ],
    ids=["str-int-subclasses", "int-enum", "float-subclass-envelope", "float-subclass-value", "dict-subclass", "list-subclass", "ordered-dict", "str-subclass-nested-key", "str-subclass-key"],
)  # fmt: skip
def test_subclasses_validate_and_encode_like_their_base(
    backend: ModuleType, msg: dict[str, Any], plain: dict[str, Any]
) -> None:
    got, rej = backend.validate(msg, "control")
    assert rej is None and got is msg
    result = backend.encode(msg, "control")  # must not raise
    assert result == (orjson.dumps(plain), None)


@pytest.mark.parametrize(
    "field,value,valid",
    [
        ("usage", D(), True),
        ("usage", L(), True),
        ("usage", L([1]), False),
        ("usage", OrderedDict(a=1), True),
        ("refs", L([1, I(2)]), True),
        ("refs", (1, 2), False),
        ("refs", D(), True),
    ],
)
def test_subclasses_in_typed_fields(backend: ModuleType, field: str, value: Any, valid: bool) -> None:
    t = "llm-end" if field == "usage" else "info"
    msg = {"v": 1, "seq": 1, "type": t, "run": "r", field: value}
    got, rej = backend.validate(msg, "event")
    assert (rej is None) is valid, rej


@pytest.mark.parametrize(
    "value", [object(), b"x", bytearray(b"x"), (1,), {1}, frozenset(), complex(1, 2), Ellipsis, type]
)
def test_non_json_values_are_invalid_not_raised(backend: ModuleType, value: Any) -> None:
    msg = {"v": 1, "seq": 1, "type": "cancel", "run": "r", "x": [value]}
    assert backend.validate(msg, "control") == (msg, None)
    line, rej = backend.encode(msg, "control")
    assert line is None and rej.code == "invalid"
    assert rej.reason == f"x[0] cannot be encoded: unsupported value of type {type(value).__name__}"


def test_differential_exotic(pure: ModuleType, native: ModuleType) -> None:
    values = [S("a"), I(5), F(1.5), Color.ONE, D(a=1), L([1]), OrderedDict(a=1), object(), (1,), {1}, b"x", True, None]
    for value in values:
        for field in ("x", "text", "seq", "v", "run", "type", "usage", "refs"):
            msg = {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "t", field: value}
            for direction in ("control", "event"):
                a, b = pure.validate(msg, direction), native.validate(msg, direction)
                assert_strict_equal(a[1], b[1])
                assert (a[0] is msg) == (b[0] is msg)
                try:
                    ea = pure.encode(msg, direction)
                except Exception as exc:  # noqa: BLE001 - reported as a failure below
                    ea = ("raised", type(exc).__name__)
                assert_strict_equal(ea, native.encode(msg, direction))
