"""The ACP bridge's event-loop side: the ACP client it answers the agent with, and the framing of
the agent's stdout (see :mod:`fenwire_fast.live.acp.agent`).

Everything here runs on the bridge's asyncio loop thread. What the presenter's thread must see goes
into one thread-safe queue, in the order the agent wrote it: ``("update", update)``, ``("info",
summary)`` and, from the bridge, ``("answer", response)`` / ``("failed", exception)``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import queue
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallUpdate,
)
from pydantic import ValidationError

from ... import Framer

__all__ = [
    "BridgeClient",
    "StdoutFramer",
    "RequestWriter",
    "Outstanding",
    "LINE_CAP",
    "MAX_DEPTH",
    "EARLY_CAP",
    "PERMISSIONS",
    "choose_option",
    "vet_message",
]

#: the longest line of the agent's stdout that is read as a message (longer ones are skipped)
LINE_CAP = 1 << 20
#: the deepest nesting of arrays and objects a message may have (deeper ones are skipped)
MAX_DEPTH = 128

#: permission policy -> the option kind it picks (else any reject option, else ``cancelled``)
PERMISSIONS = {"deny": "reject_once", "allow-once": "allow_once", "allow-always": "allow_always"}

Item = tuple[str, Any]

#: reading the agent's stdout pauses with this many items queued for the turn, and resumes below QUEUE_LOW
QUEUE_HIGH = 4096
QUEUE_LOW = 1024
RESUME_POLL = 0.01
#: at most this many updates and notes that come before ``session/new`` is answered are kept for the
#: first turn; the rest are dropped and counted
EARLY_CAP = QUEUE_HIGH


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
        #: what came before session/new answered (at most EARLY_CAP items), and how much more did
        self._early: list[Item] = []
        self.early_dropped = 0
        self._titles: dict[str, str] = {}

    def _put(self, item: Item) -> None:
        """Queue ``item`` for the turn; before session/new answered, hold it (or drop it, past
        :data:`EARLY_CAP`): no turn takes anything then, so the reading of stdout cannot wait on it."""
        if self.session_id is not None:
            self.out.put(item)
        elif len(self._early) < EARLY_CAP:
            self._early.append(item)
        else:
            self.early_dropped += 1

    def set_session(self, session_id: str) -> None:
        """session/new answered (call it on the loop, as soon as it is): what came before it is
        now queued for the first turn, then an ``info`` with the count of what was dropped."""
        self.session_id = session_id
        early, self._early = self._early, []
        for kind, value in early:
            if kind == "update":
                self._sort(*value)
            else:
                self.out.put((kind, value))
        if self.early_dropped:
            self.out.put(
                (
                    "info",
                    f"ACP agent sent {self.early_dropped + len(early)} updates and notes before session/new "
                    f"was answered: the first {len(early)} kept, {self.early_dropped} dropped",
                )
            )

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
            self._put(("update", (session_id, update)))
        else:
            self._sort(session_id, update)

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        choice = None if self.cancelling else choose_option(self.policy, options)
        title = tool_call.title or self._titles.get(tool_call.tool_call_id) or tool_call.tool_call_id
        answer = choice.name if choice is not None else "cancelled"
        self._put(("info", f"permission asked: {title}; answered: {answer}"))
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice.option_id, outcome="selected"))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == self.marker and isinstance(params.get("summary"), str):
            self._put(("info", params["summary"]))

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


NOT_JSON_RPC = "ACP agent wrote a line that is not JSON-RPC; skipped"
TOO_DEEP = f"ACP agent wrote a message nested more than {MAX_DEPTH} levels deep; skipped"
#: the code a malformed error answer is read as (JSON-RPC's internal error)
MALFORMED_ERROR_CODE = -32603


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _too_deep(value: Any) -> bool:
    """Whether arrays and objects nest in ``value`` more than :data:`MAX_DEPTH` levels deep."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _shown(value: Any) -> str:
    """``value`` as JSON, cut to 60 characters (for an ``info``)."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_id(value: Any) -> bool:
    """A JSON-RPC request id: a string, a (finite) number or null; a boolean is none of these."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _is_error(error: Any) -> bool:
    """A JSON-RPC error object: an integer ``code`` and a string ``message``."""
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    return isinstance(code, int) and not isinstance(code, bool) and isinstance(error.get("message"), str)


