"""Agents for the live tests, loaded by children with ``--agent live_agents:<factory>``."""

from __future__ import annotations

import os
import signal
from typing import Any

from fenwire_fast.agent import TurnContext, TurnGenerator, TurnInput, TurnResult


class EchoAgent:
    """One step per turn: echoes the input and reports its own result."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.prefix = (config or {}).get("prefix", "echo: ")
        self.closed = False

    def start(self) -> list[dict[str, Any]]:
        return [{"type": "agent-started", "provider": "test", "model": "echo"}]

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "llm-start", "provider": "test", "model": "echo"}
        yield {"type": "assistant-text-delta", "content-index": 0, "delta": request.text}
        text = f"{self.prefix}{request.text} (turn {request.turn}, tools {request.tools})"
        yield {"type": "assistant-text", "final?": True, "content-index": 0, "text": text}
        return TurnResult(stop_reason="end_turn", usage={"input": 3, "output": 5}, text=text)


def echo(config: dict[str, Any] | None = None) -> EchoAgent:
    return EchoAgent(config)


class MidLineKiller:
    """Writes half an event line straight into the event file, then SIGKILLs its own process."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "llm-start", "provider": "test", "model": "killer"}
        # a tool-call makes the presenter flush everything before it
        yield {"type": "tool-call", "name": "read", "id": "call-1", "arguments": {}}
        fd = os.open(os.environ["FEN_WIRE_EVENT_PATH"], os.O_WRONLY | os.O_APPEND)
        os.write(fd, b'{"v":1,"seq":99,"type":"tool-result","run":"x","name":"read","is-')
        os.kill(os.getpid(), signal.SIGKILL)
        yield {"type": "llm-end", "stop-reason": "unreachable"}


def midline_killer() -> MidLineKiller:
    return MidLineKiller()


def not_an_agent() -> int:
    return 42


def broken_factory() -> None:
    raise RuntimeError("no model configured")
