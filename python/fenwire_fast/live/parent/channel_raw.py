"""A :class:`~fenwire_fast.live.parent.channel.Channel`'s raw polls (:meth:`ChannelRaw.poll_raw`):
the same reads, checks, mirroring and rules as its dict polls, the events handed over as
:class:`~fenwire_fast.ScanBatch` objects. A base of :class:`~fenwire_fast.live.parent.channel.Channel`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import ScanBatch, decode
from .channel_state import _MIRRORED_MARKS, PollError, _ChannelState

__all__ = ["ChannelRaw"]


class ChannelRaw(_ChannelState):
    """The raw part of a :class:`~fenwire_fast.live.parent.channel.Channel` (a base class)."""

    last_seq: int
    events: int
    ignored_after_exit: int
    _redeliver_after: int
    _backlog: tuple[list[ScanBatch], list[PollError]] | None
    _held_raw: tuple[ScanBatch, int] | None
    _unread: tuple[list[Any], str] | None
    _quiet: bool

    if TYPE_CHECKING:

        def _raw_after_commit(self, batches: list[ScanBatch]) -> list[ScanBatch]: ...

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
