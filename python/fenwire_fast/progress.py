"""A progress display for the command line (``fenwire check``, ``fenwire demo``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import IO

__all__ = ["Progress"]


class Progress:
    """Progress rows on ``stream``, shown at most once per ``interval`` seconds.

    ``live``: the rows are redrawn in place (a terminal); otherwise, with ``plain``, the first row
    is written as a line of its own each time; with neither, nothing is shown."""

    def __init__(self, stream: IO[str], *, live: bool, plain: bool = False, interval: float = 0.2) -> None:
        self.stream = stream
        self.live = live
        self.plain = plain
        self.interval = interval
        self.started = time.monotonic()
        self._last = 0.0
        self._rows_shown = 0

    @property
    def enabled(self) -> bool:
        """Something is shown at all."""
        return self.live or self.plain

    def elapsed(self) -> float:
        """Seconds since the display was made (never zero)."""
        return max(time.monotonic() - self.started, 1e-9)

    def due(self, force: bool = False) -> bool:
        """Whether to show now: enabled, and ``interval`` seconds since the last time (or ``force``).
        A ``True`` answer counts as showing."""
        if not self.enabled:
            return False
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return False
        self._last = now
        return True

    def show(self, rows: Sequence[str]) -> None:
        """Draw ``rows`` over the previous ones (live), or write the first as a line (plain)."""
        if self.live:
            text = f"\x1b[{self._rows_shown}F" if self._rows_shown else ""
            text += "".join(f"\x1b[2K{row}\n" for row in rows)
            self.stream.write(text)
            self.stream.flush()
            self._rows_shown = len(rows)
        elif self.plain and rows:
            self.stream.write(rows[0] + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the rows drawn in place, leaving the cursor where they began."""
        if self._rows_shown:
            self.stream.write(f"\x1b[{self._rows_shown}F\x1b[J")
            self.stream.flush()
            self._rows_shown = 0
