"""A named fleet's driver as what a forwarder drains.

A :class:`~fenwire_fast.forward.source.Source` is what :class:`~fenwire_fast.forward.Forwarder`
needs of the thing it drains: raw batches, whether everything has finished, a commit of given seqs,
and a sleep. :class:`FleetSource` makes a named fleet's driver one (``fenwire forward --fleet NAME``): its raw batches come through the driver,
and a commit of given seqs is ``Fleet.commit`` with each child's handed seq set to what the stream
stored, so a driver killed and attached again forwards from there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..live.fleet.driver import Fleet

__all__ = ["FleetSource"]


class FleetSource:
    """A named fleet's driver as a :class:`Source` (see the module docstring)."""

    #: how long a look at the nodes waits for an answer, in a thread (seconds)
    LOOK = 0.05

    def __init__(self, fleet: Fleet) -> None:
        if fleet.name is None:
            raise ValueError("a fleet is forwarded from its driver only when it is named: Fleet(name=...)")
        if fleet.forward is not None:
            raise ValueError(f"the nodes of fleet {fleet.name!r} forward its lines themselves")
        self.fleet = fleet
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="fenwire-forward-look")
        self._look: Future[list[tuple[Any, Any]]] | None = None  # a wait for answers, in the thread

    @property
    def finished(self) -> bool:
        """Every run of the fleet has finished, and every answer taken was handed on. (A child is
        finished once its final status came, in the answer that brought its last lines: a wait
        still running in the thread can bring nothing more of it.)"""
        if not self.fleet.finished:
            return False
        look = self._look
        return look is None or not look.done() or not look.result()

    @property
    def state(self) -> object:
        """A named fleet is durable: the forwarder commits."""
        return self.fleet.name

    def poll_raw_batches(self) -> list[tuple[Any, Any]]:
        """What the last wait brought, else the answers ready now (never while a wait in a thread
        still runs: the driver is used by one thread at a time)."""
        look = self._look
        if look is not None:
            if not look.done():
                return []
            self._look = None
            return look.result()
        return self.fleet.poll_raw_batches(timeout=0.0)

    def commit_at(self, seqs: Mapping[Any, int]) -> int:
        """Commit each child of ``seqs`` up to its seq, and no other further than it was (after the
        wait in the thread, if one runs: the driver is used by one thread at a time)."""
        if self._look is not None:
            self._look.exception()  # blocks until it is done (at most LOOK and one Ray answer)
        for child in self.fleet.children:
            child.handed = min(child.handed, seqs[child]) if child in seqs else child.committed
        return self.fleet.commit()

    async def sleep_async(self, timeout: float | None = None) -> None:
        """Wait for the nodes' next answer (in a thread: the event loop goes on), at most
        ``timeout`` seconds; what it brings is handed over by the next :meth:`poll_raw_batches`."""
        if self._look is None:
            self._look = self._thread.submit(self.fleet.poll_raw_batches, self.LOOK)
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._look)), timeout)
        except TimeoutError:
            pass

    def close(self) -> None:
        """End the thread (after the wait that runs, if one does)."""
        self._thread.shutdown(wait=True)
