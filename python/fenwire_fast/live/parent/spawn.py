"""Starting and supervising live children.

:func:`spawn` makes a private directory (mode 0700) holding the control and event files (created
with ``O_EXCL``, mode 0600) and a log of the child's stdout/stderr, writes the first ``prompt``
**before** the child starts, and starts the child with ``FEN_WIRE_CONTROL_PATH``,
``FEN_WIRE_EVENT_PATH``, ``FEN_WIRE_RUN_ID`` and (optionally) ``FEN_WIRE_DEADLINE``. Any command
that speaks the protocol can be the child; the default is this package's own
``python -m fenwire_fast child``.

:class:`LiveChild` wraps the process and its :class:`~fenwire_fast.live.parent.channel.Channel`. Its
:meth:`LiveChild.poll` drains events and runs the **kill-after-grace backstop**: ``grace`` seconds
after the ``exit`` line, after sending ``cancel``, or after the deadline, a child that is still
running gets SIGTERM, and SIGKILL ``term_grace`` seconds later. A channel error (version mismatch,
foreign run, truncated event file) sends ``cancel`` once. A child whose process ends without an
``exit`` line is reported as :attr:`LiveChild.status` ``failed`` (``cancelled`` if the parent had
sent ``cancel``, ``timed-out`` past the deadline); a partial last line is never delivered.

Every child leads its own process group, and every signal goes to the whole group
(:mod:`~fenwire_fast.live.proc.group`): when the child ends, the group gets SIGTERM, and SIGKILL
``term_grace`` seconds later if members remain. When the parent process dies, the child takes its
group down itself (:mod:`~fenwire_fast.live.proc.orphans`). With ``stall_timeout``, a running child that
delivers no event for that many seconds gets ``cancel`` (the **watchdog**), and then the backstop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any

from ..proc import orphans
from ..proc.group import ProcessGroup
from ..proc.reaper import reap_when_ended
from .channel import Channel, PollError
from .tracing import resolve as resolve_trace
from .watchdog import StallWatchdog

if TYPE_CHECKING:
    from ... import ScanBatch
    from .adopt import DurableRun
    from .durable import StateDir
    from .otel import RunTrace, Telemetry

__all__ = ["spawn", "LiveChild", "ChildDetached", "child_command", "DEFAULT_GRACE", "DEFAULT_TERM_GRACE"]

DEFAULT_GRACE = 3.0
DEFAULT_TERM_GRACE = 1.0
#: ``spawn(acp=...)``: the kill backstop's grace is at least the bridge's grace plus this
ACP_GRACE_MARGIN = 1.0
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _on_default_path(directory: str) -> bool:
    """True when a fresh interpreter finds packages in ``directory`` without ``PYTHONPATH``."""
    import site

    try:
        default = [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - virtualenvs of old
        default = []
    real = os.path.realpath(directory)
    return any(os.path.realpath(d) == real for d in default)


def child_command(*args: str) -> list[str]:
    """``[sys.executable, "-m", "fenwire_fast", "child", *args]``."""
    return [sys.executable, "-m", "fenwire_fast", "child", *args]


def _private_file(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    os.close(fd)


class ChildDetached(RuntimeError):
    """A :class:`LiveChild` used after :meth:`LiveChild.detach` (or ``Hub.detach``): a detached
    handle sends no control (it would reuse the ``seq`` of controls that a parent which attached
    the run has sent), reads nothing and signals nothing. ``Hub.attach`` takes a durable run up
    again, with a new handle."""


class LiveChild(StallWatchdog):
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

    def prompt(self, text: str) -> int:
        return self.send("prompt", {"text": text})

    def steer(self, text: str) -> int:
        return self.send("steer", {"text": text})

    def follow_up(self, text: str) -> int:
        return self.send("follow-up", {"text": text})

    def finalize(self, note: str | None = None) -> int:
        return self.send("finalize", {"note": note} if note is not None else {})

    def cancel(self) -> int:
        return self.send("cancel")

    def close(self) -> int:
        return self.send("close")

    # -- polling and supervision ----------------------------------------------------------------

    def poll(self, *, woken: bool = False, reap: bool = True) -> tuple[list[dict[str, Any]], list[PollError]]:
        """Drain one chunk of events, then supervise the process (backstop, exit detection).

        A hub woken by the kernel passes ``woken=True`` (the file grew: no size check first) and
        ``reap=False`` when no pidfd fired and no timer is due (the process is not asked about).
        Raises :class:`ChildDetached` once the handle was detached."""
        self._attached()
        messages, errors = self.channel.poll(woken=woken)
        channel = self.channel
        if messages:
            self.messages += len(messages)
            self.last_event = time.monotonic()
            if self.stall_timeout is not None and not self._stall_timed:
                self._time_stall()
        if reap or channel.exit is not None or channel.error is not None or self.process.returncode is not None:
            self._supervise(reap)
        if self.trace is not None:
            if messages:
                self.trace.observe(messages, self)
            if self._finished:
                self.trace.finish(self)
        return messages, errors

    def poll_raw(self, *, woken: bool = False, reap: bool = True) -> tuple[list[ScanBatch], list[PollError]]:
        """:meth:`poll` with the events as :class:`~fenwire_fast.ScanBatch` objects (see
        :meth:`Channel.poll_raw`); the supervision is the same."""
        self._attached()
        batches, errors = self.channel.poll_raw(woken=woken)
        channel = self.channel
        if batches:
            self.messages += sum(map(len, batches))
            self.last_event = time.monotonic()
            if self.stall_timeout is not None and not self._stall_timed:
                self._time_stall()
        if reap or channel.exit is not None or channel.error is not None or self.process.returncode is not None:
            self._supervise(reap)
        if self.trace is not None:
            for batch in batches:
                self.trace.observe_raw(batch, self)
            if self._finished:
                self.trace.finish(self)
        return batches, errors

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
        without an ``exit`` line gets the last lines of its log too."""
        error = self._error()
        if self.stalled is None:
            return error
        return self.stalled if error is None else f"{self.stalled}; {error}"

    def _error(self) -> str | None:
        if self.channel.exit is not None and self.channel.exit.get("error"):
            return str(self.channel.exit["error"])
        if self.channel.error is not None or self.failure is None:
            return self.channel.error
        tail = self.log_text(4096).rstrip().splitlines()[-8:]
        if not tail:
            return self.failure
        return self.failure + "; its log ends:\n" + "\n".join("  " + line for line in tail)

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


