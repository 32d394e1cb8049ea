"""Programming errors (wrong argument types) raise the same exception, with the same message, on
both backends; and out-of-range sizes are stored the same way."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


class _Index:
    """An int-like argument: only ``__index__``."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __index__(self) -> object:
        return self.value


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        return ("ok", repr(call()))
    except Exception as exc:  # noqa: BLE001 - the exception is the result being compared
        return (type(exc).__name__, str(exc))


CALLS: list[tuple[str, Callable[[ModuleType], Any]]] = [
    ("utf8_prefix float limit", lambda m: m.utf8_prefix("abc", 2.0)),
    ("utf8_prefix str limit", lambda m: m.utf8_prefix("abc", "2")),
    ("utf8_prefix bool limit", lambda m: m.utf8_prefix("abc", True)),
    ("utf8_prefix bytes text", lambda m: m.utf8_prefix(b"abc", 2)),
    ("truncate_line float limit", lambda m: m.truncate_line("abcdef", 4.0)),
    ("truncate_line str limit", lambda m: m.truncate_line("abc", "2")),
    ("scrub float limit", lambda m: m.scrub("abc", 1.5)),
    ("scrub int text", lambda m: m.scrub(5, 3)),
    ("scrub negative limit", lambda m: m.scrub("abc", -4)),
    ("Framer huge cap", lambda m: m.Framer(2**70).max_line_bytes),
    ("Framer zero cap", lambda m: m.Framer(0)),
    ("Receiver list direction", lambda m: m.Receiver([])),
    ("Receiver typo direction", lambda m: m.Receiver("events")),
    ("Receiver int run", lambda m: m.Receiver("event", run=1)),
    ("fast_path_counters positional", lambda m: m.Receiver("event").fast_path_counters(1)),
    ("fast_path_counters two positional", lambda m: m.Receiver("event").fast_path_counters(1, 2)),
    ("fast_path_counters keyword", lambda m: m.Receiver("event").fast_path_counters(reset=True)),
    ("fast_path_counters both", lambda m: m.Receiver("event").fast_path_counters(1, reset=True)),
    ("scan_batch str data", lambda m: m.Receiver("event").scan_batch("x\n")),
    ("scan_batch no data", lambda m: m.Receiver("event").scan_batch()),
    ("scan_batch two args", lambda m: m.Receiver("event").scan_batch(b"", b"")),
    ("scan_batch keyword", lambda m: m.Receiver("event").scan_batch(data=b"")),
    ("ScanBatch.line str", lambda m: m.Receiver("event").scan_batch(b"").line("0")),
    ("ScanBatch.line bool", lambda m: m.Receiver("event").scan_batch(b"").line(False)),
    ("ScanBatch.line out of range", lambda m: m.Receiver("event").scan_batch(b"").line(0)),
    ("ScanBatch.line past 64 bits", lambda m: m.Receiver("event").scan_batch(b"").line(2**70)),
    ("ScanBatch.line no index", lambda m: m.Receiver("event").scan_batch(b"").line()),
    ("ScanBatch.slice no bounds", lambda m: m.Receiver("event").scan_batch(b"").slice()),
    ("ScanBatch.slice one bound", lambda m: m.Receiver("event").scan_batch(b"").slice(0)),
    ("ScanBatch.slice three bounds", lambda m: m.Receiver("event").scan_batch(b"").slice(0, 0, 0)),
    ("ScanBatch.slice keywords", lambda m: m.Receiver("event").scan_batch(b"").slice(start=0, stop=0)),
    ("ScanBatch.slice bad keyword", lambda m: m.Receiver("event").scan_batch(b"").slice(0, end=0)),
    ("ScanBatch.slice float", lambda m: m.Receiver("event").scan_batch(b"").slice(0.0, 0)),
    ("ScanBatch.slice past 64 bits", lambda m: m.Receiver("event").scan_batch(b"").slice(0, 2**70)),
    ("ScanBatch set lines", lambda m: setattr(m.Receiver("event").scan_batch(b""), "lines", b"")),
    ("ScanBatch set foreign", lambda m: setattr(m.Receiver("event").scan_batch(b""), "foreign", [])),
    ("ScanBatch set other", lambda m: setattr(m.Receiver("event").scan_batch(b""), "other", 1)),
    ("ScanBatch del seqs", lambda m: delattr(m.Receiver("event").scan_batch(b""), "seqs")),
    (
        "ScanBatch len and repr",
        lambda m: (len(m.Receiver("event").scan_batch(b"")), repr(m.Receiver("event").scan_batch(b""))),
    ),
    ("Sender None direction", lambda m: m.Sender(None, "r")),
    ("utf8_prefix __index__ past 64 bits", lambda m: m.utf8_prefix("abc", _Index(2**70))),
    ("truncate_line __index__ past 64 bits", lambda m: m.truncate_line("abc", _Index(2**70))),
    ("scrub __index__ past 64 bits", lambda m: m.scrub("abc", _Index(2**70))),
    ("utf8_prefix __index__ below -2**63", lambda m: m.utf8_prefix("abc", _Index(-(2**70)))),
    ("utf8_prefix __index__ returning a str", lambda m: m.utf8_prefix("abc", _Index("x"))),
]


@pytest.mark.parametrize("name,call", CALLS, ids=[name for name, _ in CALLS])
def test_same_outcome(pure: ModuleType, native: ModuleType, name: str, call: Callable[[ModuleType], Any]) -> None:
    expected = outcome(lambda: call(pure))
    assert outcome(lambda: call(native)) == expected
    if "float" in name or "str limit" in name:
        assert expected[0] == "TypeError"
