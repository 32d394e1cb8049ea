"""Benchmark streams that look like real agent runs, made the way a live child makes them.

Every line is a raw agent display event passed through ``fenwire_fast.normalize.normalize`` (so
second-precision timestamps, ``summary`` = the first line of the text, every string scrubbed) and
then stamped and encoded by a ``Sender``, exactly as the child presenter writes its event file.

The text is what agents really emit: Markdown prose with the punctuation LLMs like ("—", curly
quotes, "…", accents, emoji), code with newlines, indentation, tabs, quotes and backslashes, and
tool results of 0.2-6 KB of source files and log output. About a third of the lines carry non-ASCII.

- ``realistic_mixed_stream()``: 200,000 lines in the proportions of ``streams.MIX``;
- ``realistic_deltas_stream()``: text deltas only, the stream a long answer makes;
- ``non_english_stream()``: the mixed stream of a user who works in Japanese, Chinese and Russian
  (about half the words CJK or Cyrillic).

``python benches/realistic.py`` prints each stream's shape (lines with escapes, non-ASCII lines).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import cache
from typing import Any

import streams
from fenwire_fast import Sender
from fenwire_fast.normalize import normalize

RUN = "run-7f3a9c"
START = 1_796_000_000  # a Unix second in 2026

EN_WORDS = (
    "the of and to in is that for it as with was on be by this are or at from an but not have we "
    "function return value error file line test parse buffer stream token result call agent model "
    "change update handle request response config module import class method field check build run "
    "should would could because however instead first then next finally also let me look at"
).split()
LLM_FLAVOUR = ["—", "“", "”", "’", "…", "é", "→", "✅", "🚀", "naïve", "café", "×", "≥", "½"]
JA_WORDS = "これは テスト です ファイル を 読み込み ます 関数 の 戻り値 エラー 修正 しました 確認 して ください".split()
ZH_WORDS = "我们 需要 修改 这个 函数 的 返回值 然后 运行 测试 检查 结果 文件 错误 已经 修复".split()
RU_WORDS = "нужно исправить функцию которая возвращает ошибку при чтении файла проверим тесты снова".split()

PY_SNIPPETS = [
    'def parse(line: str) -> dict:\n    """Parse one line."""\n    if not line.strip():\n'
    '        raise ValueError(f"empty line at {pos}")\n    return json.loads(line)\n',
    'for path in sorted(root.glob("**/*.py")):\n\tif "\\\\" in str(path):\n\t\tprint(f"odd path: {path!r}")\n',
    'PATTERN = re.compile(r"^(\\d{4})-(\\d{2})-(\\d{2})T")\nassert PATTERN.match("2026-12-02T11:00:00Z")\n',
    "class Cache:\n    def __init__(self, size=128):\n        self._data = {}\n        self.size = size\n\n"
    "    def get(self, key, default=None):\n        return self._data.get(key, default)\n",
    'with open("out.txt", "w") as fh:\n    fh.write("name\\tvalue\\n")\n    for k, v in rows:\n'
    '        fh.write(f"{k}\\t{v}\\n")\n',
]
RS_SNIPPETS = [
    'fn main() {\n    let args: Vec<String> = std::env::args().collect();\n    println!("{:?}", args);\n}\n',
    "impl Parser {\n    pub fn next(&mut self) -> Option<&[u8]> {\n        let end = memchr(b'\\n', &self.buf[self.pos..])?;\n"
    "        let line = &self.buf[self.pos..self.pos + end];\n        self.pos += end + 1;\n        Some(line)\n    }\n}\n",
    'match value {\n    Value::String(s) => write!(f, "\\"{}\\"", s.escape_default()),\n    _ => Ok(()),\n}\n',
]
LOG_LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]


class TextMaker:
    """Deterministic agent-like text of a given flavour."""

    def __init__(self, rng: random.Random, non_english: bool = False) -> None:
        self.rng = rng
        self.non_english = non_english

    def word(self) -> str:
        rng = self.rng
        if self.non_english and rng.random() < 0.5:
            return rng.choice(rng.choice((JA_WORDS, ZH_WORDS, RU_WORDS)))
        return rng.choice(EN_WORDS)

    def sentence(self, flavour: bool) -> str:
        rng = self.rng
        words = [self.word() for _ in range(rng.randint(5, 16))]
        if flavour and rng.random() < 0.7:
            words.insert(rng.randrange(len(words)), rng.choice(LLM_FLAVOUR))
        if rng.random() < 0.2:
            i = rng.randrange(len(words))
            words[i] = f"`{words[i]}()`"
        if rng.random() < 0.15:
            i = rng.randrange(len(words))
            words[i] = f'"{words[i]}"'
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice([".", ".", ".", ":", "?"])

    def prose(self, n_bytes: int, flavour: bool) -> str:
        """Markdown prose: paragraphs, lists, inline code, now and then a fenced code block."""
        rng = self.rng
        out: list[str] = []
        size = 0
        while size < n_bytes:
            r = rng.random()
            if r < 0.04:
                block = "```python\n" + rng.choice(PY_SNIPPETS) + "```"
            elif r < 0.06:
                block = "```rust\n" + rng.choice(RS_SNIPPETS) + "```"
            elif r < 0.14:
                block = "\n".join(f"- {self.sentence(flavour)}" for _ in range(rng.randint(2, 4)))
            else:
                block = " ".join(self.sentence(flavour) for _ in range(rng.randint(3, 7)))
            out.append(block)
            size += len(block.encode()) + 2
        return "\n\n".join(out)

    def source_file(self, n_bytes: int) -> str:
        rng = self.rng
        out = []
        size = 0
        n = 1
        while size < n_bytes:
            for line in rng.choice(PY_SNIPPETS + RS_SNIPPETS).splitlines():
                numbered = f"{n:>5}\t{line}"
                out.append(numbered)
                size += len(numbered.encode()) + 1
                n += 1
        return "\n".join(out)

    def log(self, n_bytes: int, flavour: bool) -> str:
        rng = self.rng
        out = []
        size = 0
        t = rng.randint(0, 80000)
        while size < n_bytes:
            t += rng.randint(0, 3)
            msg = self.sentence(flavour) if rng.random() < 0.5 else f'processed "job-{rng.randint(1, 999)}"'
            line = (
                f"2026-12-02 {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d} {rng.choice(LOG_LEVELS):<5} "
                f"worker[{rng.randint(0, 7)}] {msg} in {rng.random() * 40:.1f}ms path=C:\\\\build\\\\{self.word()}"
            )
            out.append(line)
            size += len(line.encode()) + 1
        return "\n".join(out)


#: The event types' proportions: the same as the ASCII streams' (``streams.MIX``).
MIX = streams.MIX


class RunMaker:
    """Raw agent events in a run's proportions: deltas cut from a running text, as a model streams."""

    def __init__(self, seed: int, non_english: bool = False) -> None:
        self.rng = random.Random(seed)
        self.text = TextMaker(self.rng, non_english)
        self.pending = ""
        self.turn = 0
        self.calls = 0

    def flavour(self) -> bool:
        # About a third of an English run's lines carry non-ASCII.
        return self.text.non_english or self.rng.random() < 0.55

    def delta(self) -> str:
        rng = self.rng
        if len(self.pending) < 200:
            self.pending += self.text.prose(2000, self.flavour())
        n = rng.randint(12, 90)
        piece, self.pending = self.pending[:n], self.pending[n:]
        return piece

    def event(self, kind: str) -> dict[str, Any]:
        rng = self.rng
        if kind in ("assistant-text-delta", "assistant-thinking-delta"):
            return {"type": kind, "content-index": 0, "delta": self.delta()}
        if kind == "assistant-text":
            return {
                "type": kind,
                "final?": rng.random() < 0.3,
                "content-index": 0,
                "text": self.text.prose(rng.randint(300, 2500), self.flavour()),
            }
        if kind == "tool-call":
            self.calls += 1
            tool = rng.choice(["read_file", "grep", "bash", "edit"])
            if tool == "bash":
                args: dict[str, Any] = {
                    "command": f'cd src && grep -rn "{self.text.word()}" --include="*.py" | head -n 20'
                }
            elif tool == "edit":
                args = {
                    "path": f"src/{self.text.word()}.py",
                    "old": rng.choice(PY_SNIPPETS),
                    "new": rng.choice(PY_SNIPPETS),
                }
            else:
                args = {"path": f"src/{self.text.word()}/{self.text.word()}.py", "limit": rng.randint(20, 400)}
            return {"type": "tool-call", "name": tool, "id": f"toolu_{self.calls:06d}", "arguments": args}
        if kind == "tool-result":
            size = rng.randint(200, 6000)
            body = self.text.source_file(size) if rng.random() < 0.6 else self.text.log(size, self.flavour())
            call = f"toolu_{self.calls:06d}"
            return {
                "type": "tool-result",
                "name": "read_file",
                "id": call,
                "tool-call-id": call,
                "is-error?": rng.random() < 0.05,
                "duration-seconds": round(rng.random() * 3, 3),
                "result": {"content": [{"type": "text", "text": body}]},
            }
        if kind == "llm-start":
            return {"type": "llm-start", "provider": "anthropic", "model": "claude-sonnet-4"}
        if kind == "llm-end":
            usage = {"input": rng.randint(100, 90000), "output": rng.randint(1, 4000)}
            return {"type": "llm-end", "stop-reason": rng.choice(["tool-use", "end-turn"]), "usage": usage}
        if kind == "assistant-stream-end":
            return {"type": "assistant-stream-end", "final?": False}
        if kind == "info":
            return {"type": "info", "summary": "dropped 2 queued controls: the run is finalizing", "refs": [3, 4]}
        raise ValueError(kind)


