"""The agent protocol the child presenter drives.

An *agent* runs turns. A turn is a generator: the presenter pulls it one item at a time, and every
``yield`` is a *cooperative yield point* where the presenter may read controls, write events and
interrupt the turn. A turn yields

- display events: plain ``dict`` s with a ``"type"`` that is a wire display event
  (``assistant-text-delta``, ``tool-call``, ``llm-end``, ...). The presenter normalizes them
  (``fenwire_fast.normalize``) and appends them to the event file;
- :class:`Wait` values: "resume me after this many seconds". The presenter keeps polling controls
  while it waits, so a slow model or tool stays cancellable. Blocking inside the generator
  (``time.sleep``, a blocking read) also works, but nothing can interrupt it: cancel, finalize and
  deadlines then wait for the next yield, and the parent's kill-after-grace backstop is the only remedy.

Between steps (one model call plus its tool calls) an agent calls :meth:`TurnContext.take_steering`
to receive queued ``steer`` texts; the presenter reports each injection as ``steering-injected``
with the ``ref`` of the control that queued it. Steering left over when a turn ends, and queued
``follow-up`` texts, start a new turn of their own once the run is idle.

Interruption (``cancel``, ``finalize``, a deadline, a fatal error) is delivered at the next yield by
throwing :class:`TurnInterrupted` into the generator. An agent may catch it to clean up and yield a
few last events; if it does nothing the exception simply ends the turn. Either way the turn
completes with stop reason ``aborted``, and every ``tool-call`` without a matching ``tool-result``
gets one from the presenter (``is-error?: true``, result ``cancelled``).

A turn ends when the generator returns. It may return a :class:`TurnResult`; when it returns
``None`` the presenter derives the result from the events it saw: the stop reason and usage of the
``llm-end`` events (summed) and the text of the last ``assistant-text``. An exception other than
:class:`TurnInterrupted` ends the turn with stop reason ``error`` and fails the run (its ``exit`` error is
``agent failed: Type: message``, or just the message for an :class:`AgentFailure`).

``--agent module:factory`` loads an agent: ``factory()`` (or ``factory(config)`` when the child is
given ``--agent-config JSON``) must return an object with a ``turn`` method as below. ``start`` and
``close`` are optional.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Wait",
    "TurnInput",
    "TurnResult",
    "TurnInterrupted",
    "AgentFailure",
    "TurnContext",
    "Agent",
    "AgentItem",
    "TurnGenerator",
    "load_agent",
    "AgentLoadError",
]


@dataclass(frozen=True)
class Wait:
    """Yielded by a turn: resume it after ``seconds`` (controls are still read meanwhile)."""

    seconds: float


@dataclass(frozen=True)
class TurnInput:
    """What a turn is asked to do.

    ``text`` is the user message; ``kind`` says where it came from (``prompt``, ``steer``,
    ``follow-up`` or ``finalize``); ``turn`` counts from 1 per run; ``tools`` is false for the
    finalize turn, which must not call tools (the model is asked for a plain answer)."""

    text: str
    kind: str
    turn: int
    tools: bool = True

    @property
    def final(self) -> bool:
        """True for the tool-free finalize turn."""
        return self.kind == "finalize"


@dataclass
class TurnResult:
    """What a finished turn reports: the last assistant stop reason, the turn's usage (numeric
    fields summed by the presenter) and the last assistant text (the run's answer, if this turn is
    the last one)."""

    stop_reason: str = "stop"
    usage: dict[str, Any] = field(default_factory=dict)
    text: str | None = None


class TurnInterrupted(Exception):
    """Thrown into a turn at its next yield when the run must stop it.

    ``reason`` is ``cancel``, ``finalize``, ``deadline`` or ``fatal``."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"turn interrupted: {reason}")
        self.reason = reason


class AgentFailure(Exception):
    """An agent failure whose message says it all: raised by ``start()`` or a turn, it fails the
    run with exactly this message as the ``exit`` event's ``error`` (no ``agent failed:`` prefix,
    no exception type)."""


@runtime_checkable
class TurnContext(Protocol):
    """What the presenter offers a running turn."""

    @property
    def run(self) -> str:
        """The run id (``FEN_WIRE_RUN_ID``)."""
        ...

    @property
    def traceparent(self) -> str | None:
        """The W3C trace context of the run (``TRACEPARENT`` as the parent gave it, e.g. a traced
        hub's run span), for the agent's own spans to join the parent's trace; ``None`` when the
        run is not traced. Pass it on to a model API or a sub-process as it is."""
        ...

    def take_steering(self) -> list[str]:
        """Pop every queued steering text, oldest first; the presenter reports each one as
        ``steering-injected`` (with its ``ref``) before this returns. Call it between steps."""
        ...


AgentItem = dict[str, Any] | Wait
TurnGenerator = Generator[AgentItem, None, "TurnResult | None"]


@runtime_checkable
class Agent(Protocol):
    """An agent whose turns the child presenter runs step by step.

    Optional methods: ``start() -> Iterable[dict]`` (display events sent before ``ready``, e.g.
    ``agent-started``) and ``close() -> None`` (called once when the run ends)."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        """Run one turn; see the module docstring for what it may yield and return."""
        ...


class AgentLoadError(Exception):
    """``--agent module:factory`` could not be loaded; the message says why."""


def load_agent(spec: str, config: dict[str, Any] | None = None) -> Agent:
    """Load ``module:factory`` and call the factory (with ``config`` when given)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentLoadError(f"--agent must look like module:factory, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure becomes a message
        raise AgentLoadError(f"cannot import {module_name}: {exc}") from None
    factory: Any = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise AgentLoadError(f"{module_name} has no attribute {attr}")
    if not callable(factory):
        raise AgentLoadError(f"{spec} is not callable")
    make: Callable[..., Any] = factory
    try:
        agent = make(config) if config is not None else make()
    except Exception as exc:  # noqa: BLE001
        raise AgentLoadError(f"{spec} failed: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(agent, "turn", None)):
        raise AgentLoadError(f"{spec} returned {type(agent).__name__}, which has no turn() method")
    return agent  # type: ignore[no-any-return]


def start_events(agent: Agent) -> Iterable[dict[str, Any]]:
    """The agent's optional startup events (``start()``), or nothing."""
    start = getattr(agent, "start", None)
    if start is None:
        return ()
    events = start()
    return events if events is not None else ()
