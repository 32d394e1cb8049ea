"""The implementations drained in the benchmarks: one call per 64 KiB piece, every one returning
the messages of the piece as Python objects."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import orjson
import simdjson
import ujson
from fenwire_fast import _pure

try:
    from fenwire_fast import _native
except ImportError:  # pragma: no cover - the extension is not built
    _native = None  # type: ignore[assignment]

Opt = msgspec.field


class _Display(msgspec.Struct, kw_only=True, omit_defaults=True, rename="kebab", tag_field="type"):
    v: int
    seq: int
    run: str
    timestamp: str | None = None
    summary: str | None = None
    transport_truncated: bool | None = msgspec.field(default=None, name="transport-truncated?")


class Delta(_Display, tag="assistant-text-delta"):
    content_index: int | None = None
    delta: str | None = None


class ThinkingDelta(_Display, tag="assistant-thinking-delta"):
    content_index: int | None = None
    delta: str | None = None


class Text(_Display, tag="assistant-text"):
    final: bool = msgspec.field(name="final?")
    content_index: int | None = None
    text: str | None = None


class ToolCall(_Display, tag="tool-call"):
    name: str
    id: str | None = None
    arguments: Any = None


class ToolResult(_Display, tag="tool-result"):
    name: str
    is_error: bool = msgspec.field(name="is-error?")
    id: str | None = None
    tool_call_id: str | None = None
    duration_seconds: float | None = None
    result: Any = None


class LlmStart(_Display, tag="llm-start"):
    provider: str | None = None
    model: str | None = None


class LlmEnd(_Display, tag="llm-end"):
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


class StreamEnd(_Display, tag="assistant-stream-end"):
    final: bool = msgspec.field(name="final?")


class TurnStarted(_Display, tag="turn-started"):
    turn: int


class TurnComplete(_Display, tag="turn-complete"):
    turn: int
    stop_reason: str
    usage: dict[str, Any] | None = None


class Info(_Display, tag="info"):
    refs: list[int] | None = None


Event = (
    Delta
    | ThinkingDelta
    | Text
    | ToolCall
    | ToolResult
    | LlmStart
    | LlmEnd
    | StreamEnd
    | TurnStarted
    | TurnComplete
    | Info
)


def drain_rust(chunks: list[bytes]) -> int:
    rx = _native.Receiver("event")
    n = 0
    for chunk in chunks:
        n += len(rx.feed(chunk))
    return n


def drain_pure(chunks: list[bytes]) -> int:
    rx = _pure.Receiver("event")
    n = 0
    for chunk in chunks:
        n += len(rx.feed(chunk))
    return n


def drain_orjson(chunks: list[bytes]) -> int:
    """``orjson.loads`` per line (split on b"\\n"), no validation, no seq check, no line cap."""
    return _per_line(orjson.loads, chunks)


_decoder = msgspec.json.Decoder(Event)  # type: ignore[arg-type]


def drain_msgspec(chunks: list[bytes]) -> int:
    """msgspec ``decode_lines`` into typed structs, then ``to_builtins`` to get dicts (one bad
    line fails the whole piece)."""
    decode_lines = _decoder.decode_lines
    to_builtins = msgspec.to_builtins
    n = 0
    for chunk in chunks:
        n += len(to_builtins(decode_lines(chunk)))
    return n


_untyped = msgspec.json.Decoder()


def drain_msgspec_untyped(chunks: list[bytes]) -> int:
    """msgspec ``decode_lines`` with no type: dicts straight away, no validation (one bad line fails
    the whole piece)."""
    decode_lines = _untyped.decode_lines
    n = 0
    for chunk in chunks:
        n += len(decode_lines(chunk))
    return n


def _per_line(loads: Callable[[bytes], object], chunks: list[bytes]) -> int:
    """``loads`` on every line of ``chunks`` (split on b"\\n"), the objects kept per chunk."""
    n = 0
    for chunk in chunks:
        lines = chunk.split(b"\n")
        lines.pop()  # the empty piece after the last newline
        n += len([loads(line) for line in lines])
    return n


def drain_ujson(chunks: list[bytes]) -> int:
    """``ujson.loads`` per line, no validation."""
    return _per_line(ujson.loads, chunks)


def drain_json(chunks: list[bytes]) -> int:
    """The standard library's ``json.loads`` per line, no validation."""
    return _per_line(json.loads, chunks)


_simd = simdjson.Parser()


def drain_simdjson(chunks: list[bytes]) -> int:
    """simdjson's lazy parse per line: checks that each line is JSON and builds no objects (a
    validation-speed floor, not a drain: nothing is kept)."""
    parse = _simd.parse
    n = 0
    for chunk in chunks:
        lines = chunk.split(b"\n")
        lines.pop()
        for line in lines:
            parse(line)
        n += len(lines)
    return n


DRAINS: dict[str, Callable[[list[bytes]], int]] = {
    "rust Receiver.feed": drain_rust,
    "pure Receiver.feed": drain_pure,
    "orjson.loads per line": drain_orjson,
    "msgspec decode_lines (untyped)": drain_msgspec_untyped,
    "msgspec decode_lines+to_builtins": drain_msgspec,
    "ujson.loads per line": drain_ujson,
    "json.loads per line (stdlib)": drain_json,
    "simdjson lazy parse per line (no objects)": drain_simdjson,
}
