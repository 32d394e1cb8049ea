"""Sleeping while there is nothing to do: growing intervals, reset by progress."""

from __future__ import annotations

import asyncio
import time

__all__ = ["Backoff"]


class Backoff:
    """Sleeps ``first`` seconds, then twice as long each time, up to ``cap``; :meth:`reset` after
    progress starts again from ``first``."""

    def __init__(self, first: float, cap: float) -> None:
        self.first = first
        self.cap = cap
        self.delay = first

    def reset(self) -> None:
        """Something happened: the next sleep is short again."""
        self.delay = self.first

    def _next(self) -> float:
        delay = self.delay
        self.delay = min(delay * 2, self.cap)
        return delay

    def sleep(self, limit: float | None = None) -> None:
        """Nothing happened: sleep the current interval (at most ``limit`` seconds), and grow it."""
        delay = self._next()
        time.sleep(delay if limit is None else max(min(delay, limit), 0.0))

    async def sleep_async(self, limit: float | None = None) -> None:
        """:meth:`sleep` for asyncio."""
        delay = self._next()
        await asyncio.sleep(delay if limit is None else max(min(delay, limit), 0.0))
