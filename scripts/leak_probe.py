"""The leak probe: what a parent keeps of what a child sent, on each backend.

- ``"delta"``'s reference count after 10,000 deltas are fed and their dicts dropped (0 is right);
- the memory still held (``tracemalloc``: every object CPython allocates, the extension's included)
  after LINES lines of tool calls whose argument names are new every three lines, each result
  dropped at once. What stays is the caches' share: it must not grow with the stream.

    python scripts/leak_probe.py [--lines 360000]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import tracemalloc
from collections.abc import Iterator
from types import ModuleType

import orjson


def fresh_key_chunks(sets: int, per_chunk: int = 30) -> Iterator[bytes]:
    """Tool calls whose four argument names are new every three lines, in chunks of lines."""
    seq = 0
    batch: list[bytes] = []
    for k in range(sets):
        args = {f"argument_{k:08d}_{part}": j for j, part in enumerate(("path", "pattern", "limit", "flags"))}
        for _ in range(3):
            seq += 1
            msg = {"v": 1, "seq": seq, "type": "tool-call", "run": "r", "name": "t", "id": "c", "arguments": args}
            batch.append(orjson.dumps(msg) + b"\n")
            if len(batch) == per_chunk:
                yield b"".join(batch)
                batch.clear()
    yield b"".join(batch)


def delta_refcount_moved(backend: ModuleType, dicts: int = 10_000) -> int:
    rx = backend.Receiver("event")
    line = b'{"v":1,"seq":%d,"type":"assistant-text-delta","run":"r","delta":"hi"}\n'
    for seq in range(1, 101):
        rx.feed(line % seq)
    before = sys.getrefcount("delta")
    for seq in range(101, 101 + dicts):
        rx.feed(line % seq)
    after = sys.getrefcount("delta")
    return after - before


def fresh_keys_held(backend: ModuleType, lines: int) -> int:
    rx = backend.Receiver("event")
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for chunk in fresh_key_chunks(lines // 3):
            rx.feed(chunk)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=360_000, help="lines of fresh key sets (default 360,000)")
    args = parser.parse_args()
    for name in ("_native", "_pure"):
        try:
            backend = importlib.import_module(f"fenwire_fast.{name}")
        except ImportError as exc:
            print(f"{name}: not importable ({exc})")
            continue
        moved = delta_refcount_moved(backend)
        held = fresh_keys_held(backend, args.lines)
        print(
            f"{name}: 'delta' refcount moved by {moved} over 10,000 dicts; "
            f"{held / 1e6:.2f} MB held after {args.lines:,} lines of fresh key sets"
        )


if __name__ == "__main__":
    main()
