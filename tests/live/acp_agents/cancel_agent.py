"""A test ACP agent that streams slowly until it is cancelled.

    python3 cancel_agent.py [--ignore-cancel]

A prompt opens a tool call (never finished), then streams one message chunk every 50 ms for up to
60 s. On ``session/cancel`` it answers the prompt ``cancelled``; with ``--ignore-cancel`` it never
answers and keeps streaming (the bridge must kill its process group after its grace). Its second
and later prompts (a finalize turn after the cancel) are answered at once: ``cancel_later_text``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import acp
from acp import PromptResponse
from kit import ScriptedAgent, prompt_text, run
from scripted import CANCEL_LIMIT, CANCEL_TICK, CANCEL_TOOL, cancel_chunk, cancel_later_text


class CancelAgent(ScriptedAgent):
    name = "cancel-agent"

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        self.prompts += 1
        if self.prompts > 1:
            await self.say(cancel_later_text(prompt_text(prompt)))
            return PromptResponse(stop_reason="end_turn")
        self.cancelled.clear()
        call_id, title = CANCEL_TOOL
        await self.update(acp.start_tool_call(call_id, title, status="in_progress", raw_input={"event": "cancel"}))
        end = time.monotonic() + CANCEL_LIMIT
        i = 0
        while time.monotonic() < end:
            i += 1
            await self.say(cancel_chunk(i))
            if self.args.ignore_cancel:
                await asyncio.sleep(CANCEL_TICK)
                continue
            try:
                await asyncio.wait_for(self.cancelled.wait(), CANCEL_TICK)
            except TimeoutError:
                continue
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ignore-cancel", action="store_true")
    run(CancelAgent, parser)
