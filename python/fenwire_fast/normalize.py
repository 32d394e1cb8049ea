"""``normalize``: turn an agent's display event into a wire-safe event.

Each display type keeps its own fields (a per-type table), and:

- total: any input (non-dict events, non-dict results, nulls, numbers, huge or deep values, objects
  JSON cannot carry) gives a valid event and never raises; an event whose type is not a display
  type becomes an ``info`` event describing it;
- every string is scrubbed (control characters escaped, lone surrogates escaped, cut at a character
  boundary) and charged against one byte budget per event (:data:`EVENT_PAYLOAD_BYTES`), map keys
  included; at most :data:`EVENT_TABLE_ENTRIES` entries are copied, and values nested deeper than
  :data:`EVENT_MAX_DEPTH` are replaced;
- a ``null`` nested inside a payload stays ``null``; an empty array stays ``[]``;
- summaries are the first line, cut UTF-8-safely to :data:`SUMMARY_BYTES` bytes in all;
- ``info`` keeps its own ``summary`` and a valid ``refs``.

``transport-truncated?`` is added (as ``true``) only when something was cut, escaped or replaced.
The result is the event without its envelope (``type`` plus payload fields); it always validates as
its type and, once stamped, encodes to far less than ``MAX_LINE_BYTES``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from ._types import (
    DISPLAY_EVENT_TYPES,
    EVENT_MAX_DEPTH,
    EVENT_PAYLOAD_BYTES,
    EVENT_STRING_BYTES,
    EVENT_TABLE_ENTRIES,
    MAX_SAFE_INTEGER,
    SUMMARY_BYTES,
)
from .text import first_line, scrub, truncate_line

__all__ = ["normalize", "summarize", "timestamp"]

META_KEYS = ("run-id", "agent", "requested-cwd", "cwd", "physical-cwd")
DEPTH_LIMIT_TEXT = "[transport depth limit]"
_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1
_SUMMARY_OPTIONS = orjson.OPT_NON_STR_KEYS


def timestamp(now: object = None) -> str:
    """UTC ``YYYY-MM-DDTHH:MM:SSZ`` for ``now`` (Unix seconds, a ``datetime``, or the current time);
    a string is used as it is."""
    if isinstance(now, str):
        return now
    if isinstance(now, datetime):
        moment = now if now.tzinfo else now.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    seconds = time.time()
    if isinstance(now, (int, float)) and not isinstance(now, bool) and math.isfinite(now):
        seconds = float(now)
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    except (OverflowError, OSError, ValueError):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _replace_surrogates(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def summarize(value: object) -> str:
    """A one-line summary: a string as it is, ``None`` as ``""``, anything else as JSON (or its
    ``str``); then the first line, cut to :data:`SUMMARY_BYTES` bytes with ``…``."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, default=str, option=_SUMMARY_OPTIONS).decode("utf-8")
        except Exception:  # noqa: BLE001 - anything orjson cannot carry falls back to str()
            try:
                text = str(value)
            except Exception:  # noqa: BLE001 - a broken __str__ must not break normalize
                text = f"<{type(value).__name__}>"
    text = first_line(text[: SUMMARY_BYTES + 1])
    return truncate_line(_replace_surrogates(text), SUMMARY_BYTES)


