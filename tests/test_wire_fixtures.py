"""The golden fixtures in tests/fixtures/wire/ (written by scripts/make_fixtures.py from
docs/wire-protocol.md and docs/design-decisions.md) hold for both backends."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, assert_strict_equal
from fenwire_fast import CONTROL_TYPES, EVENT_TYPES, REJECTION_CODES, Rejection

WIRE = FIXTURES / "wire"


def _lines(name: str) -> list[bytes]:
    data = (WIRE / name).read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


EVENT_LINES = _lines("events.jsonl")
CONTROL_LINES = _lines("controls.jsonl")


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (WIRE / "invalid.jsonl").read_text("ascii").splitlines()]


INVALID = _records()


def record_line(rec: dict[str, Any]) -> bytes:
    if "line" in rec:
        return rec["line"].encode("utf-8")
    if "line_hex" in rec:
        return bytes.fromhex(rec["line_hex"])
    prefix, filler, count, suffix = rec["line_repeat"]
    return (prefix + filler * count + suffix).encode("utf-8")


def _id(rec: dict[str, Any]) -> str:
    i = INVALID.index(rec)
    return f"{i}-{rec['code']}-{rec.get('note', '')[:30]}"


def test_fixtures_cover_every_type() -> None:
    event_types = {orjson.loads(line)["type"] for line in EVENT_LINES}
    control_types = {orjson.loads(line)["type"] for line in CONTROL_LINES}
    assert event_types == set(EVENT_TYPES) and len(event_types) == 22
    assert control_types == set(CONTROL_TYPES) and len(control_types) == 6


def test_fixtures_cover_every_rejection_code() -> None:
    assert {rec["code"] for rec in INVALID} == set(REJECTION_CODES)


@pytest.mark.parametrize(
    "direction,lines", [("event", EVENT_LINES), ("control", CONTROL_LINES)], ids=["events", "controls"]
)
def test_valid_lines_decode_to_the_json_object(backend: ModuleType, direction: str, lines: list[bytes]) -> None:
    for line in lines:
        for form in (line, line.decode("utf-8")):
            msg, rej = backend.decode(form, direction)
            assert rej is None, (line, rej)
            assert_strict_equal(msg, orjson.loads(line))


@pytest.mark.parametrize(
    "direction,lines", [("event", EVENT_LINES), ("control", CONTROL_LINES)], ids=["events", "controls"]
)
def test_valid_lines_reencode_byte_identical(backend: ModuleType, direction: str, lines: list[bytes]) -> None:
    for line in lines:
        msg, _ = backend.decode(line, direction)
        out, rej = backend.encode(msg, direction)
        assert rej is None, (line, rej)
        assert out == line
        assert out == orjson.dumps(orjson.loads(line))


@pytest.mark.parametrize(
    "direction,lines", [("event", EVENT_LINES), ("control", CONTROL_LINES)], ids=["events", "controls"]
)
def test_valid_lines_are_wrong_direction(backend: ModuleType, direction: str, lines: list[bytes]) -> None:
    other = "control" if direction == "event" else "event"
    for line in lines:
        msg, rej = backend.decode(line, other)
        assert msg is None and rej is not None
        assert rej.code == "unknown-type"
        t = orjson.loads(line)["type"]
        article = {"event": "an event", "control": "a control"}
        assert rej.reason == f"{t} is {article[direction]} type, not {article[other]} type"


@pytest.mark.parametrize(
    "direction,name", [("event", "events.jsonl"), ("control", "controls.jsonl")], ids=["events", "controls"]
)
def test_valid_files_through_receiver_feed(backend: ModuleType, direction: str, name: str) -> None:
    data = (WIRE / name).read_bytes()
    rx = backend.Receiver(direction)
    out = rx.feed(data)
    want = [orjson.loads(line) for line in data.splitlines()]
    assert_strict_equal(out, want)
    assert rx.seq == len(want) and rx.buffered == 0
    # the same lines one by one through receive
    rx2 = backend.Receiver(direction)
    for i, line in enumerate(data.splitlines(), start=1):
        msg, rej = rx2.receive(line)
        assert rej is None and rx2.seq == i


@pytest.mark.parametrize("rec", INVALID, ids=_id)
def test_invalid_record(backend: ModuleType, rec: dict[str, Any]) -> None:
    line = record_line(rec)
    errors = tuple(tuple(e) for e in rec["errors"]) if rec["errors"] is not None else None
    want = Rejection(rec["code"], rec["reason"], rec["seq"], rec["type"], rec["run"], errors)
    assert want.fatal is rec["fatal"]
    if "before" in rec:
        rx = backend.Receiver(rec["direction"])
        for prev in rec["before"]:
            rx.receive(prev.encode())
        seq_before = rx.seq
        msg, rej = rx.receive(line)
        assert msg is None
        assert_strict_equal(rej, want)
        assert rx.seq == seq_before  # none of these consume a seq
        return
    forms: list[object] = [line]
    try:
        forms.append(line.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    for form in forms:
        msg, rej = backend.decode(form, rec["direction"])
        assert msg is None
        assert_strict_equal(rej, want)
        assert type(rej.fatal) is bool and rej.fatal is rec["fatal"]
        if rej.seq is not None:
            assert type(rej.seq) is int
    # decode's rejection is also what a fresh Receiver reports (nothing was consumed before)
    rx = backend.Receiver(rec["direction"]) if rec["direction"] in ("event", "control") else None
    if rx is not None:
        msg, rej = rx.receive(line)
        assert_strict_equal(rej, want)
        assert rx.seq == (0 if rej.fatal or rej.seq is None else rej.seq)


@pytest.mark.parametrize(
    "rec",
    [r for r in INVALID if "line" in r and "before" not in r and r["code"] not in ("malformed", "too-large")],
    ids=_id,
)
def test_invalid_record_through_validate(backend: ModuleType, rec: dict[str, Any]) -> None:
    """For lines that parse to an object, validate(parsed) gives the same rejection as decode."""
    obj = orjson.loads(rec["line"])
    msg, rej = backend.validate(obj, rec["direction"])
    errors = tuple(tuple(e) for e in rec["errors"]) if rec["errors"] is not None else None
    assert msg is None
    assert_strict_equal(rej, Rejection(rec["code"], rec["reason"], rec["seq"], rec["type"], rec["run"], errors))
    # and encode gives the validation rejection unchanged
    out, rej2 = backend.encode(obj, rec["direction"])
    assert out is None
    assert_strict_equal(rej2, rej)


def _all_fixture_lines() -> list[tuple[bytes, str]]:
    out = [(line, "event") for line in EVENT_LINES] + [(line, "control") for line in CONTROL_LINES]
    out += [(record_line(rec), rec["direction"]) for rec in INVALID]
    ref = FIXTURES / "reference_wire"
    out += [(line, "event") for line in (ref / "events.jsonl").read_bytes().splitlines()]
    out += [(line, "control") for line in (ref / "controls.jsonl").read_bytes().splitlines()]
    out += [
        (json.loads(x)["line"].encode(), json.loads(x)["direction"])
        for x in (ref / "invalid.jsonl").read_text().splitlines()
    ]
    return out


def test_differential_on_every_fixture_line(pure: ModuleType, native: ModuleType) -> None:
    cases = _all_fixture_lines()
    for line, direction in cases:
        assert_strict_equal(native.decode(line, direction), pure.decode(line, direction))
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert_strict_equal(native.decode(text, direction), pure.decode(text, direction))
    for direction in ("event", "control"):
        a, b = pure.Receiver(direction), native.Receiver(direction)
        for line, _ in cases:
            assert_strict_equal(b.receive(line), a.receive(line))
            assert b.seq == a.seq
        a, b = pure.Receiver(direction), native.Receiver(direction)
        data = b"\n".join(line for line, _ in cases) + b"\n"
        assert_strict_equal(b.feed(data), a.feed(data))
        assert b.seq == a.seq
