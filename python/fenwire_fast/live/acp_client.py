"""The ACP bridge's event-loop side: the ACP client it answers the agent with, and the framing of
the agent's stdout (see :mod:`fenwire_fast.live.acp`).

Everything here runs on the bridge's asyncio loop thread. What the presenter's thread must see goes
into one thread-safe queue, in the order the agent wrote it: ``("update", update)``, ``("info",
summary)`` and, from the bridge, ``("answer", response)`` / ``("failed", exception)``.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from .. import Framer

__all__ = ["BridgeClient", "StdoutFramer", "LINE_CAP", "PERMISSIONS", "choose_option"]

#: the longest line of the agent's stdout that is read as a message (longer ones are skipped)
LINE_CAP = 1 << 20

#: permission policy -> the option kind it picks (else any reject option, else ``cancelled``)
PERMISSIONS = {"deny": "reject_once", "allow-once": "allow_once", "allow-always": "allow_always"}

Item = tuple[str, Any]

#: reading the agent's stdout pauses with this many items queued for the turn, and resumes below QUEUE_LOW
QUEUE_HIGH = 4096
QUEUE_LOW = 1024
RESUME_POLL = 0.01


def choose_option(policy: str, options: list[PermissionOption]) -> PermissionOption | None:
    """The option the policy picks; ``None`` answers ``cancelled``."""
    wanted = PERMISSIONS[policy]
    for kinds in ((wanted,), ("reject_once", "reject_always")):
        for option in options:
            if option.kind in kinds:
                return option
    return None


class BridgeClient:
    """The ACP client of the bridge: no file system, no terminal; answers permission requests by
    policy; queues session updates (and what it skipped) for the turn in progress."""

    def __init__(self, out: queue.SimpleQueue[Item], policy: str, marker: str) -> None:
        self.out = out
        self.policy = policy
        self.marker = marker  # the extension method of the bridge's own notes, see StdoutFramer
        self.session_id: str | None = None
        self.cancelling = False
        self._early: list[tuple[str, Any]] = []  # updates that came before session/new answered
        self._titles: dict[str, str] = {}

    def set_session(self, session_id: str) -> None:
        """session/new answered: updates that came before it are now sorted."""
        self.session_id = session_id
        early, self._early = self._early, []
        for sid, update in early:
            self._sort(sid, update)

    def _sort(self, session_id: str, update: Any) -> None:
        if session_id != self.session_id:
            self.out.put(("info", f"ACP update for unknown session {session_id} skipped"))
            return
        kind = getattr(update, "session_update", None)
        if kind in ("tool_call", "tool_call_update"):
            title = getattr(update, "title", None)
            if isinstance(title, str):
                self._titles[str(update.tool_call_id)] = title
        self.out.put(("update", update))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.session_id is None:
            self._early.append((session_id, update))
        else:
            self._sort(session_id, update)

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        choice = None if self.cancelling else choose_option(self.policy, options)
        title = tool_call.title or self._titles.get(tool_call.tool_call_id) or tool_call.tool_call_id
        answer = choice.name if choice is not None else "cancelled"
        self.out.put(("info", f"permission asked: {title}; answered: {answer}"))
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice.option_id, outcome="selected"))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == self.marker and isinstance(params.get("summary"), str):
            self.out.put(("info", params["summary"]))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found("_" + method)

    # No terminal capability: without these the SDK would answer terminal requests with null.
    async def create_terminal(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/kill")

    def on_connect(self, conn: Any) -> None:
        pass


def _is_json_rpc(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    if not isinstance(message, dict) or not ("method" in message or "id" in message):
        return False
    return bool(message.get("jsonrpc", "2.0") == "2.0")


class StdoutFramer(asyncio.Protocol):
    """Reads the agent's stdout (a read pipe of the loop): frames it into lines of at most
    :data:`LINE_CAP` bytes and feeds the JSON-RPC ones to the SDK's reader. A line that is not
    JSON-RPC, or too long, is replaced by a notification of the bridge's own (method ``_`` +
    ``marker``) that becomes an ``info`` in its place, so the order of what the agent wrote is kept.

    Reading pauses while the turn has :data:`QUEUE_HIGH` items or more still to take (an agent
    that writes faster than the run can write events waits, as on any pipe), until fewer than
    :data:`QUEUE_LOW` are left."""

    def __init__(self, reader: asyncio.StreamReader, marker: str, out: queue.SimpleQueue[Item]) -> None:
        self.reader = reader
        self.marker = marker
        self.out = out
        self.framer = Framer(max_line_bytes=LINE_CAP)
        self.loop = asyncio.get_running_loop()
        self.eof = self.loop.create_future()
        self.transport: asyncio.ReadTransport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def _throttle(self) -> None:
        if not self.paused and self.transport is not None and self.out.qsize() >= QUEUE_HIGH:
            self.paused = True
            self.transport.pause_reading()
            self.loop.call_later(RESUME_POLL, self._resume)

    def _resume(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        if self.out.qsize() >= QUEUE_LOW:
            self.loop.call_later(RESUME_POLL, self._resume)
            return
        self.paused = False
        self.transport.resume_reading()

    def _note(self, summary: str) -> None:
        note = {"jsonrpc": "2.0", "method": "_" + self.marker, "params": {"summary": summary}}
        self.reader.feed_data(json.dumps(note).encode() + b"\n")

    def data_received(self, data: bytes) -> None:
        for line in self.framer.feed(data):
            if len(line) >= LINE_CAP:
                self._note(f"ACP agent wrote a line of {LINE_CAP} bytes or more; skipped")
            elif not line.strip():
                continue
            elif _is_json_rpc(line):
                self.reader.feed_data(line + b"\n")
            else:
                self._note("ACP agent wrote a line that is not JSON-RPC; skipped")
        self._throttle()

    def eof_received(self) -> bool | None:
        self._end()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if self.framer.buffered:  # an unterminated last line
            self.data_received(b"\n")
        if not self.eof.done():
            self.reader.feed_eof()
            self.eof.set_result(None)


def new_marker() -> str:
    """A method name the agent cannot guess, for the bridge's own notes."""
    return "fenwire/" + os.urandom(8).hex()
