"""What wakes a parent that waits on live files: the kernel, or a polling tick.

On Linux, :class:`KernelWakeups` puts one inotify descriptor (a watch per followed file) and one
pidfd per child process into a single epoll: a wait sleeps in the kernel until a file grows or a
process ends, so a file that does not change costs nothing at all. inotify comes from the small
``inotify_simple`` package (a ctypes wrapper over the three libc calls); the events are decoded
here in bulk, since a watch on a file (not a directory) always makes 16-byte records.

Elsewhere, or when asked (``wakeups="poll"`` or ``FENWIRE_WAKEUPS=poll``), the caller polls
instead. :func:`choose` decides; :func:`unwatchable` tells a file on a network file system, where
a write made on another machine never reaches inotify.
"""

from __future__ import annotations

import errno
import os
import select
import sys
from array import array
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

__all__ = ["KERNEL", "POLL", "ENV", "choose", "unwatchable", "KernelWakeups", "WakeupsUnavailable"]

KERNEL = "kernel"
POLL = "poll"
#: the environment variable that forces a mode: ``poll``, ``kernel`` or ``auto`` (the default)
ENV = "FENWIRE_WAKEUPS"

_IN_MODIFY = 0x2
_IN_Q_OVERFLOW = 0x4000
_IN_ONESHOT = 0x80000000
_READ_SIZE = 1 << 16
#: file systems where another machine's writes never reach this machine's inotify
_NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "afs", "gpfs", "fuse.sshfs"}
)

K = TypeVar("K", bound=Hashable)


class WakeupsUnavailable(OSError):
    """Kernel wake-ups were asked for (``wakeups="kernel"``) but cannot be had here."""


def _inotify_class() -> Any:
    import inotify_simple  # type: ignore[import-untyped,unused-ignore]

    return inotify_simple.INotify


def _add_watch_call(inotify: Any) -> Any:
    """``inotify.add_watch`` as ``(fd, path_bytes, mask) -> wd``."""

    def add_watch(fd: int, path: bytes, mask: int) -> int:
        return int(inotify.add_watch(path, mask))

    return add_watch


def kernel_unavailable() -> str | None:
    """Why kernel wake-ups cannot work in this process (``None``: they can)."""
    if not sys.platform.startswith("linux"):
        return f"no inotify on {sys.platform}"
    if not hasattr(select, "epoll") or not hasattr(os, "pidfd_open"):
        return "no epoll or pidfd_open in this Python"
    try:
        _inotify_class()
    except ImportError:
        return "inotify_simple is not installed"
    return None


def choose(wakeups: str | None = None) -> tuple[str, str]:
    """``(mode, why)``: ``wakeups`` (else ``$FENWIRE_WAKEUPS``, else ``auto``) resolved to
    :data:`KERNEL` or :data:`POLL`; ``why`` says why it polls (empty for the kernel).

    Raises ``ValueError`` for an unknown mode and :class:`WakeupsUnavailable` when ``kernel`` is
    asked for where it cannot work."""
    asked = wakeups if wakeups is not None else (os.environ.get(ENV) or "auto")
    if asked not in ("auto", KERNEL, POLL):
        raise ValueError(f"wakeups must be 'auto', 'kernel' or 'poll', not {asked!r}")
    if asked == POLL:
        return POLL, "polling was asked for" + (f" ({ENV}=poll)" if wakeups is None else "")
    why = kernel_unavailable()
    if why is None:
        return KERNEL, ""
    if asked == KERNEL:
        raise WakeupsUnavailable(errno.ENOSYS, f"kernel wake-ups are unavailable: {why}")
    return POLL, why


_mounts: dict[int, str] = {}


def _filesystem(device: int) -> str:
    """The type of the file system on ``device`` (from ``/proc/self/mountinfo``; "" if unknown)."""
    if device in _mounts:
        return _mounts[device]
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            rows = handle.read().splitlines()
    except OSError:
        rows = []
    for row in rows:
        fields = row.split()
        if "-" not in fields or len(fields) < 3:
            continue
        major, _, minor = fields[2].partition(":")
        if major.isdigit() and minor.isdigit():
            fstype = fields[fields.index("-") + 1] if fields.index("-") + 1 < len(fields) else ""
            _mounts.setdefault(os.makedev(int(major), int(minor)), fstype)
    return _mounts.setdefault(device, "")


def unwatchable(path: str) -> str | None:
    """Why inotify cannot be trusted for ``path`` (it is on a network file system), else ``None``."""
    try:
        fstype = _filesystem(os.stat(path).st_dev)
    except OSError:
        return None
    if fstype in _NETWORK_FILESYSTEMS or fstype.startswith(("nfs", "fuse.sshfs")):
        return f"{path} is on a {fstype} file system, whose remote writes inotify does not see"
    return None


