"""The ways to take a fleet's events, as a local hub's: :class:`FleetEvents`, a base of
:class:`~fenwire_fast.live.fleet.Fleet`, on top of its one way to wait for an answer (``_poll``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ... import ScanBatch
from .child import Batch, FleetChild, Item, RawBatch
from .node import HOLD

__all__ = ["FleetEvents"]


class FleetEvents:
    """``for child, event in fleet``, ``async for``, :meth:`batches`, :meth:`raw_batches` and
    :meth:`wait`: each waits for the nodes' answers through ``_poll``, until every child has finished."""

    children: list[FleetChild]

    def _poll(self, timeout: float | None, raw: bool) -> list[Any]:
        """The answers ready within ``timeout`` seconds, as ``(child, messages)`` pairs, or with
        ``raw`` ``(child, ScanBatch)`` pairs."""
        raise NotImplementedError

    def poll_batches(self, timeout: float | None = 0.0) -> list[Batch]:
        """The answers ready within ``timeout`` seconds (``None``: wait for one), as
        ``(child, messages)`` pairs."""
        return _handed(self._poll(timeout, False))

    def poll_raw_batches(self, timeout: float | None = 0.0) -> list[RawBatch]:
        """:meth:`poll_batches` for a forwarder: ``(child, ScanBatch)`` pairs, the child's lines
        as it wrote them (checked on its node, and again here with no dict made)."""
        return _handed(self._poll(timeout, True))

    @property
    def finished(self) -> bool:
        """Every child has finished (or was lost with its node)."""
        return all(c.finished for c in self.children)

    @property
    def active(self) -> list[FleetChild]:
        """The children not finished yet."""
        return [c for c in self.children if not c.finished]

    def raw_batches(self) -> Iterator[RawBatch]:
        """Yield ``(child, ScanBatch)`` until every child has finished."""
        while not self.finished:
            for child, batch in self._poll(HOLD, True):
                if len(batch):
                    child.handed = batch.seqs[-1]
                yield child, batch

    def batches(self) -> Iterator[Batch]:
        """Yield ``(child, messages)`` until every child has finished."""
        while not self.finished:
            for child, messages in self._poll(HOLD, False):
                if messages:
                    child.handed = messages[-1]["seq"]
                yield child, messages

    def __iter__(self) -> Iterator[Item]:
        for child, messages in self.batches():
            for message in messages:
                yield child, message

    async def batches_async(self) -> AsyncIterator[Batch]:
        """:meth:`batches` for asyncio (the wait runs in a thread; the loop goes on)."""
        while not self.finished:
            for child, messages in await asyncio.to_thread(self._poll, HOLD, False):
                if messages:
                    child.handed = messages[-1]["seq"]
                yield child, messages

    async def stream(self) -> AsyncIterator[Item]:
        """``(child, event)`` one event at a time, for asyncio: what ``async for`` takes."""
        async for child, messages in self.batches_async():
            for message in messages:
                yield child, message

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.stream()

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """Drain until every child has finished; return ``{run: status}``. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"{len(self.active)} children still running after {timeout} s")
            _handed(self._poll(HOLD, True))  # nothing is decoded for a caller that only waits
        return {c.run: c.status for c in self.children}


def _handed(pairs: list[Any]) -> list[Any]:
    """``pairs`` (``(child, messages)`` or ``(child, ScanBatch)``), each child's last seq taken as
    handed over (what ``Fleet.commit`` commits)."""
    for child, items in pairs:
        if len(items):
            child.handed = items.seqs[-1] if isinstance(items, ScanBatch) else items[-1]["seq"]
    return pairs