def _lines(events: Iterator[tuple[str, dict[str, Any]]]) -> bytes:
    sender = Sender("event", RUN)
    out = []
    for etype, payload in events:
        line, rej = sender.next(etype, payload)
        if line is None:
            raise RuntimeError(f"the stream generator made an invalid {etype}: {rej}")
        out.append(line)
    return b"\n".join(out) + b"\n"


def _run_events(maker: RunMaker, n: int, mix: list[tuple[str, int]]) -> Iterator[tuple[str, dict[str, Any]]]:
    rng = maker.rng
    kinds = [k for k, _ in mix]
    weights = [w for _, w in mix]
    for i, kind in enumerate(rng.choices(kinds, weights, k=n)):
        now = START + i // 40  # a few dozen events a second share a timestamp, as in a live run
        if kind == "turn-started":
            maker.turn += 1
            yield kind, {"turn": maker.turn}
        elif kind == "turn-complete":
            yield kind, {"turn": max(maker.turn, 1), "stop-reason": "end-turn", "usage": {"input": 1000, "output": 200}}
        else:
            event = normalize(maker.event(kind), now=now)
            yield event.pop("type"), event


@cache
def realistic_mixed_stream(n: int = 200_000, seed: int = 11) -> bytes:
    return _lines(_run_events(RunMaker(seed), n, MIX))


