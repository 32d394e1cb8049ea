"""The drains timed round-robin (every round runs each implementation once, in turn), so a burst
of load from elsewhere on the machine hits all of them alike; prints min and median ns/line and
the ratio to orjson.loads from the same rounds. This is the table quoted in BENCHMARKS.md.

    python benches/interleaved.py [--rounds 25]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import streams
from drains import DRAINS, _native
from realistic import all_streams


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--stream", action="append", help="only these streams (default: all)")
    parser.add_argument(
        "--impl", action="append", help="only these implementations (default: all; orjson.loads and pure always run)"
    )
    args = parser.parse_args()
    impls = [name for name in DRAINS if _native is not None or not name.startswith("rust")]
    if args.impl:
        keep = {*args.impl, "orjson.loads per line", "pure Receiver.feed"}
        impls = [name for name in impls if name in keep]
    print(
        "| stream | implementation | ns/line (min) | ns/line (median) | min ratio to orjson.loads | median ratio to orjson.loads | ratio to pure (min) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, make in all_streams().items():
        if args.stream and name not in args.stream:
            continue
        data = make()
        chunks = streams.chunks(data)
        lines = data.count(b"\n")
        times: dict[str, list[float]] = {impl: [] for impl in impls}
        for r in range(args.rounds):
            for impl in impls:
                if impl.startswith("pure") and r % 3:
                    continue  # the slow one: every third round is plenty
                t0 = time.perf_counter()
                DRAINS[impl](chunks)
                times[impl].append((time.perf_counter() - t0) / lines * 1e9)
        mins = {k: min(v) for k, v in times.items()}
        meds = {k: statistics.median(v) for k, v in times.items()}
        ref_min, ref_med = mins["orjson.loads per line"], meds["orjson.loads per line"]
        pure = mins["pure Receiver.feed"]
        for impl in sorted(impls, key=mins.__getitem__):
            print(
                f"| {name} | {impl} | {mins[impl]:,.0f} | {meds[impl]:,.0f} | {mins[impl] / ref_min:.2f}x "
                f"| {meds[impl] / ref_med:.2f}x | {mins[impl] / pure:.2f}x |"
            )


if __name__ == "__main__":
    main()
