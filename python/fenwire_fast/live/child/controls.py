"""The child's control reader: new lines of the control file, decoded and checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ... import Receiver, Rejection
from ...lines import TRUNCATED, LineReader

__all__ = ["ControlReader", "CONTROL_READS_PER_POLL"]

#: Reads of the control file per poll at most (each read: at most 64 lines / 64 KiB).
CONTROL_READS_PER_POLL = 64


class ControlReader:
    """Tails the control file through a ``control`` receiver (strictly increasing ``seq``)."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.truncated = False
        self._receiver = Receiver("control")

    def poll(self) -> Iterator[tuple[dict[str, Any] | None, Rejection | None]]:
        """Each new non-empty line as ``(message, rejection)``, read lazily: a read happens only
        when the lines of the previous one are used up, and stops once the file has nothing more.
        :attr:`truncated` says whether the file shrank below what was already read."""
        self.truncated = False
        for _ in range(CONTROL_READS_PER_POLL):
            lines, status = self.reader.read()
            if status == TRUNCATED:
                self.truncated = True
                return
            for line in lines:
                if line:
                    yield self._receiver.receive(line)
            if len(lines) < self.reader.max_lines:  # the file has nothing more for now
                return
