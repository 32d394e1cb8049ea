"""The hub at scale: idle cost, append-to-delivery latency, CPU per event.

Run ``python benches/hub.py [idle|latency|busy|durable|traced|rounds|all] [--wakeups kernel|poll] [--children N]``.
Nothing here is a test: the figures go to BENCHMARKS.md. ``--json FILE`` also writes what was
measured as JSON (the machine, then one entry per measure with its settings and figures), which
``report.py --plot DIR --hub FILE`` charts.

- **idle**: N children (``sleep``) that never write; the parent waits in ``Hub.wait`` for a few
  seconds; its CPU time / seconds / N is the cost of one idle child per second.
- **latency**: N idle children; a writer process appends one line to a random child's event file
  every 2 ms, stamped with ``CLOCK_MONOTONIC`` (shared by every process on the machine); the hub's
  consumer takes the difference when the line is handed over. Blocking and asyncio. In kernel
  mode the part from the kernel's wake-up report to the hand-over (the hub's own work) is shown
  too: on a loaded machine the rest is mostly the scheduler's delay in running the parent.
- **busy**: 64 children; a writer process appends realistic text deltas (``benches/realistic.py``)
  to all 64 event files round-robin, a few lines per write, as fast as it can. The parent's CPU
  per event through ``Hub.batches`` is compared with bare ``Receiver.feed`` on the same bytes cut
  at the same places (each read the hub made), and at 64 KiB pieces. ``--state-dir PATH``: the
  hub is durable (``Hub(state_dir=PATH)``) and the consumer calls ``hub.commit()`` after every
  batch, or every ``--commit-every`` N batches (counted as the hub's CPU). ``--per-child N``: lines
  per child (default 10,000).
- **durable**: ``busy`` by a plain hub and by a durable hub (a new temporary state dir) that
  commits after every batch (or ``--commit-every`` N), ``--repeat`` rounds (default 5), the order
  alternating from round to round; the parent's CPU per event of each, each round's ratio and the
  medians.
- **traced**: ``busy`` with tracing off and on (``Hub(trace=...)``: the OpenTelemetry SDK with a
  span processor and a metric reader that keep everything in memory), ``--repeat`` rounds, the
  order alternating; the parent's CPU per event of each, each round's ratio and the medians.
  ``busy --trace`` runs ``busy`` traced once. Needs ``opentelemetry-sdk``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import machine
from fenwire_fast import IMPLEMENTATION, Receiver
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild
from fenwire_fast.live.proc.wakeups import KernelWakeups

SLEEPER = ["sleep", "3600"]

# The writer: argv = interval seconds, count, then (event path, run) pairs; appends one stamped
# delta to a random child per tick.
WRITER = r"""
import os, random, sys, time
interval, count, pairs = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
paths, runs = pairs[0::2], pairs[1::2]
fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
seqs = [0] * len(paths)
rng = random.Random(5)
next_at = time.monotonic()
for _ in range(count):
    next_at += interval
    time.sleep(max(0.0, next_at - time.monotonic()))
    i = rng.randrange(len(paths))
    seqs[i] += 1
    line = '{"v":1,"seq":%d,"type":"assistant-text-delta","run":"%s","delta":"%d"}\n' % (
        seqs[i], runs[i], time.monotonic_ns())
    os.write(fds[i], line.encode())