@cache
def realistic_deltas_stream(n: int = 200_000, seed: int = 12) -> bytes:
    return _lines(_run_events(RunMaker(seed), n, [("assistant-text-delta", 1)]))


@cache
def non_english_stream(n: int = 200_000, seed: int = 13) -> bytes:
    return _lines(_run_events(RunMaker(seed, non_english=True), n, MIX))


STREAMS = {
    "realistic mixed": realistic_mixed_stream,
    "realistic deltas": realistic_deltas_stream,
    "non-English": non_english_stream,
}


def all_streams() -> dict[str, Any]:
    """Every stream shape the tables cover: the realistic ones, then the ASCII case
    (``streams.py``: few escapes, little non-ASCII). Each is called with no argument (200,000
    lines) or with the number of lines."""
    return {**STREAMS, "ASCII mixed": streams.mixed_stream, "ASCII deltas": streams.deltas_stream}


def describe(data: bytes) -> str:
    lines = data.split(b"\n")[:-1]
    escapes = sum(b"\\" in line for line in lines)
    non_ascii = sum(not line.isascii() for line in lines)
    longest = max(map(len, lines))
    return (
        f"{len(lines)} lines, {len(data) / len(lines):.0f} bytes/line, {escapes / len(lines):.0%} with escapes, "
        f"{non_ascii / len(lines):.0%} non-ASCII, longest {longest} bytes"
    )


if __name__ == "__main__":
    for name, make in STREAMS.items():
        print(f"{name}: {describe(make())}")
