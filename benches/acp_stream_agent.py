"""A streaming ACP agent for ``benches/acp.py``: written with the SDK's agent side, it answers every
prompt with ``--chunks`` message chunks of realistic text (``benches/realistic.py``: prose, code,
quotes, non-ASCII) and ends the turn.

    python benches/acp_stream_agent.py [--chunks 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import acp
from acp import InitializeResponse, NewSessionResponse, PromptResponse, update_agent_message_text
from acp.schema import AgentCapabilities, Implementation

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realistic import RunMaker


class StreamAgent:
    def __init__(self, chunks: int, seed: int) -> None:
        self.chunks = chunks
        maker = RunMaker(seed)
        self.texts = [maker.delta() for _ in range(chunks)]
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="bench-stream", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="bench")

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        for text in self.texts[: self.chunks]:
            await self.conn.session_update(session_id, update_agent_message_text(text))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(acp.run_agent(StreamAgent(args.chunks, args.seed)))


if __name__ == "__main__":
    main()
