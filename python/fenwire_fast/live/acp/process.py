"""The ACP agent's process, the asyncio loop the SDK runs on, and the connection between them.

:class:`AgentProcess` is what :class:`~fenwire_fast.live.acp.agent.AcpBridge` is built on: it
starts the agent in a process group of its own (listed with the orphan keeper), connects the SDK to
its stdin and stdout on a loop of its own thread, runs the steps of ``start()`` against a deadline,
says why the agent is gone when it is, and ends it (``close()``). Like
:mod:`~fenwire_fast.live.acp.agent` and :mod:`~fenwire_fast.live.acp.client`, it imports the SDK.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar, cast

from acp import Client, RequestError, connect_to_agent
from acp.client.connection import ClientSideConnection
from pydantic import ValidationError

from ..child.agent import AgentFailure
from ..proc import orphans
from ..proc.stderr_tail import StderrTail
from .client import BridgeClient, Item, Outstanding, RequestWriter, StdoutFramer, new_marker

__all__ = ["AgentProcess", "CLOSE_WAIT", "EXIT_WAIT", "first_line"]

#: ``close()``: how long the agent has to exit after its stdin closes, before its group is killed
CLOSE_WAIT = 0.5
#: after the agent's stdout ends, how long to wait for its exit code
EXIT_WAIT = 2.0

T = TypeVar("T")


class AgentProcess:
    """The agent's process and the loop and connection the SDK talks to it through.

    What the agent sends goes to :attr:`_out` (see :mod:`~fenwire_fast.live.acp.client`); the
    requests it makes are answered by :attr:`_client` with ``permissions``."""

    def __init__(
        self, command: Sequence[str], *, permissions: str, init_timeout: float, run_deadline: float | None
    ) -> None:
        self.command = list(command)
        self.permissions = permissions
        self.init_timeout = init_timeout
        self.run_deadline = run_deadline
        self.process: subprocess.Popen[bytes] | None = None
        self._out: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self._marker = new_marker()
        self._client = BridgeClient(self._out, permissions, self._marker)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: ClientSideConnection | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._kept = False
        self._dead: str | None = None  # why no more prompt can be sent
        self._exited_at: float | None = None
        self._closed = False
        self._start_bound = f"within {init_timeout} s"  # how a start() that ran out of time reads
        self._stderr: StderrTail | None = None

    def _start_loop(self) -> None:
        """The asyncio loop the SDK runs on, on a daemon thread of its own."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fenwire-acp-loop", daemon=True)
        self._thread.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEN_WIRE_")}
        try:
            process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise AgentFailure(f"ACP agent could not be started: {exc.strerror or exc}: {self.command[0]}") from None
        self.process = process
        assert process.stderr is not None
        self._stderr = StderrTail(process.stderr)
        try:
            self._kept = orphans.keeper().keep(process.pid, 1.0)
        except OSError:
            pass
        return process

    def _run(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    async def _connect(self, process: subprocess.Popen[bytes]) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=4 << 20)
        assert process.stdin is not None and process.stdout is not None
        outstanding = Outstanding()  # the requests not yet answered, either way
        await loop.connect_read_pipe(lambda: StdoutFramer(reader, self._marker, self._out, outstanding), process.stdout)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, process.stdin)
        self._stdin = transport
        writer = RequestWriter(transport, protocol, loop, outstanding)
        # the SDK asks for the whole Client protocol; the bridge answers what a client without fs or
        # terminal capabilities must (the SDK answers the rest "method not found")
        self._conn = connect_to_agent(cast(Client, self._client), writer, reader)

    def _start_deadline(self) -> tuple[float, str]:
        """When ``start()`` gives up (a monotonic time), and how its failure then reads."""
        bound = time.monotonic() + self.init_timeout
        if self.run_deadline is not None:
            left = self.run_deadline - time.time()
            if left < self.init_timeout:
                return time.monotonic() + max(left, 0.0), "before the run's deadline"
        return bound, f"within {self.init_timeout} s"

    def _phase(self, name: str, coro: Coroutine[Any, Any, T], deadline: float) -> T:
        """Run one step of ``start()`` on the loop, until ``deadline`` (see :meth:`_start_deadline`)."""
        future = self._run(coro)
        try:
            while True:
                try:
                    return future.result(timeout=min(max(deadline - time.monotonic(), 0.0), 0.05))
                except concurrent.futures.TimeoutError:
                    if time.monotonic() >= deadline:
                        raise
                    if self._exited_for() >= EXIT_WAIT:  # its stdout is held open
                        raise ConnectionError("the ACP agent exited") from None
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._kill()
            raise AgentFailure(f"ACP agent did not answer {name} {self._start_bound}{self._said()}") from None
        except RequestError as exc:
            self._kill()
            raise AgentFailure(f"ACP agent answered {name} with error {exc.code}: {exc}") from None
        except ValidationError as exc:
            self._kill()
            raise AgentFailure(f"ACP agent's answer to {name} is not valid: {first_line(exc)}") from None
        except (ConnectionError, OSError):
            future.cancel()
            raise AgentFailure(self._death(f"during {name}")) from None

    def _death(self, when: str) -> str:
        """Why the connection ended: the agent's exit (waited for a moment), else its stdout closing."""
        process = self.process
        assert process is not None
        try:
            code = process.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self._kill()
            reason = f"ACP agent closed its stdout {when}"
        else:
            reason = f"ACP agent {_exit_text(code)} {when}"
        reason += self._said()
        self._dead = self._dead or reason
        return reason

    def _said(self) -> str:
        """``": <the agent's last stderr line>"``, or nothing when it wrote none."""
        tail = self._stderr
        last = tail.last_line() if tail is not None else ""
        return f": {last}" if last else ""

    def _kill(self) -> None:
        """SIGKILL the agent's process group (whatever of it still runs)."""
        process = self.process
        if process is None:
            return
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass

    def _exited_for(self) -> float:
        """Seconds since the agent's process was first seen ended (0 while it runs)."""
        if self.process is None or self.process.poll() is None:
            return 0.0
        now = time.monotonic()
        if self._exited_at is None:
            self._exited_at = now
        return now - self._exited_at

    def close(self) -> None:
        """End the agent: close its stdin, give it a moment, kill its group; stop the loop."""
        if self._closed:
            return
        self._closed = True
        loop, process = self._loop, self.process
        if loop is not None and self._stdin is not None:
            loop.call_soon_threadsafe(self._stdin.close)
        elif process is not None and process.stdin is not None:
            process.stdin.close()
        if process is not None:
            try:
                process.wait(timeout=CLOSE_WAIT)
            except subprocess.TimeoutExpired:
                pass
            self._kill()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if self._kept:
                orphans.release(process.pid)
        if self._stderr is not None:
            self._stderr.join(1.0)
        if loop is not None:
            if self._conn is not None:
                try:
                    self._run(self._conn.close()).result(timeout=1.0)
                except Exception:  # noqa: BLE001 - closing what is already gone
                    pass
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=1.0)


def _exit_text(code: int) -> str:
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


def first_line(exc: BaseException) -> str:
    """The first line of what ``exc`` says, or its type's name when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
