"""Many live children in one parent, woken by the kernel.

A :class:`Hub` drains its children in fair rounds: each round gives every child that has something
to do one bounded read (its channel's ``max_bytes``, 64 KiB by default), so a chatty child cannot
starve the others, and the first child polled moves on by one each round.

On Linux the hub sleeps in the kernel (``wakeups="kernel"``): one epoll holds an inotify watch on
every event file and a pidfd per child, so it wakes when a file grows or a process ends, and at
the next supervision timer (deadline, kill backstop, watchdog, a process group still emptying). An idle child costs nothing, not even a
system call. Elsewhere, when the kernel refuses (a network file system, too many watches), or when
asked (``Hub(wakeups="poll")`` or ``FENWIRE_WAKEUPS=poll``), it polls every child each round (a
size check and a non-blocking ``waitpid`` for an idle one) and sleeps with a back-off between
rounds that bring nothing. :attr:`Hub.wakeups` says which, :attr:`Hub.wakeups_reason` why it polls.
The API is the same either way.

Three ways to take the events, blocking or from asyncio:

- ``for child, event in hub`` / ``async for child, event in hub``: one event at a time;
- :meth:`Hub.batches` / :meth:`Hub.batches_async`: ``(child, messages)``, the messages of one read
  of one child as one list: the cheap way when there are many events;
- :meth:`Hub.wait` / :meth:`Hub.wait_async`: drain until every child has finished.

All end when every child has finished. A consumer may stop at any item (``break``) and go on
later: the rest of the read comes first then, and nothing read is lost. **``child.status`` is the status after the whole read**:
a read that brings ``turn-complete`` and ``exit`` has ``child.status`` at its final value while
the ``turn-complete`` is handed over. The status at each event is not tracked; follow the events'
own types when that matters. From asyncio, waiting never spins and never blocks the loop: the
epoll descriptor is watched by the loop (``loop.add_reader``).

**Durable runs.** ``Hub(state_dir=PATH)`` keeps every run it spawns under ``PATH`` with a manifest
(:mod:`~fenwire_fast.live.parent.durable`); its children outlive the parent. :meth:`Hub.commit` records
that everything handed over so far was handled; :meth:`Hub.attach` (after a crash, or a
:meth:`Hub.detach`) takes every unfinished run up again and hands over every event after the last
commit: **at least once**, nothing committed twice, nothing lost.

Spawning many children raises the open-file soft limit as far as the hard limit allows (see
:mod:`~fenwire_fast.live.proc.limits`).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from ..proc.wakeups import KERNEL, choose
from . import roots
from .durable import Manifest, StateDir
from .hub_children import HubChildren
from .hub_drivers import KernelDriver, PollDriver
from .hub_durable import HubDurable
from .hub_rounds import HubRounds
from .spawn import LiveChild
from .tracing import resolve as resolve_trace

if TYPE_CHECKING:
    from ... import ScanBatch
    from .otel import Telemetry

__all__ = ["Hub", "Item", "Batch", "RawBatch"]

#: one event: ``(child, message)``
Item = tuple[LiveChild, dict[str, Any]]
#: one read of one child: ``(child, messages)``
Batch = tuple[LiveChild, list[dict[str, Any]]]
#: one raw read of one child: ``(child, batch)``
RawBatch = tuple[LiveChild, "ScanBatch"]


class Hub(HubRounds, HubChildren, HubDurable):
    """A set of live children drained fairly, woken by the kernel; see the module docstring.

    ``wakeups``: ``"auto"`` (the default, else ``$FENWIRE_WAKEUPS``), ``"kernel"`` (raise
    :class:`~fenwire_fast.live.proc.wakeups.WakeupsUnavailable` where it cannot work) or ``"poll"``.
    ``min_sleep`` / ``max_sleep`` are the back-off between empty rounds when polling.
    ``stall_timeout`` is the watchdog of the children :meth:`spawn` starts (unless given there):
    a running child that delivers no event for that many seconds gets ``cancel``, then the backstop.
    ``state_dir`` makes the hub durable (see the module docstring); it raises
    :class:`~fenwire_fast.live.parent.durable.StateDirBusy` when another hub holds that state dir.
    ``trace`` reports every run :meth:`spawn` starts to OpenTelemetry (spans and metrics, the
    ``otel`` extra; see :mod:`~fenwire_fast.live.parent.otel`): ``True``, a
    :class:`~fenwire_fast.live.parent.otel.Telemetry` (its own providers), ``False``, or ``None`` (on
    when ``FENWIRE_OTEL=1``); :attr:`telemetry` is what it resolved to.

    ``child.status`` is the status after the whole read that brought an event, not at that event."""

    def __init__(
        self,
        *,
        wakeups: str | None = None,
        min_sleep: float = 0.001,
        max_sleep: float = 0.03,
        stall_timeout: float | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        trace: bool | Telemetry | None = None,
    ) -> None:
        #: where the runs are traced (``None``: not traced)
        self.telemetry = resolve_trace(trace)
        self.children: list[LiveChild] = []
        #: the state dir of a durable hub (``None``: not durable)
        self.state = StateDir(state_dir) if state_dir is not None else None
        #: manifests :meth:`attach` could not take up, each with why (in words)
        self.attach_errors: list[str] = []
        self._uncommitted: dict[LiveChild, None] = {}  # durable children delivered since the last commit
        self._numbered = 0  # the highest N of a child-N run id handed out (or found in the state dir)
        if self.state is not None:  # a new child-N is not one of the runs already kept there
            try:
                self._count(m for _name, m in self.state.manifests() if isinstance(m, Manifest))
            except BaseException:
                self.state.close()
                raise
        self.stall_timeout = stall_timeout
        self.min_sleep = min_sleep
        self.max_sleep = max_sleep
        self._forced = wakeups == KERNEL
        mode, self.wakeups_reason = choose(wakeups)
        self._driver: KernelDriver | PollDriver = (
            KernelDriver() if mode == KERNEL else PollDriver(self.children, min_sleep, max_sleep)
        )
        self._unfinished: dict[LiveChild, None] = {}
        self._held: deque[tuple[LiveChild, Any]] = deque()  # read, not handed over yet
        self._brought = False  # the last round handed something over
        #: where :meth:`spawn` puts the private directories, and its lock (made on first use)
        self._root: tuple[str, int] | None = None
        roots.sweep_orphaned_roots(roots.HUB_PREFIX)  # what parents killed on this host left

    # -- rounds ---------------------------------------------------------------------------------

    def poll_batches(self) -> list[Batch]:
        """One fair round, never blocking: a bounded poll of every child with something to do;
        return ``(child, messages)`` for each that brought messages."""
        return list(self._round(False))

    def poll_raw_batches(self) -> list[RawBatch]:
        """:meth:`poll_batches` for a forwarder: ``(child, ScanBatch)`` for each batch brought."""
        return list(self._round(True))

    def raw_batches(self) -> Iterator[RawBatch]:
        """Yield ``(child, batch)`` per read until every child has finished, each ``batch`` a
        :class:`~fenwire_fast.ScanBatch` of the child's own lines as it wrote them (no dict per
        event). The supervision, status, final-text and durable rules are those of
        :meth:`batches`; a hub's children hand over either dicts or batches, not both."""
        return self._drain(True)

    def raw_batches_async(self) -> AsyncIterator[RawBatch]:
        """:meth:`raw_batches` for asyncio."""
        return self._drain_async(True)

    def poll(self) -> list[Item]:
        """One fair round (see :meth:`poll_batches`), as ``(child, event)`` pairs."""
        return [(child, m) for child, messages in self.poll_batches() for m in messages]

    def sleep(self, timeout: float | None = None) -> None:
        """Wait until a child may have something to do (a file grew, a process ended, a timer is
        due), at most ``timeout`` seconds; when polling, sleep the back-off interval instead."""
        self._driver.wait(timeout)

    async def sleep_async(self, timeout: float | None = None) -> None:
        """:meth:`sleep` for asyncio: the event loop runs other tasks meanwhile."""
        await self._driver.wait_async(timeout)

    # -- blocking -------------------------------------------------------------------------------

    def batches(self) -> Iterator[Batch]:
        """Yield ``(child, messages)`` per read until every child has finished; sleeps between."""
        return self._drain(False)

    def __iter__(self) -> Iterator[Item]:
        """Yield ``(child, event)`` as events arrive, until every child has finished."""
        durable = self.state is not None
        uncommitted = self._uncommitted
        for child, messages in self.batches():
            rest = iter(messages)
            try:
                for message in rest:
                    if durable:  # handed over one at a time: a commit counts up to this one
                        child.delivered_seq = message["seq"]
                        uncommitted[child] = None  # a commit in mid-batch let it go
                    yield child, message
            except BaseException:  # the consumer stopped: the rest of the read comes first next time
                self._hold(child, rest)
                raise

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """Drain until every child has finished; return ``{run: status}``. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            if self.poll_batches():
                continue
            if self.finished:
                break
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"{len(self.active)} children still running after {timeout} s")
            self._driver.wait(left)
        return {c.run: c.status for c in self.children}

    # -- asyncio --------------------------------------------------------------------------------

    def batches_async(self) -> AsyncIterator[Batch]:
        """:meth:`batches` for asyncio: sleeps on the kernel's wake-ups through the event loop."""
        return self._drain_async(False)

    async def stream(self) -> AsyncIterator[Item]:
        """The asyncio twin of iterating the hub: ``(child, event)`` pairs."""
        durable = self.state is not None
        uncommitted = self._uncommitted
        async for child, messages in self.batches_async():
            rest = iter(messages)
            try:
                for message in rest:
                    if durable:
                        child.delivered_seq = message["seq"]
                        uncommitted[child] = None
                    yield child, message
            except BaseException:  # as in __iter__: the rest of the read is not lost
                self._hold(child, rest)
                raise

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.stream()

    async def wait_async(self, timeout: float | None = None) -> dict[str, str]:
        """:meth:`wait` for asyncio. Raises ``TimeoutError``."""
        import asyncio

        async def drain() -> None:
            async for _ in self.batches_async():
                pass

        try:
            await asyncio.wait_for(drain(), timeout)
        except TimeoutError:
            raise TimeoutError(f"{len(self.active)} children still running after {timeout} s") from None
        return {c.run: c.status for c in self.children}
