"""Starting and supervising live children.

:func:`spawn` makes a private directory (mode 0700) holding the control and event files (created
with ``O_EXCL``, mode 0600) and a log of the child's stdout/stderr, writes the first ``prompt``
**before** the child starts, and starts the child with ``FEN_WIRE_CONTROL_PATH``,
``FEN_WIRE_EVENT_PATH``, ``FEN_WIRE_RUN_ID`` and (optionally) ``FEN_WIRE_DEADLINE``. Any command
that speaks the protocol can be the child; the default is this package's own
``python -m fenwire_fast child``.

:class:`LiveChild` (defined in :mod:`~fenwire_fast.live.parent.live_child`, re-exported here)
wraps the process and its :class:`~fenwire_fast.live.parent.channel.Channel`. Its
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

:func:`spawn` goes in steps: what runs (:class:`_What`), the supervision settings
(:class:`_Supervision`), the run's directory and files (:class:`_RunFiles`, with a durable run's
manifest), the child's environment, the process, and the :class:`LiveChild` over them; a step that
fails takes back what the earlier ones made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from typing import TYPE_CHECKING, Any

from ..proc import orphans
from .channel import Channel
from .live_child import DEFAULT_GRACE, DEFAULT_TERM_GRACE, ChildDetached, LiveChild
from .tracing import resolve as resolve_trace

if TYPE_CHECKING:
    from .durable import StateDir
    from .durable_run import DurableRun
    from .otel import RunTrace, Telemetry

__all__ = ["spawn", "LiveChild", "ChildDetached", "child_command", "DEFAULT_GRACE", "DEFAULT_TERM_GRACE"]

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


@dataclass
class _What:
    """What runs: ``command`` (for ``acp``, the ACP bridge's command already), ``agent`` with its
    ``agent_config``, the ``mock``, or the ``acp`` agent."""

    command: Sequence[str] | None
    agent: str | None
    agent_config: Mapping[str, Any] | None
    mock: Any
    acp: Sequence[str] | None

    def attributes(self) -> dict[str, str]:
        """The run span's attributes saying what runs."""
        if self.acp is not None:
            return {"fenwire.run.acp": " ".join(self.acp)}
        if self.agent is not None:
            return {"fenwire.run.agent": self.agent}
        if self.command is not None:
            return {"fenwire.run.command": " ".join(self.command)}
        return {"fenwire.run.agent": "mock"}

    def argv(self) -> tuple[list[str], bool]:
        """The child's argv, and whether it is this package's own child. Raises ``ValueError``."""
        agent, command = self.agent, self.command
        if agent is None and self.agent_config is not None:
            raise ValueError("agent_config needs agent")
        if agent is not None and (command is not None or self.mock is not None):
            raise ValueError("agent runs in this package's own child: it cannot be used with command or mock")
        own = command is None or self.acp is not None
        if command is None:
            extra = [] if agent is None else ["--agent", agent]
            if self.agent_config is not None:
                extra += ["--agent-config", json.dumps(dict(self.agent_config), separators=(",", ":"))]
            command = child_command(*extra)
        return list(command), own


@dataclass
class _Supervision:
    """How the child is supervised: its deadline (Unix seconds), the kill backstop's graces, the
    watchdog."""

    deadline: float | None
    grace: float
    term_grace: float
    stall_timeout: float | None

    @classmethod
    def of(
        cls, deadline: float | None, timeout: float | None, grace: float, term_grace: float, stall_timeout: float | None
    ) -> _Supervision:
        """Checked; ``timeout`` (seconds from now) sets the deadline. Raises ``ValueError``."""
        if stall_timeout is not None and not stall_timeout > 0:
            raise ValueError(f"stall_timeout must be a positive number of seconds, not {stall_timeout!r}")
        if timeout is not None:
            deadline = time.time() + timeout
        return cls(deadline, grace, term_grace, stall_timeout)


@dataclass
class _RunFiles:
    """A run's private directory (``base``) and, for a durable run, its record in the state dir."""

    run: str
    base: str
    record: DurableRun | None

    @property
    def control_path(self) -> str:
        return os.path.join(self.base, "control.jsonl")

    @property
    def event_path(self) -> str:
        return os.path.join(self.base, "events.jsonl")

    @property
    def log_path(self) -> str:
        return os.path.join(self.base, "child.log")

    @classmethod
    def make(
        cls,
        run: str,
        state: StateDir | None,
        directory: str | None,
        timing: _Supervision,
        max_bytes: int | None,
        final_text_cap: int | None,
    ) -> _RunFiles:
        """The private directory: a fresh one in ``directory`` (mode 0700), or for a durable run one
        in the state dir, with a manifest (not yet saved)."""
        if state is None:
            base = tempfile.mkdtemp(prefix="fenwire-", dir=directory)
            os.chmod(base, 0o700)
            return cls(run, base, None)
        if directory is not None:
            raise ValueError("a durable run's directory is in its state dir: directory cannot be given too")
        from .durable import new_manifest
        from .durable_run import DurableRun

        name, base = state.new_run_directory(run)
        settings = {"max_bytes": max_bytes, "final_text_cap": final_text_cap, "stall_timeout": timing.stall_timeout}
        manifest = new_manifest(
            run, name, base, deadline=timing.deadline, grace=timing.grace, term_grace=timing.term_grace, **settings
        )
        return cls(run, base, DurableRun(state, manifest))

    def channel(self, prompt: str | None, max_bytes: int | None, final_text_cap: int | None) -> Channel:
        """Create the three files (``O_EXCL``, mode 0600) and the channel over them; write ``prompt``."""
        for path in (self.control_path, self.event_path, self.log_path):
            _private_file(path)
        kwargs: dict[str, Any] = {"protected_paths": [self.log_path], "final_text_store": self.record}
        if max_bytes is not None:
            kwargs["max_bytes"] = max_bytes
        if final_text_cap is not None:
            kwargs["final_text_cap"] = final_text_cap
        channel = Channel(self.run, self.control_path, self.event_path, **kwargs)
        if prompt is not None:
            channel.send("prompt", {"text": prompt})
        return channel

    def remove(self, run_trace: RunTrace | None, exc: BaseException, channel: Channel | None) -> None:
        """The spawn failed with ``exc``: close the channel (its files are open once it exists),
        end the run span, remove the directory and the manifest."""
        if channel is not None:
            channel.close()
        if run_trace is not None:
            run_trace.fail(exc)
        shutil.rmtree(self.base, ignore_errors=True)
        if self.record is not None:
            try:
                os.unlink(self.record.manifest.name + ".json", dir_fd=self.record.state.fd)
            except OSError:
                pass


def _environment(
    files: _RunFiles,
    env: Mapping[str, str] | None,
    own: bool,
    timing: _Supervision,
    mock: Any,
    run_trace: RunTrace | None,
    prompt: str | None,
) -> dict[str, str]:
    """The child's environment: the parent's, ``env``, the protocol's variables, the trace context
    (the prompt is recorded on the run span then), the mock's knobs; never the parent's lifeline."""
    child_env = dict(os.environ)
    if env:
        child_env.update(env)
    if own and not _on_default_path(_PACKAGE_ROOT):  # e.g. running from a source tree
        old_path = child_env.get("PYTHONPATH")
        child_env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + old_path if old_path else "")
    child_env["FEN_WIRE_CONTROL_PATH"] = files.control_path
    child_env["FEN_WIRE_EVENT_PATH"] = files.event_path
    child_env["FEN_WIRE_RUN_ID"] = files.run
    if run_trace is not None:
        child_env.pop("TRACESTATE", None)
        child_env.update(run_trace.env)
        if prompt is not None:
            run_trace.control(1, "prompt")
    if timing.deadline is not None:
        child_env["FEN_WIRE_DEADLINE"] = repr(float(timing.deadline))
    else:
        child_env.pop("FEN_WIRE_DEADLINE", None)
    if mock is not None:
        knobs = asdict(mock) if is_dataclass(mock) and not isinstance(mock, type) else dict(mock)
        child_env["FENWIRE_MOCK"] = json.dumps(knobs, separators=(",", ":"))
    child_env.pop(orphans.PARENT_FD_ENV, None)
    return child_env


