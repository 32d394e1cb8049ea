"""How a :class:`~fenwire_fast.live.parent.hub.Hub` learns which children to poll, and how it sleeps.

Both drivers hand out fair rounds: :meth:`due` lists the children to poll now, each with how
(``woken``: the kernel said the event file grew; ``reap``: ask about the process and run the
timers), starting one child further each round so that no child is always first.

- :class:`KernelDriver` polls only the children the kernel woke (inotify: the event file grew; a
  pidfd: the process ended), the **hot** ones (their last read brought bytes, so they are read
  again next round without a watch; a first read that comes back empty keeps the child for one
  more read, and a second one in a row re-arms the watch, then the file's size is checked once
  more, so a write between that read and the re-arm is not lost), and
  those whose supervision timer (deadline, kill backstop) is due, and every round a child whose
  process ended with its event file not read to the end yet (:attr:`LiveChild.draining`: one bounded
  read a round, as while it ran, whatever the kernel says). It sleeps in ``epoll_wait`` until
  one of these: an idle child costs nothing, however many there are, and a busy child costs a
  read per round rather than an ``inotify_add_watch`` per read.
- :class:`PollDriver` polls every unfinished child each round (a size check and a non-blocking
  ``waitpid`` for an idle one) and sleeps with a back-off between rounds that bring nothing (but
  not while a child is :attr:`~LiveChild.draining`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from bisect import bisect_left
from collections.abc import Iterable
from operator import not_

from ..proc.backoff import Backoff
from ..proc.wakeups import KERNEL, POLL, KernelWakeups
from .spawn import LiveChild

__all__ = ["Due", "PollDriver", "KernelDriver"]

#: ``(child, woken, reap)``: a child to poll now, and how
Due = tuple[LiveChild, bool, bool]


def _rotate(children: list[LiveChild], start: int) -> list[LiveChild]:
    return children[start:] + children[:start] if start else children


class PollDriver:
    """Every unfinished child, every round; a back-off sleep between empty rounds."""

    mode = POLL

    def __init__(self, children: list[LiveChild], min_sleep: float, max_sleep: float) -> None:
        self._children = children  # the hub's own list
        self._next = 0
        self._backoff = Backoff(min_sleep, max_sleep)
        self._draining = False  # a child polled this round is draining: do not sleep

    def add(self, child: LiveChild, index: int) -> None:
        """A child joined the hub (it is in the hub's list already)."""

    def due(self) -> list[Due]:
        """Every unfinished child, starting one further than last round."""
        children = self._children
        count = len(children)
        self._draining = False
        if not count:
            return []
        start = self._next % count
        self._next = start + 1
        return [(c, False, True) for c in _rotate(children, start) if not c.finished]

    def polled(self, child: LiveChild, reap: bool) -> None:
        """A child was polled (every child is polled every round): note one that is draining."""
        if child.draining:
            self._draining = True

    @property
    def again(self) -> dict[LiveChild, bool]:
        """Children to poll next round besides the usual (none: every child is polled anyway)."""
        return {}

    def requeue(self, due: Iterable[Due]) -> None:
        """Children :meth:`due` listed but not polled: nothing to do, every round polls them all."""

    def progress(self) -> None:
        """A round brought something: the next sleep is short again."""
        self._backoff.reset()

    def wait(self, timeout: float | None) -> None:
        """Sleep the back-off interval (at most ``timeout``); not at all while a child is draining."""
        if not self._draining:
            self._backoff.sleep(timeout)

    async def wait_async(self, timeout: float | None) -> None:
        """:meth:`wait` for asyncio."""
        if self._draining:
            await asyncio.sleep(0)
        else:
            await self._backoff.sleep_async(timeout)

    def close(self) -> None:
        """Nothing to release."""


class KernelDriver:
    """The children the kernel woke, the hot ones (last read brought bytes), and those with a
    timer due."""

    mode = KERNEL

    def __init__(self) -> None:
        self._wakeups: KernelWakeups[LiveChild] = KernelWakeups()
        self._index: dict[LiveChild, int] = {}
        self._ready: dict[LiveChild, bool] = {}  # child -> reap
        self._timers: list[tuple[float, int, LiveChild]] = []
        self._order = itertools.count()
        self._next = 0
        self._count = 0  # one past the highest hub index
        self._rounds = 0  # rounds handed out
        self._cooled: dict[LiveChild, int] = {}  # child -> the round of its last empty read

    def add(self, child: LiveChild, index: int) -> None:
        """Watch the child's event file and process. Raises ``OSError`` when the kernel refuses."""
        fd = child.channel.event_fd  # the file the channel reads, whatever becomes of its name
        self._wakeups.watch_file(child, child.event_path if fd is None else f"/proc/self/fd/{fd}")
        if child.process.returncode is None:  # reaped already: no pidfd, the first round finds it
            try:
                self._wakeups.watch_process(child, child.pid, getattr(child.process, "pidfd", None))
            except BaseException:
                self._wakeups.forget(child)
                raise
        self._index[child] = index
        self._count = max(self._count, index + 1)
        child.on_timer = self._timer
        self._ready[child] = True  # whatever it wrote before the watch began, and its timers
        self._timer(child)

    def _timer(self, child: LiveChild) -> None:
        when = child.next_timer()
        if when is not None:
            heapq.heappush(self._timers, (when, next(self._order), child))

    def _collect(self, timeout: float | None) -> None:
        grown, ended, overflow = self._wakeups.collect(timeout)
        ready = self._ready
        for child in grown:
            if child not in ready:
                ready[child] = False
        for child in ended:
            ready[child] = True
        if overflow:  # the kernel lost events: look at everyone once
            for child in self._index:
                if not child.finished:
                    ready[child] = True
        timers = self._timers
        if timers and timers[0][0] <= time.monotonic():
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                child = heapq.heappop(timers)[2]
                if not child.finished:
                    ready[child] = True

    def due(self) -> list[Due]:
        """The ready children, in hub order, starting one further than last round."""
        self._collect(0)
        if not self._ready:
            return []
        self._rounds += 1
        ready = self._ready.copy()
        self._ready.clear()  # the same dict stays: see `again`
        index = self._index
        if len(ready) == 1:
            child, reap = next(iter(ready.items()))
            self._next = index[child] + 1
            return [(child, not reap, reap)]
        order = sorted(ready, key=index.__getitem__)
        start = bisect_left(list(map(index.__getitem__, order)), self._next % self._count)
        start %= len(order)
        self._next = index[order[start]] + 1
        order = _rotate(order, start)
        reaps = list(map(ready.__getitem__, order))
        return list(zip(order, map(not_, reaps), reaps, strict=True))  # at C speed: no bytecode per child

    @property
    def again(self) -> dict[LiveChild, bool]:
        """The children to poll next round so far (``child -> reap``): a caller that polled a
        child itself and knows it is hot (its read brought bytes) and has no timer to re-arm may
        put it here with ``reap=False`` (``setdefault``, so a ``True`` stays) instead of calling
        :meth:`polled`. The same dict for the driver's whole life."""
        return self._ready

    def requeue(self, due: Iterable[Due]) -> None:
        """Children :meth:`due` listed but not polled (the hub's consumer stopped in mid-round):
        due next round, as they were (their process end or timer is not lost with the round)."""
        ready = self._ready
        for child, _woken, reap in due:
            ready[child] = ready.get(child, False) or reap

    def polled(self, child: LiveChild, reap: bool) -> None:
        """After a poll: forget a finished child, keep a hot one (more to read, or its read
        brought bytes) for the next round, re-arm the watch of one that caught up, re-arm timers."""
        if child.finished:
            self._wakeups.forget(child)
            self._cooled.pop(child, None)
            child.on_timer = None
            return
        if child.draining:
            self._ready[child] = True  # its process ended with its file unread: a read every round
            return
        wakeups = self._wakeups
        channel = child.channel
        if channel.hot:
            # hot: read it again next round without a watch (re-arming costs more than a read)
            self._ready.setdefault(child, False)
        elif not wakeups.armed(child) and self._cooled.pop(child, -1) != self._rounds - 1:
            # the first empty read after bytes: one more read next round before the watch (a
            # busy child has usually written again by then, and a read costs less than a re-arm)
            self._cooled[child] = self._rounds
            self._ready.setdefault(child, False)
        elif not wakeups.armed(child) and wakeups.rearm(child) and channel.pending():
            self._ready.setdefault(child, False)  # written between the last read and the re-arm
        if reap:
            self._timer(child)

    @property
    def broken(self) -> str | None:
        """Why the kernel can no longer be trusted to wake the hub (then it must poll)."""
        return self._wakeups.broken

    def progress(self) -> None:
        """Nothing to reset: the kernel says when to wake."""

    def _timeout(self, timeout: float | None) -> float | None:
        if self._ready:
            return 0.0
        if self._timers:
            until = max(self._timers[0][0] - time.monotonic(), 0.0)
            timeout = until if timeout is None else min(timeout, until)
        return timeout

    def wait(self, timeout: float | None) -> None:
        """Sleep in the kernel until a file grows, a process ends, a timer is due or ``timeout``."""
        wait = self._timeout(timeout)
        if wait != 0.0:
            self._collect(wait)

    async def wait_async(self, timeout: float | None) -> None:
        """:meth:`wait` for asyncio: the epoll descriptor is watched by the event loop."""
        wait = self._timeout(timeout)
        if wait == 0.0:
            return
        loop = asyncio.get_running_loop()
        woke: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not woke.done():
                woke.set_result(None)

        fd = self._wakeups.fileno()
        loop.add_reader(fd, wake)
        timer = loop.call_later(wait, wake) if wait is not None else None
        try:
            await woke
        finally:
            loop.remove_reader(fd)
            if timer is not None:
                timer.cancel()
        self._collect(0)

    def children(self) -> Iterable[LiveChild]:
        """The children watched."""
        return list(self._index)

    def close(self) -> None:
        """Close the epoll, the inotify descriptor and every pidfd."""
        for child in self._index:
            child.on_timer = None
        self._wakeups.close()
