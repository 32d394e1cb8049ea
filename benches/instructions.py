"""Instructions per line of each drain, counted by valgrind's callgrind: repeatable on a busy
machine where wall-clock ratios drift by +-10 %.

    python benches/instructions.py [--lines 50000]

Runs each implementation once over the first N lines of the mixed and the deltas-only stream in
a fresh interpreter under `valgrind --tool=callgrind`, minus a run that only prepares the input.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMPLS = [
    "rust Receiver.feed",
    "orjson.loads per line",
    "msgspec decode_lines (untyped)",
    "msgspec decode_lines+to_builtins",
    "ujson.loads per line",
    "simdjson lazy parse per line (no objects)",
    "pure Receiver.feed",
]

CHILD = r"""
import sys
sys.path.insert(0, {here!r})
import streams
from drains import DRAINS
data = open({path!r}, "rb").read()
chunks = streams.chunks(data)
impl = {impl!r}
if impl != "none":
    DRAINS[impl](chunks)
"""


def count(python: str, script: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        # A fixed hash seed: str hashes (and so dict probing) are the same on every run.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        res = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        m = re.search(r"Collected : (\d+)", res.stderr)
        if not m:
            raise RuntimeError(res.stderr[-2000:])
        return int(m.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--stream", action="append", help="only these streams (default: all)")
    parser.add_argument("--impl", action="append", help="only these implementations (default: all)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from realistic import all_streams

    impls = [impl for impl in IMPLS if not args.impl or impl in args.impl]
    if "orjson.loads per line" not in impls:
        impls.append("orjson.loads per line")  # the ratios' reference

    python = sys.executable  # not resolved: a venv's interpreter finds its own packages
    with tempfile.TemporaryDirectory() as tmp:
        print("| stream | implementation | instructions/line | ratio to orjson.loads |")
        print("|---|---|---:|---:|")
        for name, make in all_streams().items():
            if args.stream and name not in args.stream:
                continue
            lines = make().split(b"\n")[: args.lines]
            path = str(Path(tmp) / f"{name}.jsonl")
            Path(path).write_bytes(b"\n".join(lines) + b"\n")
            base = count(python, CHILD.format(here=str(HERE), path=path, impl="none"))
            per = {
                impl: (count(python, CHILD.format(here=str(HERE), path=path, impl=impl)) - base) / len(lines)
                for impl in impls
            }
            ref = per["orjson.loads per line"]
            for impl, n in per.items():
                print(f"| {name} | {impl} | {n:,.0f} | {n / ref:.2f}x |")


if __name__ == "__main__":
    main()
