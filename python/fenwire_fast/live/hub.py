"""Many live children in one parent.

A :class:`Hub` polls its children round-robin: each tick gives every unfinished child one bounded
read (its channel's ``max_bytes``, 64 KiB by default) so a chatty child cannot starve the others,
and the starting child rotates from tick to tick. An idle child costs a size check (``fstat``) and
a non-blocking ``waitpid`` per tick, never a read. Each poll also runs the child's kill backstop.

Use it blocking (``for child, event in hub: ...``) or from asyncio
(``async for child, event in hub: ...``); both end when every child has finished. When a tick
brings nothing, the hub sleeps, starting at ``min_sleep`` and doubling up to ``max_sleep``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .backoff import Backoff
from .spawn import LiveChild, spawn

__all__ = ["Hub"]

Item = tuple[LiveChild, dict[str, Any]]


class Hub:
    """A set of live children drained fairly; see the module docstring."""

    def __init__(self, *, min_sleep: float = 0.001, max_sleep: float = 0.03) -> None:
        self.children: list[LiveChild] = []
        self.min_sleep = min_sleep
        self.max_sleep = max_sleep
        self._next = 0

    def backoff(self) -> Backoff:
        """The sleep between ticks that bring nothing: ``min_sleep`` doubling up to ``max_sleep``."""
        return Backoff(self.min_sleep, self.max_sleep)

    def add(self, child: LiveChild) -> LiveChild:
        """Adopt a child started elsewhere."""
        self.children.append(child)
        return child

    def spawn(self, prompt: str | None = None, *, run: str | None = None, **kwargs: Any) -> LiveChild:
        """:func:`~fenwire_fast.live.spawn.spawn` a child (``run`` defaults to ``child-N``) and adopt it."""
        name = run if run is not None else f"child-{len(self.children) + 1}"
        return self.add(spawn(prompt, run=name, **kwargs))

    @property
    def active(self) -> list[LiveChild]:
        """Children that have not finished yet."""
        return [c for c in self.children if not c.finished]

    @property
    def finished(self) -> bool:
        """Every child has finished."""
        return all(c.finished for c in self.children)

    def poll(self) -> list[Item]:
        """One fair tick: one bounded poll of every unfinished child; return ``(child, event)`` pairs."""
        children = self.children
        count = len(children)
        out: list[Item] = []
        if not count:
            return out
        start = self._next % count
        self._next = start + 1
        for i in range(count):
            child = children[(start + i) % count]
            if child.finished:
                continue
            messages, _errors = child.poll()
            if messages:
                out.extend((child, m) for m in messages)
        return out

    def __iter__(self) -> Iterator[Item]:
        """Yield ``(child, event)`` as events arrive, until every child has finished."""
        backoff = self.backoff()
        while not self.finished:
            batch = self.poll()
            if batch:
                backoff.reset()
                yield from batch
            else:
                backoff.sleep()

    async def stream(self) -> AsyncIterator[Item]:
        """The asyncio twin of iterating the hub: polls between ``await asyncio.sleep`` calls."""
        backoff = self.backoff()
        while not self.finished:
            batch = self.poll()
            if batch:
                backoff.reset()
                for item in batch:
                    yield item
                await asyncio.sleep(0)
            else:
                await backoff.sleep_async()

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.stream()

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """Drain until every child has finished; return ``{run: status}``. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        backoff = self.backoff()
        while not self.finished:
            if end is not None and time.monotonic() >= end:
                raise TimeoutError(f"{len(self.active)} children still running after {timeout} s")
            if self.poll():
                backoff.reset()
            else:
                backoff.sleep()
        return {c.run: c.status for c in self.children}

    async def wait_async(self, timeout: float | None = None) -> dict[str, str]:
        """:meth:`wait` for asyncio."""

        async def drain() -> None:
            async for _ in self.stream():
                pass

        await asyncio.wait_for(drain(), timeout)
        return {c.run: c.status for c in self.children}

    def close(self) -> None:
        """Kill what still runs, reap every process and remove the private directories."""
        for child in self.children:
            child.cleanup()

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
