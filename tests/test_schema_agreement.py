"""The exported JSON Schema agrees with the validator, on both backends.

Every line of the fixtures under tests/fixtures/, the lines scripts/differential.py generates, and
hypothesis's lines (tests/test_properties.py's ``any_line``) are decoded by the backend and checked
against ``json_schema(direction)`` with the ``jsonschema`` package:

- a line the validator accepts validates against the schema;
- a line rejected for a reason the schema expresses (``invalid``, ``version-mismatch``,
  ``unknown-type``, ``invalid-payload``, or ``malformed`` for JSON that is not an object) fails it;
- the rules docs/schema.md lists as inexpressible are counted apart: ``too-large`` (the line cap),
  ``malformed`` for a line that is not JSON in the wire's dialect (no value to validate: not UTF-8,
  not JSON, NaN or infinity, a number overflowing a double, nesting past the parser's limit), and
  ``out-of-order`` from a receiver (the seq order): the line alone is accepted, and validates.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from types import ModuleType
from typing import Any

import jsonschema
import orjson
import pytest
from conftest import FIXTURES, TESTS, no_extensions
from fenwire_fast import json_schema
from hypothesis import given
from test_properties import any_line, valid_messages
from test_wire_fixtures import _all_fixture_lines

#: the rejection codes whose every case the schema expresses
EXPRESSIBLE = frozenset({"invalid", "version-mismatch", "unknown-type", "invalid-payload"})
#: generated lines per direction and backend
GENERATED = 1500
SEED = 20261205


@cache
def validator(direction: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema(direction))


_NOT_JSON = object()


def parsed(line: bytes | str) -> Any:
    """The value the wire's dialect reads from ``line``, or ``_NOT_JSON``."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def agreement(backend: ModuleType, line: bytes | str, direction: str) -> str:
    """Check one line; return its class: ``accepted``, ``expressible`` (a rejection the schema
    makes too) or ``inexpressible:RULE``. Fails the test on a disagreement."""
    msg, rejection = backend.decode(line, direction)
    if rejection is not None and rejection.code == "too-large":
        return "inexpressible:line cap"
    value = parsed(line)
    if value is _NOT_JSON:
        assert rejection is not None and rejection.code == "malformed", (line, rejection)
        return "inexpressible:dialect"
    valid = schema_valid(direction, value)
    if rejection is None:
        assert valid, f"validator accepts, schema rejects {line!r} ({direction})"
        return "accepted"
    assert rejection.code in EXPRESSIBLE | {"malformed"}, rejection
    assert not valid, f"validator rejects ({rejection.code}: {rejection.reason}), schema accepts {line!r} ({direction})"
    return "expressible"


def schema_valid(direction: str, value: Any) -> bool:
    # jsonschema's error messages hold the value's repr, which recurses once per level: the
    # wire's dialect nests up to 1024 deep
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        return bool(validator(direction).is_valid(value))
    finally:
        sys.setrecursionlimit(limit)


def agree_on_stream(backend: ModuleType, cases: Iterable[tuple[bytes | str, str]]) -> Counter[str]:
    """:func:`agreement` for each line, counted by class; and the seq order, through one receiver
    per direction: an accepted line that the receiver rejects as out of order is counted again as
    ``seq order`` (the schema, which sees one line, accepts it)."""
    receivers = {direction: backend.Receiver(direction) for direction in ("event", "control")}
    counts: Counter[str] = Counter()
    for line, direction in cases:
        verdict = agreement(backend, line, direction)
        counts[verdict] += 1
        _, rejection = receivers[direction].receive(line)
        if rejection is not None and rejection.code == "out-of-order":
            if verdict == "accepted":
                counts["seq order"] += 1
    return counts


def fixture_cases() -> list[tuple[bytes | str, str]]:
    """Every fixture line with its direction (less the few given a direction that is neither)."""
    cases: list[tuple[bytes | str, str]] = [case for case in _all_fixture_lines() if case[1] in ("event", "control")]
    for name, direction in (("events.jsonl", "event"), ("controls.jsonl", "control")):
        cases += [(line, direction) for line in (FIXTURES / "reference" / name).read_bytes().splitlines()]
    return cases


@cache
def differential_generator() -> Callable[[random.Random], bytes | str]:
    """``random_line`` of scripts/differential.py (the script imports the Rust extension)."""
    spec = importlib.util.spec_from_file_location("differential", TESTS.parent / "scripts" / "differential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        if no_extensions():
            pytest.skip("scripts/differential.py needs the Rust extension, not built here")
        raise
    random_line: Callable[[random.Random], bytes | str] = module.random_line
    return random_line


def generated_cases(seed: int, count: int) -> list[tuple[bytes | str, str]]:
    rng = random.Random(seed)
    random_line = differential_generator()
    return [(random_line(rng), direction) for _ in range(count) for direction in ("event", "control")]


def test_agreement_on_every_fixture_line(backend: ModuleType) -> None:
    counts = agree_on_stream(backend, fixture_cases())
    assert counts["accepted"] >= 50 and counts["expressible"] >= 150, counts
    assert counts["inexpressible:line cap"] and counts["inexpressible:dialect"] and counts["seq order"], counts


def test_agreement_on_the_differential_lines(backend: ModuleType) -> None:
    counts = agree_on_stream(backend, generated_cases(SEED, GENERATED))
    assert counts["accepted"] >= 500 and counts["expressible"] >= 500, counts
    assert counts["seq order"] and counts["inexpressible:dialect"] and counts["inexpressible:line cap"], counts


@given(any_line)
def test_agreement_on_any_line(backend: ModuleType, case: tuple[bytes | str, str]) -> None:
    line, direction = case
    agreement(backend, line, direction)


@given(valid_messages())
def test_every_valid_message_validates(backend: ModuleType, md: tuple[dict[str, Any], str]) -> None:
    msg, direction = md
    assert agreement(backend, orjson.dumps(msg), direction) == "accepted"