"""

# The busy writer: argv = lines per write, then (path, data file) pairs; writes round-robin.
BUSY_WRITER = r"""
import os, sys
per, pairs = int(sys.argv[1]), sys.argv[2:]
streams = []
for path, data in zip(pairs[0::2], pairs[1::2]):
    with open(data, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    chunks = [b"".join(lines[i:i + per]) for i in range(0, len(lines), per)]
    streams.append((os.open(path, os.O_WRONLY | os.O_APPEND), chunks))
    os.unlink(data)
for step in range(max(len(c) for _, c in streams)):
    for fd, chunks in streams:
        if step < len(chunks):
            os.write(fd, chunks[step])
"""


def _spawn_idle(hub: Hub, n: int) -> list[LiveChild]:
    children = [hub.spawn(None, command=SLEEPER, run=f"c{i}") for i in range(n)]
    while hub.poll():
        pass
    return children


def idle(n: int, wakeups: str, seconds: float = 5.0) -> dict[str, float]:
    with Hub(wakeups=wakeups) as hub:
        _spawn_idle(hub, n)
        cpu0, t0 = time.process_time(), time.monotonic()
        try:
            hub.wait(timeout=seconds)
        except TimeoutError:
            pass
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    return {"us_per_child_per_s": cpu / wall / n * 1e6, "cpu_s": cpu, "wall_s": wall}


def _writer(children: list[LiveChild], count: int, interval: float) -> subprocess.Popen[bytes]:
    pairs = [x for c in children for x in (c.event_path, c.run)]
    return subprocess.Popen([sys.executable, "-c", WRITER, str(interval), str(count), *pairs])


def _summary(samples: list[float]) -> dict[str, float]:
    samples.sort()
    return {
        "median_ms": statistics.median(samples) * 1e3,
        "p99_ms": samples[int(len(samples) * 0.99) - 1] * 1e3,
        "max_ms": samples[-1] * 1e3,
        "samples": len(samples),
    }


class _WakeClock:
    """Notes when the kernel last reported a wake-up (kernel mode), to split the latency into the
    kernel's and the scheduler's part (append to wake-up) and the hub's own (wake-up to delivery)."""

    def __init__(self) -> None:
        self.last = 0
        self._real = KernelWakeups.collect
        clock = self

        def collect(wakeups: Any, timeout: float | None) -> Any:
            out = clock._real(wakeups, timeout)
            if out[0] or out[1]:
                clock.last = time.monotonic_ns()
            return out

        KernelWakeups.collect = collect  # type: ignore[method-assign]

    def close(self) -> None:
        KernelWakeups.collect = self._real  # type: ignore[method-assign]


def latency(n: int, wakeups: str, count: int = 2000, asyncio_: bool = False) -> dict[str, float]:
    clock = _WakeClock()
    with Hub(wakeups=wakeups) as hub:
        children = _spawn_idle(hub, n)
        writer = _writer(children, count, 0.002)
        samples: list[float] = []
        hub_part: list[float] = []

        def take(batch: list[dict[str, Any]]) -> None:
            now = time.monotonic_ns()
            for event in batch:
                samples.append((now - int(event["delta"])) / 1e9)
                if clock.last:
                    hub_part.append((now - clock.last) / 1e9)

        if asyncio_:

            async def drain() -> None:
                async for _child, batch in hub.batches_async():
                    take(batch)
                    if len(samples) >= count:
                        return

            asyncio.run(drain())
        else:
            for _child, batch in hub.batches():
                take(batch)
                if len(samples) >= count:
                    break
        writer.wait()
    clock.close()
    out = _summary(samples)
    if hub_part:
        hub = _summary(hub_part)
        out.update(hub_median_ms=hub["median_ms"], hub_p99_ms=hub["p99_ms"])
    return out


def _child_streams(n: int, per_child: int) -> Iterator[list[bytes]]:
    from realistic import realistic_deltas_stream

    lines = realistic_deltas_stream(per_child, seed=12).splitlines()
    parsed = [orjson.loads(line) for line in lines]
    for _ in range(n):
        yield [orjson.dumps(m) for m in parsed]


def busy(
    n: int,
    wakeups: str,
    per_child: int = 10000,
    per_write: int = 8,
    state_dir: str | None = None,
    commit_every: int = 1,
    trace: Any = False,
) -> dict[str, float]:
    """The busy workload (see the module docstring). With ``state_dir`` the hub is durable
    (``Hub(state_dir=...)``) and the consumer calls ``hub.commit()`` after every
    ``commit_every``-th batch, which counts as the hub's CPU."""
    with Hub(wakeups=wakeups, state_dir=state_dir, trace=trace) as hub:
        children = _spawn_idle(hub, n)
        pairs: list[str] = []
        for child, lines in zip(children, _child_streams(n, per_child), strict=True):
            stamped = []
            for i, line in enumerate(lines, 1):
                m = orjson.loads(line)
                m["run"], m["seq"] = child.run, i
                stamped.append(orjson.dumps(m) + b"\n")
            data = b"".join(stamped)
            path = os.path.join(child.directory, "stream.bin")
            Path(path).write_bytes(data)
            pairs += [child.event_path, path]
        total = n * per_child
        cuts: list[tuple[LiveChild, int]] = []
        receivers = {c: Receiver("event") for c in children}
        fds = {c: os.open(c.event_path, os.O_RDONLY) for c in children}
        start = dict.fromkeys(children, 0)
        writer = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(per_write), *pairs])
        got = commits = batches = 0
        durable = state_dir is not None
        paired = excluded = 0.0
        hold: dict[str, Any] = {}
        clock = time.process_time
        cpu0 = clock()
        for child, batch in hub.batches():
            got += len(batch)
            # the paired bare feed: the same piece, fed here, under the same load (not counted
            # as the hub's); reading the piece again is not counted either
            t0 = clock()
            end = child.channel.offset
            piece = os.pread(fds[child], end - start[child], start[child])
            start[child] = end
            cuts.append((child, end))
            t1 = clock()
            # kept until the next piece, as the hub's batch is kept by this loop: both are freed
            # after the next read, when they are no longer in the cache
            hold["paired"] = receivers[child].feed(piece)
            t2 = clock()
            paired += t2 - t1
            excluded += t2 - t0
            batches += 1
            if durable and batches % commit_every == 0:
                commits += hub.commit()
            if got >= total:
                break
        hub_cpu = clock() - cpu0 - excluded
        writer.wait()
        for fd in fds.values():
            os.close(fd)
        contents = {c: Path(c.event_path).read_bytes() for c in children}
    # the same bytes, cut where the hub cut them, fed to bare receivers after the run (a quiet machine)
    begin = dict.fromkeys(contents, 0)
    pieces = []
    for child, end in cuts:
        pieces.append((child, contents[child][begin[child] : end]))
        begin[child] = end
    receivers = {c: Receiver("event") for c in contents}
    cpu0 = time.process_time()
    for child, piece in pieces:
        receivers[child].feed(piece)
    bare_cpu = time.process_time() - cpu0
    receivers = {c: Receiver("event") for c in contents}
    cpu0 = time.process_time()
    for child, data in contents.items():
        feed = receivers[child].feed
        for i in range(0, len(data), 65536):
            feed(data[i : i + 65536])
    bare64_cpu = time.process_time() - cpu0
    return {
        "events": got,
        "reads": len(cuts),
        "events_per_read": got / len(cuts),
        "hub_us_per_event": hub_cpu / got * 1e6,
        "paired_us_per_event": paired / got * 1e6,
        "ratio": hub_cpu / paired,
        "bare_us_per_event": bare_cpu / got * 1e6,
        "ratio_vs_after": hub_cpu / bare_cpu,
        "bare64k_us_per_event": bare64_cpu / got * 1e6,
        "ratio_vs_64k": hub_cpu / bare64_cpu,
        "commits": commits,
    }


