"""Room for many children: the open-file limit (``RLIMIT_NOFILE``).

Each child a parent supervises holds a few descriptors open in the parent: its event file, its
private directory, its control file once a control was sent, and its pidfd when the hub is woken
by the kernel. A thousand children need about four thousand, past the usual soft limit of 1,024.
:func:`ensure_open_files` raises the soft limit as far as the hard limit allows, or says what to do.
"""

from __future__ import annotations

import errno

__all__ = ["FILES_PER_CHILD", "SPARE_FILES", "ensure_open_files", "OpenFileLimit"]

#: descriptors a supervised child holds open in the parent
FILES_PER_CHILD = 4
#: descriptors kept free for everything else the parent opens
SPARE_FILES = 64


class OpenFileLimit(OSError):
    """The open-file limit is too low for the children asked for, and cannot be raised."""


def _limits() -> tuple[int, int] | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, hard


def ensure_open_files(children: int) -> int:
    """Make room for ``children`` supervised children; return the soft limit now in force.

    When the soft limit is too low it is raised to the hard limit (once: later calls find it high
    enough). Raises :class:`OpenFileLimit` when even the hard limit is too low, naming the number
    needed and how to get it (``ulimit -n``, or the hard limit of the service that starts you)."""
    limits = _limits()
    if limits is None:  # pragma: no cover - not a Unix
        return 0
    import resource

    soft, hard = limits
    needed = children * FILES_PER_CHILD + SPARE_FILES
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return int(soft)
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise OpenFileLimit(
            errno.EMFILE,
            f"{children} children need about {needed} open files, but the hard limit is {hard} "
            f"(soft {soft}): raise it, e.g. `ulimit -Hn {needed}` as root or LimitNOFILE= in the "
            "service that starts this program, or supervise fewer children in this process",
        )
    target = hard if hard != resource.RLIM_INFINITY else max(needed, 1 << 16)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError) as exc:
        raise OpenFileLimit(
            errno.EMFILE,
            f"{children} children need about {needed} open files; the soft limit is {soft} and "
            f"raising it to {target} failed ({exc}): raise it with `ulimit -n {needed}` before starting",
        ) from exc
    return int(target)
