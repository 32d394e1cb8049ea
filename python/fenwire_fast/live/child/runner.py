"""The child's turn runner: the agent side of the presenter."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from ... import DISPLAY_EVENT_TYPES
from ...normalize import normalize
from .agent import Agent, AgentFailure, TurnInput, start_events
from .event_writer import EventWriter
from .inputs import InputQueues, Queued
from .result import RunResult
from .turn import PresenterTurnContext, Turn, TurnEnd

__all__ = ["TurnRunner", "describe_error", "failure_reason"]


class TurnRunner:
    """Runs the agent's turns: starts them, resumes the current one a slice at a time, writes
    the display events it yields, reports injected steering and follow-ups, writes each
    ``turn-complete``, and closes the agent. What the turns mean for the run is the presenter's."""

    def __init__(
        self,
        agent: Agent,
        run: str,
        events: EventWriter,
        inputs: InputQueues,
        result: RunResult,
        stderr: Callable[[str], None],
        traceparent: str | None = None,
    ) -> None:
        self.agent = agent
        self.traceparent = traceparent
        self.run = run
        self.current: Turn | None = None
        self.count = 0
        self._events = events
        self._inputs = inputs
        self._result = result
        self._stderr = stderr
        self._agent_closed = False

    def start_agent(self) -> None:
        """Write the agent's start events; an agent failure propagates."""
        for event in start_events(self.agent):
            self.forward(None, event)

    def start(self, text: str, kind: str) -> Turn:
        """Start turn ``count + 1`` and write ``turn-started``; it runs with :meth:`run_slice`."""
        self.count += 1
        request = TurnInput(text=text, kind=kind, turn=self.count, tools=kind != "finalize")
        turn = Turn(number=self.count, request=request, items=iter(()))
        self.current = turn
        try:
            turn.items = iter(
                self.agent.turn(request, PresenterTurnContext(self.run, turn, self.take_steering, self.traceparent))
            )
        except Exception as exc:  # noqa: BLE001
            turn.items = _raising(exc)
        self._events.emit("turn-started", {"turn": turn.number})
        return turn

    def interrupt(self, reason: str) -> None:
        """Interrupt the current turn at its next yield (the first reason wins)."""
        if self.current is not None and self.current.interrupt is None:
            self.current.interrupt = reason

    def run_slice(self, seconds: float) -> tuple[Turn, TurnEnd] | None:
        """Resume the current turn for about ``seconds``, until it waits; return it with its
        :class:`TurnEnd` if it ended (it is then no longer current)."""
        turn = self.current
        if turn is None:
            return None
        end = time.monotonic() + seconds
        while True:
            if turn.wait_until:
                if turn.interrupt_pending:
                    turn.wait_until = 0.0
                elif time.monotonic() < turn.wait_until:
                    return None
                else:
                    turn.wait_until = 0.0
            outcome = turn.step()
            if isinstance(outcome, TurnEnd):
                self.current = None
                return turn, outcome
            if outcome is not None:
                self.forward(turn, outcome)
            if time.monotonic() >= end:
                return None

    def wait_time(self, busy_tick: float, idle_tick: float) -> float:
        """How long the loop may sleep: until the current turn wants to resume (at most
        ``busy_tick``; 0 when it is ready now or an interruption is pending), ``idle_tick`` without one."""
        turn = self.current
        if turn is None:
            return idle_tick
        now = time.monotonic()
        if turn.interrupt_pending or turn.wait_until <= now:
            return 0.0
        return min(busy_tick, turn.wait_until - now)

    def complete(self, turn: Turn, end: TurnEnd) -> None:
        """Write what an ended turn leaves: a cancelled ``tool-result`` for each call it left open
        when cut short, then ``turn-complete``."""
        if turn.thrown or end.error is not None:
            for cancelled in turn.cancel_open_calls():
                self._events.emit("tool-result", cancelled)
        self._events.emit("turn-complete", self._result.turn_complete(turn, end.result, end.error))

    def forward(self, turn: Turn | None, event: dict[str, Any]) -> None:
        """Normalize and write one display event of the agent (anything else is dropped)."""
        etype = event.get("type")
        if not isinstance(etype, str) or etype not in DISPLAY_EVENT_TYPES:
            return
        if turn is not None:
            turn.observe(etype, event)
        out = normalize(event)
        if etype in ("steering-injected", "follow-up-injected"):
            ref = self._inputs.claim_ref(etype, event.get("text"))
            if ref is not None:
                out["ref"] = ref
        self._events.emit(etype, out)
        if etype == "tool-call":
            self._events.flush()  # a tool may block: let the parent see the call first

    def take_steering(self, turn: Turn) -> list[str]:
        """The running turn takes the queued steering, each reported as ``steering-injected``."""
        if self.current is not turn or turn.interrupt is not None or not self._inputs.steering:
            return []
        queued = self._inputs.take_steering()
        self.inject("steering-injected", queued)
        return [text for _, text in queued]

    def inject(self, event_type: str, queued: list[Queued]) -> None:
        """Report queued inputs as injected (``steering-injected`` / ``follow-up-injected``), each with its ``ref``."""
        for ref, text in queued:
            out = normalize({"type": event_type, "text": text})
            out["ref"] = ref
            self._events.emit(event_type, out)

    def close_agent(self) -> None:
        """Call the agent's ``close`` once, if it has one; a failure is only reported."""
        if self._agent_closed:
            return
        self._agent_closed = True
        close = getattr(self.agent, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:  # noqa: BLE001
                self._stderr(f"fenwire child: agent close failed: {describe_error(exc)}")


def _raising(exc: BaseException) -> Iterator[Any]:
    raise exc
    yield  # pragma: no cover


def describe_error(exc: BaseException) -> str:
    """``Type: message`` (just ``Type`` when the message is empty)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def failure_reason(prefix: str, exc: BaseException) -> str:
    """Why an agent failure fails the run: an :class:`~fenwire_fast.live.child.agent.AgentFailure`'s own
    message, else ``prefix: Type: message``."""
    if isinstance(exc, AgentFailure) and str(exc):
        return str(exc)
    return f"{prefix}: {describe_error(exc)}"
