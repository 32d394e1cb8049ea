"""The span tree below a run's ``fenwire.run`` span (the ``otel`` extra; see
:mod:`~fenwire_fast.live.parent.otel`, whose :class:`~fenwire_fast.live.parent.otel.RunTrace` feeds it).

:class:`RunSpans` opens and ends ``fenwire.turn``, ``fenwire.llm`` and ``fenwire.tool`` spans and
adds ``fenwire.control.ack`` span events, from the events that open or close them
(:data:`SPAN_TYPES`). Everything a child wrote is checked and bounded before it becomes an
attribute (:func:`text`, :func:`number`, :func:`usage`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from ... import utf8_prefix

__all__ = ["RunSpans", "SPAN_TYPES", "MAX_TEXT", "MAX_OPEN_TOOLS", "MAX_USAGE_FIELDS", "text", "number", "usage"]

#: event types that open or close a span or become a span event; a batch without any is not walked
SPAN_TYPES = frozenset(
    {"turn-started", "turn-complete", "llm-start", "llm-end", "tool-call", "tool-result", "control-ack", "exit"}
)
#: UTF-8 bytes kept of a string a child wrote, as an attribute
MAX_TEXT = 256
#: tool spans open at once in a run (a child that never answers its calls cannot grow this)
MAX_OPEN_TOOLS = 256
#: usage fields kept as attributes, per span
MAX_USAGE_FIELDS = 16


def text(value: object) -> str | None:
    """A string a child wrote, cut to :data:`MAX_TEXT` bytes (``None``: not a string)."""
    if type(value) is not str:
        return None
    return value if len(value) <= MAX_TEXT // 4 else utf8_prefix(value, MAX_TEXT)


def number(value: object) -> int | float | None:
    """An int within 64 bits or a finite float (``None``: anything else, booleans included)."""
    if type(value) is int:
        return value if -(1 << 63) <= value < (1 << 63) else None
    if type(value) is float:
        return value if math.isfinite(value) else None
    return None


def usage(prefix: str, value: object) -> dict[str, int | float]:
    """``value``'s numeric fields as attributes ``<prefix>.<field>`` (at most 16, short names)."""
    out: dict[str, int | float] = {}
    if type(value) is not dict:
        return out
    for key, field in value.items():
        if len(out) >= MAX_USAGE_FIELDS:
            break
        found = number(field)
        if found is None or type(key) is not str or not 0 < len(key) <= 64 or not key.isprintable():
            continue
        out[f"{prefix}.{key}"] = found
    return out


