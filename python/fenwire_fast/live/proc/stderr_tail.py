"""A subprocess's stderr, passed on and remembered: :class:`StderrTail` copies what the process
writes there to this process's stderr as it comes (its first :data:`PASS_ON_CAP` bytes: a process
that writes without end must not fill the disk with the run's log), and keeps the last few KiB, so
that an error about the process can end with the last thing it said (a missing API key, a crash's
last line)."""

from __future__ import annotations

import os
import threading
from typing import IO

__all__ = ["StderrTail", "KEEP", "LAST_LINE_CHARS", "PASS_ON_CAP"]

#: how many of the last bytes written are kept
KEEP = 4096
#: how many bytes are passed on, at most; the rest is read (so the process never blocks on a full
#: pipe) and dropped, with a note where the cut is and one with the count when the pipe ends
PASS_ON_CAP = 4 << 20
#: :meth:`StderrTail.last_line` is cut to this many characters
LAST_LINE_CHARS = 300


class StderrTail:
    """Reads ``pipe`` (the read end of a subprocess's stderr) on a daemon thread until it ends,
    writes each chunk on to ``out_fd`` (this process's stderr by default; a write that fails is
    dropped, never raised) until ``cap`` bytes were (:data:`PASS_ON_CAP` by default; :attr:`dropped`
    counts the rest), keeps the last :data:`KEEP` bytes, and closes ``pipe`` at the end."""

    def __init__(self, pipe: IO[bytes], out_fd: int = 2, cap: int = PASS_ON_CAP) -> None:
        self._pipe = pipe
        self._out_fd = out_fd
        self._cap = cap
        self._passed = 0
        #: bytes read but not passed on (past the cap)
        self.dropped = 0
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._copy, name="fenwire-stderr-tail", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        fd = self._pipe.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                with self._lock:
                    self._tail += chunk
                    del self._tail[:-KEEP]
                self._pass_some(chunk)
        finally:
            if self.dropped:
                self._pass_on(b"[fenwire: %d more bytes of this stderr dropped]\n" % self.dropped)
            self._pipe.close()

    def _pass_some(self, chunk: bytes) -> None:
        """Pass ``chunk`` on, as far as the cap allows; note the cut at the first byte dropped."""
        room = max(self._cap - self._passed, 0)
        if len(chunk) <= room:
            self._passed += len(chunk)
            self._pass_on(chunk)
            return
        if room:
            self._passed += room
            self._pass_on(chunk[:room])
        if not self.dropped:
            self._pass_on(b"\n[fenwire: this stderr is cut here, after %d bytes; the rest is dropped]\n" % self._cap)
        self.dropped += len(chunk) - room

    def _pass_on(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            try:
                view = view[os.write(self._out_fd, view) :]
            except InterruptedError:
                continue
            except OSError:
                return

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the pipe to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def last_line(self, wait: float = 0.5) -> str:
        """The last non-blank line written so far (after waiting up to ``wait`` seconds for the
        pipe to end, so that a process that just exited has said everything): decoded as UTF-8
        with bad bytes replaced, control characters made spaces, cut to :data:`LAST_LINE_CHARS`
        characters; ``""`` when nothing but blanks was written."""
        self.join(wait)
        with self._lock:
            text = self._tail.decode("utf-8", "replace")
        for line in reversed(text.splitlines()):
            line = "".join(" " if ch < " " or ch == "\x7f" else ch for ch in line).strip()
            if line:
                return line if len(line) <= LAST_LINE_CHARS else line[: LAST_LINE_CHARS - 3] + "..."
        return ""
