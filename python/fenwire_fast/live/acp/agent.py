"""The ACP bridge: any Agent Client Protocol agent (JSON-RPC over stdio) as a live child's agent.

``fenwire child --acp -- COMMAND...`` (or ``spawn(acp=[...])``) runs :func:`bridge`, which starts
``COMMAND`` in a process group of its own (listed with the package's orphan keeper, so it dies with
the child however the child dies), talks ACP to it with the ``agent-client-protocol`` SDK (the
``acp`` extra) on an asyncio loop of its own thread, and turns each turn into one ``session/prompt``:

- ``start()``: ``initialize`` and ``session/new`` (cwd: the child's) within ``init_timeout``
  seconds, and never past ``run_deadline`` (the run's deadline, Unix seconds, when it has one);
  yields ``agent-started`` (provider ``acp``, model: the agent's name); what the agent sends
  before ``session/new`` is answered is kept for the first turn, at most
  :data:`~fenwire_fast.live.acp.client.EARLY_CAP` updates and notes (the rest counted in an ``info``);
- a turn: ``user`` (the turn's text), ``llm-start``, the mapped updates (:mod:`~fenwire_fast.live.acp.mapping`), ``llm-end`` with the
  prompt's stop reason; the finalize turn asks for a plain answer without tools; in a traced run
  the request's ``_meta`` carries ``{"traceparent": ctx.traceparent}``;
- an interruption (cancel, finalize, deadline) sends ``session/cancel`` and goes on mapping updates
  until the prompt answers, or ``grace`` seconds pass and the agent's process group is killed;
- a failure (the agent exits, answers with an error, or does not answer in time) fails the run with
  an :class:`~fenwire_fast.live.child.agent.AgentFailure` whose message starts with ``ACP agent``;
- the agent's stdout is read through a line framer with a 1 MiB cap: lines that are not JSON-RPC
  2.0 (see :func:`~fenwire_fast.live.acp.client.vet_message`), or too long, are skipped and
  reported as ``info``; an error answer that is not a JSON-RPC error object is read as error -32603;
- the agent's stderr goes on to the child's stderr (the run's log; its first 4 MiB, see
  :data:`~fenwire_fast.live.proc.stderr_tail.PASS_ON_CAP`), and its last line, bounded,
  ends the error of a run the agent failed by exiting, closing its stdout or not answering in time;
- ``close()``: close the agent's stdin, give it a moment, kill its group.

This module, :mod:`~fenwire_fast.live.acp.process` (the agent's process, loop and connection) and
:mod:`~fenwire_fast.live.acp.client` are the only ones that import the SDK.
"""

from __future__ import annotations

import logging
import os
import queue
import time
from collections.abc import Generator, Sequence
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation, NewSessionResponse, TextContentBlock
from pydantic import ValidationError

from ..child.agent import AgentFailure, TurnContext, TurnInput, TurnInterrupted, TurnResult, Wait
from .client import PERMISSIONS, Item
from .mapping import ToolCalls, TurnMapper, map_stop_reason
from .process import EXIT_WAIT, AgentProcess, first_line

__all__ = ["bridge", "AcpBridge", "FINALIZE_PREFIX", "DEFAULT_GRACE", "DEFAULT_INIT_TIMEOUT"]

DEFAULT_GRACE = 5.0
DEFAULT_INIT_TIMEOUT = 30.0
#: the finalize turn's text starts with this
FINALIZE_PREFIX = "Answer now in plain text, without using any tools.\n\n"
#: how often a turn looks at the queue while nothing is in it
POLL = 0.01


