"""Taking up durable runs again: a child's process found by pid and start time, a run rebuilt from
its files, and a run's record kept up to date.

- :class:`AdoptedProcess` stands in for ``subprocess.Popen`` for a child this process did not
  start. It holds a pidfd opened **before** the child's start time was checked against the
  manifest, so the descriptor refers to the child and not to a process that took its pid later.
  A re-attached parent cannot learn the child's exit code: only that it ended.
- :func:`adopt` rebuilds a run from its manifest and files: a channel that has read the control
  file (each control sent, and the ``seq`` to continue from) and reads the event file again from
  the run's mark (the place a commit recorded, checked against the file) or else from its start,
  mirroring every event but handing over only those after the committed position.
- :class:`DurableRun` (from :mod:`~fenwire_fast.live.parent.durable_run`, re-exported here) is a
  run's manifest as the hub keeps it: written when the run starts, when its process exists, and at
  each :meth:`~fenwire_fast.live.parent.hub.Hub.commit` that moves it.
"""

from __future__ import annotations

import os
import select
import stat
import subprocess
from typing import TYPE_CHECKING

from .channel import Channel
from .durable import Manifest, StateDir, boot_id, decode_mark, process_start
from .durable_run import DurableRun

if TYPE_CHECKING:
    from .live_child import LiveChild

__all__ = ["AdoptedProcess", "DurableRun", "AdoptError", "adopt", "find_process", "alive"]


class AdoptError(ValueError):
    """A manifest whose run cannot be taken up (the message says why)."""


