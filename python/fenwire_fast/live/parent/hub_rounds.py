"""A :class:`~fenwire_fast.live.parent.hub.Hub`'s rounds: the fair reads of its children, handed
over one at a time, and the drain that repeats them until every child has finished. A base of
:class:`~fenwire_fast.live.parent.hub.Hub`.

A consumer may stop at any item: what a read brought and was not handed over yet waits in
``_held`` and comes first next time, and the children a round had not polled yet are due again
(:meth:`~fenwire_fast.live.parent.hub_drivers.KernelDriver.requeue`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import closing
from itertools import repeat
from typing import TYPE_CHECKING, Any

from .hub_drivers import KernelDriver, PollDriver

if TYPE_CHECKING:
    from .durable import StateDir
    from .spawn import LiveChild


class HubRounds:
    """The rounds of a :class:`~fenwire_fast.live.parent.hub.Hub` (a base class: the hub holds the
    state)."""

    state: StateDir | None
    _driver: KernelDriver | PollDriver
    _uncommitted: dict[LiveChild, None]
    _unfinished: dict[LiveChild, None]
    _held: deque[tuple[LiveChild, Any]]
    _brought: bool

    if TYPE_CHECKING:  # HubChildren's

        @property
        def finished(self) -> bool: ...

        def _fall_back(self, why: str) -> None: ...

    def _round(self, raw: bool) -> Generator[tuple[LiveChild, Any], None, None]:
        """One fair round, handing over each child's read as soon as it is made (so a consumer
        is done with one batch before the next is read: memory stays small and warm): ``(child,
        messages)`` per read, or with ``raw`` ``(child, batch)`` per :class:`~fenwire_fast.ScanBatch`
        (through :meth:`LiveChild.read`, with the same supervision and rules).

        A consumer may stop at any item (``break``): what it was not handed yet is not lost. The
        rest of a read waits in :attr:`_held` and comes first next time; the children not polled
        yet are due next round, as they were."""
        driver = self._driver
        if isinstance(driver, KernelDriver) and driver.broken is not None:
            self._fall_back(driver.broken)
            driver = self._driver
        self._brought = False
        if self._held:
            self._brought = True
            yield from self._hand_held(raw)
        due = iter(driver.due())
        brought = False
        durable = self.state is not None
        uncommitted = self._uncommitted
        monotonic = time.monotonic
        again = driver.again  # the children to poll next round (a dict: child -> reap)
        hot = not raw  # a plain read of dicts has a hot path; raw batches always take LiveChild.read
        try:
            for child, woken, reap in due:
                if hot and not reap:
                    # the hot path: no timer due and no process to ask about, so a plain read (only
                    # the run's own messages, none that changes the mirrored state) needs no more.
                    # LiveChild.read's accounting is made here, inline: a call per read costs ~3 %.
                    fast = child.channel.poll_hot()
                    if fast is not None:
                        if fast:
                            if child.trace is not None:
                                child.trace.observe(fast, child)
                            child.messages += len(fast)
                            child.last_event = monotonic()  # progress, for the watchdog
                            again.setdefault(child, False)  # it brought bytes: read it again next round
                            brought = True
                            if durable:
                                child.delivered_seq = fast[-1]["seq"]
                                uncommitted[child] = None
                            yield child, fast
                        else:
                            driver.polled(child, reap)
                        continue
                items, _errors = child.read(raw, woken=woken, reap=reap)
                driver.polled(child, reap)
                if child.finished:
                    self._unfinished.pop(child, None)
                    if durable:
                        uncommitted[child] = None  # a finished run is closed at the next commit
                if items:
                    brought = True
                    if durable:
                        uncommitted[child] = None
                    if not raw:
                        yield child, items
                    elif len(items) > 1:  # a commit between them counts up to the one handed over
                        self._held.extend(zip(repeat(child), items))
                        yield from self._hand_held(raw)
                    else:
                        yield child, items[0]
        except BaseException:  # the consumer stopped in mid-round: the rest are polled next round
            driver.requeue(due)
            raise
        if brought:
            self._brought = True
            driver.progress()

    def _hold(self, child: LiveChild, rest: Iterator[dict[str, Any]]) -> None:
        """Keep the messages of ``child``'s read not handed over yet, to hand them over first."""
        messages = list(rest)
        if messages:
            self._held.appendleft((child, messages))

    def _hand_held(self, raw: bool) -> Iterator[tuple[LiveChild, Any]]:
        """Hand over what :attr:`_held` keeps, one item at a time: an item is taken out as it is
        handed, so a consumer that stops leaves the rest there, in order."""
        held = self._held
        durable = self.state is not None
        while held:
            child, item = held.popleft()
            if durable:  # a commit counts up to the last item handed over
                child.delivered_seq = item.seqs[-1] if raw else item[-1]["seq"]
                self._uncommitted[child] = None
            yield child, item

    def _drain(self, raw: bool) -> Iterator[tuple[LiveChild, Any]]:
        """Rounds until every child has finished, sleeping between rounds that bring nothing."""
        while not self.finished:
            yield from self._round(raw)
            if not self._brought:
                self._driver.wait(None)

    async def _drain_async(self, raw: bool) -> AsyncIterator[tuple[LiveChild, Any]]:
        """:meth:`_drain` for asyncio: sleeps on the kernel's wake-ups through the event loop."""
        import asyncio

        while not self.finished:
            brought = False
            with closing(self._round(raw)) as round_:  # closed now if the consumer stops
                for batch in round_:
                    brought = True
                    yield batch
            if brought:
                await asyncio.sleep(0)  # a busy hub still lets other tasks run
            else:
                await self._driver.wait_async(None)
