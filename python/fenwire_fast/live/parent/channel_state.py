"""What a :class:`~fenwire_fast.live.parent.channel.Channel` tells about its run, and the
bookkeeping every way of polling shares: the mirrored state, the errors kept, a stop. A base of
:class:`~fenwire_fast.live.parent.channel.Channel`; the names here are exported from
:mod:`~fenwire_fast.live.parent.channel` too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import EVENT_TYPE_ORDER, Receiver, Rejection, ScanBatch, session

if TYPE_CHECKING:
    from ...lines import Tailer
    from .final_text import FinalTextFollower

__all__ = ["SentControl", "PollError", "SendError", "ERRORS_KEPT", "decoded"]


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


class SendError(ValueError):
    """A control could not be encoded (the message says why; ``rejection`` has the details)."""

    def __init__(self, message: str, rejection: Rejection | None = None) -> None:
        super().__init__(message)
        self.rejection = rejection


class _ChannelState:
    """What a :class:`Channel` tells about its run and its file, read from its state (a base of
    :class:`Channel`, which sets these attributes)."""

    run: str
    stopped: bool
    _raw: bool | None
    error: str | None
    result: dict[str, Any] | None
    errors: list[PollError]
    errors_dropped: int
    error_counts: Counter[str]
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

    # -- shared by every way of polling ---------------------------------------------------------

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

    def _foreign_event(self, msg: dict[str, Any] | None, errors: list[PollError]) -> None:
        """Another run's event (``msg``, or ``None`` when it does not decode): an error (the child
        is cancelled), but not a stop: the run's own lines go on."""
        reason = f"event for foreign run {msg['run'] if msg is not None else '?'}"
        if self.error is None:
            self.error = reason
        errors.append(PollError(reason))

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
