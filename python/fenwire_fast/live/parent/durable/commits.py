"""The commit log (``commits.log``): one line per commit of a run, read back per run (see
:mod:`~fenwire_fast.live.parent.durable`)."""

from __future__ import annotations

import math

from ...._regular import read_regular
from .bounds import MAX_SEQ, RUN_NAME
from .marks import decode_mark

__all__ = ["COMMITS", "Commit", "read_commits", "parse_seq", "read_at"]

#: the commit log's file name in a state dir
COMMITS = "commits.log"
_SEQ_DIGITS = len(str(MAX_SEQ))


def read_at(dir_fd: int | None, name: str, cap: int | None) -> bytes | None:
    """``name``'s content (see :func:`~fenwire_fast._regular.read_regular`: a regular file, never
    a symlink, never a blocking open), or ``None``."""
    try:
        return read_regular(name, cap, dir_fd=dir_fd)
    except OSError:
        return None


#: a run's latest commit in the log: ``(seq, when, closed_status, mark)`` (``mark``: the latest
#: one recorded for the run, if any)
Commit = tuple[int, float, str | None, str | None]


def read_commits(dir_fd: int | None) -> dict[str, Commit]:
    """The commit log, per run: its last whole record's ``seq`` and time, and the status it was
    closed with (``None``: not closed). A hub only ever commits a run forward, and a closed run
    is never committed again, so the last record of a run is its latest position. Lines that are
    not whole records (one cut short by a crash) and records with a number out of range (a
    ``seq`` past :data:`MAX_SEQ`, a time that is not a finite number) are ignored: nothing in the
    log can make it unreadable."""
    data = read_at(dir_fd, COMMITS, None) or b""
    commits: dict[str, Commit] = {}
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: cut short, or empty
        record = _parse_commit(line)
        if record is not None:
            name, (seq, when, status, mark) = record
            if mark is None and name in commits:  # a commit that could not mark its place
                mark = commits[name][3]  # leaves the last mark (at an earlier position) standing
            commits[name] = (seq, when, status, mark)
    return commits


def _parse_commit(line: bytes) -> tuple[str, Commit] | None:
    """One record of the commit log, or ``None`` when the line is not a whole, valid one."""
    if not line.endswith(b" ."):  # "." ends a whole record
        return None
    parts = line.decode("ascii", "replace").split(" ")[:-1]
    mark = parts.pop()[1:] if len(parts) > 3 and parts[-1].startswith("@") else None
    if mark is not None and decode_mark(mark) is None:  # as check_manifest: else the fold would spoil it
        return None
    if len(parts) not in (3, 5) or not RUN_NAME.match(parts[0]):
        return None
    if len(parts) == 5 and parts[3] != "closed":
        return None
    seq = parse_seq(parts[1])
    when = _parse_time(parts[2])
    if seq is None or when is None:
        return None
    return parts[0], (seq, when, parts[4] if len(parts) == 5 else None, mark)


def parse_seq(text: str) -> int | None:
    """A ``seq`` written in decimal (at most :data:`MAX_SEQ`), or ``None``; never raises (a
    number of any length is refused before ``int`` sees it)."""
    if not 0 < len(text) <= _SEQ_DIGITS or not text.isascii() or not text.isdigit():
        return None
    seq = int(text)
    return seq if seq <= MAX_SEQ else None


def _parse_time(text: str) -> float | None:
    """A time (seconds since the epoch) as the log writes it, or ``None`` when it is not one."""
    if not 0 < len(text) <= 32:
        return None
    try:
        when = float(text)
    except ValueError:
        return None
    return when if math.isfinite(when) else None
