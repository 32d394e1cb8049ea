"""Programming errors (wrong argument types, setting or deleting attributes) raise the same
exception, with the same message, on both backends; and out-of-range sizes are stored the same way."""

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

    def __repr__(self) -> str:
        return f"_Index({self.value!r})"


def outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        return ("ok", repr(call()))
    except Exception as exc:  # noqa: BLE001 - the exception is the result being compared
        return (type(exc).__name__, str(exc))


#: Two accepted lines, for the bounds below.
_TWO = b'{"v":1,"seq":1,"type":"ready","run":"r"}\n{"v":1,"seq":2,"type":"ready","run":"r"}\n'
#: ``slice`` and ``line`` arguments: in range, negative, ``None``, out of range either way, huge,
#: not ints (bools, floats, strs, ``__index__`` objects), and misuse of both bounds at once (the
#: first problem found is the same on both backends: the types, then the range).
_MISUSE: list[Any] = [None, True, False, 1.0, "1", _Index(1), 2**64, -(2**64), 2**70, -(2**70), 2**63 - 1, -(2**63)]
_SLICE_BOUNDS: list[tuple[Any, Any]] = [
    (0, 2),
    (1, 1),
    (2, 2),
    (None, None),
    (-1, 2),
    (0, -1),
    (-2, -1),
    (2, 1),
    (3, 3),
    (0, 3),
    *((0, bad) for bad in _MISUSE),
    *((bad, 2) for bad in _MISUSE),
    *((-1, bad) for bad in _MISUSE),
    *((bad, -1) for bad in _MISUSE),
    *((bad, 3) for bad in _MISUSE),
    *((3, bad) for bad in _MISUSE),
]
_LINE_INDICES: list[Any] = [0, 1, 2, -1, -2, -3, *_MISUSE]

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
    *(
        (f"ScanBatch.slice{bounds!r}", lambda m, bounds=bounds: m.Receiver("event").scan_batch(_TWO).slice(*bounds))
        for bounds in _SLICE_BOUNDS
    ),
    *((f"ScanBatch.line({i!r})", lambda m, i=i: m.Receiver("event").scan_batch(_TWO).line(i)) for i in _LINE_INDICES),
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


# ---------------------------------------------------------------------------------------------
# Attributes: every public attribute of the classes, set to values of every kind, and deleted.


class _OddInt(int):
    """An int whose ``__index__`` and ``__int__`` say something else: its int value is what counts."""

    def __index__(self) -> int:
        return 99

    def __int__(self) -> int:
        return 77


class _OddStr(str):
    """A str subclass."""


#: Values of every kind to set an attribute to (one object each, so both backends get the same).
VALUES: list[object] = [
    None,
    True,
    False,
    0,
    1,
    5,
    -1,
    2**53,
    2**63,
    2**64 - 1,
    2**64,
    2**70,
    -(2**70),
    _OddInt(3),
    _Index(5),
    _Index(-1),
    _Index(2**64),
    _Index("x"),
    1.5,
    2.0,
    float("nan"),
    "x",
    "",
    "r",
    "event",
    "control",
    _OddStr("event"),
    b"event",
    bytearray(b"x"),
    [],
    ["event"],
    {},
    ("event",),
    object(),
]

#: Each class's public data attributes (``test_every_attribute_is_probed`` holds this to ``dir()``).
ATTRIBUTES = {
    "Sender": ["direction", "run", "seq"],
    "Receiver": ["buffered", "direction", "plain", "run", "seq"],
    "Framer": ["buffered", "max_line_bytes"],
    "ScanBatch": ["ends", "foreign", "lines", "rejections", "seqs", "types"],
}
LINE = b'{"v":1,"seq":7,"type":"ready","run":"r"}\n'
MAKE: dict[str, Callable[[ModuleType], Any]] = {
    "Sender": lambda m: m.Sender("event", "r"),
    "Receiver": lambda m: m.Receiver("event", run="r"),
    "Framer": lambda m: m.Framer(),
    "ScanBatch": lambda m: m.Receiver("event").scan_batch(LINE),
}
#: What is done with the object after the attribute was set or deleted (its outcome counts too).
USE: dict[str, Callable[[Any], Any]] = {
    "Sender": lambda o: (o.next("ready"), o.next("ready", 5), o.seq),
    "Receiver": lambda o: (o.feed(LINE + b'{"v":1'), o.plain, o.buffered, o.seq, o.scan_batch(LINE).types),
    "Framer": lambda o: (o.feed(b"ab\ncd"), o.buffered, o.max_line_bytes),
    "ScanBatch": lambda o: (len(o), o.line(0), o.slice(0, 1).line(0)),
}
#: No such attribute: getting, setting and deleting it fail alike too.
MISSING = "no_such_attribute"
ATTRIBUTE_CASES = [(cls, attr) for cls, attrs in ATTRIBUTES.items() for attr in [*attrs, MISSING]]


def _unqualified(result: tuple[str, str]) -> tuple[str, str]:
    """CPython names a type by its ``tp_name`` in its own messages ("attribute 'x' of 'T' objects is
    not writable", "'T' object has no attribute 'x'"): the Rust type's is ``fenwire_fast._native.T``,
    the pure one's ``T``. Each backend names the class by its own type, the rest is the same."""
    return result[0], result[1].replace("fenwire_fast._native.", "")


def _typed(value: object) -> tuple[str, object]:
    return type(value).__name__, value


def _attribute_outcomes(module: ModuleType, cls: str, attr: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per value, and for ``del``: changing ``attr`` of a new object, reading it back (with its
    type), and using the object."""
    changes: list[tuple[str, Callable[[Any], Any]]] = [
        (f"set {value!r}", lambda obj, value=value: setattr(obj, attr, value)) for value in VALUES
    ]
    changes.append(("del", lambda obj: delattr(obj, attr)))
    outcomes = {}
    for name, change in changes:
        obj = MAKE[cls](module)
        outcomes[name] = tuple(
            _unqualified(outcome(call))
            for call in (
                lambda: change(obj),  # noqa: B023 - each is called at once, in this iteration
                lambda: _typed(getattr(obj, attr)),  # noqa: B023
                lambda: USE[cls](obj),  # noqa: B023
            )
        )
    return outcomes


@pytest.mark.parametrize("cls,attr", ATTRIBUTE_CASES, ids=[f"{cls}.{attr}" for cls, attr in ATTRIBUTE_CASES])
def test_same_attribute_outcomes(pure: ModuleType, native: ModuleType, cls: str, attr: str) -> None:
    """Setting each attribute to each value, or deleting it, is refused (or not) alike, with the
    same exception and message, and leaves objects that read and behave alike."""
    assert _attribute_outcomes(native, cls, attr) == _attribute_outcomes(pure, cls, attr)


@pytest.mark.parametrize("cls", list(ATTRIBUTES))
def test_every_attribute_is_probed(backend: ModuleType, cls: str) -> None:
    obj = MAKE[cls](backend)
    public = [name for name in dir(obj) if not name.startswith("_") and not callable(getattr(obj, name))]
    assert sorted(public) == ATTRIBUTES[cls]
