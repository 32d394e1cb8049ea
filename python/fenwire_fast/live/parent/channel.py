"""The parent's channel over a child's two files.

:class:`Channel` stamps and appends controls, drains events through a receiver, and mirrors the
run's state from the events alone: ``ready`` moves ``starting`` to ``ready``; each acknowledged
control applies ``session.decide`` (rejections change nothing); ``turn-started`` moves ``ready`` to
``running``; ``turn-complete`` applies ``session.advance(..., "turn-done")`` unless that would end
the run; ``exit`` sets the final status.

Nothing the child writes makes the channel raise. :attr:`Channel.error` keeps the first serious
problem: a version mismatch, an event for another run, a truncated event file. A version mismatch
(the one fatal rejection) or a truncated file also **stops** the channel: nothing after it is
mirrored or delivered. An event for another run is skipped and the run's own events go on. Any
other failure while handling an event becomes a :class:`PollError`, and the rest of the read is
still delivered.

A ``result`` that names a ``final-text-path`` is completed from that file, which is then removed;
:mod:`fenwire_fast.live.parent.final_text` says what the file must be. The file is read in bounded steps
(``final_text_step`` bytes per poll, at most ``final_text_cap`` bytes in all); while it is read,
the ``result`` and the events after it wait, so whoever sees the ``result`` finds the whole text
in :attr:`Channel.final_text`. When the file is refused, nothing is removed, the cut text is kept
and :attr:`Channel.final_text_note` says why. A run gets one attempt: only the first ``result``
that names a file is followed.
"""

from __future__ import annotations

import errno
import os
import zlib
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ... import DRAIN_BYTE_BUDGET, EVENT_TYPE_ORDER, Receiver, Rejection, ScanBatch, Sender, decode, session
from ..._regular import open_regular
from .final_text import DEFAULT_FINAL_TEXT_CAP, READ_STEP, FinalTextFollower, FinalTextStore

if TYPE_CHECKING:
    from ...lines import Tailer

__all__ = [
    "Channel",
    "SentControl",
    "PollError",
    "SendError",
    "ResumePoint",
    "DEFAULT_FINAL_TEXT_CAP",
    "ERRORS_KEPT",
]

#: :attr:`Channel.errors` keeps the first and the last this many errors of a run (the rest are
#: counted in :attr:`Channel.errors_dropped`): a child cannot grow its parent's memory with bad lines
ERRORS_KEPT = 100

_MIRRORED = frozenset({"ready", "control-ack", "turn-started", "turn-complete", "result", "exit"})
#: ``ScanBatch.types`` translated by this: 1 where a line is of a mirrored type, 0 elsewhere
_MIRRORED_MARKS = bytes(int(i < len(EVENT_TYPE_ORDER) and EVENT_TYPE_ORDER[i] in _MIRRORED) for i in range(256))


def decoded(batch: ScanBatch) -> list[dict[str, Any]]:
    """The messages of a batch's lines (each accepted already, so each decodes)."""
    return Receiver("event").feed(batch.lines) if len(batch) else []


@dataclass
class SentControl:
    """A control this channel sent; ``status`` / ``reason`` fill in when its ack arrives."""

    seq: int
    type: str
    text: str | None = None
    status: str | None = None
    reason: str | None = None


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


@dataclass(frozen=True)
class PollError:
    """A problem found while polling: a rejected event line, a foreign run, a truncated file."""

    error: str
    rejection: Rejection | None = None

    @property
    def kind(self) -> str:
        """The rejection's code, ``foreign-run`` for another run's line, else ``other``."""
        if self.rejection is not None:
            return self.rejection.code
        return "foreign-run" if self.error.startswith("event for foreign run") else "other"


class SendError(ValueError):
    """A control could not be encoded (the message says why; ``rejection`` has the details)."""

    def __init__(self, message: str, rejection: Rejection | None = None) -> None:
        super().__init__(message)
        self.rejection = rejection


