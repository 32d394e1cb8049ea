"""Accept-checks for the pure drain, compiled from the schema tables: per message type, and per shape.

A check answers one question about a dict from ``orjson.loads``: is it surely a valid message of
its type whose ``seq`` is an int above the last one? It returns that ``seq``, or 0 for "not sure".
The caller then takes the full path (``validate`` and the seq rules), which decides every detail,
so "not sure" costs time but never changes a result. Only exact types are accepted here (an
``int`` for an integer, never ``True`` or ``2.0``); everything rarer goes the full way.

Two kinds of check, both straight-line Python source with no loop over keys and no dispatch on a
field's kind at run time:

- **per type**: one test per field of the schema, an absent optional field read as a value of its
  own kind. It works for any set of fields, and costs one dict lookup per field of the schema.
- **per shape**: a type and one exact set of its fields, learned from the messages themselves
  (the first message of each type and key count that the per-type check accepts). It reads just
  those fields and tests them, and the key count proves no other key is there. A message with
  another key count answers 0 (another set of keys raises ``KeyError``), and the caller asks
  ``FastChecks.check``, which finds the shape learned for that count or runs the per-type check.

The source is built from this package's own tables only: a shape's code refers to its keys by
position (``_k0``, ``_k1``...) and tests them by the schema's kinds, a key the schema does not know
being read and not tested. Shapes are bounded: one per type and key count, of no more than
``MAX_SHAPE_KEYS`` keys.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ._schema import CONTROL_SCHEMAS, ENUMS, EVENT_SCHEMAS, Schema
from ._types import MAX_SAFE_INTEGER, VERSION

__all__ = ["FastChecks", "FAST_CHECKS", "NO_FAST_CHECKS", "MAX_SHAPE_KEYS"]

Check = Callable[[dict[str, Any], int], int]

#: Messages with more keys than this are checked per type only.
MAX_SHAPE_KEYS = 24

_ENVELOPE = ("seq", "v", "run")  # and "type", which the caller has read

# The value an absent optional field is read as by the per-type check: one of the kind's own
# accepted exact types, so that "absent" and "present and right" take the same branch.
_ABSENT_AS = {
    "string": '""',
    "boolean": "False",
    "integer": "0",
    "number": "0",
    "pos": "1",
    "object": "_EMPTY_DICT",
    "array": "_EMPTY_LIST",
    "refs": "_EMPTY_LIST",
}


def _enum_name(kind: str) -> str:
    return "_ENUM_" + kind.replace("-", "_")


def _value_test(kind: str, value: str, var: str) -> str | None:
    """The expression that is true when ``value`` (an expression) is surely of ``kind``."""
    if kind == "any":
        return None
    if kind in ENUMS:
        return f"(type({var} := {value}) is str and {var} in {_enum_name(kind)})"
    if kind == "pos":
        return f"(type({var} := {value}) is int and 1 <= {var} <= _MAX)"
    if kind == "refs":
        return f"(type({var} := {value}) is list and all(type(r) is int and 1 <= r <= _MAX for r in {var}))"
    exact = {"string": "str", "boolean": "bool", "integer": "int", "object": "dict", "array": "list"}.get(kind)
    if exact is not None:
        return f"type({value}) is {exact}"
    if kind == "number":
        return f"type({value}) in _NUMBER"
    raise ValueError(f"no fast test for field kind {kind!r}")


_ENVELOPE_TESTS = "type(seq) is int and last < seq <= _MAX and v is _VERSION and type(run) is str"


def _type_source(type_name: str, schema: Schema) -> str:
    """The per-type check: every field of the schema, absent or present."""
    tests = []
    for i, (name, kind) in enumerate(schema.fields):
        required = name in schema.required
        default = "" if required else ", " + _ABSENT_AS.get(kind, "None")
        if kind == "any":
            test = f"{name!r} in msg" if required else None
        elif kind in ENUMS and not required:
            test = _value_test(kind, f"get({name!r}, {ENUMS[kind][0]!r})", f"x{i}")
        else:
            test = _value_test(kind, f"get({name!r}{default})", f"x{i}")
        if test is not None:
            tests.append(test)
    tests += [f"{name!r} in msg" for name in schema.required if name not in dict(schema.fields)]
    if type_name == "control-ack":
        tests.append("('ref' in msg or get('status') == 'rejected')")
    fields = "".join(f" and {test}" for test in tests)
    return (
        "def check(msg, last):\n"
        "    get = msg.get\n"
        "    seq = get('seq')\n"
        "    v = get('v')\n"  # orjson gives the one cached small int 1; anything else is not sure
        "    run = get('run')\n"
        f"    if {_ENVELOPE_TESTS}{fields}:\n"
        "        return seq\n"
        "    return 0\n"
    )


def _shape_source(type_name: str, fields: tuple[tuple[str, str], ...]) -> str:
    """The per-shape check: exactly the envelope, ``type`` and ``fields``, read by their keys.

    Another key count answers 0, and a missing key raises ``KeyError``: for the caller, both mean
    "try :meth:`FastChecks.check`"."""
    targets = ", ".join(["seq", "v", "run", *(f"f{i}" for i in range(len(fields)))])
    tests = [_value_test(kind, f"f{i}", f"x{i}") for i, (_, kind) in enumerate(fields)]
    if type_name == "control-ack" and "ref" not in dict(fields):
        status = [f"f{i}" for i, (name, _) in enumerate(fields) if name == "status"]
        tests.append(f"{status[0]} == 'rejected'" if status else "False")
    body = "".join(f" and {test}" for test in tests if test is not None)
    return (
        "def check(msg, last):\n"
        f"    if len(msg) != {len(fields) + 4}:\n"
        "        return 0\n"
        + "".join(f"    {target} = msg[_k{i}]\n" for i, target in enumerate(targets.split(", ")))
        + f"    if {_ENVELOPE_TESTS}{body}:\n"
        "        return seq\n"
        "    return 0\n"
    )


def _namespace() -> dict[str, Any]:
    return {
        "_MAX": MAX_SAFE_INTEGER,
        "_VERSION": VERSION,
        "_NUMBER": (int, float),
        "_EMPTY_DICT": {},
        "_EMPTY_LIST": [],
        **{_enum_name(kind): frozenset(choices) for kind, choices in ENUMS.items()},
    }


def _compile(source: str, label: str, **extra: Any) -> Check:
    namespace = _namespace() | extra
    exec(compile(source, f"<fast check: {label}>", "exec"), namespace)
    check: Check = namespace["check"]
    return check


class FastChecks:
    """The checks of one direction: per type, and the shapes learned so far.

    The hot loop calls ``shapes[msg["type"]](msg, last)`` (the first shape learned for the type)
    and treats 0, ``KeyError`` and ``TypeError`` (no such type, not a dict, a key missing) as
    "not sure yet", for which it calls :meth:`check`."""

    __slots__ = ("shapes", "_by_type", "_by_count", "_fields", "_lock")

    def __init__(self, schemas: dict[str, Schema]) -> None:
        #: type -> the check of its first learned shape
        self.shapes: dict[str, Check] = {}
        self._by_type: dict[str, Check] = {
            name: _compile(_type_source(name, schema), name) for name, schema in schemas.items()
        }
        # key count -> type -> the check of the shape learned for that count
        self._by_count: list[dict[str, Check]] = [{} for _ in range(MAX_SHAPE_KEYS + 1)]
        self._fields = {name: dict(schema.fields) for name, schema in schemas.items()}
        self._lock = threading.Lock()

    def check(self, msg: object, last: int) -> int:
        """Any decoded value: its shape's check if one was learned for its type and key count, else
        its type's check, which teaches the shape when it accepts. 0 for "not sure"."""
        if type(msg) is not dict:
            return 0
        type_name = msg.get("type")
        if type(type_name) is not str:
            return 0
        check = self._by_type.get(type_name)
        if check is None:
            return 0
        count = len(msg)
        if count > MAX_SHAPE_KEYS:
            return check(msg, last)
        shape = self._by_count[count].get(type_name)
        if shape is not None:
            try:
                return shape(msg, last)
            except KeyError:
                pass  # another shape with the same key count
            return check(msg, last)
        seq = check(msg, last)
        if seq:
            self._learn(type_name, msg)
        return seq

    def _learn(self, type_name: str, msg: dict[str, Any]) -> None:
        kinds = self._fields[type_name]
        order = {name: i for i, name in enumerate(kinds)}
        fields = []
        for key in msg:
            if key not in _ENVELOPE and key != "type":
                # A key the schema does not know is fetched and not tested: the code never names it.
                fields.append((key, kinds.get(key, "any")))
        fields.sort(key=lambda field: order.get(field[0], len(order)))
        # The reads use the message's own key objects (equal strs), which the decoder's key cache
        # hands out again, so most lookups match by identity. The code never names a key.
        keys = {f"_k{i}": key for i, key in enumerate([*_ENVELOPE, *(key for key, _ in fields)])}
        check = _compile(_shape_source(type_name, tuple(fields)), f"{type_name}, {len(msg)} keys", **keys)
        with self._lock:
            self._by_count[len(msg)].setdefault(type_name, check)
            self.shapes.setdefault(type_name, check)


#: direction -> its checks.
FAST_CHECKS: dict[str, FastChecks] = {"event": FastChecks(EVENT_SCHEMAS), "control": FastChecks(CONTROL_SCHEMAS)}

#: For a receiver whose direction is not one: every line takes the full path (which rejects it).
NO_FAST_CHECKS = FastChecks({})
