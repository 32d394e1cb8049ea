"""The live loop of ``fenwire top``: look, draw, wait for a key, the interval or a resize.

Drawing goes through :class:`~fenwire_fast.cli.progress.Progress` (rich's live display: each
line cut to the terminal's width, never more lines than it has rows, each frame erasing the last).
Keys are read one at a time from a terminal in cbreak mode (restored on the way out): ``q`` quits,
``s`` moves to the next order, ``f`` to the next status filter. A resize (``SIGWINCH``) redraws at
once, at the new size.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Iterator
from typing import IO, Any, Protocol

from ..progress import Progress
from .rows import SORTS, TopRow, filter_rows, sort_rows, totals
from .view import render

__all__ = ["Source", "TopScreen", "FILTERS"]

#: what ``f`` steps through (the first: no filter)
FILTERS: tuple[tuple[str, ...], ...] = ((), ("active",), ("stalled",), ("running",), ("failed",), ("done",))


class Source(Protocol):
    """What ``fenwire top`` looks at: a state dir or a named fleet."""

    title: str

    def look(self) -> list[TopRow]: ...

    def close(self) -> None: ...


class TopScreen:
    """``source``'s runs on ``out``, redrawn every ``interval`` seconds; ``size`` fixes the
    terminal's ``(columns, lines)`` (by default it is read from the terminal at every frame)."""

    def __init__(
        self,
        source: Source,
        out: IO[str],
        *,
        interval: float = 1.0,
        sort: str = "status",
        statuses: tuple[str, ...] = (),
        size: tuple[int, int] | None = None,
    ) -> None:
        self.source = source
        self.interval = interval
        self.sort = sort
        self.statuses = statuses
        self.display = Progress(out, live=True, interval=0.0, size=size)
        self.failure: str | None = None  # why the last look failed (shown in the head)
        self.rows: list[TopRow] = []

    def frame(self) -> list[str]:
        """Look at the source and return the screen's lines (a failed look keeps the last rows
        and says why on the first line)."""
        try:
            self.rows = self.source.look()
            self.failure = None
        except Exception as exc:  # noqa: BLE001 - a state dir removed or a node lost mid-run: said, not raised
            self.failure = f"cannot look at {self.source.title}: {getattr(exc, 'strerror', None) or exc}"
        shown = sort_rows(filter_rows(self.rows, self.statuses), self.sort)
        lines = render(
            shown,
            totals(self.rows),
            self.display.size(),
            title=self.source.title,
            sort=self.sort,
            statuses=self.statuses,
        )
        if self.failure is not None:
            lines[0] = self.failure[: self.display.size()[0]]
        return lines

    def draw(self) -> None:
        """One frame on the screen."""
        self.display.show(self.frame())

    def resize(self, size: tuple[int, int]) -> None:
        """The terminal is now ``size`` (for a caller that fixed the size)."""
        self.display.resize(size)

    def key(self, char: str) -> bool:
        """Act on a key; return ``False`` to quit."""
        if char in ("q", "Q", "\x03", "\x04"):
            return False
        if char == "s":
            names = list(SORTS)
            self.sort = names[(names.index(self.sort) + 1) % len(names)]
        elif char == "f":
            at = FILTERS.index(self.statuses) if self.statuses in FILTERS else -1
            self.statuses = FILTERS[(at + 1) % len(FILTERS)]
        return True

    def run(self, keys: IO[str] | None = None) -> None:
        """Draw until ``q`` (or Ctrl-C); ``keys``: the terminal to read keys from (``None``: none)."""
        with _cbreak(keys) as reader, _resize_wakeup() as woken:
            try:
                while True:
                    self.draw()
                    for char in _wait(reader, woken, self.interval):
                        if not self.key(char):
                            return
            except KeyboardInterrupt:
                return
            finally:
                self.display.clear()


def _wait(keys: int | None, woken: int, timeout: float) -> list[str]:
    """Wait for a key on descriptor ``keys``, a resize or ``timeout``; the keys read."""
    fds = [woken] if keys is None else [woken, keys]
    ready, _, _ = select.select(fds, [], [], timeout)
    if woken in ready:
        with contextlib.suppress(OSError):
            os.read(woken, 512)
    if keys is not None and keys in ready:
        return list(os.read(keys, 64).decode("utf-8", "replace"))
    return []


@contextlib.contextmanager
def _cbreak(keys: IO[str] | None) -> Iterator[int | None]:
    """The descriptor of ``keys`` (a terminal) in cbreak mode, its mode restored after; ``None``
    when there is no terminal to read keys from."""
    if keys is None or not keys.isatty():
        yield None
        return
    import termios
    import tty

    fd = keys.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield fd
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@contextlib.contextmanager
def _resize_wakeup() -> Iterator[int]:
    """A descriptor that becomes readable when the terminal is resized (``SIGWINCH``)."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous: Any = signal.signal(signal.SIGWINCH, lambda *_: _poke(write))
    try:
        yield read
    finally:
        signal.signal(signal.SIGWINCH, previous)
        os.close(read)
        os.close(write)


def _poke(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, b"!")
