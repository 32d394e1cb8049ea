"""A :class:`~fenwire_fast.live.parent.channel.Channel` taking up a run an earlier channel began:
the control file read back (:meth:`ChannelResume.resume`), the events up to the committed one
mirrored but not delivered, and the :class:`ResumePoint` a later channel can start from. A base of
:class:`~fenwire_fast.live.parent.channel.Channel`; the names here are exported from
:mod:`~fenwire_fast.live.parent.channel` too.
"""

from __future__ import annotations

import errno
import os
import zlib
from bisect import bisect_right
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

from ... import Receiver, ScanBatch, session
from ..._regular import open_regular
from .channel_state import PollError, SendError, SentControl, _ChannelState

if TYPE_CHECKING:
    from ... import Sender

__all__ = ["ResumePoint", "ChannelResume", "RESUME_TAIL", "RESUME_CONTROLS", "RESUME_TEXT_BYTES", "RESUME_STEP"]


class ResumePoint(NamedTuple):
    """A place in a run's event file where a later channel can take up the read without reading
    what comes before it (:meth:`Channel.resume_point`, :meth:`Channel.resume`): the byte
    ``offset`` just after a whole line, the ``seq`` read up to there, a check of the bytes before
    it (``tail``: the CRC-32 of the last :data:`RESUME_TAIL` bytes, the last one a newline), and
    the mirrored state there: the ``status``, the ``events`` of the run read so far, and each
    acknowledged control's ``(seq, status, reason)``."""

    offset: int
    seq: int
    tail: int
    status: str
    events: int
    acks: tuple[tuple[int, str, str | None], ...] = ()


#: bytes before a :class:`ResumePoint` checked by its ``tail``
RESUME_TAIL = 64


def _tail_check(fd: int, offset: int) -> int | None:
    """The ``tail`` of a :class:`ResumePoint` at ``offset`` of the file ``fd``; ``None`` when
    ``offset`` is not just after a newline of the file."""
    if offset == 0:
        return 0
    size = min(offset, RESUME_TAIL)
    try:
        data = os.pread(fd, size, offset - size)
    except OSError:
        return None
    if len(data) != size or data[-1:] != b"\n":
        return None
    return zlib.crc32(data)


#: a resumed channel keeps the newest controls it reads back from its control file, at most this
#: many and with at most this many bytes of text (a child can write its own control file: reading
#: it back takes memory bounded whatever its size); it reads the file this many bytes at a time
RESUME_CONTROLS = 1024


RESUME_TEXT_BYTES = 4 << 20


RESUME_STEP = 1 << 18


