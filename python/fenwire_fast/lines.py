"""Reading lines from append-only JSONL files.

- :class:`LineReader` tails a file: at most one
  read of ``max_bytes`` and ``max_lines`` lines per call, only newline-terminated lines are
  consumed, an unterminated line of ``max_bytes`` or more is reported once (as its first
  ``max_bytes`` bytes, so ``decode`` rejects it as ``too-large``) and skipped up to its newline.
  One deliberate difference: the skip does not cost one read per call. The next call skips in
  steps of :data:`SKIP_STEP` bytes until the newline or the end of the file (at most
  ``skip_budget`` bytes per call), so a child behind a 64 MiB control line sees the controls after
  it on its next tick, not minutes later.
- :class:`Tailer` is the parents' fast path: each :meth:`Tailer.poll` reads the next chunk and hands
  it to :meth:`Receiver.feed`, which frames, decodes, validates and checks ``seq`` in one call.
  With ``scan=True`` it hands it to :meth:`Receiver.scan` instead: the same checks, but each
  accepted line comes back as ``Scanned(type, seq, line)`` rather than a dict. That is the mode of
  a parent that forwards: it checks that the child speaks the protocol and passes each line on as
  it is (to a log, a socket, a bus), never building a dict; on the Rust backend the checking runs
  with the GIL released, so a thread per child uses a core per child::

      tailer = Tailer(path, "event", scan=True)
      items, status = tailer.poll()
      for item in items:
          if isinstance(item, Scanned):
              sink.write(item.line + b"\n")   # valid and in order: forward the exact bytes
          else:
              report(item)                     # a Rejection, as Receiver.feed gives it

Both report a status: ``"ok"``, ``"missing"`` (the file does not exist yet; retried on the next
call) or ``"truncated"`` (the file shrank below the consumed offset).
"""

from __future__ import annotations

import os
from typing import Any

from . import Receiver
from ._regular import open_regular
from ._types import DRAIN_BYTE_BUDGET, DRAIN_EVENT_BUDGET

__all__ = ["LineReader", "Tailer", "FileCursor", "OK", "MISSING", "TRUNCATED", "SKIP_STEP", "SKIP_BUDGET"]

OK = "ok"
MISSING = "missing"
TRUNCATED = "truncated"

#: Bytes read at a time while skipping the rest of an over-long line.
SKIP_STEP = 1 << 20
#: Bytes of an over-long line skipped at most per :meth:`LineReader.read` call.
SKIP_BUDGET = 256 << 20


class FileCursor:
    """An open-once, read-only handle on a path, with the byte offset consumed so far: ``fd`` (the
    descriptor, ``None`` until the file is opened) and ``offset`` (bytes consumed).

    A :class:`Tailer`'s is public (:attr:`Tailer.cursor`) for a caller that makes the hot read
    itself, without a Python call (a hub's hot child, see ``Channel.poll_hot``): ``os.pread(fd,
    tailer.max_bytes, offset)`` on an opened cursor, then ``offset`` moved past the bytes read and
    :attr:`Tailer.last_read` set to their count; an empty read is told apart by
    :meth:`idle_status` (``"truncated"``: the file shrank)."""

    __slots__ = ("path", "offset", "fd", "_follow")

    def __init__(self, path: str | os.PathLike[str], follow: bool = True) -> None:
        self.path = os.fspath(path)
        self.offset = 0
        self.fd: int | None = None
        self._follow = follow

    def size(self) -> int | None:
        """The file's size, opening it on first use; ``None`` while it does not exist. Raises
        ``OSError`` when it exists but cannot be opened, or is not a regular file (a FIFO is never
        waited on: see :func:`~fenwire_fast._regular.open_regular`)."""
        if self.fd is None:
            try:
                self.fd = open_regular(self.path, follow=self._follow)
            except FileNotFoundError:
                return None
        return os.fstat(self.fd).st_size

    @property
    def opened(self) -> bool:
        """The file is open (it existed once)."""
        return self.fd is not None

    def idle_status(self) -> str | None:
        """``MISSING``, ``TRUNCATED`` or ``OK`` when there is nothing to read; ``None`` when new
        bytes wait past the offset."""
        size = self.size()
        if size is None:
            return MISSING
        if size < self.offset:
            return TRUNCATED
        if size == self.offset:
            return OK
        return None

    def read(self, count: int) -> bytes:
        assert self.fd is not None
        return os.pread(self.fd, count, self.offset)

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


