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

    def sleep(self) -> None:
        """Nothing happened: sleep the current interval, and grow it."""
        time.sleep(self._next())

    async def sleep_async(self) -> None:
        """:meth:`sleep` for asyncio."""
        await asyncio.sleep(self._next())
