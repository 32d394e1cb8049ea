"""No orphans: a child and its process group stop when the parent process dies, however it dies.

The parent holds the write end of one **lifeline** pipe (made on the first spawn of each process,
close-on-exec, and closed in a copy made by ``fork``). Nothing is ever written to it, so a read of
the other end blocks until the last write end closes: when the parent process ends (SIGKILL
included) the kernel closes it, and the read returns end-of-file. This needs no polling of
``getppid`` (which a subreaper or a container's PID 1 makes unreliable) and, unlike
``PR_SET_PDEATHSIG``, it does not depend on which thread forked, takes no ``preexec_fn`` (which
would cost ``subprocess`` its ``vfork`` path and is unsafe with threads), and covers a whole
process group rather than one process.

Who watches:

- this package's own child (``python -m fenwire_fast child``) gets the read end as
  ``FEN_WIRE_PARENT_FD`` (with ``FEN_WIRE_TERM_GRACE``) and watches it on a daemon thread
  (:func:`watch_parent`): no extra process, and it works while the agent blocks the main thread.
  On end-of-file it takes its group down (:func:`take_down_group`): a small shell in the group
  ignores SIGTERM, sends SIGTERM to the group, sleeps the term grace and sends SIGKILL to the group,
  itself included;
- any other ``command`` cannot be asked to watch anything, so one **keeper** process per parent
  (:class:`Keeper`, started with the first such child: a ``python -S`` of its own, in a session of
  its own) reads a pipe from the parent: ``+PGID GRACE`` when a child starts, ``-PGID`` when its
  group is empty. At end-of-file it sends SIGTERM to every group still listed, and SIGKILL after
  the longest grace. The keeper is not in any child's group, so it never keeps a group from being
  empty when its child ends.

A process that leaves its group (``setsid``, ``setpgid``) escapes this, as it escapes the parent's
own group signals.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping

__all__ = [
    "PARENT_FD_ENV",
    "TERM_GRACE_ENV",
    "TAKE_DOWN",
    "Keeper",
    "keeper",
    "lifeline",
    "release",
    "take_down_group",
    "watch_parent",
]

#: the read end of the lifeline, in this package's own child
PARENT_FD_ENV = "FEN_WIRE_PARENT_FD"
#: seconds between SIGTERM and SIGKILL when the child takes its group down
TERM_GRACE_ENV = "FEN_WIRE_TERM_GRACE"

#: ``sh -c TAKE_DOWN sh GRACE``: SIGTERM to the caller's group (sparing the shell), then SIGKILL
TAKE_DOWN = "trap '' TERM; kill -s TERM 0; sleep \"$1\"; kill -s KILL 0"

#: the keeper's program (stdlib only: it starts with ``python -S``)
KEEPER_CODE = r"""
import os, signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups, rest = {}, b""
while True:
    try:
        data = os.read(0, 65536)
    except InterruptedError:
        continue
    except OSError:
        data = b""
    if not data:
        break
    *lines, rest = (rest + data).split(b"\n")
    for line in lines:
        words = line.split()
        try:
            if len(words) == 2 and words[0].startswith(b"+"):
                groups[int(words[0][1:])] = min(max(float(words[1]), 0.0), 60.0)
            elif len(words) == 1 and words[0].startswith(b"-"):
                groups.pop(int(words[0][1:]), None)
        except ValueError:
            pass
def send(sig):
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass
send(signal.SIGTERM)
if groups:
    time.sleep(max(groups.values()))
    send(signal.SIGKILL)
