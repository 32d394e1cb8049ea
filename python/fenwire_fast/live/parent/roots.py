"""Roots: the directory under which one parent keeps its children's private directories, swept
once that parent has died.

A parent killed with SIGKILL removes nothing: its children's private directories would stay in
the temporary directory forever. So each parent (a :class:`~fenwire_fast.live.parent.hub.Hub` that
spawns into the temporary directory, a fleet's actor) makes one **root** there
(``<prefix>XXXXXXXX``) and holds an ``flock`` on its ``.lock`` for as long as it lives; the kernel
frees that lock however the process dies. Every new parent on the host first **sweeps**: it
removes each root of its prefix whose lock it can take. A root in use is never touched, and the
lock is taken under another name and renamed into place, so a sweeper never finds a new root with
a free lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time

__all__ = ["HUB_PREFIX", "LOCK", "locked_root", "release_root", "remove_if_orphaned", "sweep_orphaned_roots"]

#: a hub's root in the temporary directory
HUB_PREFIX = "fenwire-hub-"
#: the lock file in a root
LOCK = ".lock"


def remove_if_orphaned(root: str, wait: float = 0.0) -> bool:
    """Remove a root directory once no process holds its lock (its parent died without closing);
    return whether it was removed. ``wait``: how long to wait for the lock of a parent known to be
    dying (a killed process's main thread shows as ended while its other threads, which share its
    descriptors, are still on their way out)."""
    try:
        fd = os.open(os.path.join(root, LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False  # gone already, or not a root (yet: the lock appears only once held)
    try:
        end = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= end:
                    return False  # its parent is alive
                time.sleep(0.01)
        shutil.rmtree(root, ignore_errors=True)  # descriptor-based: never follows a link
        return not os.path.lexists(root)
    finally:
        os.close(fd)


def sweep_orphaned_roots(prefix: str, parent: str | None = None) -> list[str]:
    """Remove the roots named ``prefix...`` under ``parent`` (default: the temporary directory)
    that dead parents left behind; return their paths."""
    parent = parent or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return []
    return [path for path in (os.path.join(parent, n) for n in names) if remove_if_orphaned(path)]


def locked_root(prefix: str, *, sweep: bool = True) -> tuple[str, int]:
    """Sweep (unless ``sweep`` is false), then make a new root in the temporary directory; return
    it and the descriptor of its held lock (close it only once the root is removed: see
    :func:`release_root`)."""
    if sweep:
        sweep_orphaned_roots(prefix)
    root = tempfile.mkdtemp(prefix=prefix)
    staging = os.path.join(root, ".lock-taking")
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(staging, os.path.join(root, LOCK))
    return root, fd


def release_root(root: str, fd: int) -> None:
    """Remove ``root`` (what is left in it too), then let go of its lock."""
    shutil.rmtree(root, ignore_errors=True)
    os.close(fd)
