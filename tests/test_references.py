"""Every owned reference is accounted for, on both backends.

Each entry point that builds or takes Python objects is driven over 20,000 lines (accepted and
rejected alike), after a warm-up that fills the per-receiver caches, and with every result dropped:

- the reference counts of the interned keys and values it touches come back to their start;
- the memory ``tracemalloc`` sees (every object CPython allocates, the extension's included) and the
  number of objects the gc tracks come back to their start;
- a stream of ever-new nested key names keeps memory flat: what stays is bounded by the caches.

A leak of one reference per line moves a count by 20,000 and a leak of one small object per line
the memory by half a megabyte: the bounds below are far from both and far above the noise of a
cache that changes hands.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import orjson
import pytest
from fenwire_fast import MAX_LINE_BYTES, REJECTION_CODES
from fenwire_fast.normalize import normalize

LINES = 20_000
WARM_UP = 2_000
#: A count may move by this much from caches taking or giving up objects (the small ints are
#: shared by the whole interpreter); a leak of one reference per line moves it by 20,000.
REFCOUNT_SLACK = 200
#: Bytes (tracemalloc) and gc-tracked objects left after the results are dropped.
MEMORY_SLACK = 256 * 1024
OBJECTS_SLACK = 1_000

RUN = "r-refs"
TEXT = 'line one\nline "two" \\ ünïcödé → 日本 😀 `code()`\t'
WATCHED = tuple(
    sys.intern(s)
    for s in (
        "v",
        "seq",
        "type",
        "run",
        "delta",
        "content-index",
        "summary",
        "timestamp",
        "name",
        "id",
        "arguments",
        "path",
        "pattern",
        "limit",
        "result",
        "content",
        "text",
        "is-error?",
        "tool-call-id",
        "usage",
        "input",
        "output",
        "turn",
        "stop-reason",
        "assistant-text-delta",
        "tool-call",
        "tool-result",
        "turn-complete",
        "end-turn",
        "grep",
        RUN,
        *REJECTION_CODES,
    )
) + (None, True, False, 0, 1)


def _event(seq: int, i: int) -> dict[str, Any]:
    """One of a cycle of realistic events: deltas with escapes and non-ASCII, tool calls with
    nested arguments, a multi-KB tool result, a turn's end."""
    kind = i % 8
    base: dict[str, Any] = {"v": 1, "seq": seq, "type": "assistant-text-delta", "run": RUN}
    if kind == 5:
        args = {"path": f"src/mod_{i % 7}.py", "pattern": "def \\w+\\(", "limit": i % 300}
        base.update(type="tool-call", name="grep", id=f"call_{i}", arguments=args, summary="grep")
    elif kind == 6:
        body = (TEXT * (40 + i % 50))[: 1_000 + 37 * (i % 97)]
        result = {"content": [{"type": "text", "text": body}], "is-error?": False}
        base.update(type="tool-result", name="grep", id=f"call_{i}", result=result, summary=body[:80])
        base["tool-call-id"] = f"call_{i}"
        base["is-error?"] = False
    elif kind == 7:
        base = {"v": 1, "seq": seq, "type": "turn-complete", "run": RUN, "turn": 1 + i % 3}
        base.update({"stop-reason": "end-turn", "usage": {"input": 1000 + i, "output": 200}})
    else:
        base.update({"content-index": 0, "delta": TEXT[: 5 + i % 40], "summary": TEXT[: 5 + i % 40]})
        base["timestamp"] = f"2026-12-03T16:{i // 60 % 60:02d}:{i % 60:02d}Z"
    return base


def _rejected(seq: int, i: int) -> bytes:
    """A line each backend rejects, one reason after another."""
    kind = i % 6
    if kind == 0:
        return b'{"v":1,"seq":%d,"type":"assistant-text-delta","run":"r-refs","delta":"unterminated' % seq
    if kind == 1:
        return b'{"v":1,"seq":%d,"type":"assistant-text-delta","run":"r-refs"}' % seq  # delta missing
    if kind == 2:
        return b'{"v":2,"seq":%d,"type":"ready","run":"r-refs"}' % seq
    if kind == 3:
        return b'{"v":1,"seq":%d,"type":"no-such-type","run":"r-refs","x":[1,{"y":null}]}' % seq
    if kind == 4:
        return b'{"v":1,"seq":0,"type":"ready","run":"r-refs"}'  # seq does not follow
    return b'{"v":1,"seq":%d,"type":"tool-call","run":"r-refs","name":"x","id":"c","arguments":"no"}' % seq


