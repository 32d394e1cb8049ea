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

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ... import DRAIN_BYTE_BUDGET, Receiver, Rejection, ScanBatch, Sender
from .channel_raw import ChannelRaw
from .channel_resume import (
    RESUME_CONTROLS,
    RESUME_STEP,
    RESUME_TAIL,
    RESUME_TEXT_BYTES,
    ChannelResume,
    ResumePoint,
)
from .channel_state import _MIRRORED, ERRORS_KEPT, PollError, SendError, SentControl, decoded
from .final_text import DEFAULT_FINAL_TEXT_CAP, READ_STEP, FinalTextFollower, FinalTextStore

__all__ = [
    "Channel",
    "SentControl",
    "PollError",
    "SendError",
    "ResumePoint",
    "DEFAULT_FINAL_TEXT_CAP",
    "ERRORS_KEPT",
    "RESUME_CONTROLS",
    "RESUME_STEP",
    "RESUME_TAIL",
    "RESUME_TEXT_BYTES",
    "decoded",
]


class Channel(ChannelResume, ChannelRaw):
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
