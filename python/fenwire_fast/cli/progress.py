"""A progress display for the command line (``fenwire check``, ``fenwire demo``).

On a terminal the rows are drawn in place by `rich <https://github.com/Textualize/rich>`_'s live
display: every row is cut to the terminal's width (never wrapped), there are never more rows than
the terminal has lines, each redraw erases what the last one drew, and :meth:`Progress.clear`
leaves a clean screen. Off a terminal, a plain line is written now and then instead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Progress"]


class Progress:
    """Progress rows on ``stream``, shown at most once per ``interval`` seconds.

    ``live``: the rows are redrawn in place (a terminal); otherwise, with ``plain``, the first row
    is written as a line of its own each time; with neither, nothing is shown. ``size`` fixes the
    terminal's ``(columns, lines)`` (by default they are read from the terminal)."""

    def __init__(
        self,
        stream: IO[str],
        *,
        live: bool,
        plain: bool = False,
        interval: float = 0.2,
        size: tuple[int, int] | None = None,
    ) -> None:
        self.stream = stream
        self.live = live
        self.plain = plain
        self.interval = interval
        self.started = time.monotonic()
        self._last = 0.0
        self._fixed_size = size
        self._console: Console | None = None
        self._display: Any = None  # a rich.live.Live while rows are on the screen

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

    def _terminal(self) -> Console:
        if self._console is None:
            from rich.console import Console

            width, height = self._fixed_size or (None, None)
            self._console = Console(
                file=self.stream, force_terminal=True, width=width, height=height, highlight=False, markup=False
            )
        return self._console

    def size(self) -> tuple[int, int]:
        """The terminal's ``(columns, lines)`` (80 x 24 when it cannot be told)."""
        if self._fixed_size is not None:
            return self._fixed_size
        if not self.live:
            return (80, 24)
        width, height = self._terminal().size
        return (max(width, 1), max(height, 1))

    def resize(self, size: tuple[int, int]) -> None:
        """The terminal is now ``size`` ``(columns, lines)`` (for a display made with a fixed size)."""
        self._fixed_size = size
        if self._console is not None:
            self._console.size = size

    def rows_available(self) -> int:
        """How many rows :meth:`show` can draw: one line of the terminal is kept free."""
        return max(1, self.size()[1] - 1)

    def show(self, rows: Sequence[str]) -> None:
        """Draw ``rows`` over the previous ones (live), or write the first as a line (plain)."""
        if self.live:
            from rich.live import Live
            from rich.text import Text

            shown = Text("\n".join(rows[: self.rows_available()]), no_wrap=True, overflow="ellipsis")
            if self._display is None:
                self._display = Live(
                    shown,
                    console=self._terminal(),
                    auto_refresh=False,
                    transient=True,
                    redirect_stdout=False,
                    redirect_stderr=False,
                    vertical_overflow="crop",
                )
                self._display.start(refresh=True)
            else:
                self._display.update(shown, refresh=True)
        elif self.plain and rows:
            self.stream.write(rows[0] + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the rows drawn in place, leaving the cursor where they began."""
        if self._display is not None:
            self._display.stop()
            self._display = None
            self.stream.flush()