def _ending(msg: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The stop reason and usage of an ``llm-end`` / ``turn-complete`` as attributes."""
    attributes: dict[str, Any] = usage(f"{prefix}.usage", msg.get("usage"))
    reason = text(msg.get("stop-reason"))
    if reason is not None:
        attributes[f"{prefix}.stop_reason"] = reason
    return attributes


def _end_error(span: Span, why: str) -> None:
    span.set_status(Status(StatusCode.ERROR, why))
    span.end()


class RunSpans:
    """The turn, model-call and tool-call spans of one run, under its ``run_span``.

    ``tracer`` starts them; ``turn_duration`` (a histogram) gets each turn's length in seconds.
    :meth:`on` takes one event whose type is in :data:`SPAN_TYPES`; :meth:`end_turn` ends every
    span still open with an error."""

    def __init__(self, tracer: Any, run_span: Span, turn_duration: Any) -> None:
        self.tracer = tracer
        self.run_span = run_span
        self.turn_duration = turn_duration
        #: turns begun
        self.turns = 0
        self._run_context = trace.set_span_in_context(run_span)
        self._turn: Span | None = None
        self._turn_started = 0.0
        self._turn_context: Any = None
        self._llm: Span | None = None
        self._tools: dict[Any, tuple[Span, str | None]] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "llm-start": self._llm_start,
            "llm-end": self._llm_end,
            "tool-call": self._tool_call,
            "tool-result": self._tool_result,
            "turn-started": self._turn_begun,
            "turn-complete": self._turn_complete,
            "control-ack": self._control_ack,
        }

    def on(self, msg: dict[str, Any]) -> None:
        """One event of a span's type: open, end or annotate the span it concerns."""
        handler = self._handlers.get(msg["type"])
        if handler is not None:
            handler(msg)

    # -- model and tool calls -------------------------------------------------------------------

    def _llm_start(self, msg: dict[str, Any]) -> None:
        self._end_llm("a new model call began first")
        attributes: dict[str, Any] = {}
        for field in ("provider", "model"):
            value = text(msg.get(field))
            if value is not None:
                attributes[f"fenwire.llm.{field}"] = value
        self._llm = self._child_span("fenwire.llm", attributes)

    def _llm_end(self, msg: dict[str, Any]) -> None:
        span, self._llm = self._llm, None
        if span is not None:
            span.set_attributes(_ending(msg, "fenwire.llm"))
            span.end()

    def _tool_call(self, msg: dict[str, Any]) -> None:
        if len(self._tools) >= MAX_OPEN_TOOLS:
            return
        attributes: dict[str, Any] = {}
        name = text(msg.get("name"))
        if name is not None:
            attributes["fenwire.tool.name"] = name
        call_id = text(msg.get("id"))
        if call_id is not None:
            attributes["fenwire.tool.id"] = call_id
        key: Any = call_id if call_id is not None else ("unnamed", len(self._tools), time.monotonic())
        old = self._tools.pop(key, None)
        if old is not None:
            _end_error(old[0], "another tool call reused its id")
        self._tools[key] = (self._child_span("fenwire.tool", attributes), name)

    def _tool_result(self, msg: dict[str, Any]) -> None:
        span = self._tool_for(msg)
        if span is not None:
            is_error = msg.get("is-error?") is True
            span.set_attribute("fenwire.tool.is_error", is_error)
            if is_error:
                span.set_status(Status(StatusCode.ERROR, text(msg.get("result")) or "the tool reported an error"))
            span.end()

    def _child_span(self, name: str, attributes: dict[str, Any]) -> Span:
        parent = self._turn_context if self._turn_context is not None else self._run_context
        span: Span = self.tracer.start_span(name, context=parent, attributes=attributes)
        return span

    def _tool_for(self, msg: dict[str, Any]) -> Span | None:
        call_id = msg.get("tool-call-id")
        if type(call_id) is str:
            found = self._tools.pop(text(call_id), None)
            if found is not None:
                return found[0]
        name = text(msg.get("name"))
        for key, (span, call_name) in self._tools.items():  # no id: the oldest open call of that name
            if not isinstance(key, str) and call_name == name:
                del self._tools[key]
                return span
        return None

    # -- turns and acknowledgements -------------------------------------------------------------

    def _turn_begun(self, msg: dict[str, Any]) -> None:
        self.end_turn("a new turn began first")
        self.turns += 1
        attributes: dict[str, Any] = {}
        turn = number(msg.get("turn"))
        if turn is not None:
            attributes["fenwire.turn"] = turn
        self._turn = self.tracer.start_span("fenwire.turn", context=self._run_context, attributes=attributes)
        self._turn_context = trace.set_span_in_context(self._turn)
        self._turn_started = time.monotonic()

    def _turn_complete(self, msg: dict[str, Any]) -> None:
        turn = self._turn
        if turn is None:
            return
        self._end_calls("the turn ended first")
        turn.set_attributes(_ending(msg, "fenwire.turn"))
        if msg.get("stop-reason") == "error":
            turn.set_status(Status(StatusCode.ERROR, "the turn ended with an error"))
        turn.end()
        self.turn_duration.record(time.monotonic() - self._turn_started)
        self._turn = self._turn_context = None

    def _control_ack(self, msg: dict[str, Any]) -> None:
        attributes: dict[str, Any] = {}
        for field, name in (("ref", "fenwire.control.seq"), ("status", "fenwire.control.status")):
            value = number(msg.get(field)) if field == "ref" else text(msg.get(field))
            if value is not None:
                attributes[name] = value
        reason = text(msg.get("reason"))
        if reason is not None:
            attributes["fenwire.control.reason"] = reason
        self.run_span.add_event("fenwire.control.ack", attributes)

    # -- ending ---------------------------------------------------------------------------------

    def _end_llm(self, why: str) -> None:
        if self._llm is not None:
            span, self._llm = self._llm, None
            _end_error(span, why)

    def _end_calls(self, why: str) -> None:
        self._end_llm(why)
        tools, self._tools = self._tools, {}
        for span, _ in tools.values():
            _end_error(span, why)

    def end_turn(self, why: str) -> None:
        """End the open turn and its open calls with an error saying ``why``."""
        self._end_calls(why)
        if self._turn is not None:
            turn, self._turn, self._turn_context = self._turn, None, None
            _end_error(turn, why)
            self.turn_duration.record(time.monotonic() - self._turn_started)
