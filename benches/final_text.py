"""A huge final text handed over while a hub drains busy children: the longest round, the memory.

Run ``python benches/final_text.py [--mib 255] [--busy 8] [--memory rss|tracemalloc]``.
Nothing here is a test: the figures go to BENCHMARKS.md.

One child runs this module's agent (``--agent final_text:huge``): its tool-free finalize turn
answers with an ASCII text of ``--mib`` MiB (within the default 256 MiB cap), which the child
writes to a final-text file in its private directory and names in its ``result``. ``--busy`` mock
children stream text deltas the whole time. The parent drives everything through one ``Hub``,
round after round, and reports:

- the longest hub round (``Hub.poll_batches``) while the final text was being read, and overall;
- the longest single ``poll`` of the big child's channel (one bounded step of the read each);
- how many rounds the read took, and how many events the busy children delivered meanwhile;
- the parent's peak extra memory from just before the ``finalize`` until the text is handed over,
  relative to the text's size: the resident set's high-water mark (``--memory rss``: reset through
  ``/proc/self/clear_refs`` and read from ``VmHWM``), or the peak of ``tracemalloc``
  (``--memory tracemalloc``, which slows every allocation of the parent).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fenwire_fast import IMPLEMENTATION
from fenwire_fast.live.child.agent import TurnContext, TurnInput, TurnResult
from fenwire_fast.live.parent.hub import Hub

HERE = Path(__file__).resolve().parent
MIB = 1 << 20
LINE = b"All work and no play makes Jack a dull boy; the final answer goes on and on and on.\n"

# -- the child's agent ----------------------------------------------------------------------------


def ascii_text(nbytes: int) -> str:
    """``nbytes`` of ASCII text, in lines."""
    return (LINE * (nbytes // len(LINE) + 1))[:nbytes].decode("ascii")


class HugeAnswer:
    """A short first turn; the finalize turn answers with ``bytes`` of ASCII text."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.size = int((config or {}).get("bytes", 255 * MIB))

    def turn(self, request: TurnInput, ctx: TurnContext) -> Iterator[dict[str, Any]]:
        yield {"type": "llm-start", "provider": "bench", "model": "huge"}
        text = ascii_text(self.size) if request.final else "working on it"
        yield {"type": "llm-end", "stop-reason": "stop"}
        return TurnResult(stop_reason="stop", text=text)


def huge(config: dict[str, Any] | None = None) -> HugeAnswer:
    """The agent factory: ``--agent final_text:huge``."""
    return HugeAnswer(config)


# -- the parent -------------------------------------------------------------------------------------


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_high_water() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _timed(poll: Callable[..., Any], times: list[float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return poll(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - started)

    return timed


def run(mib: int, busy: int, memory: str, step_mib: float | None = None) -> dict[str, Any]:
    size = mib * MIB
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)}
    mock = {"steps": 5000, "deltas": 10, "delta_bytes": 64, "delay": 0.002, "tools": 0}
    out: dict[str, Any] = {"mib": mib, "busy": busy, "memory": memory}
    with Hub() as hub:
        others = [hub.spawn("work", mock=mock, run=f"busy-{i}") for i in range(busy)]
        big = hub.spawn("go", run="big", agent="final_text:huge", agent_config={"bytes": size}, env=env)
        if step_mib is not None:  # spawn takes no final_text_step: set the channel's own
            big.channel._final.step_bytes = int(step_mib * MIB)
        big_polls: list[float] = []
        big.channel.poll = _timed(big.channel.poll, big_polls)  # type: ignore[method-assign]
        rounds: list[tuple[float, bool]] = []  # (seconds, the final text was being read)
        busy_events_during = 0
        finalized = cancelled = False
        baseline = 0
        result_at = None
        started = time.monotonic()
        while not hub.finished:
            assert time.monotonic() - started < 600, "the bench hung"
            reading_before = big.channel._final.reading
            t = time.perf_counter()
            batches = hub.poll_batches()
            took = time.perf_counter() - t
            reading = reading_before or big.channel._final.reading
            rounds.append((took, reading))
            for child, messages in batches:
                if child is big:
                    for m in messages:
                        if m["type"] == "turn-complete" and not finalized:
                            # the parent's extra memory from here on
                            if memory == "tracemalloc":
                                tracemalloc.start()
                            else:
                                _reset_high_water()
                                baseline = _rss_kib("VmRSS")
                            big_polls.clear()
                            big.finalize()
                            finalized = True
                        elif m["type"] == "result":
                            result_at = len(rounds)
                            if memory == "tracemalloc":
                                out["peak_extra"] = tracemalloc.get_traced_memory()[1]
                                tracemalloc.stop()
                            else:
                                out["peak_extra"] = (_rss_kib("VmHWM") - baseline) * 1024
                            out["text_ok"] = big.channel.final_text == ascii_text(size)
                            out["note"] = big.channel.final_text_note
                            out["big_polls"] = list(big_polls)
                elif reading:
                    busy_events_during += len(messages)
            if result_at is not None and not cancelled:
                for child in others:
                    child.cancel()
                cancelled = True
            if not batches:
                hub.sleep(0.05)
    during = [t for t, r in rounds if r]
    reading_at = [i for i, (_, r) in enumerate(rounds) if r]
    out["longest_round_at"] = max(range(len(rounds)), key=lambda i: rounds[i][0])
    out["read_rounds"] = (reading_at[0], reading_at[-1]) if reading_at else None
    out.update(
        rounds=len(rounds),
        rounds_reading=len(during),
        longest_round_reading=max(during, default=0.0),
        longest_round=max(t for t, _ in rounds),
        busy_events_during=busy_events_during,
        statuses={c.run: c.status for c in hub.children},
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=255, help="size of the final text (default 255)")
    parser.add_argument("--busy", type=int, default=8, help="busy mock children (default 8)")
    parser.add_argument("--memory", choices=("rss", "tracemalloc"), default="rss")
    parser.add_argument("--step-mib", type=float, default=None, help="final_text_step (default: the channel's)")
    args = parser.parse_args()
    out = run(args.mib, args.busy, args.memory, args.step_mib)
    polls = out.get("big_polls", [])
    print(f"{IMPLEMENTATION}: a {args.mib} MiB final text, {args.busy} busy children, memory by {args.memory}")
    print(f"  text handed over whole: {out.get('text_ok')} (note: {out.get('note')})")
    print(
        f"  longest hub round while reading: {out['longest_round_reading'] * 1000:.1f} ms "
        f"({out['rounds_reading']} rounds); longest round overall: {out['longest_round'] * 1000:.1f} ms "
        f"(round {out['longest_round_at']} of {out['rounds']}; the read: rounds {out['read_rounds']})"
    )
    if polls:
        ranked = sorted(range(len(polls)), key=polls.__getitem__, reverse=True)
        print(
            f"  the big child's polls after finalize: {len(polls)}, the longest (poll #: ms) "
            + ", ".join(f"{i + 1}: {polls[i] * 1000:.1f}" for i in ranked[:4])
            + f"; median {sorted(polls)[len(polls) // 2] * 1000:.1f} ms"
        )
    print(f"  busy children's events delivered while reading: {out['busy_events_during']}")
    extra = out.get("peak_extra", 0)
    print(f"  peak extra memory: {extra / MIB:.0f} MiB = {extra / (args.mib * MIB):.2f}x the text")
    print(f"  statuses: {out['statuses']}")
    return 0 if out.get("text_ok") else 1


if __name__ == "__main__":
    sys.exit(main())
