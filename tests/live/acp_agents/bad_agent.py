"""A test ACP agent that misbehaves in one way, chosen by ``--mode``.

    python3 bad_agent.py --mode MODE

- ``no-init``: never answers ``initialize``;
- ``no-session``: answers ``initialize`` but never ``session/new``;
- ``exit-at-start``: says why on stderr and exits with code 2 before speaking ACP;
- ``exit-mid-turn``: sends one message chunk of a prompt, says why on stderr, then exits with code 3;
- ``garbage``: writes a line that is not JSON between two message chunks, then works normally;
- ``long-line``: writes a 2 MiB line (a well-formed message chunk notification, too long for the
  bridge's 1 MiB line cap) between two message chunks, then works normally;
- ``unknown-session``: sends one update for a session that does not exist between two message
  chunks, then works normally;
- ``banner``: writes a line that is not JSON (a greeting) before its answer to ``initialize``,
  then works normally;
- ``stderr-flood``: writes ``scripted.BAD_STDERR_FLOOD_BYTES`` bytes of lines to stderr between
  two message chunks, then works normally.

Working normally: the message ``scripted.BAD_MESSAGE``, then ``end_turn``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import acp
from acp import InitializeResponse, NewSessionResponse, PromptResponse
from kit import ScriptedAgent, run
from scripted import (
    BAD_BANNER,
    BAD_GARBAGE_LINE,
    BAD_LONG_LINE_BYTES,
    BAD_MESSAGE,
    BAD_MID_TURN_STDERR,
    BAD_START_STDERR,
    BAD_STDERR_FLOOD_BYTES,
    BAD_UNKNOWN_SESSION,
    SESSION,
)

MODES = (
    "no-init",
    "no-session",
    "exit-at-start",
    "exit-mid-turn",
    "garbage",
    "long-line",
    "unknown-session",
    "banner",
    "stderr-flood",
)


class BadAgent(ScriptedAgent):
    name = "bad-agent"

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        if self.args.mode == "no-init":
            await asyncio.Event().wait()  # forever
        if self.args.mode == "exit-at-start":
            print(BAD_START_STDERR, file=sys.stderr, flush=True)
            os._exit(2)
        if self.args.mode == "banner":
            await self.raw(BAD_BANNER.encode() + b"\n")
        return await super().initialize(protocol_version, **kwargs)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if self.args.mode == "no-session":
            await asyncio.Event().wait()  # forever
        return await super().new_session(cwd, **kwargs)

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        mode = self.args.mode
        await self.say(BAD_MESSAGE[0])
        if mode == "exit-mid-turn":
            print(f"bad-agent: working\n{BAD_MID_TURN_STDERR}\n\n", file=sys.stderr, flush=True)
            os._exit(3)
        elif mode == "garbage":
            await self.raw(BAD_GARBAGE_LINE.encode() + b"\n")
        elif mode == "long-line":
            pad = "x" * BAD_LONG_LINE_BYTES
            note = {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": SESSION,
                    "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": pad}},
                },
            }
            await self.raw(json.dumps(note).encode() + b"\n")
        elif mode == "stderr-flood":
            line = b"bad-agent: " + b"log " * 29 + b"\n"  # 128 bytes
            block = line * 8192  # 1 MiB
            for _ in range(BAD_STDERR_FLOOD_BYTES // len(block)):
                sys.stderr.buffer.write(block)
            sys.stderr.buffer.flush()
        elif mode == "unknown-session":
            await self.update(acp.update_agent_message_text("not for you"), session=BAD_UNKNOWN_SESSION)
        for chunk in BAD_MESSAGE[1:]:
            await self.say(chunk)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=MODES, required=True)
    run(BadAgent, parser)
