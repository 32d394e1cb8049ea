"""The progress watchdog of a live child (``stall_timeout``).

A running child that delivers no event for ``stall_timeout`` seconds gets ``cancel``, and then the
kill-after-grace backstop; its error then starts with ``stalled: no event for S s``. Events are the
only progress that counts: a heartbeat that carries nothing is still an event, so an agent that
wants the watchdog quiet must write. The watchdog does not watch a child that is idle (``ready``,
every control acknowledged: it waits for the parent), one that was sent ``cancel``, one whose
``exit`` was read, or one whose process has ended.

It needs no polling of its own: when it starts watching it asks for a wake-up (``on_timer``) at its
due time, and when that wake-up finds that events came meanwhile, the timer is set again from the
last event (:meth:`~fenwire_fast.live.parent.spawn.LiveChild.next_timer`), so a busy child costs one
wake-up per ``stall_timeout`` at most.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .supervision import Supervision

if TYPE_CHECKING:
    from ..proc.group import ProcessGroup
    from .channel import Channel

__all__ = ["StallWatchdog"]


class StallWatchdog(Supervision):
    """The watchdog's part of :class:`~fenwire_fast.live.parent.spawn.LiveChild` (a base class: it reads the
    child's channel, group and controls, and sends ``cancel`` through the child; the rest of the
    child's supervision, the backstop it arms, is :class:`~fenwire_fast.live.parent.supervision.Supervision`)."""

    channel: Channel
    group: ProcessGroup
    grace: float
    cancel_sent: bool
    on_timer: Callable[[Any], None] | None
    #: seconds without an event after which a running child gets ``cancel`` (``None``: no watchdog)
    stall_timeout: float | None
    #: when (``time.monotonic()``) the last event was delivered (or the child was spawned)
    last_event: float
    #: the watchdog's verdict, once it fired: ``stalled: no event for S s``
    stalled: str | None
    _stall_timed: bool

    def _stall_due(self) -> float | None:
        """When the watchdog fires unless an event comes first; ``None`` while it does not watch:
        no ``stall_timeout``, fired already, ``cancel`` sent, ``exit`` read, the process ended, or
        the child idle (``ready``, every control acknowledged: waiting for the parent)."""
        channel = self.channel
        if (
            self.stall_timeout is None
            or self.stalled is not None
            or self.cancel_sent
            or channel.exit is not None
            or self.group.leader_gone
            or (channel.status == "ready" and not channel.unacked)
        ):
            return None
        return self.last_event + self.stall_timeout

    def _time_stall(self) -> None:
        """Ask for a wake-up when the watchdog starts watching (a later due time is found when
        that wake-up comes: the timer is set again from :meth:`next_timer`)."""
        due = self._stall_due() is not None
        if due and not self._stall_timed and self.on_timer is not None:
            self.on_timer(self)
        self._stall_timed = due

    def _watch_stall(self) -> None:
        due = self._stall_due()
        self._stall_timed = due is not None
        if due is None or time.monotonic() < due:
            return
        self.stalled = f"stalled: no event for {self.stall_timeout:g} s"
        self._stall_timed = False
        try:
            self.send("cancel")
        except OSError:
            self.cancel_sent = True
            self._arm(self.grace, "cancel")