class KernelWakeups(Generic[K]):
    """One epoll over an inotify descriptor and pidfds; each watched file or process has a key.

    :meth:`collect` waits (``timeout`` seconds, ``None`` for ever, ``0`` not at all) and returns
    ``(grown, ended, overflow)``: keys whose file was written, keys whose process ended (its pidfd
    is dropped at once, so it is reported once), and whether inotify lost events (then every
    watched file may have grown). :meth:`fileno` is the epoll's descriptor, for an event loop."""

    def __init__(self) -> None:
        self._inotify = _inotify_class()(nonblocking=True)
        self._ifd: int = self._inotify.fileno()
        self._epoll = select.epoll()
        self._epoll.register(self._ifd, select.EPOLLIN)
        self._by_wd: dict[int, K] = {}
        self._wd_of: dict[K, int] = {}
        self._by_pidfd: dict[int, K] = {}
        self._pidfd_of: dict[K, int] = {}
        self._paths: dict[K, bytes] = {}
        #: why a one-shot watch could not be re-armed (then the caller must poll instead)
        self.broken: str | None = None
        self._add_watch = _add_watch_call(self._inotify)

    def fileno(self) -> int:
        """The epoll descriptor: readable when :meth:`collect` has something."""
        return self._epoll.fileno()

    def watch_file(self, key: K, path: str) -> None:
        """Wake at the next write to ``path``. Raises ``OSError`` (e.g. ``ENOSPC``: too many watches).

        ``path`` may be ``/proc/self/fd/N``: the watch is then on the file open as ``N``, whatever
        its name becomes.

        The watch is one-shot: once it fired, the caller reads the file and, when it has caught
        up, calls :meth:`rearm` and then looks once more (a write between its last read and the
        re-arm wakes no one). A file written a thousand times between two reads queues one
        record, not a thousand, and a file read in full chunks costs no system call to watch."""
        self._paths[key] = os.fsencode(path)
        self._arm(key)

    def _arm(self, key: K) -> None:
        wd = int(self._add_watch(self._ifd, self._paths[key], _IN_MODIFY | _IN_ONESHOT))
        self._by_wd[wd] = key
        self._wd_of[key] = wd

    def armed(self, key: K) -> bool:
        """``key``'s watch is in place (it has not fired since it was armed)."""
        return key in self._wd_of

    def rearm(self, key: K) -> bool:
        """Watch ``key``'s file again after its watch fired; ``False`` (and :attr:`broken` set)
        when the kernel refuses: the caller must poll from now on."""
        try:
            self._arm(key)
        except OSError as exc:
            self.broken = f"cannot watch {self._paths[key]!r} again: {exc.strerror or exc}"
            return False
        return True

    def watch_process(self, key: K, pid: int, pidfd: int | None = None) -> None:
        """Wake when process ``pid`` (a child not reaped yet) ends. Raises ``OSError``. Given
        ``pidfd`` (a process's pidfd, e.g. an adopted child's), a copy of it is watched instead."""
        pidfd = os.pidfd_open(pid) if pidfd is None else os.dup(pidfd)
        try:
            self._epoll.register(pidfd, select.EPOLLIN)
        except BaseException:
            os.close(pidfd)
            raise
        self._by_pidfd[pidfd] = key
        self._pidfd_of[key] = pidfd

    def forget(self, key: K) -> None:
        """Stop watching ``key``'s file and process."""
        self._paths.pop(key, None)
        wd = self._wd_of.pop(key, None)
        if wd is not None:
            self._by_wd.pop(wd, None)
            try:
                self._inotify.rm_watch(wd)
            except OSError:
                pass  # the file is gone: its watch went with it
        self._drop_pidfd(self._pidfd_of.get(key))

    def _drop_pidfd(self, pidfd: int | None) -> None:
        if pidfd is None:
            return
        key = self._by_pidfd.pop(pidfd)
        del self._pidfd_of[key]
        try:
            self._epoll.unregister(pidfd)
        finally:
            os.close(pidfd)

    def collect(self, timeout: float | None) -> tuple[list[K], list[K], bool]:
        """Wait for wake-ups; see the class docstring."""
        ready = self._epoll.poll(-1 if timeout is None else max(timeout, 0.0))
        grown: list[K] = []
        ended: list[K] = []
        overflow = False
        for fd, _mask in ready:
            if fd == self._ifd:
                overflow = self._read_inotify(grown)
            else:
                key = self._by_pidfd.get(fd)
                if key is not None:
                    ended.append(key)
                    self._drop_pidfd(fd)
        if overflow:  # records were lost, fired watches among them: arm every watch again
            for key in list(self._paths):
                self.rearm(key)
        return grown, ended, overflow

    def _read_inotify(self, grown: list[K]) -> bool:
        overflow = False
        by_wd = self._by_wd
        while True:
            try:
                data = os.read(self._ifd, _READ_SIZE)
            except BlockingIOError:
                return overflow
            if not data:
                return overflow
            records = array("i")
            if len(data) % 16 == 0:
                records.frombytes(data)
            if records and not any(records[3::4]):  # no names: fixed 16-byte records
                wds = set(records[0::4])
                overflow = overflow or any(m & _IN_Q_OVERFLOW for m in set(records[1::4]))
            else:  # pragma: no cover - a watch on a file never names one
                import inotify_simple

                events = inotify_simple.parse_events(data)
                wds = {e.wd for e in events}
                overflow = overflow or any(e.mask & _IN_Q_OVERFLOW for e in events)
            for wd in wds:
                key = by_wd.pop(wd, None)
                if key is not None:  # else the record of a watch gone (IN_IGNORED)
                    del self._wd_of[key]
                    grown.append(key)
            if len(data) < _READ_SIZE - 272:  # less than a full buffer: the queue is empty
                return overflow

    def keys(self) -> list[K]:
        """Every key with a watched file."""
        return list(self._wd_of)

    def close(self) -> None:
        """Close every descriptor."""
        for pidfd in list(self._by_pidfd):
            self._drop_pidfd(pidfd)
        self._by_wd.clear()
        self._wd_of.clear()
        self._epoll.close()
        self._inotify.close()
