"""A test ACP agent that calls tools: updates the bridge ignores, a plan, three tool calls (progress
updates, two completed -- one of them reported completed twice --, one failed), then a closing
message and ``end_turn``. The script is ``scripted.TOOLS*``.

    python3 tools_agent.py
"""

from __future__ import annotations

import argparse
from typing import Any

import acp
from acp import PromptResponse
from acp.schema import AvailableCommandsUpdate, CurrentModeUpdate
from kit import ScriptedAgent, run
from scripted import TOOLS, TOOLS_PLAN, TOOLS_REPEATED, TOOLS_TEXT


class ToolsAgent(ScriptedAgent):
    name = "tools-agent"

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        # update kinds the bridge ignores
        await self.update(acp.update_user_message_text("(the user's words, echoed)"))
        await self.update(AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[]))
        await self.update(CurrentModeUpdate(session_update="current_mode_update", current_mode_id="code"))
        await self.update(acp.update_plan([acp.plan_entry(e, status="pending") for e in TOOLS_PLAN]))
        for call_id, title, raw_input, progress, status, raw_output, text in TOOLS:
            await self.update(acp.start_tool_call(call_id, title, kind="other", status="pending", raw_input=raw_input))
            for _ in range(progress):
                await self.update(acp.update_tool_call(call_id, status="in_progress"))
            content = [acp.tool_content(acp.text_block(text))] if text is not None else None
            await self.update(acp.update_tool_call(call_id, status=status, raw_output=raw_output, content=content))
            if call_id == TOOLS_REPEATED:
                # the same final status again: the bridge reports a tool's result once
                await self.update(acp.update_tool_call(call_id, status=status, raw_output=raw_output, content=content))
        await self.say(TOOLS_TEXT)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run(ToolsAgent, argparse.ArgumentParser())