def _acp_command(
    acp: Sequence[str],
    agent: str | None,
    agent_config: Mapping[str, Any] | None,
    command: Sequence[str] | None,
    mock: Any,
    permissions: str,
    grace: float,
    init_timeout: float,
) -> list[str]:
    """The child command of ``spawn(acp=...)``: ``fenwire child --acp ... -- ACP-COMMAND``."""
    if agent is not None or agent_config is not None or command is not None or mock is not None:
        raise ValueError(
            "acp runs the ACP bridge in this package's own child: it cannot be used with agent, agent_config, command or mock"
        )
    if isinstance(acp, str) or not acp or not all(isinstance(arg, str) for arg in acp):
        raise ValueError(f"acp must be the ACP agent's argv, a non-empty list of strings, not {acp!r}")
    if permissions not in ("deny", "allow-once", "allow-always"):
        raise ValueError(f"acp_permissions must be deny, allow-once or allow-always, not {permissions!r}")
    for name, value in (("acp_grace", grace), ("acp_init_timeout", init_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return child_command(
        "--acp",
        "--acp-permissions",
        permissions,
        "--acp-grace",
        repr(float(grace)),
        "--acp-init-timeout",
        repr(float(init_timeout)),
        "--",
        *acp,
    )


def spawn(
    prompt: str | None = None,
    *,
    command: Sequence[str] | None = None,
    run: str = "run",
    deadline: float | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    mock: Any = None,
    directory: str | None = None,
    grace: float = DEFAULT_GRACE,
    term_grace: float = DEFAULT_TERM_GRACE,
    cwd: str | None = None,
    max_bytes: int | None = None,
    final_text_cap: int | None = None,
    agent: str | None = None,
    agent_config: Mapping[str, Any] | None = None,
    stall_timeout: float | None = None,
    state: StateDir | None = None,
    acp: Sequence[str] | None = None,
    acp_permissions: str = "deny",
    acp_grace: float = 5.0,
    acp_init_timeout: float = 30.0,
    trace: bool | Telemetry | None = None,
) -> LiveChild:
    """Start a live child and return it (see the module docstring).

    ``prompt`` is written as the first control before the process starts (``None``: no prompt).
    ``deadline`` (Unix seconds) or ``timeout`` (seconds from now) sets ``FEN_WIRE_DEADLINE``.
    ``mock`` configures the built-in mock agent (a ``MockConfig`` or a dict of knobs; it becomes
    ``FENWIRE_MOCK``). ``agent`` runs your own agent instead of the mock, as ``"module:factory"``
    (``fenwire child --agent``; the module must be importable by the child), and ``agent_config``
    is the JSON-able mapping given to the factory. ``directory``: where to create the private directory (default: the system
    temp dir). ``env`` adds variables to the inherited environment. ``max_bytes`` bounds each read
    of the event file; ``final_text_cap`` the final-text file a ``result`` may name (see
    :class:`~fenwire_fast.live.parent.channel.Channel`). ``stall_timeout``: the watchdog (see the module
    docstring); a stalled child's :attr:`LiveChild.error` says ``stalled: no event for S s``.

    ``acp`` (an argv) runs an Agent Client Protocol agent through the ACP bridge in this package's
    own child (``fenwire child --acp``, :mod:`~fenwire_fast.live.acp.agent`; the child needs the ``acp``
    extra): ``acp_permissions`` (``deny``, ``allow-once`` or ``allow-always``) answers its permission
    requests, ``acp_grace`` is how long it has to answer ``session/cancel`` before its process group
    is killed, ``acp_init_timeout`` bounds ``initialize`` and ``session/new``. ``grace`` is then at
    least ``acp_grace`` + 1 s, so that the bridge's own grace runs out before the kill backstop.

    The child leads a new session and process group (``start_new_session``). This package's own
    child gets the read end of the parent's lifeline pipe as ``FEN_WIRE_PARENT_FD``; any other
    ``command`` is listed with the parent's keeper (see :mod:`~fenwire_fast.live.proc.orphans`): either
    way the group is taken down when the parent dies.

    ``state`` (a durable hub's state dir, see ``Hub(state_dir=...)``) makes the run **durable**:
    its private directory goes under the state dir, next to a manifest written before the process
    starts and again once it exists, and the child outlives its parent (no lifeline, no keeper)
    until its deadline or until it is told to stop.

    ``trace``: report the run to OpenTelemetry (the ``otel`` extra; see
    :mod:`~fenwire_fast.live.parent.otel`): ``True`` (the global providers), a
    :class:`~fenwire_fast.live.parent.otel.Telemetry`, ``False``, or ``None`` (the default: on when
    ``FENWIRE_OTEL=1``). The run span's context goes to the child as ``TRACEPARENT`` (and
    ``TRACESTATE``); a ``TRACEPARENT`` in ``env`` is the run span's parent. Raises
    :class:`~fenwire_fast.live.parent.tracing.TracingUnavailable` for ``trace=True`` without the extra."""
    telemetry = resolve_trace(trace)
    if stall_timeout is not None and not stall_timeout > 0:
        raise ValueError(f"stall_timeout must be a positive number of seconds, not {stall_timeout!r}")
    if acp is not None:
        command = _acp_command(acp, agent, agent_config, command, mock, acp_permissions, acp_grace, acp_init_timeout)
        grace = max(grace, acp_grace + ACP_GRACE_MARGIN)  # the bridge's own grace runs out first
    if timeout is not None:
        deadline = time.time() + timeout
    record: DurableRun | None = None
    run_trace: RunTrace | None = None
    if telemetry is not None:
        what = (
            {"fenwire.run.acp": " ".join(acp)}
            if acp is not None
            else {"fenwire.run.agent": agent}
            if agent is not None
            else {"fenwire.run.command": " ".join(command)}
            if command is not None
            else {"fenwire.run.agent": "mock"}
        )
        run_trace = telemetry.start_run(run, what, env)
    if state is not None:
        if directory is not None:
            raise ValueError("a durable run's directory is in its state dir: directory cannot be given too")
        from .adopt import DurableRun
        from .durable import new_manifest

        name, base = state.new_run_directory(run)
        settings = {"max_bytes": max_bytes, "final_text_cap": final_text_cap, "stall_timeout": stall_timeout}
        manifest = new_manifest(run, name, base, deadline=deadline, grace=grace, term_grace=term_grace, **settings)
        record = DurableRun(state, manifest)
    else:
        base = tempfile.mkdtemp(prefix="fenwire-", dir=directory)
        os.chmod(base, 0o700)
    try:
        control_path = os.path.join(base, "control.jsonl")
        event_path = os.path.join(base, "events.jsonl")
        log_path = os.path.join(base, "child.log")
        for path in (control_path, event_path, log_path):
            _private_file(path)
        channel_kwargs: dict[str, Any] = {"protected_paths": [log_path], "final_text_store": record}
        if max_bytes is not None:
            channel_kwargs["max_bytes"] = max_bytes
        if final_text_cap is not None:
            channel_kwargs["final_text_cap"] = final_text_cap
        channel = Channel(run, control_path, event_path, **channel_kwargs)
        if prompt is not None:
            channel.send("prompt", {"text": prompt})
        child_env = dict(os.environ)
        if env:
            child_env.update(env)
        if agent is None and agent_config is not None:
            raise ValueError("agent_config needs agent")
        if agent is not None and (command is not None or mock is not None):
            raise ValueError("agent runs in this package's own child: it cannot be used with command or mock")
        own = command is None or acp is not None
        if command is None:
            extra = [] if agent is None else ["--agent", agent]
            if agent_config is not None:
                extra += ["--agent-config", json.dumps(dict(agent_config), separators=(",", ":"))]
            command = child_command(*extra)
        if own and not _on_default_path(_PACKAGE_ROOT):  # e.g. running from a source tree
            old_path = child_env.get("PYTHONPATH")
            child_env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + old_path if old_path else "")
        child_env["FEN_WIRE_CONTROL_PATH"] = control_path
        child_env["FEN_WIRE_EVENT_PATH"] = event_path
        child_env["FEN_WIRE_RUN_ID"] = run
        if run_trace is not None:
            child_env.pop("TRACESTATE", None)
            child_env.update(run_trace.env)
            if prompt is not None:
                run_trace.control(1, "prompt")
        if deadline is not None:
            child_env["FEN_WIRE_DEADLINE"] = repr(float(deadline))
        else:
            child_env.pop("FEN_WIRE_DEADLINE", None)
        if mock is not None:
            knobs = asdict(mock) if is_dataclass(mock) and not isinstance(mock, type) else dict(mock)
            child_env["FENWIRE_MOCK"] = json.dumps(knobs, separators=(",", ":"))
        child_env.pop(orphans.PARENT_FD_ENV, None)
        pass_fds: tuple[int, ...] = ()
        if state is not None:
            assert record is not None
            record.manifest.command = list(command)
            record.save()  # before the process exists: a parent killed now leaves a findable run
        elif own:  # our own child watches the lifeline; a foreign command is listed with the keeper
            pass_fds = (orphans.lifeline(),)
            child_env[orphans.PARENT_FD_ENV] = str(pass_fds[0])
            child_env[orphans.TERM_GRACE_ENV] = repr(float(term_grace))
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        try:
            process = subprocess.Popen(
                list(command),
                env=child_env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                close_fds=True,
                pass_fds=pass_fds,
                start_new_session=True,
            )
        finally:
            os.close(log)
        kept = False
        if record is not None:
            record.started(process.pid)
        elif not own:
            try:
                kept = orphans.keeper().keep(process.pid, term_grace)
            except OSError:  # no keeper (e.g. out of descriptors): the child still runs, unkept
                pass
    except BaseException as exc:
        if run_trace is not None:
            run_trace.fail(exc)
        shutil.rmtree(base, ignore_errors=True)
        if record is not None:
            try:
                os.unlink(record.manifest.name + ".json", dir_fd=state.fd)  # type: ignore[union-attr]
            except OSError:
                pass
        raise
    child = LiveChild(
        run=run,
        directory=base,
        channel=channel,
        process=process,
        log_path=log_path,
        deadline=deadline,
        grace=grace,
        term_grace=term_grace,
        owns_directory=record is None,
        stall_timeout=stall_timeout,
        kept=kept,
        durable=record,
    )
    child.trace = run_trace
    return child
