"""The ACP bridge's smoke agent: a real ACP agent written with the SDK's agent side.

    python3 echo_agent.py [--slow] [--pid-file PATH]

It answers a prompt by streaming the prompt's text back in 3 message chunks and one thought chunk,
then ends the turn (``end_turn``). With ``--slow`` it answers its first prompt by streaming one
chunk every 20 ms until it is cancelled, then answers ``cancelled`` (later prompts are echoed). With ``--pid-file`` it writes its pid there first (so a test
can check that it is gone afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import acp
from acp import InitializeResponse, NewSessionResponse, PromptResponse
from acp.schema import AgentCapabilities, Implementation


def thirds(text: str) -> list[str]:
    """``text`` in 3 pieces that concatenate to it (some may be empty for a short text)."""
    a, b = len(text) // 3, 2 * len(text) // 3
    return [text[:a], text[a:b], text[b:]]


class EchoAgent:
    def __init__(self, slow: bool) -> None:
        self.slow = slow
        self.conn: Any = None
        self.cancelled: asyncio.Event | None = None
        self.slowed = False

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="echo-agent", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="echo-1")

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        self.cancelled = asyncio.Event()
        await self.conn.session_update(session_id, acp.update_agent_thought_text("echoing"))
        if isinstance(kwargs.get("traceparent"), str):  # the request's _meta, in a traced run
            await self.conn.session_update(
                session_id, acp.update_agent_thought_text("traceparent " + kwargs["traceparent"])
            )
        if self.slow and not self.slowed:
            self.slowed = True
            while not self.cancelled.is_set():
                await self.conn.session_update(session_id, acp.update_agent_message_text("."))
                try:
                    await asyncio.wait_for(self.cancelled.wait(), 0.02)
                except TimeoutError:
                    pass
            return PromptResponse(stop_reason="cancelled")
        for piece in thirds(text):
            await self.conn.session_update(session_id, acp.update_agent_message_text(piece))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if self.cancelled is not None:
            self.cancelled.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow", action="store_true")
    parser.add_argument("--pid-file")
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(args.pid_file + ".tmp", args.pid_file)
    asyncio.run(acp.run_agent(EchoAgent(slow=args.slow)))


if __name__ == "__main__":
    main()
