#!/usr/bin/env python3
"""``Receiver.scan`` (validate and forward) against ``Receiver.feed`` and the floors.

Every stream of ``realistic.all_streams()`` is cut into line-aligned pieces of at most 64 KiB
(``streams.chunks``, one call per piece, the way a tailer reads) and drained by:

- ``rust scan`` / ``pure scan``: ``Receiver.scan``: frames, validates, checks seq, returns
  ``Scanned(type, seq, line)`` records;
- ``rust feed``: ``Receiver.feed``, the same checks, returning dicts;
- ``bytes.split``: ``piece.split(b"\\n")`` alone: the floor of any line-by-line relay in Python
  (no validation at all);
- ``orjson parse-then-discard``: ``orjson.loads`` on every line of the split, results dropped
  (JSON only: no schema, no seq, no line cap).

Then threads: 1 and 2 threads, each draining its own ``Receiver`` with ``scan`` over its own copy
of the realistic mixed stream, all started together; bytes per second of the whole is compared
with one thread. The threads' pieces are 64 KiB too, unless ``--thread-pieces`` names other sizes
in KiB (``--thread-pieces 64,1024``: a row pair per size; the piece size decides how often each
thread hands the GIL over).

Times are the best of ``--rounds`` interleaved rounds, wall and CPU time (the machine is shared:
medians move by 10-40 %).

    python benches/scan.py --rounds 7

``--once DRAIN`` instead runs one drain (or ``none``: only the input prepared) once over the
first ``--megabytes`` of the realistic mixed stream (or of ``--file``, e.g. that stream written
out: generating it under valgrind takes minutes), for counting instructions with
``valgrind --tool=callgrind --toggle-collect='*_PyEval_EvalFrameDefault*'``, minus the count of
``--once none``:

    python benches/scan.py --once "rust scan" --file mixed.jsonl
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realistic
import streams
from fenwire_fast import _native, _pure


def rust_scan(pieces: list[bytes]) -> int:
    scan = _native.Receiver("event").scan
    return sum(len(scan(p)) for p in pieces)


def rust_feed(pieces: list[bytes]) -> int:
    feed = _native.Receiver("event").feed
    return sum(len(feed(p)) for p in pieces)


def pure_scan(pieces: list[bytes]) -> int:
    scan = _pure.Receiver("event").scan
    return sum(len(scan(p)) for p in pieces)


def split_only(pieces: list[bytes]) -> int:
    n = 0
    for p in pieces:
        lines = p.split(b"\n")
        lines.pop()
        n += len(lines)
    return n


def orjson_discard(pieces: list[bytes]) -> int:
    loads = orjson.loads
    n = 0
    for p in pieces:
        lines = p.split(b"\n")
        lines.pop()
        for line in lines:
            loads(line)
        n += len(lines)
    return n


DRAINS: dict[str, Callable[[list[bytes]], int]] = {
    "rust scan": rust_scan,
    "rust feed": rust_feed,
    "bytes.split": split_only,
    "orjson parse-then-discard": orjson_discard,
    "pure scan": pure_scan,
}


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of one call (CPU time of this process: on a loaded machine it moves
    less than wall time; the drains but the threaded one run on one thread)."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def threaded(pieces_per_thread: list[list[bytes]]) -> float:
    """Wall time for each thread to scan its own pieces with its own receiver, started together."""
    start = threading.Barrier(len(pieces_per_thread) + 1)
    counts = [0] * len(pieces_per_thread)

    def work(i: int) -> None:
        start.wait()
        counts[i] = rust_scan(pieces_per_thread[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pieces_per_thread))]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--streams", default="", help="comma-separated stream names (default: all)")
    parser.add_argument("--once", default="", help="run this drain (or none) once, for callgrind")
    parser.add_argument("--megabytes", type=float, default=20.0, help="input size for --once")
    parser.add_argument("--file", default="", help="input for --once (default: realistic mixed)")
    parser.add_argument("--thread-pieces", default="64", help="piece sizes in KiB for the threads")
    args = parser.parse_args()
    if args.once:
        whole = Path(args.file).read_bytes() if args.file else realistic.realistic_mixed_stream()
        data = whole[: int(args.megabytes * 1e6)]
        pieces = streams.chunks(data[: data.rfind(b"\n") + 1])
        if args.once != "none":
            print(DRAINS[args.once](pieces), "lines")
        return
    wanted = [s for s in args.streams.split(",") if s]
    print(
        "| stream | drain | GB/s (best wall) | wall ms (best) | CPU ms (best) | wall vs rust feed | CPU vs rust feed |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    mixed: bytes | None = None
    for name, make in realistic.all_streams().items():
        if wanted and name not in wanted:
            continue
        data = make()
        if name == "realistic mixed":
            mixed = data
        pieces = streams.chunks(data)
        lines = data.count(b"\n")
        expected = {n: fn(pieces) for n, fn in DRAINS.items()}
        assert all(v == lines for v in expected.values()), expected
        # Rounds interleave the drains, so a burst of load from elsewhere hits them alike.
        wall = dict.fromkeys(DRAINS, float("inf"))
        cpu = dict.fromkeys(DRAINS, float("inf"))
        for r in range(args.rounds):
            for n, fn in DRAINS.items():
                if n == "pure scan" and r >= 2:
                    continue
                w, c = timed(lambda fn=fn, pieces=pieces: fn(pieces))
                wall[n], cpu[n] = min(wall[n], w), min(cpu[n], c)
        for n in DRAINS:
            print(
                f"| {name} ({len(data) / 1e6:.1f} MB, {lines:,} lines) | {n} | {len(data) / wall[n] / 1e9:.2f} | "
                f"{wall[n] * 1e3:.1f} | {cpu[n] * 1e3:.1f} | {wall[n] / wall['rust feed']:.2f}x | "
                f"{cpu[n] / cpu['rust feed']:.2f}x |"
            )
    if mixed is None:
        return
    print()
    print("| pieces | threads | bytes scanned | wall ms (best) | GB/s | vs 1 thread |")
    print("|---:|---:|---:|---:|---:|---:|")
    for kib in (int(k) for k in args.thread_pieces.split(",")):
        one = 0.0
        for n in (1, 2):
            copies = [streams.chunks(bytes(bytearray(mixed)), kib * 1024) for _ in range(n)]
            t = min(threaded(copies) for _ in range(args.rounds))
            rate = n * len(mixed) / t
            one = one or rate
            print(
                f"| {kib} KiB | {n} | {n * len(mixed) / 1e6:.1f} MB | {t * 1e3:.1f} | {rate / 1e9:.2f} | "
                f"{rate / one:.2f}x |"
            )


if __name__ == "__main__":
    main()