class AdoptedProcess:
    """A child adopted from a manifest, watched through a pidfd (``None``: it had ended already).

    ``returncode`` is ``None`` while it runs and :data:`UNKNOWN` once it has ended: the exit code
    of a process that is not this one's child cannot be had."""

    #: the ``returncode`` of an adopted process that has ended
    UNKNOWN = -(1 << 16)
    adopted = True

    def __init__(self, pid: int, pidfd: int | None) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.returncode: int | None = None if pidfd is not None else self.UNKNOWN

    def _ended(self, timeout: float | None) -> bool:
        """The process has ended, seen within ``timeout`` seconds (``None``: however long it takes)."""
        if self.pidfd is None:
            return True
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if not poller.poll(None if timeout is None else max(0, int(timeout * 1000))):
            return False
        self._reap()
        os.close(self.pidfd)
        self.pidfd = None
        self.returncode = self.UNKNOWN
        return True

    def _reap(self) -> None:
        """Reap the process when it is this process's own child after all (one it started and then
        let go of with ``detach``): otherwise nobody would, and it would stay a zombie, keeping its
        group alive. Any other process is reaped by its own parent (init, a subreaper)."""
        try:
            os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG)  # type: ignore[arg-type]
        except (ChildProcessError, OSError, AttributeError):
            pass

    def poll(self) -> int | None:
        """:data:`UNKNOWN` once the process has ended, else ``None`` (never blocks)."""
        if self.returncode is None:
            self._ended(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end; raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        if self.returncode is None and not self._ended(timeout):
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
        return self.UNKNOWN

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _environ_names(pid: int, event_path: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return False
    return b"FEN_WIRE_EVENT_PATH=" + os.fsencode(event_path) in environ.split(b"\0")


def _find_unrecorded(event_path: str) -> int | None:
    """The process that leads its own group and was started for ``event_path`` (a parent killed
    between starting a child and recording its pid leaves such a manifest)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if entry.isdigit() and _environ_names(int(entry), event_path):
            try:
                if os.getpgid(int(entry)) == int(entry):
                    return int(entry)
            except OSError:
                continue
    return None


def find_process(manifest: Manifest) -> AdoptedProcess:
    """The run's child, if it still runs (a pidfd checked against the start time and boot), else
    an ended :class:`AdoptedProcess`."""
    pid, start = manifest.pid, manifest.start
    if pid is None:
        pid = _find_unrecorded(manifest.event_path)
        if pid is None:
            return AdoptedProcess(0, None)
        start = process_start(pid)
    elif manifest.boot is not None and manifest.boot != boot_id():
        return AdoptedProcess(pid, None)  # the machine rebooted since
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return AdoptedProcess(pid, None)
    # checked after the pidfd exists: the descriptor is the process whose start time matches
    if start is None or process_start(pid) != start:
        os.close(pidfd)
        return AdoptedProcess(pid, None)
    return AdoptedProcess(pid, pidfd)


def alive(manifest: Manifest) -> bool:
    """The run's child still runs (its pid, with the recorded start time, in this boot)."""
    if manifest.pid is None or manifest.start is None or manifest.boot not in (None, boot_id()):
        return False
    return process_start(manifest.pid) == manifest.start


def _check_committed(manifest: Manifest, channel: Channel) -> None:
    """The committed position is one the event file reached: a commit past its last event would
    have every later event of the run taken as handled already (dropped)."""
    if not channel.stopped and not channel.pending() and manifest.committed_seq > channel.read_seq:
        raise AdoptError(
            f"{manifest.name}: committed_seq {manifest.committed_seq} is past the last event of its file "
            f"(seq {channel.read_seq})"
        )


def adopt(state: StateDir, manifest: Manifest, *, stall_timeout: float | None = None) -> LiveChild:
    """Rebuild the run of ``manifest`` (see the module docstring). Raises :class:`AdoptError`."""
    from .live_child import LiveChild  # here: ``fenwire runs`` imports this module for alive() only

    directory = state.run_path(manifest.name)
    control = os.path.join(directory, "control.jsonl")
    events = os.path.join(directory, "events.jsonl")
    log = os.path.join(directory, "child.log")
    if (manifest.control_path, manifest.event_path, manifest.log_path) != (control, events, log):
        raise AdoptError(f"{manifest.name}: its paths are not those of its run directory")
    try:
        mode = os.lstat(directory).st_mode
    except OSError:
        raise AdoptError(f"{manifest.name}: its run directory is missing") from None
    if not stat.S_ISDIR(mode):  # not followed: a symlink would take the run's files out of the state dir
        raise AdoptError(f"{manifest.name}: its run directory is not a directory (a symlink or another file)")
    record = DurableRun(state, manifest)
    kwargs: dict[str, object] = {}
    if manifest.max_bytes is not None:
        kwargs["max_bytes"] = manifest.max_bytes
    if manifest.final_text_cap is not None:
        kwargs["final_text_cap"] = manifest.final_text_cap
    try:
        channel = Channel(manifest.run, control, events, protected_paths=[log], final_text_store=record, **kwargs)  # type: ignore[arg-type]
    except OSError as exc:
        raise AdoptError(f"{manifest.name}: cannot read its files: {exc.strerror or exc}") from None
    try:
        channel.resume(manifest.committed_seq, start=decode_mark(manifest.mark) if manifest.mark else None)
        _check_committed(manifest, channel)
    except (OSError, AdoptError) as exc:
        channel.close()
        if isinstance(exc, AdoptError):
            raise
        raise AdoptError(f"{manifest.name}: cannot read its files: {exc.strerror or exc}") from None
    process = find_process(manifest)
    child = LiveChild(
        run=manifest.run,
        directory=directory,
        channel=channel,
        process=process,  # type: ignore[arg-type]
        log_path=log,
        deadline=manifest.deadline,
        grace=manifest.grace,
        term_grace=manifest.term_grace,
        owns_directory=False,
        stall_timeout=manifest.stall_timeout if manifest.stall_timeout is not None else stall_timeout,
        durable=record,
    )
    if process.returncode is not None:
        # it ended while no parent watched: its group id may be anyone's by now, so it is not signalled
        child.group.leader_gone = child.group.done = True
    if any(sent.type == "cancel" for sent in channel.controls.values()):
        child.cancel_sent = True
        child._arm(child.grace, "cancel")
    return child
