"""The supervision of a live child: its kill-after-grace backstop, the end of its process found,
and the outcome told from them (a base of :class:`~fenwire_fast.live.parent.live_child.LiveChild`).

``grace`` seconds after the ``exit`` line, after ``cancel`` or after the deadline, a child still
running gets SIGTERM, and SIGKILL ``term_grace`` seconds later; every signal goes to the child's
whole process group. Once the process has ended, what it wrote is read to its end (one bounded read
per poll) before the child is :attr:`~Supervision.finished`.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..proc import orphans

if TYPE_CHECKING:
    from ..proc.group import ProcessGroup
    from .channel import Channel

__all__ = ["Supervision"]


class Supervision:
    """The supervision part of a live child (a base class: it reads the child's channel, process
    and group, sends ``cancel`` through the child, and asks the watchdog)."""

    run: str
    channel: Channel
    process: subprocess.Popen[bytes]
    group: ProcessGroup
    log_path: str
    deadline: float | None
    grace: float
    term_grace: float
    cancel_sent: bool
    killed: bool
    failure: str | None
    stall_timeout: float | None
    stalled: str | None
    on_timer: Callable[[Any], None] | None
    _kill_at: float | None
    _kill_reason: str
    _terminated_at: float | None
    _finished: bool
    _death_status: str
    _died: bool
    _draining: bool
    _kept: bool
    #: a finished run's :attr:`error`, made once
    _final_error: tuple[str | None] | None = None

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        raise NotImplementedError

    def _stall_due(self) -> float | None:
        raise NotImplementedError

    def _watch_stall(self) -> None:
        raise NotImplementedError

    def next_timer(self) -> float | None:
        """When (``time.monotonic()``) supervision has something to do without any event: the
        deadline, the kill backstop, or SIGKILL after SIGTERM; ``None`` when nothing is pending."""
        if self._finished:
            return None
        if self.group.leader_gone:
            return self.group.next_timer()
        when = self._stall_due()
        if self._terminated_at is not None:
            at = self._terminated_at + self.term_grace
        elif self._kill_at is not None:
            at = self._kill_at
        elif self.deadline is not None and self.channel.exit is None:
            at = time.monotonic() + max(self.deadline - time.time(), 0.0) + 0.001
        else:
            return when
        return at if when is None else min(at, when)

    def _arm(self, delay: float, reason: str) -> None:
        at = time.monotonic() + delay
        if self._kill_at is None or at < self._kill_at:
            self._kill_at = at
            self._kill_reason = reason
            if self.on_timer is not None:
                self.on_timer(self)

    def _supervise(self, reap: bool = True) -> None:
        if self._finished:
            return
        channel = self.channel
        if channel.exit is not None:
            self._arm(self.grace, "exit")
        if channel.error is not None and not self.cancel_sent and channel.exit is None:
            try:
                self.send("cancel")
            except OSError:
                self.cancel_sent = True
                self._arm(self.grace, "cancel")
        if self.deadline is not None and channel.exit is None and self._kill_at is None:
            remaining = self.deadline - time.time()
            if remaining <= 0:
                self._arm(self.grace, "deadline")
        if self.stall_timeout is not None:
            self._watch_stall()
        group = self.group
        if not reap and self.process.returncode is None:
            return  # not asked about, and not known to have ended
        if not group.leader_gone:
            if not group.leader_exited():
                self._backstop()
                return
            group.leader_ended()  # SIGTERM to the group before the leader is reaped
        group.supervise(time.monotonic())
        returncode = self.process.returncode
        assert returncode is not None
        if not self._died:
            self._died = True
            # decided when the death is found: a later cancel or clock does not change the outcome
            if self.cancel_sent:
                self._death_status = "cancelled"
            elif self.deadline is not None and time.time() >= self.deadline:
                self._death_status = "timed-out"
        # The process is gone: whatever it wrote is in the file now, and is read one bounded read
        # per poll, as while the child lived (a final-text file one step per poll). The child is
        # finished once its file is read to the end, or to its exit line.
        self._draining = channel.exit is None and channel.pending()
        if self._draining:
            return
        if channel.exit is None and self.failure is None:
            if self.adopted:
                how = "ended (its exit code is unknown to a parent that re-attached)"
            elif returncode < 0:
                how = f"was killed by signal {-returncode}"
            else:
                how = f"exited with code {returncode}"
            self.failure = f"child {how} without an exit line"
            if self.killed:
                self.failure += f" (killed {self.grace:g} s after {self._kill_reason})"
        if group.done:
            self._release()
            self._finished = True

    def _release(self) -> None:
        if self._kept:
            self._kept = False
            orphans.release(self.group.pgid)

    def _backstop(self) -> None:
        """The leader runs: SIGTERM its group once the kill backstop is due, SIGKILL ``term_grace`` later."""
        now = time.monotonic()
        if self._kill_at is None or now < self._kill_at:
            return
        if self._terminated_at is None:
            self._terminated_at = now
            self.killed = True
            self.group.terminate()
            if self.on_timer is not None:
                self.on_timer(self)
        elif now >= self._terminated_at + self.term_grace and not self.group.kill_sent:
            self.group.kill()

    @property
    def finished(self) -> bool:
        """The process has ended and every line it wrote has been read."""
        return self._finished

    @property
    def draining(self) -> bool:
        """The process has ended, and what it wrote is still being read, one bounded read per
        :meth:`poll` (as while it ran): poll again without waiting for a wake-up."""
        return self._draining

    @property
    def returncode(self) -> int | None:
        """The process's exit code (negative: the signal that killed it); ``None`` while it runs,
        and always for an :attr:`adopted` child (its exit code cannot be had)."""
        return None if self.adopted else self.process.returncode

    @property
    def adopted(self) -> bool:
        """The child was taken up from a state dir by ``Hub.attach`` (not started by this process)."""
        return getattr(self.process, "adopted", False)

    @property
    def status(self) -> str:
        """The run's status: the mirrored one, or the outcome when the child died without ``exit``."""
        if self.channel.exit is not None or self.failure is None:
            return self.channel.status
        return self._death_status

    @property
    def error(self) -> str | None:
        """Why the run did not end well, when it did not: the watchdog's verdict first (``stalled:
        no event for S s``), then the exit's error, a channel error, or a failure; a child that died
        without an ``exit`` line gets the last lines of its log too. Made once for a finished run
        (the log is read then, and not at every look)."""
        final = self._final_error
        if final is not None:
            return final[0]
        error = self._error()
        if self.stalled is not None:
            error = self.stalled if error is None else f"{self.stalled}; {error}"
        if self._finished:
            self._final_error = (error,)
        return error

    def _error(self) -> str | None:
        if self.channel.exit is not None and self.channel.exit.get("error"):
            return str(self.channel.exit["error"])
        if self.channel.error is not None or self.failure is None:
            return self.channel.error
        tail = self.log_text(4096).rstrip().splitlines()[-8:]
        if not tail:
            return self.failure
        return self.failure + "; its log ends:\n" + "\n".join("  " + line for line in tail)

    def log_text(self, limit: int = 65536) -> str:
        """The tail of what the child wrote on stdout/stderr."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - limit))
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""
