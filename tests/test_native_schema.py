"""The Rust backend carries its own copy of the protocol's tables (rust/src/schema/); check them
against the Python ones two ways: through behaviour (every field of every type, set to values of
every kind, and every required field left out, decodes and validates alike in both backends), and
directly (`_native._tables()` equals `_schema.py`, `_types.py` and `_pure.py` table for table)."""

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


# ---------------------------------------------------------------------------------------------
# The tables themselves: every table and fixed text the Rust core keeps a copy of
# (`_native._tables()`) is equal to the Python one it mirrors.

TABLES: dict[str, Any] = native._tables()


def test_type_lists_agree() -> None:
    from fenwire_fast import _types

    assert set(TABLES["event_types"]) == _types.EVENT_TYPES == set(EVENT_SCHEMAS)
    assert set(TABLES["control_types"]) == _types.CONTROL_TYPES == set(CONTROL_SCHEMAS)
    assert len(set(TABLES["event_types"])) == len(TABLES["event_types"])
    assert len(set(TABLES["control_types"])) == len(TABLES["control_types"])


@pytest.mark.parametrize("direction,table", [("event", EVENT_SCHEMAS), ("control", CONTROL_SCHEMAS)])
def test_schemas_agree_field_for_field(direction: str, table: dict[str, Any]) -> None:
    rust = TABLES[f"{direction}_schemas"]
    assert set(rust) == set(table)
    for name, schema in table.items():
        # Order matters: errors are reported in `required`, then `fields` order.
        assert rust[name] == (tuple(schema.required), tuple(schema.fields)), name


def test_enums_agree() -> None:
    from fenwire_fast._schema import ENUMS

    assert TABLES["enums"] == ENUMS
    assert TABLES["enums"]["ack-status"] == ("accepted", "rejected", "applied")
    assert TABLES["enums"]["exit-status"] == ("done", "cancelled", "failed", "timed-out")


def test_codes_agree() -> None:
    from fenwire_fast import _types

    assert TABLES["codes"] == _types.REJECTION_CODES


def test_reason_texts_agree() -> None:
    reasons = TABLES["reasons"]
    assert reasons == {name: getattr(_pure, name) for name in reasons}
    # and no fixed reason of the pure backend is missing from the Rust side
    assert {name for name in vars(_pure) if name.startswith("R_")} == set(reasons)


def test_limits_agree() -> None:
    from fenwire_fast import _types

    assert TABLES["VERSION"] == _types.VERSION
    assert TABLES["MAX_LINE_BYTES"] == _types.MAX_LINE_BYTES
    assert TABLES["MAX_SAFE_INTEGER"] == _types.MAX_SAFE_INTEGER
    assert TABLES["MAX_ENCODE_DEPTH"] == _pure.MAX_ENCODE_DEPTH


def test_known_keys_are_exactly_the_schema_fields() -> None:
    from fenwire_fast._schema import ENVELOPE

    names = {"v"} | {name for name, _ in ENVELOPE.fields}
    for table in (EVENT_SCHEMAS, CONTROL_SCHEMAS):
        for schema in table.values():
            names |= set(schema.required) | {name for name, _ in schema.fields}
    assert set(TABLES["keys"]) == names
    assert len(set(TABLES["keys"])) == len(TABLES["keys"])