def _vet_call(message: dict[str, Any]) -> str | None:
    """What is wrong with a request or notification of the agent (``None``: nothing)."""
    method = message["method"]
    if not isinstance(method, str):
        return f"ACP agent sent a message whose method is not a string ({_shown(method)}); skipped"
    if "params" in message and not isinstance(message["params"], (dict, list)):
        return f"ACP agent sent {_shown(method)} with params that are not an object or array; skipped"
    if "id" in message:
        if not _is_id(message["id"]):
            return f"ACP agent sent {_shown(method)} with an id that is not a string, number or null; skipped"
        return None  # a request: the SDK answers it (an error for what it cannot take)
    if method.startswith("_"):
        return None  # an extension notification (the bridge's own notes among them)
    if method != "session/update":
        return f"ACP agent sent a notification the bridge does not know ({_shown(method)}); skipped"
    try:
        SessionNotification.model_validate(message.get("params"))
    except ValidationError as exc:
        return f"ACP agent sent a session/update that is not valid ACP ({_first_error(exc)}); skipped"
    return None


def _first_error(exc: ValidationError) -> str:
    """The first error of ``exc``: where, and what, cut to 80 characters (the info fits a summary)."""
    errors = exc.errors()
    if not errors:
        return "invalid"
    where = ".".join(str(part) for part in errors[0].get("loc", ()))
    text = f"{where}: {errors[0].get('msg', '')}" if where else str(errors[0].get("msg", ""))
    return text if len(text) <= 80 else text[:77] + "..."


def _vet_answer(message: dict[str, Any], sent: set[int]) -> tuple[dict[str, Any] | None, str | None]:
    """A response of the agent: passed on when it answers a request the bridge sent and has not
    had its answer yet (``sent``); a malformed ``error`` is made an internal error."""
    rid = message["id"]
    if not _is_id(rid):
        return None, f"ACP agent answered with an id that is not a string, number or null ({_shown(rid)}); skipped"
    if isinstance(rid, bool) or not isinstance(rid, int) or rid not in sent:
        return (
            None,
            f"ACP agent answered a request the bridge did not send or that had its answer (id {_shown(rid)}); skipped",
        )
    sent.discard(rid)
    if "result" in message or "error" not in message or _is_error(message["error"]):
        return message, None
    shown = _shown(message["error"])
    error = {"code": MALFORMED_ERROR_CODE, "message": f"malformed error answer: {shown}"}
    note = f"ACP agent answered request {rid} with a malformed error ({shown}); read as error {MALFORMED_ERROR_CODE}"
    return {"jsonrpc": "2.0", "id": rid, "error": error}, note


def vet_message(line: bytes, sent: set[int]) -> tuple[dict[str, Any] | None, str | None]:
    """Read one line of the agent's stdout as JSON-RPC 2.0: the message to pass on to the SDK
    (``None``: skip the line) and the ``info`` that says what was wrong with it (``None``: nothing).

    Skipped: a line that is not a JSON object with a ``method`` or an ``id`` (``NaN`` and
    ``Infinity`` are not JSON), one nested more than :data:`MAX_DEPTH` levels deep, a method that
    is not a string, params that are not an object or array, an id that is not a string, number
    or null, a notification other than ``session/update`` and extensions (``_...``), a
    ``session/update`` that is not valid ACP (the SDK would log a traceback for these two and
    drop them), and an answer to a request the bridge did not send (``sent``: the ids of those still
    unanswered; an answer passed on leaves it). An ``error`` answer whose error is not an object
    with an integer ``code`` and a string ``message`` is passed on as error
    :data:`MALFORMED_ERROR_CODE` (the request it answers must end, or the turn would wait forever)."""
    try:
        message = json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        return None, TOO_DEEP
    except ValueError:
        return None, NOT_JSON_RPC
    if not isinstance(message, dict) or not ("method" in message or "id" in message):
        return None, NOT_JSON_RPC
    if message.get("jsonrpc", "2.0") != "2.0":
        return None, NOT_JSON_RPC
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _too_deep(message):
        return None, TOO_DEEP
    if "method" in message:
        problem = _vet_call(message)
        return (None, problem) if problem is not None else (message, None)
    return _vet_answer(message, sent)