def busy_durable(
    n: int, wakeups: str, per_write: int, repeat: int, commit_every: int = 1
) -> list[tuple[dict[str, float], dict[str, float]]]:
    """``busy`` by a plain hub and by a durable hub that commits after every ``commit_every``-th
    batch, in ``repeat`` rounds, the order alternating from round to round; each round's
    ``(plain, durable)``."""
    out = []
    for r in range(repeat):
        got: dict[bool, dict[str, float]] = {}
        for durable in (False, True) if r % 2 == 0 else (True, False):
            state = tempfile.mkdtemp(prefix="fenwire-busy-state-") if durable else None
            try:
                got[durable] = busy(n, wakeups, per_write=per_write, state_dir=state, commit_every=commit_every)
            finally:
                if state is not None:
                    shutil.rmtree(state, ignore_errors=True)
        plain, durable_ = got[False], got[True]
        print(
            f"round {r + 1}: plain {plain['hub_us_per_event']:.3f} us/event ({plain['events_per_read']:.0f} per read), "
            f"durable {durable_['hub_us_per_event']:.3f} ({durable_['events_per_read']:.0f} per read, "
            f"{durable_['commits']:.0f} runs committed): {durable_['hub_us_per_event'] / plain['hub_us_per_event']:.3f}x",
            flush=True,
        )
        out.append((plain, durable_))
    return out


