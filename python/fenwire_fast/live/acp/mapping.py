"""ACP ``session/update`` -> wire display events, for the ACP bridge (:mod:`fenwire_fast.live.acp.agent`).

No import of the ACP SDK here: updates are read by their ``session_update`` discriminator and
attributes, so this module stays importable (and testable) without the ``acp`` extra.

The mapping (one :class:`TurnMapper` per turn; tool calls are remembered across turns):

- ``agent_message_chunk`` (text) -> ``assistant-text-delta``; when the message ends (any other kind of
  update, or the prompt's answer) one ``assistant-text`` with the whole message, ``final?`` true only
  when the prompt's answer ended it; ``agent_thought_chunk`` the same as ``assistant-thinking``;
- ``tool_call`` -> ``tool-call``; ``tool_call_update`` with status ``completed``/``failed`` ->
  ``tool-result`` (once per call), other statuses -> ``info``;
- ``plan`` -> ``info``; everything else is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["STOP_REASONS", "ToolCalls", "TurnMapper", "map_stop_reason", "content_text"]

#: ACP ``PromptResponse.stopReason`` -> wire stop reason
STOP_REASONS = {
    "end_turn": "stop",
    "max_tokens": "length",
    "max_turn_requests": "length",
    "refusal": "refusal",
    "cancelled": "aborted",
}

_BLOCKS = {"agent_message_chunk": "text", "agent_thought_chunk": "thinking"}
_BLOCK_EVENTS = {"text": "assistant-text", "thinking": "assistant-thinking"}


def map_stop_reason(reason: object) -> str:
    """The wire stop reason of an ACP stop reason (unknown ones pass through as text)."""
    return STOP_REASONS.get(str(reason), str(reason))


def content_text(block: Any) -> str | None:
    """The text of a content block (``None`` unless it is a text block)."""
    if getattr(block, "type", None) == "text":
        text = getattr(block, "text", None)
        return text if isinstance(text, str) else None
    return None


def _tool_content_text(content: Any) -> str:
    """The text of a tool call's ``content`` list: its text blocks, one per line."""
    parts: list[str] = []
    for item in content or ():
        text = content_text(getattr(item, "content", None)) if getattr(item, "type", None) == "content" else None
        if text is not None:
            parts.append(text)
    return "\n".join(parts)


@dataclass
class _Call:
    title: str
    content: Any = None
    answered: bool = False


@dataclass
class ToolCalls:
    """The tool calls of a session: titles, last content, and whether each got its result."""

    calls: dict[str, _Call] = field(default_factory=dict)

    def title(self, call_id: str) -> str:
        call = self.calls.get(call_id)
        return call.title if call is not None else call_id


class TurnMapper:
    """Maps the updates of one turn; :meth:`update` and :meth:`finish` return the events to yield."""

    def __init__(self, tools: ToolCalls) -> None:
        self.tools = tools
        self.open: str | None = None  # "text" / "thinking": the block being streamed
        self.parts: list[str] = []
        #: the text of the last whole assistant message of this turn
        self.last_text: str | None = None

    def _close(self, final: bool) -> list[dict[str, Any]]:
        if self.open is None:
            return []
        kind, text = self.open, "".join(self.parts)
        self.open, self.parts = None, []
        if kind == "text":
            self.last_text = text
        return [{"type": _BLOCK_EVENTS[kind], "final?": final, "content-index": 0, "text": text}]

    def finish(self) -> list[dict[str, Any]]:
        """The prompt answered: close the open message (``final?`` true)."""
        return self._close(True)

    def interrupt(self) -> list[dict[str, Any]]:
        """The turn ends without an answer: close the open message (``final?`` false)."""
        return self._close(False)

    def update(self, update: Any) -> list[dict[str, Any]]:
        """The events of one ``session/update``."""
        kind = getattr(update, "session_update", None)
        block = _BLOCKS.get(kind) if isinstance(kind, str) else None
        if block is not None:
            text = content_text(getattr(update, "content", None))
            if text is None:
                return []
            events = self._close(False) if self.open != block else []
            self.open = block
            self.parts.append(text)
            events.append({"type": f"{_BLOCK_EVENTS[block]}-delta", "content-index": 0, "delta": text})
            return events
        if kind not in ("tool_call", "tool_call_update", "plan"):
            return []  # user_message_chunk, available_commands_update, current_mode_update, ...
        events = self._close(False)
        if kind == "tool_call":
            events += self._tool_call(update)
        elif kind == "tool_call_update":
            events += self._tool_update(update)
        else:
            entries = [str(getattr(entry, "content", "")) for entry in getattr(update, "entries", None) or ()]
            events.append({"type": "info", "summary": "plan: " + "; ".join(entries)})
        return events

    def _tool_call(self, update: Any) -> list[dict[str, Any]]:
        call_id = str(getattr(update, "tool_call_id", ""))
        title = getattr(update, "title", None)
        title = title if isinstance(title, str) else call_id
        self.tools.calls[call_id] = _Call(title=title, content=getattr(update, "content", None))
        raw = getattr(update, "raw_input", None)
        return [{"type": "tool-call", "name": title, "id": call_id, "arguments": raw if raw is not None else {}}]

    def _tool_update(self, update: Any) -> list[dict[str, Any]]:
        call_id = str(getattr(update, "tool_call_id", ""))
        call = self.tools.calls.get(call_id)
        if call is None:
            call = self.tools.calls[call_id] = _Call(title=call_id)
        title = getattr(update, "title", None)
        if isinstance(title, str):
            call.title = title
        content = getattr(update, "content", None)
        if content is not None:
            call.content = content
        status = getattr(update, "status", None)
        if status is None:
            return []
        if status not in ("completed", "failed"):
            return [{"type": "info", "summary": f"tool {call_id} {status}"}]
        if call.answered:
            return []
        call.answered = True
        raw = getattr(update, "raw_output", None)
        return [
            {
                "type": "tool-result",
                "name": call.title,
                "id": call_id,
                "tool-call-id": call_id,
                "is-error?": status == "failed",
                "result": raw if raw is not None else _tool_content_text(call.content),
            }
        ]
