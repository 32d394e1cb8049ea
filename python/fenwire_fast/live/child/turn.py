"""One turn of the agent, as the child presenter runs it: resumed one item at a time."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...normalize import normalize
from .agent import TurnInput, TurnInterrupted, TurnResult, Wait
from .usage import add_usage

__all__ = ["Turn", "TurnEnd", "PresenterTurnContext", "POST_INTERRUPT_ITEMS", "trace_context"]

_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


def trace_context(value: str | None) -> str | None:
    """A W3C ``traceparent`` (``TRACEPARENT``) as agents get it: ``None`` when absent or not of
    the form ``vv-<32 hex>-<16 hex>-ff`` (lower case; an all-zero trace or span id is no context)."""
    if value is None:
        return None
    value = value.strip()
    if not _TRACEPARENT.fullmatch(value) or value[0:2] == "ff":
        return None
    if value[3:35] == "0" * 32 or value[36:52] == "0" * 16:
        return None
    return value


#: An interrupted turn that goes on yielding is cut off after this many more items.
POST_INTERRUPT_ITEMS = 1000


@dataclass
class TurnEnd:
    """How a turn ended: the :class:`TurnResult` it returned, or the exception that ended it."""

    result: TurnResult | None = None
    error: BaseException | None = None


@dataclass
class Turn:
    """A running turn: its generator, its pending wait or interruption, and what its events said
    so far (stop reason, summed usage, last text, tool calls still open)."""

    number: int
    request: TurnInput
    items: Iterator[Any]
    wait_until: float = 0.0
    interrupt: str | None = None
    thrown: bool = False
    after_interrupt: int = 0
    open_calls: dict[str, str] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    spoke: bool = False

    @property
    def interrupt_pending(self) -> bool:
        """An interruption is waiting to be thrown into the generator."""
        return self.interrupt is not None and not self.thrown

    def step(self) -> TurnEnd | dict[str, Any] | None:
        """Resume the turn once: throw the pending interruption in, or take its next item.

        Returns the display event it yielded, ``None`` after a :class:`Wait` (now in
        :attr:`wait_until`), or a :class:`TurnEnd` once the turn is over."""
        item: Any = None
        try:
            if self.interrupt is not None and not self.thrown:
                self.thrown = True
                throw = getattr(self.items, "throw", None)
                if throw is None:  # a plain iterator cannot be interrupted: just stop it
                    return TurnEnd()
                item = throw(TurnInterrupted(self.interrupt))
            elif self.thrown and self.after_interrupt >= POST_INTERRUPT_ITEMS:
                close = getattr(self.items, "close", None)  # it will not stop by itself: cut it off
                if close is not None:
                    close()
                return TurnEnd()
            else:
                if self.thrown:
                    self.after_interrupt += 1
                item = next(self.items)
        except StopIteration as stop:
            return TurnEnd(result=stop.value if isinstance(stop.value, TurnResult) else None)
        except TurnInterrupted:
            return TurnEnd()
        except Exception as exc:  # noqa: BLE001 - an agent error ends the turn and fails the run
            return TurnEnd(error=exc)
        if isinstance(item, Wait):
            seconds = item.seconds if isinstance(item.seconds, (int, float)) else 0.0
            if seconds > 0:
                self.wait_until = time.monotonic() + seconds
            return None
        if isinstance(item, dict):
            return item
        return TurnEnd(error=TypeError(f"agent yielded {type(item).__name__}, not an event dict or Wait"))

    def observe(self, event_type: str, event: dict[str, Any]) -> None:
        """Note what a display event of this turn says: the model spoke, its stop reason and
        usage, its last text, the tool calls opened and answered."""
        if event_type == "llm-end":
            self.spoke = True
            reason = event.get("stop-reason")
            if reason is not None:
                self.stop_reason = str(reason)
            add_usage(self.usage, event.get("usage"))
        elif event_type == "assistant-text":
            self.spoke = True
            text = event.get("text")
            self.text = text if isinstance(text, str) else None
        elif event_type == "tool-call":
            call_id = event.get("id")
            if isinstance(call_id, str):
                name = event.get("name")
                self.open_calls[call_id] = name if isinstance(name, str) else ""
        elif event_type == "tool-result":
            for key in ("tool-call-id", "id"):
                call_id = event.get(key)
                if isinstance(call_id, str) and call_id in self.open_calls:
                    del self.open_calls[call_id]
                    break

    def cancel_open_calls(self) -> list[dict[str, Any]]:
        """The ``tool-result`` events (``is-error?``, result ``cancelled``) that answer every tool
        call still open; they are no longer open afterwards."""
        results = [
            normalize(
                {
                    "type": "tool-result",
                    "name": name,
                    "id": call_id,
                    "tool-call-id": call_id,
                    "is-error?": True,
                    "result": "cancelled",
                }
            )
            for call_id, name in self.open_calls.items()
        ]
        self.open_calls.clear()
        return results


class PresenterTurnContext:
    """The :class:`~fenwire_fast.live.child.agent.TurnContext` the presenter hands a turn: ``run`` and
    ``take_steering``, answered by the presenter for this turn."""

    def __init__(
        self, run: str, turn: Turn, take_steering: Callable[[Turn], list[str]], traceparent: str | None = None
    ) -> None:
        self._run = run
        self._turn = turn
        self._take = take_steering
        self._traceparent = traceparent

    @property
    def run(self) -> str:
        return self._run

    @property
    def traceparent(self) -> str | None:
        return self._traceparent

    def take_steering(self) -> list[str]:
        return self._take(self._turn)
