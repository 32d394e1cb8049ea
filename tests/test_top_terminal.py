"""``fenwire top`` as a person runs it: the command in a pseudo-terminal, its output fed to a
terminal emulator (pyte). It draws, follows a resize of the terminal, changes its order on ``s``,
and quits on ``q`` with a clean screen and exit status 0."""

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
from pathlib import Path

import pyte
import pytest
from top_state import make_state

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


@pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")
def test_top_in_a_terminal(tmp_path: Path) -> None:
    make_state(tmp_path, 64)
    term = Pty([str(tmp_path), "--interval", "0.2"], (80, 24))
    try:
        term.until(lambda t: "fenwire top  64 runs" in t and "RUN" in t, "the first frame")
        assert all(len(line) <= 80 for line in term.text().splitlines())
        assert " PID" not in term.text()  # cut at 80 columns
        term.resize((140, 40))
        term.until(lambda t: " PID" in t and "more runs" in t, "a frame at the new size")
        term.send(b"s")
        term.until(lambda t: "sort rate" in t, "the next order")
        term.send(b"f")
        term.until(lambda t: "filter active" in t, "the next filter")
        term.send(b"q")
        assert term.wait() == 0
        assert "Traceback" not in term.text()
        assert "RUN" not in term.text()  # the frame is erased on the way out
    finally:
        term.kill()
