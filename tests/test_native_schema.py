"""The Rust backend carries its own copy of the schema table (rust/src/schema.rs); check it
against `_schema.py` exhaustively through behaviour: every field of every type, set to values of
every kind, and every required field left out, decodes and validates alike in both backends."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fenwire_fast import _pure
from fenwire_fast._schema import CONTROL_SCHEMAS, EVENT_SCHEMAS

native = pytest.importorskip("fenwire_fast._native")

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    1.5,
    2**53 - 1,
    2**53,
    2**64 - 1,
    "",
    "s",
    "rejected",
    "accepted",
    "applied",
    "done",
    "timed-out",
    [],
    {},
    [1],
    [0],
    [1.5],
    ["x"],
    {"a": 1},
]

CASES = [
    (direction, type_name, schema)
    for direction, table in (("event", EVENT_SCHEMAS), ("control", CONTROL_SCHEMAS))
    for type_name, schema in sorted(table.items())
]


def _base(type_name: str, schema: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"v": 1, "seq": 3, "type": type_name, "run": "r"}
    for name in schema.required:
        msg[name] = {"status": "rejected", "is-error?": False, "final?": True, "turn": 1}.get(name, "x")
    return msg


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b and repr(a) == repr(b)


@pytest.mark.parametrize("direction,type_name,schema", CASES, ids=[f"{d}-{t}" for d, t, _ in CASES])
def test_every_field_and_kind_agrees(direction: str, type_name: str, schema: Any) -> None:
    base = _base(type_name, schema)
    names = [name for name, _ in schema.fields] + ["seq", "type", "run", "v", "extra"]
    for name in names:
        for value in VALUES:
            msg = dict(base)
            msg[name] = value
            for d in ("event", "control"):
                line = orjson.dumps(msg)
                a, b = _pure.decode(line, d), native.decode(line, d)
                assert _same(a, b), (line, d, a, b)
                va, vb = _pure.validate(msg, d), native.validate(msg, d)
                assert _same(va, vb), (msg, d, va, vb)
    for name in schema.required:
        msg = dict(base)
        del msg[name]
        line = orjson.dumps(msg)
        assert _same(_pure.decode(line, direction), native.decode(line, direction)), line
