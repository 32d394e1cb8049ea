"""A test ACP agent that asks permission before it runs a tool.

    python3 permission_agent.py [--no-reject-once | --allow-only]

A prompt announces a tool call, asks ``session/request_permission`` for it with the options of
``scripted.PERMISSION_OPTIONS`` (``--no-reject-once``: ``PERMISSION_OPTIONS_NO_REJECT_ONCE``,
``--allow-only``: ``PERMISSION_OPTIONS_ALLOW_ONLY``, nothing to reject with),
completes the tool when an allow option was chosen and fails it otherwise, then says
``permission_text(...)`` ("allowed (opt-once)", "denied (opt-reject)", "denied (cancelled)").
"""

from __future__ import annotations

import argparse
from typing import Any

import acp
from acp import PromptResponse
from acp.schema import PermissionOption
from kit import ScriptedAgent, run
from scripted import (
    PERMISSION_OPTIONS,
    PERMISSION_OPTIONS_ALLOW_ONLY,
    PERMISSION_OPTIONS_NO_REJECT_ONCE,
    PERMISSION_TOOL,
    permission_text,
)


class PermissionAgent(ScriptedAgent):
    name = "permission-agent"

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        call_id, title, raw_input = PERMISSION_TOOL
        await self.update(acp.start_tool_call(call_id, title, kind="edit", status="pending", raw_input=raw_input))
        offered = PERMISSION_OPTIONS
        if self.args.no_reject_once:
            offered = PERMISSION_OPTIONS_NO_REJECT_ONCE
        elif self.args.allow_only:
            offered = PERMISSION_OPTIONS_ALLOW_ONLY
        options = [PermissionOption(option_id=i, name=n, kind=k) for i, n, k in offered]
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=acp.update_tool_call(call_id, title=title, status="pending", raw_input=raw_input),
            options=options,
        )
        outcome = answer.outcome
        option = getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None
        kinds = {i: k for i, _, k in offered}
        allowed = option is not None and kinds.get(option, "").startswith("allow")
        if allowed:
            await self.update(acp.update_tool_call(call_id, status="completed", raw_output={"written": 12}))
        else:
            text = acp.tool_content(acp.text_block("not permitted"))
            await self.update(acp.update_tool_call(call_id, status="failed", content=[text]))
        await self.say(permission_text(allowed, option))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--no-reject-once", action="store_true")
    group.add_argument("--allow-only", action="store_true")
    run(PermissionAgent, parser)