"""

_lifeline: tuple[int, int, int] | None = None  # (pid, read end, write end)
_keeper: Keeper | None = None
_lock = threading.Lock()


def _forget_after_fork() -> None:
    """In a ``fork`` copy: drop the inherited ends, so only the spawning process keeps its
    children alive (the copy makes a lifeline and a keeper of its own if it spawns)."""
    global _lifeline, _keeper
    if _keeper is not None:
        _keeper.forget()
        _keeper = None
    if _lifeline is not None:
        for fd in _lifeline[1:]:
            try:
                os.close(fd)
            except OSError:
                pass
        _lifeline = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def lifeline() -> int:
    """The read end of this process's lifeline pipe (made on first use; both ends close-on-exec:
    ``subprocess``' ``pass_fds`` or ``stdin`` hands it to a child)."""
    global _lifeline
    with _lock:
        if _lifeline is None or _lifeline[0] != os.getpid():
            read_end, write_end = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
            _lifeline = (os.getpid(), read_end, write_end)
        return _lifeline[1]


class Keeper:
    """The keeper of one parent process's foreign children (see the module docstring)."""

    def __init__(self) -> None:
        read_end, self._fd = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-S", "-c", KEEPER_CODE],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
        except OSError:
            os.close(self._fd)
            self._fd = -1
            self.process = None
        finally:
            os.close(read_end)

    def _say(self, line: str) -> bool:
        if self._fd < 0:
            return False
        try:
            os.write(self._fd, line.encode())
        except OSError:  # the keeper is gone: a new one is started on the next spawn
            return False
        return True

    def keep(self, pgid: int, term_grace: float) -> bool:
        """Take group ``pgid`` down (SIGTERM, SIGKILL after ``term_grace``) if this process dies."""
        return self._say(f"+{pgid} {term_grace!r}\n")

    def release(self, pgid: int) -> None:
        """Group ``pgid`` is empty: forget it."""
        self._say(f"-{pgid}\n")

    def forget(self) -> None:
        """Close this process's end (in a ``fork`` copy)."""
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1


def keeper() -> Keeper:
    """This process's :class:`Keeper` (started on first use, and again if it has died)."""
    global _keeper
    with _lock:
        if _keeper is None or _keeper._fd < 0 or (_keeper.process is not None and _keeper.process.poll() is not None):
            if _keeper is not None:
                _keeper.forget()
            _keeper = Keeper()
        return _keeper


def release(pgid: int) -> None:
    """Tell the keeper, if there is one, that group ``pgid`` is empty."""
    if _keeper is not None:
        _keeper.release(pgid)


def take_down_group(term_grace: float) -> None:
    """SIGTERM this process's group, then SIGKILL it ``term_grace`` seconds later (this process
    included), from a small shell in the group that outlives the SIGTERM."""
    try:
        subprocess.Popen(
            ["/bin/sh", "-c", TAKE_DOWN, "fenwire-guard", f"{term_grace:g}"],
            stdin=subprocess.DEVNULL,
            close_fds=True,
        )
    except OSError:
        os.killpg(os.getpgrp(), 9)  # no shell: the group goes at once


def _watch(fd: int, term_grace: float) -> None:
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass  # read errors end the watch like end-of-file: the parent's pipe is not readable
    take_down_group(term_grace)


def watch_parent(environ: Mapping[str, str], warn: Callable[[str], None]) -> bool:
    """In this package's child: watch ``FEN_WIRE_PARENT_FD`` on a daemon thread and take the group
    down when the parent is gone. Returns whether a watch started (a bad value is reported through
    ``warn`` and ignored)."""
    raw = environ.get(PARENT_FD_ENV)
    if not raw:
        return False
    try:
        fd = int(raw)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise ValueError("not a pipe")
        os.set_inheritable(fd, False)  # the agent's own subprocesses do not get it
    except (ValueError, OSError) as exc:
        warn(f"fenwire child: ignoring {PARENT_FD_ENV}={raw!r}: {getattr(exc, 'strerror', None) or exc}")
        return False
    try:
        grace = float(environ.get(TERM_GRACE_ENV, "1"))
    except ValueError:
        grace = 1.0
    if not grace >= 0 or grace == float("inf"):
        grace = 1.0
    threading.Thread(target=_watch, args=(fd, grace), name="fenwire-parent-watch", daemon=True).start()
    return True