def _start(
    files: _RunFiles, argv: list[str], child_env: dict[str, str], own: bool, cwd: str | None, term_grace: float
) -> tuple[subprocess.Popen[bytes], bool]:
    """Start the process in a new session; return it and whether the keeper lists it.

    A durable run's manifest is saved before the process exists and again with its pid; our own
    child gets the lifeline, a foreign command is listed with the keeper."""
    record = files.record
    pass_fds: tuple[int, ...] = ()
    if record is not None:
        record.manifest.command = list(argv)
        record.save()  # before the process exists: a parent killed now leaves a findable run
    elif own:  # our own child watches the lifeline; a foreign command is listed with the keeper
        pass_fds = (orphans.lifeline(),)
        child_env[orphans.PARENT_FD_ENV] = str(pass_fds[0])
        child_env[orphans.TERM_GRACE_ENV] = repr(float(term_grace))
    log = os.open(files.log_path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        process = subprocess.Popen(
            argv,
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
    return process, kept


def _live_child(
    files: _RunFiles,
    channel: Channel,
    process: subprocess.Popen[bytes],
    timing: _Supervision,
    kept: bool,
    run_trace: RunTrace | None,
) -> LiveChild:
    """The handle over the started child."""
    child = LiveChild(
        run=files.run,
        directory=files.base,
        channel=channel,
        process=process,
        log_path=files.log_path,
        deadline=timing.deadline,
        grace=timing.grace,
        term_grace=timing.term_grace,
        owns_directory=files.record is None,
        stall_timeout=timing.stall_timeout,
        kept=kept,
        durable=files.record,
    )
    child.trace = run_trace
    return child


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
    timing = _Supervision.of(deadline, timeout, grace, term_grace, stall_timeout)
    if acp is not None:
        command = _acp_command(acp, agent, agent_config, command, mock, acp_permissions, acp_grace, acp_init_timeout)
        timing.grace = max(grace, acp_grace + ACP_GRACE_MARGIN)  # the bridge's own grace runs out first
    what = _What(command, agent, agent_config, mock, acp)
    run_trace = telemetry.start_run(run, what.attributes(), env) if telemetry is not None else None
    files = _RunFiles.make(run, state, directory, timing, max_bytes, final_text_cap)
    channel: Channel | None = None
    try:
        channel = files.channel(prompt, max_bytes, final_text_cap)
        argv, own = what.argv()
        child_env = _environment(files, env, own, timing, mock, run_trace, prompt)
        process, kept = _start(files, argv, child_env, own, cwd, term_grace)
    except BaseException as exc:
        files.remove(run_trace, exc, channel)
        raise
    return _live_child(files, channel, process, timing, kept, run_trace)