def _seconds(config: dict[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ValueError(f"ACP bridge: {key} must be a positive number of seconds, not {value!r}")
    return float(value)


def bridge(config: dict[str, Any]) -> AcpBridge:
    """The agent factory (``--agent fenwire_fast.live.acp.agent:bridge --agent-config JSON``); see the
    module docstring for ``command``, ``permissions``, ``grace`` and ``init_timeout``."""
    if not isinstance(config, dict):
        raise ValueError("ACP bridge: the config must be a JSON object")
    command = config.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise ValueError("ACP bridge: command must be a non-empty list of strings (the ACP agent's argv)")
    permissions = config.get("permissions", "deny")
    if permissions not in PERMISSIONS:
        raise ValueError(f"ACP bridge: permissions must be one of {', '.join(PERMISSIONS)}, not {permissions!r}")
    run_deadline = config.get("run_deadline")
    if run_deadline is not None and (
        isinstance(run_deadline, bool) or not isinstance(run_deadline, (int, float)) or run_deadline != run_deadline
    ):
        raise ValueError(f"ACP bridge: run_deadline must be a Unix time in seconds, not {run_deadline!r}")
    return AcpBridge(
        command,
        permissions=permissions,
        grace=_seconds(config, "grace", DEFAULT_GRACE),
        init_timeout=_seconds(config, "init_timeout", DEFAULT_INIT_TIMEOUT),
        run_deadline=None if run_deadline is None else float(run_deadline),
    )


class _OneLine(logging.Formatter):
    """A log record on one line: an exception as its type and message, never a traceback."""

    def formatException(self, ei: Any) -> str:
        exc = ei[1] if ei else None
        return f"{type(exc).__name__}: {exc}" if exc is not None else ""

    def formatStack(self, stack_info: str) -> str:
        return ""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(super().format(record).split("\n"))


def _log_on_one_line() -> None:
    """The SDK logs what fails in its tasks (a write to an agent that was killed, ...) with
    ``logging``, which would put tracebacks in the run's log: unless the process configured
    logging itself, its records go to stderr one line each (see :class:`_OneLine`)."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine("fenwire child: %(name)s %(levelname)s: %(message)s"))
    root.addHandler(handler)


class AcpBridge(AgentProcess):
    """An :class:`~fenwire_fast.live.child.agent.Agent` that runs an ACP agent process (see the module docstring).

    The process, its loop and ``close()`` are :class:`~fenwire_fast.live.acp.process.AgentProcess`'s;
    this class is the agent protocol: ``start()`` and the turns."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        permissions: str,
        grace: float,
        init_timeout: float,
        run_deadline: float | None = None,
    ) -> None:
        super().__init__(command, permissions=permissions, init_timeout=init_timeout, run_deadline=run_deadline)
        self.grace = grace
        self.model = "acp"
        self.session_id: str | None = None
        self._tools = ToolCalls()

    def start(self) -> list[dict[str, Any]]:
        """Start the agent; ``initialize`` and ``session/new``; ``agent-started``."""
        deadline, self._start_bound = self._start_deadline()
        _log_on_one_line()
        process = self._spawn()
        self._start_loop()
        self._phase("initialize", self._connect(process), deadline)
        conn = self._conn
        assert conn is not None
        init = self._phase(
            "initialize",
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="fenwire_fast", version=_version()),
            ),
            deadline,
        )
        if init.agent_info is not None and init.agent_info.name:
            self.model = init.agent_info.name
        session = self._phase("session/new", self._new_session(conn), deadline)
        self.session_id = session.session_id
        return [{"type": "agent-started", "provider": "acp", "model": self.model}]

    async def _new_session(self, conn: ClientSideConnection) -> NewSessionResponse:
        """``session/new``; its session is the client's at once, on the loop (so an update the
        agent sends right after the answer is not taken for one that came before it)."""
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        self._client.set_session(session.session_id)
        return session

    async def _prompt(self, session_id: str, text: str, traceparent: str | None = None) -> None:
        assert self._conn is not None
        meta = {"traceparent": traceparent} if traceparent is not None else {}  # the request's _meta
        try:
            response = await self._conn.prompt(
                session_id=session_id, prompt=[TextContentBlock(type="text", text=text)], **meta
            )
        except Exception as exc:  # noqa: BLE001 - the turn decides what it means
            self._out.put(("failed", exc))
        else:
            self._out.put(("answer", response))

    async def _cancel(self, session_id: str) -> None:
        assert self._conn is not None
        self._client.cancelling = True
        try:
            await self._conn.cancel(session_id=session_id)
        except Exception:  # noqa: BLE001 - a dead agent is found by the turn
            pass

    def turn(self, request: TurnInput, ctx: TurnContext) -> Generator[dict[str, Any] | Wait, None, TurnResult]:
        """One ``session/prompt`` (see the module docstring)."""
        if self._dead is not None:
            raise AgentFailure(self._dead)
        session_id = self.session_id
        if session_id is None:
            raise AgentFailure("ACP agent has no session")
        text = request.text if request.tools else FINALIZE_PREFIX + request.text
        mapper = TurnMapper(self._tools)
        yield {"type": "user", "text": request.text}  # what this prompt says, as the mock reports its input
        yield {"type": "llm-start", "provider": "acp", "model": self.model}
        self._client.cancelling = False
        self._run(self._prompt(session_id, text, getattr(ctx, "traceparent", None)))
        interrupted: TurnInterrupted | None = None
        cancel_by = 0.0
        ending: Item | None = None
        pending: list[dict[str, Any] | Wait] = []
        try:
            while True:
                if not pending:
                    if ending is not None:
                        break
                    item = self._take()
                    if item is None and self._exited_for() >= EXIT_WAIT:  # its stdout is held open
                        item = ("failed", ConnectionError("the ACP agent exited"))
                    if item is None:
                        if interrupted is not None and time.monotonic() >= cancel_by:
                            break
                        pending = [Wait(POLL if interrupted is None else max(POLL, self.grace / 500))]
                    elif item[0] in ("answer", "failed"):
                        ending = item
                        pending = list(mapper.finish() if item[0] == "answer" else mapper.interrupt())
                        continue
                    else:
                        pending = self._map(mapper, item)
                        continue
                event = pending.pop(0)
                try:
                    yield event
                except TurnInterrupted as exc:
                    if interrupted is None:
                        interrupted = exc
                        cancel_by = time.monotonic() + self.grace
                        self._run(self._cancel(session_id))
        except GeneratorExit:
            self._dead = self._dead or "ACP agent's turn was cut off"
            self._kill()
            raise
        if ending is None:  # no answer to session/cancel within grace
            assert interrupted is not None
            self._dead = f"ACP agent's process group killed: no answer to session/cancel within {self.grace} s"
            self._kill()
            yield from mapper.interrupt()
            yield {"type": "llm-end", "stop-reason": "aborted"}
            if interrupted.reason == "finalize":
                raise AgentFailure(self._dead)
            raise interrupted
        if ending[0] == "failed":
            if interrupted is not None and not isinstance(ending[1], (ConnectionError, OSError)):
                raise interrupted  # an error answer to a cancelled prompt
            reason = self._failure(ending[1])
            if interrupted is not None and interrupted.reason != "finalize":
                raise interrupted
            raise AgentFailure(reason)
        stop = map_stop_reason(ending[1].stop_reason)
        yield {"type": "llm-end", "stop-reason": stop}
        if interrupted is not None:
            raise interrupted
        return TurnResult(stop_reason=stop, usage={}, text=mapper.last_text)

    def _take(self) -> Item | None:
        try:
            return self._out.get_nowait()
        except queue.Empty:
            return None

    def _map(self, mapper: TurnMapper, item: Item) -> list[dict[str, Any] | Wait]:
        kind, value = item
        if kind == "info":
            return [{"type": "info", "summary": value}]
        if kind == "update":
            return list(mapper.update(value))
        return []

    def _failure(self, exc: BaseException) -> str:
        if isinstance(exc, RequestError):
            return f"ACP agent answered session/prompt with error {exc.code}: {exc}"
        if isinstance(exc, ValidationError):
            return f"ACP agent's answer to session/prompt is not valid: {first_line(exc)}"
        if isinstance(exc, (ConnectionError, OSError)):
            return self._death("during a turn")
        return f"ACP agent bridge failed: {type(exc).__name__}: {exc}"


def _version() -> str:
    from ... import __version__

    return str(__version__)
