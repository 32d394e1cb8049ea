"""Bridged ACP children beside mock children, through one hub.

    python benches/acp_hub.py [--children 64] [--chunks 200] [--turns 3] [--rounds 2]

Each child gets a prompt, a follow-up after each of its first ``--turns - 1`` turns and a
``close`` after the last; each turn streams ``--chunks`` text deltas. The **acp** children run ``benches/acp_stream_agent.py`` (an agent written with the ACP
SDK's agent side, realistic text) behind ``spawn(acp=...)``; the **mock** children run the
built-in mock agent with the same number of deltas a turn. The parent drains every child through
``Hub.batches()`` until all have exited. Reported per kind: events, wall seconds, events per
second (over the whole round, and from the first event read to the last), and the parent's CPU
per event (``time.process_time`` of this process, which is the hub
alone: children are other processes). The kinds alternate from round to round; the best round
of each is shown. Nothing here is a test: the figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fenwire_fast import IMPLEMENTATION
from fenwire_fast.live.child.mock_agent import MockConfig
from fenwire_fast.live.parent.hub import Hub

HERE = Path(__file__).resolve().parent
AGENT = HERE / "acp_stream_agent.py"


def one_round(kind: str, children: int, chunks: int, turns: int) -> dict[str, float]:
    mock = MockConfig(steps=1, deltas=chunks, thinking=0, tools=0, final_bytes=48)
    events = 0
    clock = time.process_time
    with Hub() as hub:
        t0, cpu0 = time.perf_counter(), clock()
        for i in range(children):
            if kind == "acp":
                command = [sys.executable, str(AGENT), "--chunks", str(chunks), "--seed", str(i)]
                # 128 Python processes importing the SDK start on a few cores: give them time
                child = hub.spawn("go", acp=command, acp_init_timeout=600.0)
            else:
                child = hub.spawn("go", mock=mock)
        done: dict[str, int] = {}
        first = last = 0.0
        for child, batch in hub.batches():
            events += len(batch)
            last = time.perf_counter()
            first = first or last
            ended = sum(1 for event in batch if type(event) is dict and event.get("type") == "turn-complete")
            if ended:
                done[child.run] = done.get(child.run, 0) + ended
                if done[child.run] < turns:
                    child.follow_up("more")
                else:
                    child.close()
        wall, cpu = time.perf_counter() - t0, clock() - cpu0
        failed = [f"{c.run}: {c.status}: {c.error}" for c in hub.children if c.status != "done"]
    if failed:
        raise SystemExit(f"{kind}: {len(failed)} children did not finish done, e.g. {failed[:3]}")
    return {"events": events, "wall": wall, "cpu": cpu, "span": last - first}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=64)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    best: dict[str, dict[str, float]] = {}
    for r in range(args.rounds):
        for kind in ("acp", "mock") if r % 2 == 0 else ("mock", "acp"):
            got = one_round(kind, args.children, args.chunks, args.turns)
            if kind not in best or got["wall"] < best[kind]["wall"]:
                best[kind] = got
    print(f"backend: {IMPLEMENTATION}; {args.children} children, {args.turns} turns of {args.chunks} deltas each")
    print(
        "| children | events | wall s | events/s | first to last event s | events/s, first to last | parent CPU us/event |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("mock", "acp"):
        b = best[kind]
        print(
            f"| {args.children} {kind} | {b['events']:,.0f} | {b['wall']:.2f} | {b['events'] / b['wall']:,.0f} "
            f"| {b['span']:.2f} | {b['events'] / b['span']:,.0f} | {b['cpu'] / b['events'] * 1e6:.2f} |"
        )
    ratio = (best["acp"]["cpu"] / best["acp"]["events"]) / (best["mock"]["cpu"] / best["mock"]["events"])
    print(f"parent CPU per event, acp / mock: {ratio:.2f}x")


if __name__ == "__main__":
    main()
