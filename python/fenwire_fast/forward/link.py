"""A forwarder's connection to the server: made once, made again after a failure, with backoff.

:class:`StreamLink` (a base of :class:`~fenwire_fast.forward.forwarder.Forwarder`) connects with
nats-py's own reconnection off: a failed connection is closed whole, with whatever it buffered,
and a new one is made (from 50 ms, doubling up to ``retry_max`` seconds), so that the forwarder
knows exactly what the server may have received. It checks the stream (made when missing, unless
told not to) and that it takes the forwarder's subjects.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from .lanes import DUP, OK, Entry, ForwardUnavailable, NoStream, StoreError
from .names import MSG_ID, check_prefix

__all__ = ["StreamLink", "connect_once"]


async def _quiet(exc: Exception) -> None:
    """nats-py's default error callback prints a traceback per failed attempt: the caller says it."""


async def connect_once(url: str, timeout: float = 5.0, **callbacks: Any) -> Any:
    """A connection to ``url`` with nats-py's reconnection off: a failed attempt is tried once more
    after 0.1 s, then ``NoServersError`` (nats-py takes ``max_reconnect_attempts=0`` as no limit)."""
    callbacks.setdefault("error_cb", _quiet)
    return await nats.connect(
        url,
        allow_reconnect=False,
        connect_timeout=timeout,
        max_reconnect_attempts=1,
        reconnect_time_wait=0.1,
        **callbacks,
    )


class StreamLink:
    """The connection part of a forwarder (see the module docstring)."""

    def __init__(
        self,
        url: str,
        stream: str,
        prefix: str,
        max_in_flight: int,
        connect_timeout: float,
        retry_max: float,
        create_stream: bool,
        say: Callable[[str], None] | None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.url = url
        self.stream = stream
        self.prefix = check_prefix(prefix)
        self.max_in_flight = max_in_flight
        self.connect_timeout = connect_timeout
        self.retry_max = retry_max
        self.create_stream = create_stream
        self.say = say or (lambda line: None)
        #: connections made again after a failure
        self.reconnects = 0
        self._nc: Any = None
        self._js: Any = None
        self._jsm: Any = None
        self._inbox = ""  # the acks' subjects: <inbox>.<n>
        self._acks: dict[str, Entry] = {}  # reply subject -> the line's entry
        self._acked = asyncio.Event()  # set by each ack
        self._count = itertools.count()
        #: why the connection is taken as failed (``None``: it works)
        self._broken: str | None = None

    def _connected(self) -> None:
        """Called after each connection is made (the forwarder asks the stream again)."""

    async def _connect(self) -> None:
        mine: list[Any] = []  # this connection, once made: a callback of an older one says nothing

        def fail(why: str) -> None:
            if mine and mine[0] is self._nc:
                self._broken = self._broken or why

        async def lost(*_: Any) -> None:
            fail("the connection to the server was lost")

        async def error(exc: Exception) -> None:
            fail(f"connection error: {exc}")

        nc = await connect_once(self.url, self.connect_timeout, disconnected_cb=lost, closed_cb=lost, error_cb=error)
        mine.append(nc)
        self._nc, self._broken = nc, None
        self._js = nc.jetstream(timeout=self.connect_timeout, publish_async_max_pending=self.max_in_flight + 1)
        self._jsm = nc.jsm(timeout=self.connect_timeout)
        self._inbox = nc.new_inbox()
        self._acks = {}
        await nc.subscribe(self._inbox + ".*", cb=self._ack)
        await self._ensure_stream()
        self._connected()

    async def _publish(self, subject: str, line: bytes, msg_id: str, entry: Entry) -> None:
        """Publish ``line`` to JetStream with its message id; its ack fills ``entry[2]`` (:data:`OK`,
        :data:`DUP`, or a :class:`StoreError` / :class:`NoStream`) and sets :attr:`_acked`.
        (nats-py's own ``publish_async`` loses a refusal: it raises it in the reply handler instead
        of setting it on the future, which then never completes; and a future per line costs.)"""
        reply = f"{self._inbox}.{next(self._count)}"
        self._acks[reply] = entry
        try:
            await self._nc.publish(subject, line, reply=reply, headers={MSG_ID: msg_id})
        except BaseException:
            self._acks.pop(reply, None)
            raise

    async def _ack(self, msg: Any) -> None:
        entry = self._acks.pop(msg.subject, None)
        if entry is None:
            return
        data = msg.data
        if msg.headers and msg.headers.get("Status") == "503":
            entry[2] = NoStream()
        elif b'"error"' not in data:  # {"stream":...,"seq":N} or with "duplicate":true
            entry[2] = DUP if b'"duplicate":true' in data else OK
        else:
            try:
                error = json.loads(data).get("error") or {}
            except (ValueError, AttributeError):
                error = {"description": f"an answer that is not an ack: {data[:80]!r}"}
            entry[2] = StoreError(int(error.get("err_code", 0) or 0), str(error.get("description", error)))
        self._acked.set()

    async def _ensure_stream(self) -> None:
        wanted = f"{self.prefix}.>"
        try:
            info = await self._js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            if not self.create_stream:
                raise ForwardUnavailable(f"no stream {self.stream!r} on {self.url} (and create_stream=False)") from None
            config = api.StreamConfig(
                name=self.stream, subjects=[wanted], storage=api.StorageType.FILE, duplicate_window=120.0
            )
            await self._js.add_stream(config)
            return
        except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError) as exc:
            raise ForwardUnavailable(f"the server at {self.url} has no JetStream (start it with -js): {exc}") from None
        subjects = info.config.subjects or []
        if wanted not in subjects and ">" not in subjects:
            raise ForwardUnavailable(
                f"stream {self.stream!r} takes {subjects}, not {wanted!r}: choose another stream or prefix"
            )

    async def _close_connection(self) -> None:
        nc, self._nc, self._js, self._jsm = self._nc, None, None, None
        self._acks = {}  # the acks of a connection closed never come
        if nc is not None:
            try:
                await asyncio.wait_for(nc.close(), 2.0)
            except Exception:  # noqa: BLE001 - a connection that is gone closes as it can
                pass

    async def _open(self) -> None:
        """The first connection; raises :class:`ForwardUnavailable` in one line when it fails."""
        try:
            await self._connect()
        except ForwardUnavailable:
            await self._close_connection()
            raise
        except Exception as exc:  # noqa: BLE001 - one clear line, not the client's traceback
            await self._close_connection()
            raise ForwardUnavailable(f"cannot reach a NATS server at {self.url}: {exc or type(exc).__name__}") from None

    async def _reconnect(self) -> None:
        """Connect again after a failure, with backoff, until it works."""
        delay = 0.05
        while True:
            try:
                await self._connect()
                break
            except ForwardUnavailable:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure to connect is waited out
                self._broken = f"cannot connect: {exc or type(exc).__name__}"
                await self._close_connection()
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max)
        self.reconnects += 1
        self.say(f"forward: connected again to {self.url}")
