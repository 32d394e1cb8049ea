"""The ways to take a fleet's events, as a local hub's: :class:`FleetEvents`, a base of
:class:`~fenwire_fast.live.fleet.Fleet`, on top of its one way to wait for an answer (``_poll``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ... import ScanBatch
from .child import Batch, FleetChild, Item, RawBatch
from .node import HOLD

__all__ = ["FleetEvents"]


class FleetEvents:
    """``for child, event in fleet``, ``async for``, :meth:`batches`, :meth:`raw_batches` and
    :meth:`wait`: each waits for the nodes' answers through ``_poll``, until every child has finished.

    A consumer may stop at any item (``break``) and go on later: what an answer brought and was not
    handed over yet waits in ``_held`` and comes first then. A child's ``handed`` seq (what
    ``Fleet.commit`` commits) is its last event handed over, one event at a time when the events
    are taken one at a time, so a commit in the middle of a batch leaves its rest uncommitted."""

    children: list[FleetChild]
    _held: deque[tuple[FleetChild, Any]]

    def _poll(self, timeout: float | None, raw: bool) -> list[Any]:
        """The answers ready within ``timeout`` seconds, as ``(child, messages)`` pairs, or with
        ``raw`` ``(child, ScanBatch)`` pairs."""
        raise NotImplementedError

    def _from_held(self, timeout: float | None, raw: bool) -> list[Any]:
        """What a stopped consumer left, else the answers ready within ``timeout`` seconds."""
        if self._held:
            pairs = list(self._held)
            self._held.clear()
            return pairs
        return self._poll(timeout, raw)

    def poll_batches(self, timeout: float | None = 0.0) -> list[Batch]:
        """The answers ready within ``timeout`` seconds (``None``: wait for one), as
        ``(child, messages)`` pairs."""
        return _handed(self._from_held(timeout, False))

    def poll_raw_batches(self, timeout: float | None = 0.0) -> list[RawBatch]:
        """:meth:`poll_batches` for a forwarder: ``(child, ScanBatch)`` pairs, the child's lines
        as it wrote them (checked on its node, and again here with no dict made)."""
        return _handed(self._from_held(timeout, True))

    @property
    def finished(self) -> bool:
        """Every child has finished (or was lost with its node), and every event taken from the
        nodes has been handed over."""
        return not self._held and all(c.finished for c in self.children)

    @property
    def active(self) -> list[FleetChild]:
        """The children not finished yet."""
        return [c for c in self.children if not c.finished]

    def _pairs(self, raw: bool) -> Iterator[tuple[FleetChild, Any]]:
        """``(child, items)`` one pair at a time until every child has finished; a pair is taken
        out of ``_held`` as it is handed over, so a consumer that stops leaves the rest there."""
        held = self._held
        while not self.finished:
            if not held:
                held.extend(self._poll(HOLD, raw))
            while held:
                child, items = held.popleft()
                if len(items):
                    child.handed = items.seqs[-1] if raw else items[-1]["seq"]
                yield child, items

    def raw_batches(self) -> Iterator[RawBatch]:
        """Yield ``(child, ScanBatch)`` until every child has finished."""
        return self._pairs(True)

    def batches(self) -> Iterator[Batch]:
        """Yield ``(child, messages)`` until every child has finished."""
        return self._pairs(False)

    def __iter__(self) -> Iterator[Item]:
        for child, messages in self._pairs(False):
            yield from self._one_by_one(child, messages)

    def _one_by_one(self, child: FleetChild, messages: list[dict[str, Any]]) -> Iterator[Item]:
        """``messages`` one at a time, ``handed`` moving with each; a stop keeps the rest."""
        if messages:
            child.handed = messages[0]["seq"] - 1
        rest = iter(messages)
        try:
            for message in rest:
                child.handed = message["seq"]
                yield child, message
        except BaseException:
            left = list(rest)
            if left:
                self._held.appendleft((child, left))
            raise

    async def batches_async(self) -> AsyncIterator[Batch]:
        """:meth:`batches` for asyncio (the wait runs in a thread; the loop goes on)."""
        held = self._held
        while not self.finished:
            if not held:
                held.extend(await asyncio.to_thread(self._poll, HOLD, False))
            while held:
                child, messages = held.popleft()
                if messages:
                    child.handed = messages[-1]["seq"]
                yield child, messages

    async def stream(self) -> AsyncIterator[Item]:
        """``(child, event)`` one event at a time, for asyncio: what ``async for`` takes."""
        async for child, messages in self.batches_async():
            for item in self._one_by_one(child, messages):
                yield item

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.stream()

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """Drain until every child has finished; return ``{run: status}``. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"{len(self.active)} children still running after {timeout} s")
            _handed(self._from_held(HOLD, True))  # nothing is decoded for a caller that only waits
        return {c.run: c.status for c in self.children}


def _handed(pairs: list[Any]) -> list[Any]:
    """``pairs`` (``(child, messages)`` or ``(child, ScanBatch)``), each child's last seq taken as
    handed over (what ``Fleet.commit`` commits)."""
    for child, items in pairs:
        if len(items):
            child.handed = items.seqs[-1] if isinstance(items, ScanBatch) else items[-1]["seq"]
    return pairs
