"""A durable run's record: its manifest in a state dir, kept up to date by the hub.

:class:`DurableRun` is written when the run starts (before its process exists), when its process
exists, and at each :meth:`~fenwire_fast.live.parent.hub.Hub.commit` that moves it; it is also the
run's channel's final-text store. It knows the run only through what a commit reads of it
(:class:`Delivering`), so this module imports neither the child nor its spawn.
"""

from __future__ import annotations

from typing import Protocol

from .channel import Channel
from .durable import Manifest, StateDir, boot_id, encode_mark, process_start

__all__ = ["DurableRun", "Delivering"]


class Delivering(Protocol):
    """What a commit reads of a run (a :class:`~fenwire_fast.live.parent.live_child.LiveChild`)."""

    @property
    def delivered_seq(self) -> int:
        """The ``seq`` of the last event handed to the consumer."""

    @property
    def finished(self) -> bool:
        """The process has ended and every line it wrote has been read."""

    @property
    def status(self) -> str:
        """The run's status."""

    @property
    def channel(self) -> Channel:
        """The run's channel."""


class DurableRun:
    """One run's manifest in a state dir, kept up to date (see the module docstring)."""

    def __init__(self, state: StateDir, manifest: Manifest) -> None:
        self.state = state
        self.manifest = manifest

    def save(self) -> None:
        self.state.save(self.manifest)

    def started(self, pid: int) -> None:
        """The child's process exists: record its pid, start time and boot."""
        manifest = self.manifest
        manifest.pid, manifest.start, manifest.boot = pid, process_start(pid), boot_id()
        self.save()

    def commit(self, child: Delivering) -> tuple[int, str | None, str | None] | None:
        """``child``'s delivered position, once it finished and every event read was delivered
        its closing status, and when its channel's read stands just after that position, a mark
        of it (:func:`~fenwire_fast.live.parent.durable.encode_mark`: an attach reads the event file from
        there): ``(seq, status_or_None, mark_or_None)`` when that moved since the last commit,
        else ``None``. Nothing changes until :meth:`committed` says it was recorded."""
        manifest = self.manifest
        seq = child.delivered_seq
        closed = child.finished and seq >= child.channel.last_seq
        if seq == manifest.committed_seq and closed == manifest.closed:
            return None
        point = child.channel.resume_point() if seq == child.channel.last_seq else None
        mark = encode_mark(point) if point is not None and point.seq == seq else None
        return seq, child.status if closed else None, mark

    def committed(self, seq: int, status: str | None, when: float, mark: str | None = None) -> None:
        """The position (closing status, mark) from :meth:`commit` is in the commit log."""
        manifest = self.manifest
        manifest.committed_seq, manifest.committed_at = seq, when
        if status is not None:
            manifest.closed, manifest.status = True, status
        if mark is not None:
            manifest.mark = mark

    def settled(self, child: Delivering) -> bool:
        """Nothing is left to commit later: the run is closed, or still going."""
        return self.manifest.closed or not child.finished

    # the channel's final-text store
    def load(self, seq: int) -> str | None:
        return self.state.final_text(self.manifest.name, seq)

    def keep(self, seq: int, text: str) -> None:
        self.state.keep_final_text(self.manifest.name, seq, text)
