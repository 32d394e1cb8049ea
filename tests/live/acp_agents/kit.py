"""What the test ACP agents share: a base agent written with the SDK's agent side and a runner.

Each agent is a real ACP agent: ``acp.run_agent`` over the process's real stdin/stdout pipes. The
runner keeps the stdout writer so that a misbehaving agent can put raw bytes between the SDK's
messages (the SDK writes each message and drains before ``session_update`` returns, so the order on
the pipe is the order of the awaits).

To know an agent's pid (and so its process group), a test starts it through ``with_pid.py``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

import acp
from acp import InitializeResponse, NewSessionResponse
from acp.schema import AgentCapabilities, Implementation
from acp.stdio import stdio_streams
from scripted import SESSION


def prompt_text(prompt: Any) -> str:
    return "".join(getattr(block, "text", "") or "" for block in prompt)


class ScriptedAgent:
    """initialize / session/new / session/cancel for every test agent; subclasses write ``prompt``."""

    name = "scripted-agent"

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.conn: Any = None
        self.writer: asyncio.StreamWriter | None = None
        self.cancelled = asyncio.Event()
        self.prompts = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name=self.name, version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=SESSION)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()

    async def update(self, update: Any, session: str = SESSION) -> None:
        await self.conn.session_update(session, update)

    async def say(self, text: str) -> None:
        await self.update(acp.update_agent_message_text(text))

    async def think(self, text: str) -> None:
        await self.update(acp.update_agent_thought_text(text))

    async def raw(self, data: bytes) -> None:
        """Write bytes straight to stdout, between the SDK's messages."""
        assert self.writer is not None
        self.writer.write(data)
        await self.writer.drain()


def run(make: Callable[[argparse.Namespace], ScriptedAgent], parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args()

    async def main() -> None:
        reader, writer = await stdio_streams(limit=64 * 1024 * 1024)
        agent = make(args)
        agent.writer = writer
        await acp.run_agent(agent, writer, reader)

    asyncio.run(main())
