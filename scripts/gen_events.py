"""Write a large, valid event JSONL file (for `fenwire check` memory tests and manual runs).

python scripts/gen_events.py OUT.jsonl --megabytes 1024
"""

from __future__ import annotations

import argparse

import orjson


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--megabytes", type=int, default=1024)
    parser.add_argument("--run", default="run")
    args = parser.parse_args()
    target = args.megabytes * 1_000_000
    written = 0
    seq = 0
    with open(args.out, "wb", buffering=1 << 20) as out:
        while written < target:
            block = []
            for i in range(1000):
                seq += 1
                if i % 10 == 9:
                    msg = {
                        "v": 1,
                        "seq": seq,
                        "type": "tool-call",
                        "run": args.run,
                        "name": "read",
                        "id": f"call-{seq}",
                        "arguments": {"path": f"src/file{i}.py"},
                        "summary": "read",
                    }
                else:
                    msg = {
                        "v": 1,
                        "seq": seq,
                        "type": "assistant-text-delta",
                        "run": args.run,
                        "timestamp": "2026-12-02T00:00:00Z",
                        "content-index": 1,
                        "delta": "The quick brown fox jumps over the lazy dog. " * 3,
                        "summary": "The quick",
                    }
                block.append(orjson.dumps(msg))
            data = b"\n".join(block) + b"\n"
            out.write(data)
            written += len(data)


if __name__ == "__main__":
    main()
