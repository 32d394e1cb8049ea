"""Deterministic benchmark streams (the anchor stream of BENCHMARKS.md and friends).

``mixed_stream()``: 200,000 event lines, about 318 bytes each on average, 71 % of them
``assistant-text-delta``, a few ``tool-result`` lines of several KB, every line a valid envelope
with strictly increasing ``seq``. ``deltas_stream()``: deltas only. ``chunks(data)`` cuts a stream
into line-aligned pieces of at most 64 KiB, one per drain call, the way a tailer reads.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import orjson

RUN = "run-7f3a9c"
CHUNK = 64 * 1024
NL = b"\n"
WORDS = (
    "the of and to in is that for it as with was on be by this are or at from an but not have "
    "function return value error file line test parse buffer stream token result call agent "
    "model delta text output input json wire protocol rust python event control seq run"
).split()
NON_ASCII = ["é", "ü", "→", "…", "日本", "😀", "ß", "Ω"]


def _words(rng: random.Random, n_bytes: int, non_ascii: bool) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        if non_ascii and rng.random() < 0.08:
            w += rng.choice(NON_ASCII)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def _timestamp(i: int) -> str:
    # Second precision, as normalize stamps events; a streaming agent emits a few dozen events
    # per second, so consecutive lines often share a timestamp (here: 40 per second).
    sec = i // 40
    return f"2026-12-02T{11 + sec // 3600:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d}Z"


def _event(rng: random.Random, i: int, kind: str) -> dict[str, Any]:
    base: dict[str, Any] = {"v": 1, "seq": i + 1, "type": kind, "run": RUN, "timestamp": _timestamp(i)}
    if kind in ("assistant-text-delta", "assistant-thinking-delta"):
        delta = _words(rng, rng.randint(40, 120), rng.random() < 0.15)
        base["content-index"] = 0
        base["delta"] = delta
        base["summary"] = delta[:160]
    elif kind in ("assistant-text", "assistant-thinking"):
        text = _words(rng, rng.randint(120, 300), rng.random() < 0.15)
        base.update({"final?": rng.random() < 0.5, "content-index": 0, "text": text, "summary": text[:160]})
    elif kind == "tool-call":
        args = {"path": f"src/{rng.choice(WORDS)}.py", "pattern": _words(rng, 30, False), "limit": rng.randint(1, 500)}
        base.update(
            {"name": "grep", "id": f"call_{i:08d}", "arguments": args, "summary": orjson.dumps(args).decode()[:160]}
        )
    elif kind == "tool-result":
        big = rng.random() < 0.15
        content = _words(rng, rng.randint(2000, 5000) if big else rng.randint(60, 250), rng.random() < 0.1)
        base.update(
            {
                "name": "grep",
                "id": f"call_{i:08d}",
                "tool-call-id": f"call_{i:08d}",
                "duration-seconds": round(rng.random() * 3, 3),
                "is-error?": False,
                "result": {"content": [{"type": "text", "text": content}], "is-error?": False},
                "summary": content[:160],
            }
        )
    elif kind == "llm-start":
        base.update({"provider": "anthropic", "model": "claude-x"})
    elif kind == "llm-end":
        base.update(
            {"stop-reason": "tool-use", "usage": {"input": rng.randint(100, 9000), "output": rng.randint(1, 900)}}
        )
    elif kind == "assistant-stream-end":
        base["final?"] = False
    elif kind == "turn-started":
        base = {"v": 1, "seq": i + 1, "type": kind, "run": RUN, "turn": i // 1000 + 1}
    elif kind == "turn-complete":
        base = {
            "v": 1,
            "seq": i + 1,
            "type": kind,
            "run": RUN,
            "turn": i // 1000 + 1,
            "stop-reason": "end-turn",
            "usage": {"input": 1000, "output": 200},
        }
    elif kind == "info":
        base.update({"summary": "dropped queued controls", "refs": [3, 4]})
    return base


MIX = [
    ("assistant-text-delta", 71),
    ("assistant-thinking-delta", 10),
    ("tool-call", 4),
    ("tool-result", 3),
    ("assistant-text", 3),
    ("llm-start", 2),
    ("llm-end", 2),
    ("assistant-stream-end", 2),
    ("turn-started", 1),
    ("turn-complete", 1),
    ("info", 1),
]


def mixed_messages(n: int = 200_000, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    kinds = [k for k, _ in MIX]
    weights = [w for _, w in MIX]
    return [_event(rng, i, kind) for i, kind in enumerate(rng.choices(kinds, weights, k=n))]


def delta_messages(n: int = 200_000, seed: int = 2) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [_event(rng, i, "assistant-text-delta") for i in range(n)]


def to_stream(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(m) + b"\n" for m in messages)


@cache
def mixed_stream(n: int = 200_000) -> bytes:
    return to_stream(mixed_messages(n))


@cache
def deltas_stream(n: int = 200_000) -> bytes:
    return to_stream(delta_messages(n))


def chunks(data: bytes, size: int = CHUNK) -> list[bytes]:
    """Line-aligned pieces of at most ``size`` bytes (each ends with a newline)."""
    out = []
    start = 0
    n = len(data)
    while start < n:
        end = min(start + size, n)
        if end < n:
            nl = data.rfind(b"\n", start, end)
            end = nl + 1 if nl >= start else data.find(b"\n", end) + 1
        out.append(data[start:end])
        start = end
    return out


if __name__ == "__main__":
    for name, data in (("mixed", mixed_stream()), ("deltas", deltas_stream())):
        lines = data.count(b"\n")
        msgs = mixed_messages() if name == "mixed" else delta_messages()
        share = sum(m["type"] == "assistant-text-delta" for m in msgs) / len(msgs)
        longest = max(map(len, data.split(NL)))
        print(
            f"{name}: {lines} lines, {len(data) / lines:.1f} bytes/line, {share:.1%} deltas, "
            f"max line {longest} bytes, {len(chunks(data))} chunks"
        )