class Outstanding:
    """What is waiting for an answer between the bridge and the agent: the ids of the bridge's
    requests (``sent``), and how many of the agent's requests the bridge has not answered yet
    (``asked``; their answers wait for the agent to read its stdin)."""

    def __init__(self) -> None:
        self.sent: set[int] = set()
        self.asked = 0


class RequestWriter(asyncio.StreamWriter):
    """The agent's stdin as the SDK writes to it: notes the id of every request the bridge sends
    (so that an answer to anything else can be told apart, see :func:`vet_message`) and counts
    the answers to the agent's requests as they are written (see :class:`StdoutFramer`)."""

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        protocol: asyncio.BaseProtocol,
        loop: asyncio.AbstractEventLoop,
        outstanding: Outstanding,
    ) -> None:
        super().__init__(transport, protocol, None, loop)
        self.outstanding = outstanding
        self._partial = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        super().write(data)
        *lines, self._partial = (self._partial + bytes(data)).split(b"\n")
        for line in lines:
            if b'"id"' not in line:
                continue  # a notification of the bridge's
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or "id" not in message:
                continue
            if "method" not in message:  # an answer to one of the agent's requests
                self.outstanding.asked = max(0, self.outstanding.asked - 1)
                continue
            rid = message["id"]
            if isinstance(rid, int) and not isinstance(rid, bool):
                self.outstanding.sent.add(rid)


class StdoutFramer(asyncio.Protocol):
    """Reads the agent's stdout (a read pipe of the loop): frames it into lines of at most
    :data:`LINE_CAP` bytes and feeds the JSON-RPC ones to the SDK's reader. A line that is not
    JSON-RPC, or too long, is replaced by a notification of the bridge's own (method ``_`` +
    ``marker``) that becomes an ``info`` in its place, so the order of what the agent wrote is kept.

    Reading pauses while the turn has :data:`QUEUE_HIGH` items or more still to take (an agent
    that writes faster than the run can write events waits, as on any pipe), or as many of the
    agent's requests wait for their answers to be written (an agent that does not read its stdin
    while it asks), until fewer than :data:`QUEUE_LOW` are left."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        marker: str,
        out: queue.SimpleQueue[Item],
        outstanding: Outstanding | None = None,
    ) -> None:
        self.reader = reader
        self.marker = marker
        self.out = out
        #: the requests either side has not answered yet (see RequestWriter)
        self.outstanding = outstanding if outstanding is not None else Outstanding()
        self.framer = Framer(max_line_bytes=LINE_CAP)
        self.loop = asyncio.get_running_loop()
        self.eof = self.loop.create_future()
        self.transport: asyncio.ReadTransport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def _backlog(self) -> int:
        """The larger of the turn's queue and the agent's requests still to answer."""
        return max(self.out.qsize(), self.outstanding.asked)

    def _throttle(self) -> None:
        if not self.paused and self.transport is not None and self._backlog() >= QUEUE_HIGH:
            self.paused = True
            self.transport.pause_reading()
            self.loop.call_later(RESUME_POLL, self._resume)

    def _resume(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        if self._backlog() >= QUEUE_LOW:
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
            elif line.strip():
                self._line(line)
        self._throttle()

    def _line(self, line: bytes) -> None:
        try:
            message, note = vet_message(line, self.outstanding.sent)
        except Exception as exc:  # noqa: BLE001 - one unreadable line must not lose the rest of the read
            message, note = None, f"ACP agent wrote a line the bridge could not read ({type(exc).__name__}); skipped"
        if note is not None:
            self._note(note)
        if message is not None:
            if "method" in message and "id" in message:
                self.outstanding.asked += 1  # the SDK answers it (see RequestWriter)
            self.reader.feed_data(line + b"\n" if note is None else json.dumps(message).encode() + b"\n")

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
