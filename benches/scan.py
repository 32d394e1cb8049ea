#!/usr/bin/env python3
"""``Receiver.scan`` (validate and forward) against ``Receiver.feed`` and the floors.

Every stream of ``realistic.all_streams()`` is cut into line-aligned pieces of at most 64 KiB
(``streams.chunks``, one call per piece, the way a tailer reads) and drained by:

- ``rust scan_batch``: ``Receiver.scan_batch``: the same checks, returning one ``ScanBatch`` of
  columns per piece (no Python object per line);
- ``rust scan_batch run``: the same with the stream's run given (``Receiver(run=...)``), so each
  batch also lists the lines of another run (``ScanBatch.foreign``);
- ``rust scan`` / ``pure scan``: ``Receiver.scan``: frames, validates, checks seq, returns
  ``Scanned(type, seq, line)`` records;
- ``rust feed``: ``Receiver.feed``, the same checks, returning dicts;
- ``bytes.split``: ``piece.split(b"\\n")`` alone: the floor of any line-by-line relay in Python
  (no validation at all);
- ``orjson parse-then-discard``: ``orjson.loads`` on every line of the split, results dropped
  (JSON only: no schema, no seq, no line cap).

Then threads: 1 and 2 threads, each draining its own ``Receiver`` over its own copy of the
realistic mixed stream, all started together; bytes per second of the whole is compared with one
thread, and the process's CPU time is given beside the wall time (CPU time above the threads'
share of one thread's is time spent handing the GIL over). The 1- and 2-thread runs alternate
round by round. Each piece size of ``--thread-pieces`` (KiB, default ``64,1024``) gets a row pair
for ``scan_batch``, one for ``scan`` and one for ``scan_rejections`` (the same check without a record per line: it
holds the GIL only briefly per call, so what it loses with two threads is the cost of taking
the GIL back after each check, not of building records) and one for ``scan_rejections +
bytes.split`` (the check, then one bytes per line under the GIL: ``scan``'s shape made of
CPython's own objects, the yardstick for what two threads of that shape get on this machine).

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
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realistic
import streams
from fenwire_fast import _native, _pure


def rust_scan(pieces: list[bytes]) -> int:
    scan = _native.Receiver("event").scan
    return sum(len(scan(p)) for p in pieces)


def rust_scan_batch(pieces: list[bytes]) -> int:
    scan_batch = _native.Receiver("event").scan_batch
    n = 0
    for p in pieces:
        batch = scan_batch(p)
        n += len(batch) + len(batch.rejections)
    return n


def rust_scan_batch_run(pieces: list[bytes]) -> int:
    """``rust scan_batch`` with the stream's run given: each batch lists the other runs' lines."""
    scan_batch = _native.Receiver("event", run=realistic.RUN).scan_batch
    n = 0
    for p in pieces:
        batch = scan_batch(p)
        n += len(batch) + len(batch.rejections)
    return n


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
    "rust scan_batch": rust_scan_batch,
    "rust scan_batch run": rust_scan_batch_run,
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


def _check_then_split(receiver: Any) -> Callable[[bytes], list[bytes]]:
    """The shape of ``scan`` made of CPython's own parts: the check with the GIL released
    (``scan_rejections``), then one bytes per line under the GIL (``bytes.split``)."""
    check = receiver.scan_rejections

    def drain(piece: bytes) -> list[bytes]:
        check(piece)
        return piece.split(b"\n")

    return drain


#: What each thread drains its pieces with, given its own receiver.
THREAD_DRAINS: dict[str, Callable[[Any], Callable[[bytes], Any]]] = {
    "scan_batch": lambda r: r.scan_batch,
    "scan": lambda r: r.scan,
    "scan_rejections": lambda r: r.scan_rejections,
    "scan_rejections + bytes.split": _check_then_split,
}


def threaded(pieces_per_thread: list[list[bytes]], method: str) -> tuple[float, float]:
    """``(wall, cpu)`` seconds for each thread to drain its own pieces with its own receiver and
    ``THREAD_DRAINS[method]``, all started together (CPU time of the whole process)."""
    start = threading.Barrier(len(pieces_per_thread) + 1)
    counts = [0] * len(pieces_per_thread)

    def work(i: int) -> None:
        drain = THREAD_DRAINS[method](_native.Receiver("event"))
        start.wait()
        counts[i] = sum(len(drain(p)) for p in pieces_per_thread[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pieces_per_thread))]
    for t in threads:
        t.start()
    start.wait()
    w, c = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    return time.perf_counter() - w, time.process_time() - c


def thread_rows(mixed: bytes, kib: int, method: str, rounds: int) -> None:
    """Print the 1- and 2-thread rows of ``method`` at ``kib`` KiB pieces (rounds alternate)."""
    copies = [streams.chunks(bytes(bytearray(mixed)), kib * 1024) for _ in range(2)]
    best = {n: (float("inf"), float("inf")) for n in (1, 2)}
    for _ in range(rounds):
        for n in (1, 2):
            w, c = threaded(copies[:n], method)
            best[n] = (min(best[n][0], w), min(best[n][1], c))
    one = len(mixed) / best[1][0]
    for n in (1, 2):
        wall, cpu = best[n]
        rate = n * len(mixed) / wall
        print(
            f"| {kib} KiB | {method} | {n} | {n * len(mixed) / 1e6:.1f} MB | {wall * 1e3:.1f} | "
            f"{cpu * 1e3:.1f} | {rate / 1e9:.2f} | {rate / one:.2f}x |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--streams", default="", help="comma-separated stream names (default: all)")
    parser.add_argument("--once", default="", help="run this drain (or none) once, for callgrind")
    parser.add_argument("--megabytes", type=float, default=20.0, help="input size for --once")
    parser.add_argument("--file", default="", help="input for --once (default: realistic mixed)")
    parser.add_argument("--thread-pieces", default="64,1024", help="piece sizes in KiB for the threads")
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
    print("| pieces | drain | threads | bytes | wall ms (best) | CPU ms (best) | GB/s | vs 1 thread |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for kib in (int(k) for k in args.thread_pieces.split(",")):
        for method in THREAD_DRAINS:
            thread_rows(mixed, kib, method, args.rounds)


if __name__ == "__main__":
    main()
