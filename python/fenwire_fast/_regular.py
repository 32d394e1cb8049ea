"""Opening a file that must be a regular file, without ever blocking on one that is not.

A child owns its run directory and can put anything where a file is expected: a FIFO (whose plain
``open`` blocks until a writer, or a reader, comes: forever), a directory, a device. Such a file is
opened with ``O_NONBLOCK`` (a FIFO then opens at once, or fails with ``ENXIO`` for writing), its
descriptor ``fstat``-ed, and anything but a regular file is refused with :class:`NotRegularFile`
(an ``OSError`` saying what it is). The check is on the descriptor, so there is no gap between
the check and the use. ``O_NONBLOCK`` is then cleared (it means nothing for a regular file).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

__all__ = ["NotRegularFile", "open_regular", "read_regular"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFile(OSError):
    """A file that should be a regular file is something else (the message says what)."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{os.path.basename(name)} is {kind}, not a regular file")


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(
    path: str, flags: int = os.O_RDONLY, mode: int = 0o600, *, dir_fd: int | None = None, follow: bool = True
) -> int:
    """``os.open(path, flags, mode, dir_fd=dir_fd)`` that never blocks, and returns a descriptor
    only for a regular file (``O_CLOEXEC`` is added; ``follow=False`` adds ``O_NOFOLLOW``, so a
    symlink is refused too). Raises :class:`NotRegularFile` for anything else, ``OSError``
    when the open fails."""
    extra = _O_NONBLOCK | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags | extra, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # opened for writing: a FIFO without a reader, a device
            raise NotRegularFile(path, "a FIFO or a device") from None
        if exc.errno == errno.ELOOP and not follow:
            raise NotRegularFile(path, "a symbolic link") from None
        raise
    try:
        st_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(st_mode):
            raise NotRegularFile(path, _kind(st_mode))
        if _O_NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str, cap: int | None = None, *, dir_fd: int | None = None, follow: bool = False) -> bytes:
    """The content of regular file ``path`` (at most ``cap + 1`` bytes when ``cap`` is given, so a
    caller can tell a file larger than ``cap``), opened by :func:`open_regular` (not following a
    symlink unless ``follow``). Raises ``OSError``."""
    fd = open_regular(path, dir_fd=dir_fd, follow=follow)
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if cap is None else handle.read(cap + 1)
