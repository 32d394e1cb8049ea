"""A test ACP agent that streams: thought chunks, then message chunks, then ``end_turn``.

    python3 stream_agent.py [--gate PATH] [--stop REASON] [--flood N]

Every prompt gets the same script (``scripted.STREAM_*``); the last message chunk says which prompt
(counting from 1) it answers and quotes its text, so a test sees what each ``session/prompt``
carried. With ``--gate PATH`` the first prompt stops after its thoughts until PATH exists (the
test sends its controls meanwhile, then creates the file): no timing involved. ``--stop`` is the
stop reason every prompt answers with (default ``end_turn``). ``--flood N`` sends N more small
chunks (``scripted.flood_chunk``) as fast as it can before the last one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from acp import PromptResponse
from kit import ScriptedAgent, prompt_text, run
from scripted import STREAM_MESSAGE, STREAM_THOUGHTS, flood_chunk, stream_echo


class StreamAgent(ScriptedAgent):
    name = "stream-agent"

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        self.prompts += 1
        for chunk in STREAM_THOUGHTS:
            await self.think(chunk)
        if self.args.gate and self.prompts == 1:
            while not os.path.exists(self.args.gate):
                await asyncio.sleep(0.01)
        for chunk in STREAM_MESSAGE:
            await self.say(chunk)
        for i in range(self.args.flood):
            await self.say(flood_chunk(i))
        await self.say(stream_echo(self.prompts, prompt_text(prompt)))
        return PromptResponse(stop_reason=self.args.stop)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gate")
    parser.add_argument("--flood", type=int, default=0)
    parser.add_argument(
        "--stop", default="end_turn", choices=["end_turn", "max_tokens", "max_turn_requests", "refusal"]
    )
    run(StreamAgent, parser)
