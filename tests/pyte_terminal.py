"""A terminal emulator (pyte) to write to: what a display draws, as a person would see it. For the
tests of ``fenwire demo`` / ``check``'s progress display and of ``fenwire top``."""

from __future__ import annotations

import io

import pyte

__all__ = ["Terminal"]


class Terminal(io.StringIO):
    """A stream that is also a screen: everything written is fed to a pyte terminal."""

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__()
        self.screen = pyte.Screen(columns, lines)
        self.feed = pyte.Stream(self.screen)

    def write(self, text: str) -> int:
        self.feed.feed(text.replace("\n", "\r\n"))  # what a tty does to output (ONLCR)
        return super().write(text)

    def isatty(self) -> bool:
        return True

    def shown(self) -> list[str]:
        """The screen's lines without trailing blanks, the blank lines at the bottom dropped."""
        lines = [line.rstrip() for line in self.screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return lines