class _ControlLog:
    """The controls of ``run`` read back from a control file, the newest kept (see
    :data:`RESUME_CONTROLS`); ``kept`` by ``seq``, in order."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.kept: dict[int, SentControl] = {}
        self._order: deque[int] = deque()
        self._text = 0

    def take(self, items: list[Any]) -> None:
        for item in items:
            if type(item) is not dict or item.get("run") != self.run:
                continue
            text = item.get("text")
            sent = SentControl(item["seq"], item["type"], text if isinstance(text, str) else None)
            self.kept[sent.seq] = sent
            self._order.append(sent.seq)
            self._text += len(sent.text or "")
            while len(self.kept) > RESUME_CONTROLS or self._text > RESUME_TEXT_BYTES:
                self._text -= len(self.kept.pop(self._order.popleft()).text or "")


def _read_controls(fd: int, run: str, repair: bool) -> tuple[dict[int, SentControl], int]:
    """Read control file ``fd`` up to its size now, :data:`RESUME_STEP` bytes at a time: the controls
    of ``run`` kept (see :class:`_ControlLog`) and the last ``seq`` there. With ``repair`` a last
    line cut short is ended with a newline (and read as the line the child will reject)."""
    receiver = Receiver("control")
    log = _ControlLog(run)
    end, offset, last = os.fstat(fd).st_size, 0, b"\n"
    while offset < end and (chunk := os.pread(fd, min(RESUME_STEP, end - offset), offset)):
        offset += len(chunk)
        last = chunk[-1:]
        log.take(receiver.feed(chunk))
    if repair and last != b"\n":
        os.write(fd, b"\n")
        log.take(receiver.feed(b"\n"))
    return log.kept, int(receiver.seq)


class ChannelResume(_ChannelState):
    """The controls part of a :class:`~fenwire_fast.live.parent.channel.Channel` (a base class):
    sending them (:meth:`send`), and taking up a run an earlier channel began (:meth:`resume`,
    :meth:`resume_point`)."""

    control_path: str
    controls: dict[int, SentControl]
    unacked: dict[int, SentControl]
    last_seq: int
    events: int
    earlier_events: int
    resumed_at: int
    _acks: tuple[int, tuple[tuple[int, str, str | None], ...]]
    _redeliver_after: int
    _backlog: tuple[list[ScanBatch], list[PollError]] | None
    _held: list[Any]
    _held_raw: tuple[ScanBatch, int] | None
    _unread: tuple[list[Any], str] | None
    _quiet: bool
    _sender: Sender
    _fd: int | None

    if TYPE_CHECKING:

        def _poll_raw(self, woken: bool) -> tuple[list[ScanBatch], list[PollError]]: ...

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        """Stamp, validate and append one control line; return its ``seq``.

        Raises :class:`SendError` for a control that does not validate, ``OSError`` when the
        control file cannot be written (or is not a regular file: a symlink, a FIFO)."""
        line, rej = self._sender.next(type_, payload or {})
        if line is None:
            reason = rej.reason if rej is not None else "cannot encode"
            raise SendError(f"cannot send {type_}: {reason}", rej)
        if self._fd is None:
            # never through a symlink: the child could point its control file at any file of the user
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            self._fd = open_regular(self.control_path, flags, 0o600, follow=False)
        data = line + b"\n"
        written = os.write(self._fd, data)
        if written != len(data):  # a regular file only writes short on errors such as ENOSPC
            raise OSError(errno.EIO, f"short write to {self.control_path}")
        seq = self._sender.seq
        text = (payload or {}).get("text")
        sent = SentControl(seq, type_, text if isinstance(text, str) else None)
        self.unacked[seq] = sent
        self.controls[seq] = sent
        return seq

    def resume(self, committed_seq: int = 0, *, repair: bool = True, start: ResumePoint | None = None) -> bool:
        """Take up a run begun by an earlier channel: read the control file (every control sent is
        unacknowledged until its ack is read again; the next ``seq`` follows the last one there),
        and deliver only the events after ``committed_seq`` (the earlier ones are mirrored, not
        delivered). A control line cut short (its writer died mid-write) is ended with a newline,
        so that the child rejects it and the next control is whole; ``repair=False`` only reads
        (a look at a run that sends nothing).

        ``start``: a :class:`ResumePoint` an earlier channel recorded, to read the event file from
        instead of from its start. It is used only when it holds up: at most ``committed_seq``,
        within the file, just after a newline, the bytes before it those it was recorded after,
        every control it acknowledges sent; else the file is read from its start, as without it.
        Returns whether it was used. Raises ``OSError`` (a control file that is not a regular file,
        a symlink included, is refused: a child could plant one)."""
        if self._sender.seq or self.controls:
            raise RuntimeError("resume() must come before anything is sent")
        flags = os.O_RDWR | os.O_APPEND if repair else os.O_RDONLY
        fd = open_regular(self.control_path, flags, follow=False)  # written to: never through a symlink
        try:
            kept, self._sender.seq = _read_controls(fd, self.run, repair)
        finally:
            if repair:
                self._fd = fd
            else:
                os.close(fd)
        for sent in kept.values():
            self.controls[sent.seq] = self.unacked[sent.seq] = sent
        started = start is not None and self._start_at(start, committed_seq)
        self._redeliver_after = max(0, int(committed_seq))
        self._quiet = False
        # mirror the committed events now, so the status is the committed one from the start; a
        # read that brings events after the commit keeps them for the next poll
        while self._redeliver_after and not self.stopped:
            batches, errors = self._poll_raw(False)  # raw: either kind of poll can deliver it
            if batches or errors:
                self._backlog = (batches, errors)
                self._quiet = False  # poll_hot must not read past it
                break
            if not self.pending():
                break
        return started

    def _start_at(self, point: ResumePoint, committed_seq: int) -> bool:
        """Set the read and the mirrored state to ``point`` when it holds up (see :meth:`resume`)."""
        fd = self._tailer.fileno()
        if (
            fd is None
            or not 0 <= point.seq <= committed_seq
            or point.status not in session.STATES
            or any(seq not in self.controls for seq, _, _ in point.acks)
            or _tail_check(fd, point.offset) != point.tail
        ):
            return False
        self._tailer.cursor.offset = self.resumed_at = point.offset
        self._receiver.seq = self.last_seq = point.seq
        self.status = point.status
        self.earlier_events = point.events
        for seq, status, reason in point.acks:
            sent = self.controls[seq]
            sent.status, sent.reason = status, reason
            self.unacked.pop(seq, None)
        return True

    def resume_point(self) -> ResumePoint | None:
        """Where a later channel can take up this run (:meth:`resume`): just after the last whole
        line read, with the state mirrored there. ``None`` when that is no such point: a read held
        or kept for later, a ``result``, an ``exit`` or an error seen (a run then resumes from an
        earlier point, or from the start)."""
        fd = self._tailer.cursor.fd
        if (
            fd is None
            or self.result is not None
            or self.exit is not None
            or self.error is not None
            or self.stopped
            or self._backlog is not None
            or self._held
            or self._held_raw is not None
            or self._unread is not None
            or self._final.reading
            or self._receiver.seq != self.last_seq
        ):
            return None
        offset = self._tailer.offset - self._receiver.buffered
        tail = _tail_check(fd, offset)
        if tail is None:
            return None
        acked = len(self.controls) - len(self.unacked)  # acks only add up: their count tells them
        if self._acks[0] != acked:
            acks = tuple((c.seq, c.status, c.reason) for c in self.controls.values() if c.status is not None)
            self._acks = (acked, acks)
        return ResumePoint(offset, self.last_seq, tail, self.status, self.earlier_events + self.events, self._acks[1])

    def _raw_after_commit(self, batches: list[ScanBatch]) -> list[ScanBatch]:
        """:meth:`_after_commit` for batches."""
        after = self._redeliver_after
        if batches[-1].seqs[-1] > after:
            self._redeliver_after = 0
        kept = []
        for batch in batches:
            cut = bisect_right(batch.seqs, after)
            self.earlier_events += cut
            if cut < len(batch):
                kept.append(batch if cut == 0 else batch.slice(cut, len(batch)))
        return kept

    def _after_commit(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages after the committed position (see :meth:`resume`)."""
        after = self._redeliver_after
        if messages[-1]["seq"] > after:
            self._redeliver_after = 0
        if messages[0]["seq"] > after:
            return messages
        kept = [m for m in messages if m["seq"] > after]
        self.earlier_events += len(messages) - len(kept)
        return kept