class _Budget:
    __slots__ = ("bytes", "entries", "truncated")

    def __init__(self) -> None:
        self.bytes = EVENT_PAYLOAD_BYTES
        self.entries = EVENT_TABLE_ENTRIES
        self.truncated = False

    def text(self, value: str) -> str:
        limit = min(EVENT_STRING_BYTES, self.bytes)
        if limit <= 0:
            if value:
                self.truncated = True
            return ""
        out, changed = scrub(value, limit)
        if changed:
            self.truncated = True
        self.bytes = max(0, self.bytes - len(out.encode("utf-8")))
        return out

    def copy(self, value: object, depth: int = 0) -> Any:
        """A bounded, JSON-safe copy of ``value``."""
        if depth > EVENT_MAX_DEPTH:
            self.truncated = True
            return DEPTH_LIMIT_TEXT
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if _INT_MIN <= value <= _INT_MAX:
                return int(value)
            self.truncated = True
            return self.text(str(value))
        if isinstance(value, float):
            if math.isfinite(value):
                return float(value)
            self.truncated = True
            return self.text(str(value))
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if self.entries <= 0 or self.bytes <= 0:
                    self.truncated = True
                    break
                self.entries -= 1
                name = self.text(key if isinstance(key, str) else _key_text(key))
                out[name] = self.copy(item, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            items: list[Any] = []
            for item in value:
                if self.entries <= 0 or self.bytes <= 0:
                    self.truncated = True
                    break
                self.entries -= 1
                items.append(self.copy(item, depth + 1))
            return items
        self.truncated = True
        try:
            described = str(value)
        except Exception:  # noqa: BLE001
            described = f"<{type(value).__name__}>"
        return self.text(described)


def _key_text(key: object) -> str:
    try:
        return str(key)
    except Exception:  # noqa: BLE001
        return f"<{type(key).__name__}>"


def _opt_str(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return summarize(value)


def _opt_int(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value) if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return float(value)
    return None


def _opt_num(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value) if _INT_MIN <= value <= _INT_MAX else None
    if isinstance(value, float) and math.isfinite(value):
        return float(value)
    return None


def _is_pos(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 1 <= value <= MAX_SAFE_INTEGER
    return isinstance(value, float) and value.is_integer() and 1 <= value <= MAX_SAFE_INTEGER


def _get(mapping: object, key: str) -> Any:
    if isinstance(mapping, dict):
        try:
            return mapping.get(key)
        except Exception:  # noqa: BLE001 - a hostile dict subclass
            return None
    return None


def _other_kinds(
    kind: str, ev: dict[str, Any], out: dict[str, Any], budget: _Budget, keep_text: Callable[[str, object], None]
) -> None:
    """The fields of the kinds :func:`normalize` does not fill itself (the rarer ones: stream end,
    LLM start and end, agent start and end, error, info), written into ``out``."""
    get = ev.get
    if kind == "assistant-stream-end":
        out["final?"] = bool(get("final?"))
    elif kind == "llm-start":
        keep_text("provider", get("provider"))
        keep_text("model", get("model"))
    elif kind == "llm-end":
        keep_text("stop-reason", get("stop-reason"))
        usage = get("usage")
        if isinstance(usage, dict):
            out["usage"] = budget.copy(usage)
    elif kind == "agent-started":
        keep_text("provider", get("provider"))
        keep_text("model", get("model"))
        out.pop("cwd", None)
        keep_text("cwd", get("cwd"))
    elif kind == "agent-turn-complete":
        keep_text("status", get("status"))
        result = get("result")
        out["summary"] = summarize(result if result else get("error"))
        if get("error"):
            out["error"] = summarize(get("error"))
    elif kind == "error":
        error = get("error")
        out["error"] = summarize(error if error else get("text"))
        keep_text("source", get("source"))
    else:  # info
        summary = get("summary")
        out["summary"] = summarize(summary) if isinstance(summary, str) else summarize(ev)
        refs = get("refs")
        if isinstance(refs, (list, tuple)):
            kept = [int(r) for r in refs if _is_pos(r)][:EVENT_TABLE_ENTRIES]
            if len(kept) != len(refs):
                budget.truncated = True
            if kept:
                out["refs"] = kept


def normalize(event: object, meta: object = None, *, now: object = None) -> dict[str, Any]:
    """Normalize a display event for the wire. Never raises; see the module docstring."""
    ev: dict[str, Any] = event if isinstance(event, dict) else {}
    kind = _get(ev, "type")
    if not (isinstance(kind, str) and kind in DISPLAY_EVENT_TYPES):
        kind = "info"
        ev = {"type": "info", "summary": summarize(event)}
    budget = _Budget()
    out: dict[str, Any] = {"type": kind, "timestamp": timestamp(now)}

    def keep_text(key: str, value: object) -> None:
        text = _opt_str(value)
        if text is not None:
            out[key] = budget.text(text)

    if isinstance(meta, dict):
        for key in META_KEYS:
            keep_text(key, _get(meta, key))

    get = ev.get
    if kind == "tool-call":
        out["name"] = budget.text(_opt_str(get("name")) or "")
        keep_text("id", get("id"))
        if "arguments" in ev:
            out["arguments"] = budget.copy(get("arguments"))
        out["summary"] = summarize(get("arguments"))
    elif kind == "tool-result":
        result = get("result")
        out["name"] = budget.text(_opt_str(get("name")) or "")
        keep_text("id", get("id"))
        keep_text("tool-call-id", get("tool-call-id"))
        duration = _opt_num(get("duration-seconds"))
        if duration is not None:
            out["duration-seconds"] = duration
        out["is-error?"] = bool(get("is-error?") or _get(result, "is-error?"))
        if "result" in ev:
            out["result"] = budget.copy(result)
        content = _get(result, "content")
        out["summary"] = summarize(content if content is not None else result)
    elif kind in ("assistant-text", "assistant-thinking"):
        out["final?"] = bool(get("final?"))
        index = _opt_int(get("content-index"))
        if index is not None:
            out["content-index"] = index
        keep_text("text", get("text"))
        out["summary"] = summarize(get("text"))
    elif kind in ("user", "steering-injected", "follow-up-injected"):
        keep_text("text", get("text"))
        out["summary"] = summarize(get("text"))
    elif kind in ("assistant-text-delta", "assistant-thinking-delta"):
        index = _opt_int(get("content-index"))
        if index is not None:
            out["content-index"] = index
        keep_text("delta", get("delta"))
        out["summary"] = summarize(get("delta"))
    else:
        _other_kinds(kind, ev, out, budget, keep_text)
    if budget.truncated:
        out["transport-truncated?"] = True
    return out