class Stream:
    """Lines with ever-increasing seq, about one in four rejected, one line in 500 over the cap."""

    def __init__(self) -> None:
        self.seq = 0
        self.i = 0

    def lines(self, n: int) -> Iterator[bytes]:
        for _ in range(n):
            self.seq += 1
            self.i += 1
            if self.i % 500 == 0:
                yield b'{"v":1,"seq":%d,"type":"info","run":"r-refs","summary":"' % self.seq + b"x" * MAX_LINE_BYTES
            elif self.i % 4 == 3:
                yield _rejected(self.seq, self.i // 4)
            else:
                yield orjson.dumps(_event(self.seq, self.i))

    def messages(self, n: int) -> Iterator[dict[str, Any]]:
        """Dicts for the entry points that take objects, a quarter of them invalid."""
        for _ in range(n):
            self.seq += 1
            self.i += 1
            msg = _event(self.seq, self.i)
            if self.i % 4 == 3:
                kind = self.i % 3
                if kind == 0:
                    msg.pop("run")
                elif kind == 1:
                    msg["seq"] = -1
                else:
                    msg[7] = "a key that is not a str"
            yield msg

    def chunks(self, n: int, per_chunk: int = 37) -> Iterator[bytes]:
        """``n`` lines in newline-terminated pieces, a few cut inside a line."""
        pending = b""
        left = n
        while left > 0:
            take = min(per_chunk, left)
            left -= take
            data = pending + b"".join(line + b"\n" for line in self.lines(take))
            cut = len(data) - 11 if left > 0 else len(data)
            pending = data[cut:]
            yield data[:cut]


Driver = Callable[[int], None]


def _drivers(backend: ModuleType) -> dict[str, Driver]:
    stream = Stream()
    rx = backend.Receiver("event", run=RUN)
    tx = backend.Sender("event", RUN)
    framer = backend.Framer()

    def decode(n: int) -> None:
        for line in stream.lines(n):
            backend.decode(line, "event")

    def validate(n: int) -> None:
        for msg in stream.messages(n):
            backend.validate(msg, "event")

    def encode(n: int) -> None:
        for msg in stream.messages(n):
            backend.encode(msg, "event")

    def message(n: int) -> None:
        for msg in stream.messages(n):
            payload = {k: v for k, v in msg.items() if k not in ("v", "seq", "type", "run")}
            backend.message(msg["type"], RUN, max(1, stream.seq), payload)

    def sender_next(n: int) -> None:
        for msg in stream.messages(n):
            payload = {k: v for k, v in msg.items() if k not in ("v", "seq", "type", "run")}
            tx.next(msg["type"], payload)

    def receive(n: int) -> None:
        for line in stream.lines(n):
            rx.receive(line)

    def feed(n: int) -> None:
        for chunk in stream.chunks(n):
            rx.feed(chunk)

    def scan(n: int) -> None:
        for chunk in stream.chunks(n):
            rx.scan(chunk)

    def scan_rejections(n: int) -> None:
        for chunk in stream.chunks(n):
            rx.scan_rejections(chunk)

    def scan_batch(n: int) -> None:
        for chunk in stream.chunks(n):
            batch = rx.scan_batch(chunk)
            if len(batch):
                batch.line(-1)

    def framer_feed(n: int) -> None:
        for chunk in stream.chunks(n):
            framer.feed(chunk)

    def normalize_(n: int) -> None:
        for msg in stream.messages(n):
            normalize(msg, {"run-id": RUN})

    return {
        "decode": decode,
        "validate": validate,
        "encode": encode,
        "message": message,
        "Sender.next": sender_next,
        "Receiver.receive": receive,
        "Receiver.feed": feed,
        "Receiver.scan": scan,
        "Receiver.scan_rejections": scan_rejections,
        "Receiver.scan_batch": scan_batch,
        "Framer.feed": framer_feed,
        "normalize": normalize_,
    }


ENTRY_POINTS = list(_drivers(pytest.importorskip("fenwire_fast._pure")))


def _memory_after(drive: Driver, n: int) -> tuple[list[int], int, int]:
    """The watched reference counts, traced bytes and gc objects after ``drive(n)``, relative to
    before it."""
    gc.collect()
    refs = [sys.getrefcount(o) for o in WATCHED]
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        drive(n)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    gc.collect()
    moved = [sys.getrefcount(o) - r for o, r in zip(WATCHED, refs, strict=True)]
    return moved, grown, len(gc.get_objects()) - objects


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_references_and_memory_return(backend: ModuleType, entry: str) -> None:
    drive = _drivers(backend)[entry]
    drive(WARM_UP)
    moved, grown, objects = _memory_after(drive, LINES)
    leaked = {repr(o): d for o, d in zip(WATCHED, moved, strict=True) if abs(d) > REFCOUNT_SLACK}
    assert not leaked, f"{entry}: reference counts moved over {LINES} lines: {leaked}"
    assert grown < MEMORY_SLACK, f"{entry}: {grown} bytes still held after {LINES} lines"
    assert objects < OBJECTS_SLACK, f"{entry}: {objects} more gc objects after {LINES} lines"


def test_one_key_reference_per_dict_is_not_kept(backend: ModuleType) -> None:
    """The probe that found the template leak: 10,000 deltas fed and dropped leave ``"delta"``'s
    count where it was."""
    rx = backend.Receiver("event")
    line = b'{"v":1,"seq":%d,"type":"assistant-text-delta","run":"r","delta":"hi"}\n'
    for seq in range(1, 101):
        rx.feed(line % seq)
    before = sys.getrefcount("delta")
    for seq in range(101, 10_101):
        rx.feed(line % seq)
    after = sys.getrefcount("delta")
    assert after == before


#: Fresh key sets, each sent three times (a template is made at the second sighting and copied
#: from at the third).
FRESH_KEY_SETS = 15_000
FRESH_KEYS_HELD = 2 * 1024 * 1024


def _fresh_key_lines(start: int, sets: int) -> Iterator[bytes]:
    seq = start
    for k in range(sets):
        names = [f"argument_{k:08d}_{part}" for part in ("path", "pattern", "limit", "flags")]
        for _ in range(3):
            seq += 1
            args = {name: j for j, name in enumerate(names)}
            yield orjson.dumps(
                {"v": 1, "seq": seq, "type": "tool-call", "run": RUN, "name": "t", "id": "c", "arguments": args}
            )


@pytest.mark.parametrize("interned", [0, 50_000, 150_000])
@pytest.mark.parametrize("entry", ["Receiver.feed", "Receiver.receive", "decode"])
def test_fresh_nested_keys_keep_memory_flat(backend: ModuleType, entry: str, interned: int) -> None:
    """A child that names new keys all the time grows nothing but bounded caches.

    Whatever the interpreter's table of interned strings holds beforehand (other libraries
    intern names too), a child's keys must not go into it: that table grows for good.
    """
    kept = [sys.intern(f"held-elsewhere-{i}") for i in range(interned)]
    rx = backend.Receiver("event")

    def drive(start: int, sets: int) -> None:
        lines = _fresh_key_lines(start, sets)
        if entry == "Receiver.feed":
            batch: list[bytes] = []
            for line in lines:
                batch.append(line + b"\n")
                if len(batch) == 30:
                    rx.feed(b"".join(batch))
                    batch.clear()
            rx.feed(b"".join(batch))
        elif entry == "Receiver.receive":
            for line in lines:
                rx.receive(line)
        else:
            for line in lines:
                backend.decode(line, "event")

    drive(0, 2_000)  # the caches fill with names that never come back
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        drive(3 * 2_000, FRESH_KEY_SETS)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(kept) == interned
    assert held < FRESH_KEYS_HELD, f"{entry}: {held} bytes held after {3 * FRESH_KEY_SETS} lines of fresh keys"