class LineReader:
    """Tail an append-only file, returning raw lines (``bytes``, no newline, ``\\r`` kept).

    The file is opened once and kept open (a replaced file keeps being read through the old
    handle).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DRAIN_BYTE_BUDGET,
        max_lines: int = DRAIN_EVENT_BUDGET,
        skip_budget: int = SKIP_BUDGET,
    ) -> None:
        if max_bytes < 1 or max_lines < 1 or skip_budget < 1:
            raise ValueError("max_bytes, max_lines and skip_budget must be positive")
        self._cursor = FileCursor(path)
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.skip_budget = skip_budget
        self.skipping = False

    @property
    def path(self) -> str:
        return self._cursor.path

    @property
    def offset(self) -> int:
        """Bytes consumed so far."""
        return self._cursor.offset

    def read(self) -> tuple[list[bytes], str]:
        """Read at most one chunk; return ``(lines, status)``."""
        cursor = self._cursor
        status = cursor.idle_status()
        if status is not None:
            return [], status
        resumed = False
        if self.skipping:
            if not self._skip():
                return [], OK
            resumed = True
        chunk = cursor.read(self.max_bytes)
        pos = 0
        lines: list[bytes] = []
        max_lines = self.max_lines
        while len(lines) < max_lines:
            nl = chunk.find(b"\n", pos)
            if nl < 0:
                break
            lines.append(chunk[pos:nl])
            pos = nl + 1
        if not lines and not resumed and len(chunk) >= self.max_bytes:
            # A line that does not fit one read: report it once, skip the rest to its newline.
            lines.append(chunk)
            pos = len(chunk)
            self.skipping = True
        cursor.offset += pos
        return lines, OK

    def _skip(self) -> bool:
        """Consume the rest of an over-long line, through its newline; ``True`` once past it,
        ``False`` at the end of the file or of this call's ``skip_budget``."""
        cursor = self._cursor
        skipped = 0
        while skipped < self.skip_budget:
            piece = cursor.read(min(SKIP_STEP, self.skip_budget - skipped))
            nl = piece.find(b"\n")
            if nl >= 0:
                cursor.offset += nl + 1
                self.skipping = False
                return True
            cursor.offset += len(piece)
            skipped += len(piece)
            if not piece:
                break
        return False

    def close(self) -> None:
        """Close the file handle (a later :meth:`read` reopens the path)."""
        self._cursor.close()

    def __enter__(self) -> LineReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Tailer:
    """Tail a JSONL file through a :class:`Receiver`: each :meth:`poll` reads up to ``max_bytes``
    new bytes and returns ``(items, status)``: every message and rejection they complete, in
    order, and the file's status (``"ok"``, ``"missing"`` or ``"truncated"``).

    A partial last line waits in the receiver until its newline arrives, so a writer killed
    mid-line never has its partial line delivered.

    With ``scan=True``, :meth:`poll` uses :meth:`Receiver.scan`: accepted lines come back as
    ``Scanned(type, seq, line)`` records instead of dicts (rejections are the same).

    The file must be a regular file: anything else (a FIFO, a directory) makes the read that opens
    it raise ``OSError``, as does an open that fails for any reason but a missing file (which is
    ``"missing"``); ``follow=False`` refuses a symlink too.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        direction: str = "event",
        *,
        max_bytes: int = DRAIN_BYTE_BUDGET,
        receiver: Any = None,
        scan: bool = False,
        follow: bool = True,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        #: the file and the offset read to (public for a hot read made without a call: see
        #: :class:`FileCursor`)
        self.cursor = FileCursor(path, follow)
        self.max_bytes = max_bytes
        self.receiver = receiver if receiver is not None else Receiver(direction)
        self.scan = scan
        #: bytes the last read brought (``max_bytes``: there may be more)
        self.last_read = 0

    @property
    def path(self) -> str:
        return self.cursor.path

    @property
    def offset(self) -> int:
        """Bytes read so far (including an unterminated tail held by the receiver)."""
        return self.cursor.offset

    def fileno(self) -> int | None:
        """The descriptor the file is read through (``None`` until it exists: opened on first use)."""
        self.cursor.size()
        return self.cursor.fd

    def pending(self) -> bool:
        """True when the file has bytes not read yet (a cheap size check, no read)."""
        size = self.cursor.size()
        return size is not None and size != self.cursor.offset

    def poll(self, *, woken: bool = False) -> tuple[list[Any], str]:
        """Read the next chunk; return ``(messages_and_rejections, status)`` (``Scanned`` records
        in place of messages with ``scan=True``).

        ``woken=True`` is for a caller the kernel told that the file grew: it reads at once and
        checks the size only when the read brings nothing (one system call instead of two)."""
        chunk, status = self._read(woken)
        if chunk is None:
            return [], status
        if self.scan:
            return self.receiver.scan(chunk), OK
        return self.receiver.feed(chunk), OK

    def poll_batch(self, *, woken: bool = False) -> tuple[Any, str]:
        """:meth:`poll` through :meth:`Receiver.scan_batch`: ``(batch, status)``, ``batch`` being
        a ``ScanBatch`` of what the read completed, or ``None`` when nothing was read."""
        chunk, status = self._read(woken)
        if chunk is None:
            return None, status
        return self.receiver.scan_batch(chunk), OK

    def _read(self, woken: bool) -> tuple[bytes | None, str]:
        """The next chunk and ``"ok"``, or ``None`` and the file's status when nothing came."""
        cursor = self.cursor
        self.last_read = 0
        if woken and cursor.fd is not None:  # opened: the hub's hot path, no size check
            chunk = cursor.read(self.max_bytes)
            if not chunk:
                return None, cursor.idle_status() or OK
        else:
            status = cursor.idle_status()
            if status is not None:
                return None, status
            chunk = cursor.read(self.max_bytes)
        cursor.offset += len(chunk)
        self.last_read = len(chunk)
        return chunk, OK

    def close(self) -> None:
        """Close the file handle."""
        self.cursor.close()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
