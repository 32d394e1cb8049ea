"""Reaping the children a parent let go of (:meth:`~fenwire_fast.live.parent.spawn.LiveChild.detach`,
:meth:`~fenwire_fast.live.parent.hub.Hub.detach`).

A detached child is not supervised any more, but it is still this process's child: when it ends
someone must reap it, or it stays a zombie for as long as this process lives. :func:`reap_when_ended`
hands such a child to one daemon thread that waits on the pidfds of all of them in one epoll and
reaps each as it ends: one thread and one descriptor per detached child that still runs, whatever
their number. The thread starts with the first such child and ends when none is left. Where there
are no pidfds (not Linux, or the kernel refuses one), a daemon thread per child waits for it.

A run taken up again by :meth:`~fenwire_fast.live.parent.hub.Hub.attach` in the same process is
supervised, and reaped, by its new handle: :func:`take` stops the wait (and :func:`put_back` starts
it again when the run could not be taken up after all, :func:`release` ends it).
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["reap_when_ended", "take", "put_back", "release", "Waiting"]

#: a child waited for: ``(pid, pidfd, reap)``; ``reap()`` reaps it if it ended and says whether
#: it is done with (reaped, or not this process's child)
Waiting = tuple[int, int, Callable[[], bool]]


class _Reaper:
    """The thread, its epoll and the children it waits for (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoll: select.epoll | None = None
        self._waiting: dict[int, Waiting] = {}  # pidfd -> the child
        self._thread: threading.Thread | None = None

    def add(self, waiting: Waiting) -> None:
        with self._lock:
            if self._epoll is None:
                self._epoll = select.epoll()
            self._epoll.register(waiting[1], select.EPOLLIN)
            self._waiting[waiting[1]] = waiting
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fenwire-reaper", daemon=True)
                self._thread.start()

    def take(self, pid: int) -> Waiting | None:
        with self._lock:
            for pidfd, waiting in self._waiting.items():
                if waiting[0] == pid:
                    self._drop(pidfd)
                    return waiting
        return None

    def _drop(self, pidfd: int) -> None:
        """Stop waiting for the child of ``pidfd`` (the lock is held); the descriptor stays open."""
        del self._waiting[pidfd]
        assert self._epoll is not None
        self._epoll.unregister(pidfd)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
                epoll = self._epoll
            assert epoll is not None
            for pidfd, _mask in epoll.poll():
                with self._lock:
                    waiting = self._waiting.get(pidfd)
                    # a pidfd closed by take() and its number reused is asked again: reap says
                    if waiting is None or not _reaped(waiting):
                        continue
                    self._drop(pidfd)
                os.close(pidfd)


def _reaped(waiting: Waiting) -> bool:
    try:
        return waiting[2]()
    except Exception:  # noqa: BLE001 - the reaper thread must go on for the other children
        return True


_reaper = _Reaper()


def _popen_reap(process: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: process.poll() is not None


def _pidfd_reap(pidfd: int) -> Callable[[], bool]:
    def reap() -> bool:
        try:
            return os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None
        except ChildProcessError:
            return True  # not this process's child: its own parent reaps it

    return reap


def reap_when_ended(process: Any) -> None:
    """Reap ``process`` (a ``subprocess.Popen``, or an adopted child's
    :class:`~fenwire_fast.live.parent.adopt.AdoptedProcess`, whose pidfd this takes over) once it ends,
    without blocking; at once if it has ended already. Nothing happens for a process that is not
    this process's child."""
    if getattr(process, "adopted", False):
        pidfd = process.pidfd
        if pidfd is None:
            return
        process.pidfd = None  # the reaper's now
        reap = _pidfd_reap(pidfd)
    else:
        if process.poll() is not None:
            return
        reap = _popen_reap(process)
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            threading.Thread(target=process.wait, name="fenwire-reaper", daemon=True).start()
            return
    if _reaped((process.pid, pidfd, reap)):
        os.close(pidfd)
        return
    _reaper.add((process.pid, pidfd, reap))


def take(pid: int) -> Waiting | None:
    """Stop waiting for the detached child ``pid`` (its run is taken up again in this process):
    what :func:`put_back` needs if that fails, or ``None`` when it is not waited for."""
    return _reaper.take(pid)


def release(waiting: Waiting) -> None:
    """Let go of a child :func:`take` took: its new handle reaps it."""
    os.close(waiting[1])


def put_back(waiting: Waiting) -> None:
    """Wait for a child :func:`take` took again."""
    if _reaped(waiting):
        os.close(waiting[1])
    else:
        _reaper.add(waiting)
