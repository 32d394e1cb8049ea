"""A command in a pseudo-terminal, its screen kept by a terminal emulator (pyte): for the tests of
``fenwire top`` as a person runs it."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable

import pyte

__all__ = ["Pty", "GUARD"]

GUARD = 60.0  # the longest any condition below is waited for (a hang, not a timing)


class Pty:
    """``fenwire top`` in a pseudo-terminal of ``size``, its screen in pyte."""

    def __init__(self, args: list[str], size: tuple[int, int]) -> None:
        self.screen = pyte.Screen(*size)
        self.stream = pyte.ByteStream(self.screen)
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.fd, terminal = os.openpty()
        self._size(size)
        # a new process, not a fork of this one (which may run threads: a hub's, Ray's)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fenwire_fast", "top", *args],
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            env={**env, "TERM": "xterm-256color"},
            start_new_session=True,
        )
        os.close(terminal)
        self.pid = self.proc.pid

    def _size(self, size: tuple[int, int]) -> None:
        columns, lines = size
        self.screen.resize(lines, columns)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))

    def resize(self, size: tuple[int, int]) -> None:
        """The terminal is now ``size``; the command is told as a terminal tells its foreground
        process (SIGWINCH: the command has no controlling terminal to get it from)."""
        self._size(size)
        os.kill(self.pid, signal.SIGWINCH)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def until(self, check: Callable[[str], bool], what: str) -> None:
        end = time.monotonic() + GUARD
        while not check(self.text()):
            assert time.monotonic() < end, f"{what}:\n{self.text()}"
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                try:
                    self.stream.feed(os.read(self.fd, 1 << 16))
                except OSError:  # the child closed the terminal
                    return

    def send(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait(self) -> int:
        end = time.monotonic() + GUARD
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    self.stream.feed(os.read(self.fd, 1 << 16))
                except OSError:
                    pass
            code = self.proc.poll()
            if code is not None:
                os.close(self.fd)
                return code
            assert time.monotonic() < end, self.text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
