"""The parent's handle on one live child: :class:`LiveChild`.

It wraps the child's process and its :class:`~fenwire_fast.live.parent.channel.Channel`: controls go
out through the channel, :meth:`LiveChild.poll` drains events and runs the kill-after-grace
backstop (``grace`` seconds after the ``exit`` line, after ``cancel`` or after the deadline, a child
still running gets SIGTERM, and SIGKILL ``term_grace`` seconds later), and every signal goes to the
child's whole process group. :func:`~fenwire_fast.live.parent.spawn.spawn` makes one.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from time import monotonic
from typing import TYPE_CHECKING, Any, Literal, overload

from ..proc.group import ProcessGroup
from ..proc.reaper import reap_when_ended
from .channel import Channel, PollError
from .surface import ChannelStatus, ControlVerbs
from .watchdog import StallWatchdog

if TYPE_CHECKING:
    from ... import ScanBatch
    from .durable_run import DurableRun
    from .otel import RunTrace

__all__ = ["LiveChild", "ChildDetached", "DEFAULT_GRACE", "DEFAULT_TERM_GRACE"]

DEFAULT_GRACE = 3.0
DEFAULT_TERM_GRACE = 1.0


class ChildDetached(RuntimeError):
    """A :class:`LiveChild` used after :meth:`LiveChild.detach` (or ``Hub.detach``): a detached
    handle sends no control (it would reuse the ``seq`` of controls that a parent which attached
    the run has sent), reads nothing and signals nothing. ``Hub.attach`` takes a durable run up
    again, with a new handle."""


class LiveChild(ControlVerbs, ChannelStatus, StallWatchdog):
    """One spawned child: its process, its files and its :class:`Channel`."""

    def __init__(
        self,
        *,
        run: str,
        directory: str,
        channel: Channel,
        process: subprocess.Popen[bytes],
        log_path: str,
        deadline: float | None,
        grace: float,
        term_grace: float,
        owns_directory: bool,
        stall_timeout: float | None = None,
        kept: bool = False,
        durable: DurableRun | None = None,
    ) -> None:
        self.run = run
        self.directory = directory
        self.channel = channel
        self.process = process
        self.log_path = log_path
        self.deadline = deadline
        self.grace = grace
        self.term_grace = term_grace
        self.owns_directory = owns_directory
        self.messages = 0
        self.failure: str | None = None
        self.cancel_sent = False
        self.killed = False
        self._kill_at: float | None = None
        self._kill_reason = ""
        self._terminated_at: float | None = None
        self._finished = False
        self._death_status = "failed"
        self._died = False  # the process's end was found (its death status decided then)
        self._draining = False
        self.group = ProcessGroup(process, term_grace)
        self._kept = kept  # listed with the keeper (a foreign command): released when the group is empty
        #: the watchdog: seconds without an event after which a running child gets ``cancel``
        self.stall_timeout = stall_timeout
        #: when (``time.monotonic()``) the last event was delivered (or the child was spawned)
        self.last_event = time.monotonic()
        #: the watchdog's verdict, once it fired: ``stalled: no event for S s``
        self.stalled: str | None = None
        self._stall_timed = False  # a timer for the watchdog was asked for (see on_timer)
        #: called with this child when a supervision timer is set (a hub sleeping until then)
        self.on_timer: Callable[[LiveChild], None] | None = None
        #: the run's record in a state dir (a durable hub's child), else ``None``
        self.durable = durable
        #: the ``seq`` of the last event handed to the consumer (kept by a durable hub: what
        #: :meth:`~fenwire_fast.live.parent.hub.Hub.commit` records)
        self.delivered_seq = durable.manifest.committed_seq if durable is not None else 0
        #: the run's OpenTelemetry spans and counts when it is traced (``spawn(trace=...)``), else ``None``
        self.trace: RunTrace | None = None
        #: :meth:`detach` let go of the child: sending, polling and killing raise :class:`ChildDetached`
        self.detached = False

    @property
    def pid(self) -> int:
        """The child's pid (0 for a run taken up by ``Hub.attach`` whose process was never found)."""
        return self.process.pid

    @property
    def pgid(self) -> int:
        """The id of the child's process group (its pid: it leads the group)."""
        return self.group.pgid

    @property
    def control_path(self) -> str:
        return self.channel.control_path

    @property
    def event_path(self) -> str:
        return self.channel.event_path

    # -- controls -------------------------------------------------------------------------------

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        """Send a control (see :meth:`Channel.send`); ``cancel`` arms the kill backstop. Raises
        :class:`ChildDetached` once the handle was detached."""
        self._attached()
        seq = self.channel.send(type_, payload)
        if self.trace is not None:
            self.trace.control(seq, type_)
        if type_ == "cancel":
            self.cancel_sent = True
            self._arm(self.grace, "cancel")
        elif self.stall_timeout is not None:
            self._time_stall()  # a control to an idle child puts it to work: watch it
        return seq

    # -- polling and supervision ----------------------------------------------------------------

    def poll(self, *, woken: bool = False, reap: bool = True) -> tuple[list[dict[str, Any]], list[PollError]]:
        """Drain one chunk of events, then supervise the process (backstop, exit detection).

        A hub woken by the kernel passes ``woken=True`` (the file grew: no size check first) and
        ``reap=False`` when no pidfd fired and no timer is due (the process is not asked about).
        Raises :class:`ChildDetached` once the handle was detached."""
        return self.read(False, woken=woken, reap=reap)

    def poll_raw(self, *, woken: bool = False, reap: bool = True) -> tuple[list[ScanBatch], list[PollError]]:
        """:meth:`poll` with the events as :class:`~fenwire_fast.ScanBatch` objects (see
        :meth:`Channel.poll_raw`); the supervision is the same."""
        return self.read(True, woken=woken, reap=reap)

    @overload
    def read(
        self, raw: Literal[False], *, woken: bool = False, reap: bool = True
    ) -> tuple[list[dict[str, Any]], list[PollError]]: ...
    @overload
    def read(
        self, raw: Literal[True], *, woken: bool = False, reap: bool = True
    ) -> tuple[list[ScanBatch], list[PollError]]: ...
    @overload
    def read(self, raw: bool, *, woken: bool = False, reap: bool = True) -> tuple[list[Any], list[PollError]]: ...

    def read(self, raw: bool, *, woken: bool = False, reap: bool = True) -> tuple[list[Any], list[PollError]]:
        """The one read behind :meth:`poll` (``raw=False``: dicts) and :meth:`poll_raw`
        (``raw=True``: :class:`~fenwire_fast.ScanBatch` objects): drain one chunk, account for
        what it brought (:attr:`messages`, :attr:`last_event`, :attr:`delivered_seq`, the trace),
        then supervise the process. (A hub's hot read, ``Channel.poll_hot``, makes the same
        accounting inline, without this call.)"""
        self._attached()
        channel = self.channel
        poll: Callable[..., tuple[list[Any], list[PollError]]] = channel.poll_raw if raw else channel.poll
        items, errors = poll(woken=woken)
        if items:
            if raw:
                self.messages += sum(map(len, items))
                last_seq = items[-1].seqs[-1]
            else:
                self.messages += len(items)
                last_seq = items[-1]["seq"]
            self.last_event = monotonic()
            if self.durable is not None:
                self.delivered_seq = last_seq
            if self.stall_timeout is not None and not self._stall_timed:
                self._time_stall()
        if reap or channel.exit is not None or channel.error is not None or self.process.returncode is not None:
            self._supervise(reap)
        trace = self.trace
        if trace is not None:
            if items:
                for batch in items if raw else (items,):
                    trace.observe(batch, self, raw=raw)
            if self._finished:
                trace.finish(self)
        return items, errors

    def wait(self, timeout: float | None = None, *, interval: float = 0.01) -> str:
        """Poll until the child has finished; return :attr:`status`. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._finished:
            messages, errors = self.poll()
            if self._finished:
                break
            if end is not None and time.monotonic() >= end:
                raise TimeoutError(f"child {self.run} still running after {timeout} s")
            if not messages and not errors and not self._draining:
                time.sleep(interval)
        return self.status

    def kill(self) -> None:
        """SIGKILL the child's whole process group now (if anything of it still runs). Raises
        :class:`ChildDetached` once the handle was detached."""
        self._attached()
        if not self.group.leader_exited():
            self.killed = True
        self.group.kill()

    def cleanup(self) -> None:
        """Kill the process if needed, reap it, close the files and remove the private directory
        (nothing, once the handle was detached: the child is no longer this handle's)."""
        if self.detached:
            return
        self.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.trace is not None:
            self.trace.finish(self, None if self._finished else "the run was killed before it finished")
        self._release()
        self._let_go()
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def detach(self) -> None:
        """Let go of the child without stopping it: close the files (and an adopted child's pidfd).
        A durable run is then taken up again with ``Hub.attach``. The handle then raises
        :class:`ChildDetached` when asked to send, poll or kill. The process, if this process
        started it, is still reaped when it ends (:mod:`~fenwire_fast.live.proc.reaper`), so that it
        leaves no zombie behind."""
        if not self.detached:
            self.detached = True
            self._let_go()

    def _let_go(self) -> None:
        if self.trace is not None:
            self.trace.finish(self, None if self._finished else "the parent let go of the run")
        self.channel.close()
        reap_when_ended(self.process)  # takes an adopted child's pidfd over
        close = getattr(self.process, "close", None)
        if close is not None:
            close()

    def _attached(self) -> None:
        if self.detached:
            raise ChildDetached(
                f"run {self.run}: this handle was detached; it sends, reads and signals nothing "
                "(Hub.attach takes a durable run up again)"
            )

    def __enter__(self) -> LiveChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"<LiveChild {self.run} pid={self.pid} status={self.status}>"