def sdk_telemetry() -> Any:
    """A :class:`~fenwire_fast.live.parent.otel.Telemetry` on SDK providers of its own that keep every
    span and metric in memory (a real exporter's cost stays off the parent's thread either way)."""
    from fenwire_fast.live.parent.otel import Telemetry
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return Telemetry(tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))


def busy_traced(n: int, wakeups: str, per_write: int, repeat: int) -> list[tuple[dict[str, float], dict[str, float]]]:
    """``busy`` with tracing off and on, in ``repeat`` rounds, the order alternating from round to
    round; each round's ``(off, on)``."""
    out = []
    for r in range(repeat):
        got: dict[bool, dict[str, float]] = {}
        for traced in (False, True) if r % 2 == 0 else (True, False):
            got[traced] = busy(n, wakeups, per_write=per_write, trace=sdk_telemetry() if traced else False)
        off, on = got[False], got[True]
        print(
            f"round {r + 1}: off {off['hub_us_per_event']:.3f} us/event ({off['events_per_read']:.0f} per read), "
            f"on {on['hub_us_per_event']:.3f} ({on['events_per_read']:.0f} per read): "
            f"{on['hub_us_per_event'] / off['hub_us_per_event']:.3f}x",
            flush=True,
        )
        out.append((off, on))
    return out


def _stamped(children: list[LiveChild], per_child: int) -> dict[LiveChild, list[bytes]]:
    """Each child's realistic delta lines, stamped with its run and seq (newline-terminated)."""
    out: dict[LiveChild, list[bytes]] = {}
    for child, lines in zip(children, _child_streams(len(children), per_child), strict=True):
        stamped = []
        for i, line in enumerate(lines, 1):
            m = orjson.loads(line)
            m["run"], m["seq"] = child.run, i
            stamped.append(orjson.dumps(m) + b"\n")
        out[child] = stamped
    return out