def _next_status(status: str, msg: dict[str, Any], unacked: dict[int, SentControl]) -> str:
    """The mirrored status after a ``ready``, ``control-ack``, ``turn-started`` or ``turn-complete``
    (an ack also fills in its control's ``status`` and ``reason`` and leaves ``unacked``)."""
    etype = msg["type"]
    if etype == "ready":
        transition = session.advance(status, "started")
        return transition.next if transition is not None else status
    if etype == "control-ack":
        ref = msg.get("ref")
        sent = unacked.pop(int(ref), None) if ref is not None else None
        if sent is None:
            return status
        sent.status = msg.get("status")
        sent.reason = msg.get("reason")
        if sent.status == "rejected":
            return status
        decision = session.decide(status, sent.type)
        return decision.next if decision.next is not None else status
    if etype == "turn-started":
        return "running" if status == "ready" else status
    if etype == "turn-complete":
        transition = session.advance(status, "turn-done")
        if transition is not None and not session.is_terminal(transition.next):
            return transition.next
    return status


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


class _ChannelState:
    """What a :class:`Channel` tells about its run and its file, read from its state (a base of
    :class:`Channel`, which sets these attributes)."""

    stopped: bool
    _backlog: object
    status: str
    exit: dict[str, Any] | None
    unacked: dict[int, SentControl]
    controls: dict[int, SentControl]
    _final: FinalTextFollower
    _tailer: Tailer
    _receiver: Receiver

    def pending(self) -> bool:
        """True when there is more to do: unread bytes in the event file (a size check, no read), or
        a final-text read under way. Always false once the channel has stopped."""
        if self._backlog is not None:
            return True
        if self.stopped:
            return False
        return self._final.reading or self._tailer.pending()

    @property
    def unfinished_read(self) -> bool:
        """The last poll stopped short: it read a whole ``max_bytes`` chunk (more may wait), or a
        final-text read is under way. A caller woken by the kernel polls again without waiting."""
        if self.stopped:
            return False
        return self._final.reading or self._tailer.last_read >= self._tailer.max_bytes

    @property
    def reading_final_text(self) -> bool:
        """A ``result``'s final-text file is being read, one bounded step per :meth:`poll`; the
        ``result`` and the lines after it wait until it is done."""
        return not self.stopped and self._final.reading

    @property
    def hot(self) -> bool:
        """Poll again soon: the last poll read some bytes of the event file (the child may still be
        writing; :attr:`unfinished_read` is one case), or a final-text read is under way."""
        return not self.stopped and (self._tailer.last_read > 0 or self._final.reading)

    @property
    def final_text(self) -> str | None:
        """The run's whole final answer, once a ``result`` has brought it (``None`` before)."""
        return self._final.text

    @property
    def final_text_note(self) -> str | None:
        """Why :attr:`final_text` is cut short, when it is (in words; ``None`` otherwise)."""
        return self._final.note

    @property
    def idle(self) -> bool:
        """The run is ``ready`` and every control sent has been acknowledged."""
        return self.status == "ready" and not self.unacked

    @property
    def done(self) -> bool:
        """An ``exit`` line has arrived."""
        return self.exit is not None

    @property
    def rejected(self) -> list[SentControl]:
        """Controls the child answered with ``rejected``."""
        return [c for c in self.controls.values() if c.status == "rejected"]

    @property
    def event_fd(self) -> int | None:
        """The descriptor the event file is read through (``None`` until the file exists)."""
        return self._tailer.fileno()

    @property
    def read_seq(self) -> int:
        """The last ``seq`` read from the event file (0: none), handed over or not."""
        return int(self._receiver.seq)

    @property
    def offset(self) -> int:
        """Bytes of the event file read so far."""
        return self._tailer.offset


