"""Does ``fenwire top`` slow down the parent it watches?

Run ``python benches/top.py [--repeat 5] [--interval 1.0] [--children 64]``. Nothing here is a test:
the figures go to BENCHMARKS.md.

The parent is ``benches/hub.py``'s busy workload on a durable hub (64 children whose event files a
writer process fills with realistic deltas as fast as it can; the consumer commits every 8
batches). Each round runs it twice, once alone and once with ``fenwire top`` watching its state dir
in a pseudo-terminal (redrawing every ``--interval`` seconds, its output read and thrown away), the
order alternating from round to round. Per run: the parent's events per second (wall clock), its
CPU per event, and top's CPU per second of watching; per round the ratios, then the medians.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fenwire_fast import IMPLEMENTATION
from hub import busy


class Watcher:
    """``fenwire top STATE`` in a pseudo-terminal of 200x50, its output drained by a thread."""

    def __init__(self, state: str, interval: float) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.execv(sys.executable, [sys.executable, "-m", "fenwire_fast", "top", state, "--interval", str(interval)])
        import fcntl
        import struct
        import termios

        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.bytes = 0
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                self.bytes += len(chunk)

    def stop(self) -> tuple[float, float]:
        """Stop it; its CPU seconds and the seconds it watched."""
        watched = time.monotonic() - self.started
        os.kill(self.pid, signal.SIGINT)
        _, _, usage = os.wait4(self.pid, 0)
        os.close(self.fd)
        return usage.ru_utime + usage.ru_stime, watched


def one(children: int, watched: bool, interval: float) -> dict[str, Any]:
    state = tempfile.mkdtemp(prefix="fenwire-bench-top-")
    watcher = None
    try:
        if watched:
            os.makedirs(state, exist_ok=True)
            watcher = Watcher(state, interval)
        t0 = time.monotonic()
        got = busy(children, "kernel", per_write=8, state_dir=state, commit_every=8)
        wall = time.monotonic() - t0
        out: dict[str, Any] = {"events_per_s": got["events"] / wall, "us_per_event": got["hub_us_per_event"]}
        if watcher is not None:
            cpu, seconds = watcher.stop()
            watcher = None
            out["top_cpu_per_s"] = cpu / seconds
        return out
    finally:
        if watcher is not None:
            watcher.stop()
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--children", type=int, default=64)
    args = parser.parse_args()
    print(f"backend {IMPLEMENTATION}, {args.children} children, top every {args.interval} s, {os.cpu_count()} cores")
    rates, cpus, tops = [], [], []
    for r in range(args.repeat):
        got = {}
        for watched in (False, True) if r % 2 == 0 else (True, False):
            got[watched] = one(args.children, watched, args.interval)
        alone, seen = got[False], got[True]
        rates.append(seen["events_per_s"] / alone["events_per_s"])
        cpus.append(seen["us_per_event"] / alone["us_per_event"])
        tops.append(seen["top_cpu_per_s"])
        print(
            f"round {r + 1}: alone {alone['events_per_s']:,.0f} ev/s {alone['us_per_event']:.3f} us/ev; "
            f"watched {seen['events_per_s']:,.0f} ev/s {seen['us_per_event']:.3f} us/ev; "
            f"throughput {rates[-1]:.3f}x, parent CPU/event {cpus[-1]:.3f}x; top {seen['top_cpu_per_s'] * 100:.1f}% of a core",
            flush=True,
        )
    print(
        f"median: throughput watched/alone {statistics.median(rates):.3f}x, parent CPU/event {statistics.median(cpus):.3f}x, "
        f"top {statistics.median(tops) * 100:.1f}% of a core"
    )


if __name__ == "__main__":
    main()