def rounds(
    n: int,
    wakeups: str,
    per_write: int = 1,
    count: int = 300,
    hub_on: bool = True,
    bare_on: bool = True,
    trace: Any = False,
) -> dict[str, float]:
    """In one process, no writer to race: each round appends ``per_write`` lines to every child,
    then makes one hub round (``Hub.poll_batches``), which reads each child once; the same pieces
    are fed to bare receivers right after. Repeatable (run it under callgrind; ``hub_on=False``
    does everything but the hub round, ``bare_on=False`` everything but the bare feed, for the
    differences). ``trace``: the hub's ``trace``."""
    with Hub(wakeups=wakeups, trace=trace) as hub:
        children = _spawn_idle(hub, n)
        streams = _stamped(children, per_write * count)
        fds = {c: os.open(c.event_path, os.O_WRONLY | os.O_APPEND) for c in children}
        receivers = {c: Receiver("event") for c in children}
        clock = time.process_time
        hub_cpu = bare_cpu = 0.0
        reads = events = 0
        hold: list[Any] = []
        for r in range(count):
            pieces = []
            for c in children:
                piece = b"".join(streams[c][r * per_write : (r + 1) * per_write])
                os.write(fds[c], piece)
                pieces.append((c, piece))
            hold.clear()
            t0 = clock()
            if hub_on:
                batches = hub.poll_batches()
                hold.append(batches)
                reads += len(batches)
                events += sum(len(b) for _, b in batches)
            t1 = clock()
            if bare_on:
                for c, piece in pieces:
                    hold.append(receivers[c].feed(piece))
            t2 = clock()
            hub_cpu += t1 - t0
            bare_cpu += t2 - t1
        t0 = clock()
        if hub_on:
            while hub.poll_batches():  # the last round: each child's empty read re-arms its watch
                pass
            hub.poll_batches()
        hub_cpu += clock() - t0
        for fd in fds.values():
            os.close(fd)
    if hub_on and (reads != n * count or events != n * count * per_write):
        raise AssertionError(f"expected one read per child per round: {reads} reads, {events} events")
    return {
        "reads": reads,
        "events": events,
        "hub_us_per_read": hub_cpu / max(reads, 1) * 1e6,
        "bare_us_per_read": bare_cpu / (n * count) * 1e6,
        "overhead_us_per_read": (hub_cpu - bare_cpu) / max(reads, 1) * 1e6,
        "ratio": hub_cpu / bare_cpu if hub_on and bare_on else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", nargs="?", default="all", choices=["idle", "latency", "busy", "durable", "traced", "rounds", "all"]
    )
    parser.add_argument("--wakeups", default="kernel", choices=["kernel", "poll"])
    parser.add_argument("--children", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--per-write", type=int, default=8, help="busy, rounds: lines per write (default 8)")
    parser.add_argument("--per-child", type=int, default=10_000, help="busy: lines per child (default 10,000)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--rounds", type=int, default=300, help="rounds: how many (default 300)")
    parser.add_argument("--repeat", type=int, default=5, help="durable: rounds of both hubs (default 5)")
    parser.add_argument("--state-dir", help="busy: a durable hub with this state dir, committing after every batch")
    parser.add_argument(
        "--commit-every", type=int, default=1, help="busy, durable: commit after every N-th batch (default 1)"
    )
    parser.add_argument(
        "--trace", action="store_true", help="busy, rounds: trace the runs (opentelemetry-sdk, in memory)"
    )
    parser.add_argument("--no-hub", action="store_true", help="rounds: all but the hub's rounds (for callgrind)")
    parser.add_argument("--no-bare", action="store_true", help="rounds: all but the bare feed (for callgrind)")
    parser.add_argument(
        "--pipe-pidfd",
        action="store_true",
        help="rounds under valgrind, which has no pidfd_open: a pipe that never becomes readable stands in "
        "(the children do not end during the rounds)",
    )
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"backend {IMPLEMENTATION}, wakeups {args.wakeups}, python {sys.version.split()[0]}, load average {load}")
    random.seed(1)
    info = {**machine.describe(), "wakeups": args.wakeups}
    measured = measure(args)
    if args.json:
        out = {"machine": {**info, "load_average_end": machine.load_average()}, "measures": measured}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run and print what ``args`` ask for; each measure's settings and figures."""
    measured: list[dict[str, Any]] = []
    if args.what in ("idle", "all"):
        n = args.children or 1024
        r = idle(n, args.wakeups, args.seconds)
        measured.append({"what": "idle", "children": n, **r})
        print(
            f"idle     {n} children: {r['us_per_child_per_s']:.3f} us CPU per child per second "
            f"({r['cpu_s'] * 1e3:.1f} ms CPU in {r['wall_s']:.1f} s)"
        )
    if args.what in ("latency", "all"):
        n = args.children or 1024
        for mode in (False, True):
            r = latency(n, args.wakeups, asyncio_=mode)
            measured.append({"what": "latency", "children": n, "asyncio": mode, **r})
            hub_part = (
                f"; from the kernel's wake-up: median {r['hub_median_ms']:.3f} ms, p99 {r['hub_p99_ms']:.3f} ms"
                if "hub_median_ms" in r
                else ""
            )
            print(
                f"latency  {n} idle children, {'asyncio ' if mode else 'blocking'}: median {r['median_ms']:.3f} ms, "
                f"p99 {r['p99_ms']:.3f} ms, max {r['max_ms']:.3f} ms ({r['samples']:.0f} appends){hub_part}"
            )
    if args.what in ("busy", "all"):
        n = args.children or 64
        r = busy(
            n,
            args.wakeups,
            per_child=args.per_child,
            per_write=args.per_write,
            state_dir=args.state_dir,
            commit_every=args.commit_every,
            trace=sdk_telemetry() if args.trace else False,
        )
        settings = {"children": n, "per_child": args.per_child, "per_write": args.per_write}
        durable = {"durable": bool(args.state_dir), "commit_every": args.commit_every, "traced": args.trace}
        measured.append({"what": "busy", **settings, **durable, **r})
        print(
            f"busy     {n} children{f', durable, a commit every {args.commit_every} batch(es)' if args.state_dir else ''}: "
            f"{r['events']:.0f} events in {r['reads']:.0f} reads "
            f"({r['events_per_read']:.1f} per read); hub {r['hub_us_per_event']:.2f} us/event, "
            f"bare feed of the same pieces alongside {r['paired_us_per_event']:.2f} us/event: {r['ratio']:.2f}x; "
            f"after the run {r['bare_us_per_event']:.2f} ({r['ratio_vs_after']:.2f}x), "
            f"in 64 KiB pieces {r['bare64k_us_per_event']:.2f} ({r['ratio_vs_64k']:.2f}x)"
        )
    if args.what == "durable":
        n = args.children or 64
        rows = busy_durable(n, args.wakeups, args.per_write, args.repeat, args.commit_every)
        measured.append({"what": "durable", "children": n, "per_write": args.per_write, "rounds": rows})
        plain = statistics.median(p["hub_us_per_event"] for p, _ in rows)
        durable = statistics.median(d["hub_us_per_event"] for _, d in rows)
        ratios = sorted(d["hub_us_per_event"] / p["hub_us_per_event"] for p, d in rows)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"durable  {n} busy children, {args.repeat} rounds (load average now {load}): parent CPU per event, "
            f"median plain {plain:.3f} us, durable with a commit every {args.commit_every} batch(es) {durable:.3f} us: "
            f"{durable / plain:.3f}x; "
            f"per-round ratios {', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f}x)"
        )
    if args.what == "traced":
        n = args.children or 64
        rows = busy_traced(n, args.wakeups, args.per_write, args.repeat)
        measured.append({"what": "traced", "children": n, "per_write": args.per_write, "rounds": rows})
        off = statistics.median(p["hub_us_per_event"] for p, _ in rows)
        on = statistics.median(d["hub_us_per_event"] for _, d in rows)
        ratios = sorted(d["hub_us_per_event"] / p["hub_us_per_event"] for p, d in rows)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"traced   {n} busy children, {args.repeat} rounds (load average now {load}): parent CPU per event, "
            f"median off {off:.3f} us, on {on:.3f} us: {on / off:.3f}x; "
            f"per-round ratios {', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f}x)"
        )
    if args.what == "rounds":
        n = args.children or 64
        if args.pipe_pidfd:
            ends: list[int] = []

            def pipe_pidfd(pid: int, flags: int = 0) -> int:
                read, write = os.pipe()
                ends.append(write)
                return read

            os.pidfd_open = pipe_pidfd
        r = rounds(
            n,
            args.wakeups,
            args.per_write,
            args.rounds,
            hub_on=not args.no_hub,
            bare_on=not args.no_bare,
            trace=sdk_telemetry() if args.trace else False,
        )
        print(
            f"rounds   {n} children, {args.per_write} lines per write, {args.rounds} rounds: {r['reads']:.0f} reads; "
            f"hub {r['hub_us_per_read']:.2f} us per read, bare feed of the same piece {r['bare_us_per_read']:.2f}: "
            f"{r['overhead_us_per_read']:.2f} us per read on top ({r['ratio']:.2f}x)"
        )
        measured.append({"what": "rounds", "children": n, "per_write": args.per_write, "rounds": args.rounds, **r})
    return measured


if __name__ == "__main__":
    main()