class Channel(_ChannelState):
    """A parent's view of one run over its control and event files.

    ``send`` appends controls; ``poll`` drains events (at most ``max_bytes`` per call) and returns
    ``(messages, errors)``; :attr:`errors` keeps the run's first and last :data:`ERRORS_KEPT`
    errors, and :attr:`errors_dropped` counts those in between. State: :attr:`status` (mirrored), :attr:`result`, :attr:`exit`,
    :attr:`error` (the first fatal problem: a version mismatch, a foreign run, a truncated file),
    :attr:`stopped` (a fatal problem ended the channel), :attr:`final_text` (the whole answer when it
    could be had) and :attr:`final_text_note`.

    ``final_text_dir`` is the run's private directory (default: the event file's directory); it is
    opened once, now, so make the channel before the child starts. ``protected_paths`` are more
    files there that a child may not hand over as its final text. ``final_text_store`` keeps the
    final texts read (a durable run's, see :class:`~fenwire_fast.live.parent.final_text.FinalTextStore`);
    ``follow_final_text=False`` never opens a final-text file (a read-only look at a run).

    :meth:`resume` takes up a run that another channel (a parent that died) began."""

    def __init__(
        self,
        run: str,
        control_path: str,
        event_path: str,
        *,
        max_bytes: int = DRAIN_BYTE_BUDGET,
        final_text_dir: str | None = None,
        protected_paths: Sequence[str] = (),
        final_text_cap: int = DEFAULT_FINAL_TEXT_CAP,
        final_text_step: int = READ_STEP,
        final_text_store: FinalTextStore | None = None,
        follow_final_text: bool = True,
    ) -> None:
        from ...lines import Tailer

        self.run = run
        self.control_path = os.fspath(control_path)
        self.event_path = os.fspath(event_path)
        self.status = "starting"
        self.result: dict[str, Any] | None = None
        self.exit: dict[str, Any] | None = None
        self.error: str | None = None
        self.unacked: dict[int, SentControl] = {}
        self.controls: dict[int, SentControl] = {}
        #: the run's errors: the first :data:`ERRORS_KEPT` and the last :data:`ERRORS_KEPT`
        self.errors: list[PollError] = []
        #: how many errors :attr:`errors` no longer holds (those between its first and last ones)
        self.errors_dropped = 0
        #: every error the run had, kept or dropped, by :attr:`PollError.kind`
        self.error_counts: Counter[str] = Counter()
        self.events = 0
        #: events of the run read before this channel's deliveries: those before the point
        #: :meth:`resume` started from, and the committed ones it mirrored without delivering
        self.earlier_events = 0
        #: the byte of the event file :meth:`resume` started reading from (0: the start)
        self.resumed_at = 0
        self._acks: tuple[int, tuple[tuple[int, str, str | None], ...]] = (0, ())
        #: the ``seq`` of the last event read (after :meth:`resume`, the committed ones count)
        self.last_seq = 0
        self.ignored_after_exit = 0
        self.stopped = False
        directory = final_text_dir if final_text_dir is not None else os.path.dirname(os.path.abspath(self.event_path))
        protected = [self.control_path, self.event_path, *protected_paths]
        self._final = FinalTextFollower(
            directory, protected, final_text_cap, final_text_step, final_text_store, follow_final_text
        )
        #: events up to this ``seq`` are mirrored but not delivered (a resumed run's committed ones)
        self._redeliver_after = 0
        #: what a poll in :meth:`resume` read beyond the committed events: the next poll returns it
        self._backlog: tuple[list[ScanBatch], list[PollError]] | None = None
        self._held: list[Any] = []
        #: a raw poll's read held behind a ``result`` whose final text is being read: the batch and
        #: the result's line (mirrored already)
        self._held_raw: tuple[ScanBatch, int] | None = None
        #: how this channel hands over events, fixed by the first poll: dicts or raw batches
        self._raw: bool | None = None
        #: a read :meth:`poll_hot` made but did not deliver: :meth:`poll` delivers it
        self._unread: tuple[list[Any], str] | None = None
        #: nothing for :meth:`poll_hot` to leave to :meth:`poll`: not stopped, no exit, no error,
        #: no final-text read, no read kept (set again at the end of each :meth:`poll`)
        self._quiet = True
        self._sender = Sender("control", run)
        # the receiver checks each batch for this run's own messages of no mirrored type (plain)
        self._receiver = Receiver("event", run=run)
        # never through a symlink: a child could point its event file at any file of the user's
        self._tailer = Tailer(self.event_path, "event", max_bytes=max_bytes, receiver=self._receiver, follow=False)
        self._tailer.pending()  # open the event file now, while only the parent can have made it
        self._fd: int | None = None

    # -- sending --------------------------------------------------------------------------------

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

    # -- polling --------------------------------------------------------------------------------

    def poll(self, *, woken: bool = False) -> tuple[list[dict[str, Any]], list[PollError]]:
        """Drain the next chunk of the event file; return its messages and errors, in order.

        While a final-text file is being read, each poll reads one more step of it instead, and the
        ``result`` and the events after it come out once the text is complete. ``woken=True``: the
        kernel said the file grew, so read without checking its size first."""
        self._mode(False)
        if self._backlog is not None:
            (batches, backlog_errors), self._backlog = self._backlog, None
            return [m for b in batches for m in decoded(b)], backlog_errors
        messages: list[dict[str, Any]] = []
        errors: list[PollError] = []
        if self.stopped:
            return messages, errors
        if self._final.reading:
            if not self._final.step():
                return messages, errors
            held, self._held = self._held, []
            messages.append(held[0])  # the result, mirrored when it arrived
            self._take(held[1:], messages, errors)
        else:
            try:
                if self._unread is not None:
                    (items, status), self._unread = self._unread, None
                else:
                    items, status = self._tailer.poll(woken=woken)
            except OSError as exc:
                self._stop(f"cannot read the event file: {exc.strerror or exc}", errors)
            else:
                if status == "truncated":
                    self._stop("event file truncated", errors)
                elif items:
                    if self.exit is None and self._receiver.plain:
                        messages = items  # the whole read is delivered as it is
                    else:
                        self._take(items, messages, errors)
        if messages:
            self.last_seq = messages[-1]["seq"]
            if self._redeliver_after:
                messages = self._after_commit(messages)
            self.events += len(messages)
        if errors:
            self._keep_errors(errors)
        self._quiet = not (
            self.stopped
            or self.exit is not None
            or self.error is not None
            or self._final.reading
            or self._redeliver_after
            or self._backlog is not None
        )
        return messages, errors

    def _keep_errors(self, errors: list[PollError]) -> None:
        """Add ``errors`` to :attr:`errors`, dropping (and counting) those past its bound from
        the middle: the first and the last :data:`ERRORS_KEPT` stay."""
        counts = self.error_counts
        for e in errors:
            counts[e.kind] += 1
        kept = self.errors
        kept.extend(errors)
        excess = len(kept) - 2 * ERRORS_KEPT
        if excess > 0:
            del kept[ERRORS_KEPT : ERRORS_KEPT + excess]
            self.errors_dropped += excess

    def _mode(self, raw: bool) -> None:
        if self._raw is None:
            self._raw = raw
        elif self._raw is not raw:
            have, want = ("raw batches", "poll_raw") if self._raw else ("dicts", "poll")
            raise RuntimeError(f"run {self.run}: this channel hands over {have} (use {want}), not both")

    def poll_raw(self, *, woken: bool = False) -> tuple[list[ScanBatch], list[PollError]]:
        """:meth:`poll` for a forwarder: the same reads, checks, mirroring and rules, but the events
        come as :class:`~fenwire_fast.ScanBatch` objects (the child's own line bytes, in order,
        with no Python object per line) instead of dicts. Only the lines that change the mirrored
        state (``ready``, acks, ``turn-started``, ``turn-complete``, ``result``, ``exit``) and
        those of another run are looked at one by one; the rest pass through as they are read.

        Usually one batch, or none; a read that must be cut (around another run's line, at a
        ``result`` whose final text is read first, after ``exit``) gives several or a slice.
        A channel hands over either dicts or raw batches: its first poll decides."""
        self._mode(True)
        return self._poll_raw(woken)

    def _poll_raw(self, woken: bool) -> tuple[list[ScanBatch], list[PollError]]:
        if self._backlog is not None:
            backlog, self._backlog = self._backlog, None
            return backlog
        out: list[ScanBatch] = []
        errors: list[PollError] = []
        if self.stopped:
            return out, errors
        if self._final.reading:
            if not self._final.step():
                return out, errors
            assert self._held_raw is not None
            (batch, at), self._held_raw = self._held_raw, None
            self._take_raw(batch, out, errors, at)
        else:
            if self._unread is not None:
                raise RuntimeError("poll_hot() read what only poll() can deliver")
            try:
                got, status = self._tailer.poll_batch(woken=woken)
            except OSError as exc:
                self._stop(f"cannot read the event file: {exc.strerror or exc}", errors)
            else:
                if status == "truncated":
                    self._stop("event file truncated", errors)
                elif got is not None:
                    self._take_raw(got, out, errors, -1)
        if out:
            self.last_seq = out[-1].seqs[-1]  # read, if not delivered (a resumed run's committed events)
            if self._redeliver_after:
                out = self._raw_after_commit(out)
            self.events += sum(map(len, out))
        if errors:
            self._keep_errors(errors)
        self._quiet = False  # poll_hot reads dicts: not for a raw channel
        return out, errors

    def _take_raw(self, batch: ScanBatch, out: list[ScanBatch], errors: list[PollError], held: int) -> None:
        """:meth:`_take` for a batch: deliver its lines as slices of it, cut where a line must not
        be delivered (another run's, anything after ``exit``) or must wait (behind a ``result``
        whose final text is read first). ``held``: the index of a held ``result`` line, mirrored
        already, to go on from (``-1``: a new batch)."""
        n = len(batch)
        rejections = batch.rejections
        foreign = batch.foreign
        marks = batch.types.translate(_MIRRORED_MARKS)
        start = max(held, 0)
        if self.exit is not None:  # everything after an exit is counted, not delivered
            self.ignored_after_exit += n - start + sum(1 for p, _ in rejections if p > held)
            return
        if self.exit is None and not rejections and not foreign and marks.find(1, start) < 0:
            if n > start:
                out.append(batch if start == 0 else batch.slice(start, n))
            return
        # the places to look at, in order: a rejection comes before the line it is counted before
        points: list[tuple[int, int, Any]] = [(p, 0, r) for p, r in rejections if p > held]
        points += [(i, 1, None) for i in foreign if i >= start]
        i = marks.find(1, start)
        while i >= 0:
            points.append((i, 2, None))
            i = marks.find(1, i + 1)
        points.sort(key=lambda p: (p[0], p[1]))
        run = self.run
        seg = start
        last_line = -1
        for at, kind, rejection in points:
            if kind != 0 and at == last_line:
                continue  # a foreign line of a mirrored type: skipped once, as foreign
            if self.exit is not None:
                break
            if kind == 0:
                if rejection.fatal:
                    if at > seg:
                        out.append(batch.slice(seg, at))
                    self._stop(rejection.reason, errors, rejection)
                    return
                errors.append(PollError(rejection.reason, rejection))
                continue
            last_line = at
            if at != held:
                msg, _ = decode(batch.line(at), "event")
                # The batch lists another run's lines; the decoded run decides all the same (a
                # child's line is never trusted to match the list, and never raises here).
                if kind == 1 or msg is None or msg["run"] != run:
                    if at > seg:
                        out.append(batch.slice(seg, at))
                    seg = at + 1
                    self._foreign_event(msg, errors)
                    continue
                try:
                    self._mirror(msg)
                except Exception as exc:  # noqa: BLE001 - a child's line must never raise out of poll
                    errors.append(PollError(f"cannot mirror {msg['type']} (seq {msg['seq']}): {exc!r}"))
                if self._final.reading:
                    if at > seg:
                        out.append(batch.slice(seg, at))
                    self._held_raw = (batch, at)
                    return
            if self.exit is not None:
                out.append(batch.slice(seg, at + 1))
                self.ignored_after_exit += n - at - 1 + sum(1 for p, _ in rejections if p > at)
                return
        if n > seg:
            out.append(batch.slice(seg, n))

    def _foreign_event(self, msg: dict[str, Any] | None, errors: list[PollError]) -> None:
        """Another run's event (``msg``, or ``None`` when it does not decode): an error (the child
        is cancelled), but not a stop: the run's own lines go on."""
        reason = f"event for foreign run {msg['run'] if msg is not None else '?'}"
        if self.error is None:
            self.error = reason
        errors.append(PollError(reason))

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

    def poll_hot(self) -> list[dict[str, Any]] | None:
        """:meth:`poll` for a caller that knows the file grew or was just read (a hub's hot
        child), when nothing but plain messages comes: read at once, and when the read brings only
        this run's own messages of no mirrored type (``Receiver.plain``, checked by the receiver;
        or nothing at all), account for them and return them as they are.

        ``None``: call :meth:`poll` instead, which then delivers whatever this call read (a read
        that is not plain, a truncated file) or reads (a stopped channel, a final-text read under
        way, an ``exit`` or an error seen). Nothing is lost or read twice either way."""
        if not self._quiet:
            return None
        # the hot read made here, through the tailer's public cursor (one Python call less per
        # read of a hot child than Tailer.poll(woken=True))
        tailer = self._tailer
        cursor = tailer.cursor
        fd = cursor.fd
        if fd is None:
            return None  # not opened yet: poll opens it
        try:
            chunk = os.pread(fd, tailer.max_bytes, cursor.offset)
        except OSError:
            self._quiet = False
            return None  # poll reads again and stops the channel with the reason
        if not chunk:
            tailer.last_read = 0
            if cursor.idle_status() == "truncated":
                self._unread = ([], "truncated")
                self._quiet = False
                return None
            return []
        cursor.offset += len(chunk)
        tailer.last_read = len(chunk)
        items = self._receiver.feed(chunk)
        if self._receiver.plain:
            if items:
                self.events += len(items)
                self.last_seq = items[-1]["seq"]
            return items
        self._unread = (items, "ok")
        self._quiet = False
        return None

    def _take(self, items: list[Any], messages: list[dict[str, Any]], errors: list[PollError]) -> None:
        """Mirror and deliver ``items`` in order, until the end, a fatal problem or a long read.

        :meth:`poll` asks the receiver first (``Receiver.plain``): a batch of this run's own
        messages, none of which changes the mirrored state, is delivered as it is. Only a batch
        with a rejection, another run's event or a mirrored type is walked here, event by event."""
        run = self.run
        for i, item in enumerate(items):
            if self.exit is not None:
                self.ignored_after_exit += 1
                continue
            if type(item) is not dict and isinstance(item, Rejection):
                if item.fatal:
                    self._stop(item.reason, errors, item)
                    return
                errors.append(PollError(item.reason, item))
                continue
            if item.get("run") != run:
                # An error (the child is cancelled), but not a stop: the run's own lines go on.
                reason = f"event for foreign run {item.get('run')}"
                if self.error is None:
                    self.error = reason
                errors.append(PollError(reason))
                continue
            if item["type"] in _MIRRORED:
                try:
                    self._mirror(item)
                except Exception as exc:  # noqa: BLE001 - a child's line must never raise out of poll
                    errors.append(PollError(f"cannot mirror {item['type']} (seq {item['seq']}): {exc!r}"))
                if self._final.reading:
                    self._held = [item, *items[i + 1 :]]
                    return
            messages.append(item)

    def _stop(self, reason: str, errors: list[PollError], rejection: Rejection | None = None) -> None:
        """A fatal problem: keep the first reason, deliver nothing more."""
        if self.error is None:
            self.error = reason
        self.stopped = True
        errors.append(PollError(reason, rejection))

    def _mirror(self, msg: dict[str, Any]) -> None:
        etype = msg["type"]
        if etype == "result":
            self.result = msg
            self._final.follow(msg)
        elif etype == "exit":
            self.exit = msg
            self.status = msg["status"]
        else:
            self.status = _next_status(self.status, msg, self.unacked)

    def close(self) -> None:
        """Close the file handles (a final-text read under way is abandoned)."""
        self._final.close()
        self._tailer.close()
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
