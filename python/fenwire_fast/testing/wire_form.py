"""The wire form of the mock agent's events, as the transcript oracle models it.

This is the model the live child is checked against, so it does not use the code under test: the
wire form of each scripted event is written out here from the wire contract
(docs/wire-protocol.md; docs/design-decisions.md, "Text bounds" and "normalize"), without
``normalize``, ``scrub``, ``first_line``, ``truncate_line`` or the codec, and this module imports
nothing of the package. The mock's events are simple: no control characters, one long string at
most per event, far below the 12 KiB budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["wire_event", "wire_string", "wire_summary", "cancelled_result", "strip_envelope"]

_ENVELOPE = ("v", "seq", "run", "timestamp")
#: a display event's ``summary``: the first line of its text, at most this many UTF-8 bytes
_SUMMARY_LIMIT = 160
#: any string field of a display event: at most this many UTF-8 bytes, note included
_STRING_LIMIT = 4096
_ELLIPSIS = "\u2026"
_UNSAFE = frozenset(
    [*map(chr, range(0x00, 0x09)), "\x0b", "\x0c", *map(chr, range(0x0E, 0x20)), *map(chr, range(0x7F, 0xA0))]
)


def strip_envelope(event: Mapping[str, Any]) -> dict[str, Any]:
    """``event`` without its envelope (``v``, ``seq``, ``run``) and ``timestamp``."""
    return {k: v for k, v in event.items() if k not in _ENVELOPE}


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes (never half a character)."""
    return text.encode("utf-8")[: max(0, limit)].decode("utf-8", "ignore")


def wire_summary(text: str) -> str:
    """The first line, kept whole when it fits 160 bytes, else cut to 157 bytes plus ``…``."""
    line = text.split("\n", 1)[0]
    if _nbytes(line) <= _SUMMARY_LIMIT:
        return line
    return _prefix(line, _SUMMARY_LIMIT - len(_ELLIPSIS.encode("utf-8"))) + _ELLIPSIS


def wire_string(text: str) -> tuple[str, bool]:
    """A string field as the wire carries it, and whether it was cut.

    Up to 4096 bytes it is unchanged. Longer, it becomes the longest prefix that leaves room for a
    blank line and the note ``[fenwire: kept K of N bytes]`` written with the widest K (4096),
    then the blank line and the note with the real K: 4096 bytes at most in all."""
    if any(c in _UNSAFE or "\ud800" <= c <= "\udfff" for c in text):
        raise ValueError("the transcript oracle does not model escaped characters")
    total = _nbytes(text)
    if total <= _STRING_LIMIT:
        return text, False
    room = _STRING_LIMIT - 2 - len(f"[fenwire: kept {_STRING_LIMIT} of {total} bytes]")
    kept = _prefix(text, room)
    return f"{kept}\n\n[fenwire: kept {_nbytes(kept)} of {total} bytes]", True


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def wire_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """The wire form (without the envelope and ``timestamp``) of one event of the mock's script."""
    etype = event["type"]
    out: dict[str, Any] = {"type": etype}
    cut = False

    def text(key: str, value: str) -> str:
        nonlocal cut
        wired, was_cut = wire_string(value)
        cut = cut or was_cut
        return wired

    if etype == "user":
        out["text"] = text("text", event["text"])
        out["summary"] = wire_summary(event["text"])
    elif etype in ("llm-start", "agent-started"):
        out["provider"] = text("provider", event["provider"])
        out["model"] = text("model", event["model"])
    elif etype in ("assistant-text-delta", "assistant-thinking-delta"):
        out["content-index"] = event["content-index"]
        out["delta"] = text("delta", event["delta"])
        out["summary"] = wire_summary(event["delta"])
    elif etype in ("assistant-text", "assistant-thinking"):
        out["final?"] = event["final?"]
        out["content-index"] = event["content-index"]
        out["text"] = text("text", event["text"])
        out["summary"] = wire_summary(event["text"])
    elif etype == "assistant-stream-end":
        out["final?"] = event["final?"]
    elif etype == "info":
        out["summary"] = wire_summary(event["summary"])
    elif etype == "llm-end":
        out["stop-reason"] = event["stop-reason"]
        out["usage"] = dict(event["usage"])
    elif etype == "tool-call":
        out["name"] = event["name"]
        out["id"] = event["id"]
        out["arguments"] = {k: text(k, v) for k, v in event["arguments"].items()}
        out["summary"] = wire_summary(_compact_json(event["arguments"]))
    elif etype == "tool-result":
        content = event["result"]["content"]
        out["name"] = event["name"]
        out["id"] = event["id"]
        out["tool-call-id"] = event["tool-call-id"]
        out["duration-seconds"] = event["duration-seconds"]
        out["is-error?"] = event["is-error?"]
        out["result"] = {"content": [{"type": c["type"], "text": text("text", c["text"])} for c in content]}
        out["summary"] = wire_summary(_compact_json(content))
    else:  # pragma: no cover - the script yields nothing else
        raise ValueError(f"the transcript oracle does not know {etype} events")
    if cut:
        out["transport-truncated?"] = True
    return out


def cancelled_result(call: Mapping[str, Any]) -> dict[str, Any]:
    """What the child writes for a tool call its cut-short turn left open."""
    return {
        "type": "tool-result",
        "name": call["name"],
        "id": call["id"],
        "tool-call-id": call["id"],
        "is-error?": True,
        "result": "cancelled",
        "summary": "cancelled",
    }
