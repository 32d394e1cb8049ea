"""The child's event writer: stamps events and appends them to the event file."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ... import Rejection, Sender

__all__ = ["EventWriter", "FLUSH_BYTES"]

#: Buffered events are written once they reach this many bytes (or on :meth:`EventWriter.flush`).
FLUSH_BYTES = 64 * 1024


class EventWriter:
    """Stamps each event with the run's next ``seq`` and appends it to the event file.

    Lines are buffered and written together: on :meth:`flush`, or as soon as the buffer holds
    :data:`FLUSH_BYTES`. The file is opened for appending (created with mode 0600 if missing)."""

    def __init__(self, path: str, run: str, stderr: Callable[[str], None]) -> None:
        self.path = path
        self._stderr = stderr
        self._sender = Sender("event", run)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        self._buffer: list[bytes] = []
        self._buffered = 0

    def encode(self, type_: str, payload: dict[str, Any]) -> tuple[bytes | None, Rejection | None]:
        """Stamp and encode one event without writing it (``seq`` only advances on success)."""
        return self._sender.next(type_, payload)

    def emit(self, type_: str, payload: dict[str, Any] | None = None) -> bool:
        """Stamp, encode and buffer one event; an event that cannot be encoded is reported on
        stderr and skipped (``False``)."""
        line, rej = self._sender.next(type_, payload or {})
        if line is None:
            reason = rej.reason if rej is not None else "unknown error"
            self._stderr(f"fenwire child: cannot send {type_}: {reason}")
            return False
        self.append(line)
        if self._buffered >= FLUSH_BYTES:
            self.flush()
        return True

    def append(self, line: bytes) -> None:
        """Buffer a line :meth:`encode` made; it is written with the next flush."""
        self._buffer.append(line)
        self._buffer.append(b"\n")
        self._buffered += len(line) + 1

    def flush(self) -> None:
        """Write every buffered line, in order, with as few writes as the system allows."""
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._buffered = 0
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def close(self) -> None:
        """Close the event file (unflushed lines are lost: flush first)."""
        os.close(self._fd)
