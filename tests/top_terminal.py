"""A command in a pseudo-terminal, its screen kept by a terminal emulator (pyte): for the tests of
``fenwire top`` as a person runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
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
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
        env.pop("COLUMNS")
        env.pop("LINES")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.execvpe(sys.executable, [sys.executable, "-m", "fenwire_fast", "top", *args], env)
        self.resize(size)

    def resize(self, size: tuple[int, int]) -> None:
        columns, lines = size
        self.screen.resize(lines, columns)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))  # the kernel sends SIGWINCH

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
            try:
                self.stream.feed(os.read(self.fd, 1 << 16))
            except OSError:
                pass
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            assert time.monotonic() < end, self.text()
            time.sleep(0.01)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
