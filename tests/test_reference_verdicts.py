"""The Fennel reference's golden fixtures (copied into tests/fixtures/reference_wire/) get the
reference's verdicts on both backends, except the documented ``1e400`` lines: the reference reads
``1e400`` as infinity, our strict dialect rejects it as ``malformed`` (docs/design-decisions.md,
"Where we differ from the reference")."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, assert_strict_equal

REF = FIXTURES / "reference_wire"
EVENTS = (REF / "events.jsonl").read_bytes().splitlines()
CONTROLS = (REF / "controls.jsonl").read_bytes().splitlines()
INVALID = [json.loads(line) for line in (REF / "invalid.jsonl").read_text().splitlines()]

#: Where we differ from the reference on purpose: the strict JSON dialect.
OVERRIDES = {
    '{"v":1,"seq":1e400,"type":"cancel","run":"subagent-1"}': "malformed",
    '{"v":1,"seq":1,"type":"turn-started","run":"subagent-1","turn":1e400}': "malformed",
}


def test_fixture_counts() -> None:
    assert len(EVENTS) == 24 and len(CONTROLS) == 7 and len(INVALID) == 36
    assert sum(1 for rec in INVALID if "1e400" in rec["line"]) == len(OVERRIDES)
    assert all(rec["line"] in OVERRIDES for rec in INVALID if "1e400" in rec["line"])


@pytest.mark.parametrize("line", EVENTS, ids=lambda b: b[:60].decode())
def test_reference_events_valid(backend: ModuleType, line: bytes) -> None:
    msg, rej = backend.decode(line, "event")
    assert rej is None
    assert_strict_equal(msg, orjson.loads(line))
    assert backend.encode(msg, "event") == (line, None)


@pytest.mark.parametrize("line", CONTROLS, ids=lambda b: b[:60].decode())
def test_reference_controls_valid(backend: ModuleType, line: bytes) -> None:
    msg, rej = backend.decode(line, "control")
    assert rej is None
    assert_strict_equal(msg, orjson.loads(line))
    assert backend.encode(msg, "control") == (line, None)


def test_reference_streams_through_receivers(backend: ModuleType) -> None:
    for lines, direction in [(EVENTS, "event"), (CONTROLS, "control")]:
        rx = backend.Receiver(direction)
        out = rx.feed(b"\n".join(lines) + b"\n")
        assert all(isinstance(m, dict) for m in out) and len(out) == len(lines)
        assert rx.seq == len(lines)


@pytest.mark.parametrize("rec", INVALID, ids=lambda r: f"{r['code']}:{r['line'][:50]}")
def test_reference_invalid_verdicts(backend: ModuleType, rec: dict[str, Any]) -> None:
    want = OVERRIDES.get(rec["line"], rec["code"])
    for line in (rec["line"], rec["line"].encode()):
        msg, rej = backend.decode(line, rec["direction"])
        assert msg is None
        assert rej.code == want, (rec, rej)
        assert rej.fatal is (want == "version-mismatch")
