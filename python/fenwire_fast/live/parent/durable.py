"""Durable runs: a state dir that outlives the parent, and what is kept in it.

A hub given a state dir (``Hub(state_dir=PATH)``) spawns every child into a private directory under
``PATH`` and keeps, next to it, a small **manifest** (``<name>.json``): the run id, the child's pid
with its start time and the machine's boot id (a pid that was reused is never taken for the child),
the paths, the deadline, the supervision settings, and the consumer's **committed position** (the
``seq`` of the last event the consumer said it handled). Manifests are replaced whole (written to a
temporary name, then renamed through the state dir's descriptor), so a parent killed at any moment
leaves either the old manifest or the new one.

Commits are frequent (a consumer may commit after every batch), so they do not rewrite manifests:
each :meth:`StateDir.record_commits` appends one line per run to ``commits.log`` in a single
``write`` (a few microseconds, whatever the number of runs), and a reader takes, per run, the
highest position in its manifest or the log (:func:`read_manifests`). A parent killed during that
``write`` leaves whole lines or none; a line cut short (a machine's crash, a write cut short by a
full disk) is ignored, and is ended with a newline before the next append (a newline rather than a
truncation: nothing whole is ever cut away), so the next record is whole. A record with a number
out of range (a ``seq`` past :data:`MAX_SEQ`, a time that is not finite) is ignored too: nothing in
the log keeps a state dir from opening. The log is **folded** into the manifests (each rewritten
as above, then the log emptied) when a hub opens the state dir, and when it grows past
:data:`FOLD_AT` bytes; a fold cut short is simply done again.

A record is ``NAME SEQ TIME [closed STATUS] [@MARK] .``. The **mark** (:func:`encode_mark`) says
where an attach may read the run's event file from instead of its start: the byte just after the
line of a ``seq`` at or before the committed one, a check of the bytes before it, and what the
parent's channel had mirrored there (status, events read, acknowledged controls). A commit whose
channel stands just after the committed line records one; others keep the run's last mark. A
manifest keeps the latest mark folded into it. A manifest without one (an older state dir) is read
from the start, and so is a run whose mark does not hold up against its file
(:meth:`~fenwire_fast.live.parent.channel.Channel.resume`).
Nothing is ``fsync``-ed: a parent's crash loses nothing, a machine's crash may lose the last commits
(the events are then delivered again).

A final text the parent read from a child's file (which it then removes) is kept as
``<name>.final`` before the file is removed, so a ``result`` delivered again after a restart still
finds its whole text.

The state dir is locked (an ``flock`` on the directory itself, through the descriptor the hub keeps
open) by the one hub that uses it; the lock goes with the process, however it dies, and nothing in
the directory can be removed to get around it (a lock file could be unlinked while held). This module knows the files; :mod:`~fenwire_fast.live.parent.adopt` rebuilds
runs from them.
"""

from __future__ import annotations

import base64
import binascii
import errno
import fcntl
import functools
import json
import math
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, fields
from typing import Any

from ..._regular import open_regular, read_regular
from ..._types import MAX_SAFE_INTEGER
from .channel import ResumePoint

__all__ = [
    "MANIFEST_VERSION",
    "Manifest",
    "StateDir",
    "StateDirBusy",
    "COMMITS",
    "boot_id",
    "check_manifest",
    "read_commits",
    "encode_mark",
    "decode_mark",
    "read_manifests",
    "process_start",
]

MANIFEST_VERSION = 1
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NAME = re.compile(r"^run-[A-Za-z0-9_.-]{1,80}$")
#: the commit log (see the module docstring), and the size past which it is folded into manifests
COMMITS = "commits.log"
FOLD_AT = 1 << 20
#: the largest ``seq`` a record may hold (the wire's largest ``seq``)
MAX_SEQ = MAX_SAFE_INTEGER
_SEQ_DIGITS = len(str(MAX_SEQ))
#: the largest pid a ``pid_t`` holds
_PID_MAX = (1 << 31) - 1
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: a manifest larger than this is not read (it is not one this package wrote)
_MANIFEST_CAP = 1 << 20


class StateDirBusy(RuntimeError):
    """Another hub (in this process or another) holds the state dir."""


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, from ``/proc``); ``None`` when no such
    process is running (a zombie has ended) or ``/proc`` cannot tell."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # the name (field 2) is in parentheses and may hold anything: count fields after the last ")"
    rest = stat[stat.rfind(b")") + 2 :].split()
    try:
        if rest[0] in (b"Z", b"X"):  # field 3, the state: ended, not reaped yet
            return None
        return int(rest[19])  # field 22, starttime
    except (IndexError, ValueError):
        return None


_BOOT_ID: str | None = None


def boot_id() -> str | None:
    """This boot of the machine (``/proc/sys/kernel/random/boot_id``), or ``None``."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
                _BOOT_ID = handle.read().strip()
        except OSError:
            return None
    return _BOOT_ID


@dataclass
class Manifest:
    """What the state dir keeps about one run (``<name>.json``)."""

    run: str
    name: str
    #: the child's pid, its start time (clock ticks after boot) and the boot it started in;
    #: ``None`` until the process exists
    pid: int | None = None
    start: int | None = None
    boot: str | None = None
    command: list[str] = field(default_factory=list)
    created: float = 0.0
    deadline: float | None = None
    grace: float = 3.0
    term_grace: float = 1.0
    stall_timeout: float | None = None
    max_bytes: int | None = None
    final_text_cap: int | None = None
    #: the ``seq`` of the last event the consumer committed (0: none), and when
    committed_seq: int = 0
    committed_at: float | None = None
    #: where the event file can be read from on attach, at or before the committed position (a
    #: :class:`~fenwire_fast.live.parent.channel.ResumePoint`, see :func:`encode_mark`); ``None``: its start
    mark: str | None = None
    #: the run is over for the consumer: the child finished and every event it wrote was committed
    closed: bool = False
    #: the run's status when it was closed
    status: str | None = None
    control_path: str = ""
    event_path: str = ""
    log_path: str = ""
    version: int = MANIFEST_VERSION

    def to_json(self) -> bytes:
        # the fields in order, as ``asdict`` gives them, without its recursive deep copy (a commit
        # per batch writes a manifest each time: asdict was 16 us of the 25 us this took)
        return _encode({name: getattr(self, name) for name in _FIELDS}).encode("utf-8") + b"\n"

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        """Parse a manifest; raises ``ValueError`` (in words) for anything this package did not write."""
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        except RecursionError:  # arrays or objects nested thousands deep
            raise ValueError("not JSON: nested too deep") from None
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        if raw.get("version") != MANIFEST_VERSION:
            raise ValueError(f"manifest version {raw.get('version')!r}, not {MANIFEST_VERSION}")
        known = {f.name for f in fields(cls)}
        manifest = cls(**{k: v for k, v in raw.items() if k in known})
        manifest._check()
        return manifest

    def _check(self) -> None:
        check_manifest(self)


def _number(name: str, value: object, kinds: Any, optional: bool, low: float, high: float) -> None:
    """``value`` (field ``name``) is of ``kinds`` (never a bool) and within ``[low, high]``."""
    if value is None and optional:
        return
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise ValueError(f"{name} is {value!r}")
    assert isinstance(value, (int, float))
    if value < 0 <= low:
        raise ValueError(f"{name} is {value!r}: negative")
    if not low <= value <= high:  # NaN is not either
        raise ValueError(f"{name} is {value!r}: not between {_bound(low)} and {_bound(high)} (out of range)")


def _bound(value: float) -> str:
    """A bound of :data:`_RANGES` as words: an integer in full (``9007199254740991``), else ``:g``."""
    return str(value) if isinstance(value, int) else f"{value:g}"


#: the ranges of a manifest's numbers: ``(field, types, optional, low, high)``. A pid is a positive
#: ``pid_t`` (what the kernel's calls take); a ``seq`` is at most :data:`MAX_SEQ` (the wire's largest,
#: as in the commit log); a time is a Unix time before the year 5000; a duration (seconds) at most
#: 30 years; a read budget at most 1 GiB. A ``mark`` (:func:`decode_mark`) has its numbers checked
#: the same way, by :data:`_MARK_RANGES`.
_RANGES: tuple[tuple[str, Any, bool, float, float], ...] = (
    ("pid", int, True, 1, _PID_MAX),
    ("start", int, True, 0, (1 << 63) - 1),
    ("committed_seq", int, False, 0, MAX_SEQ),
    ("max_bytes", int, True, 1, 1 << 30),
    ("final_text_cap", int, True, 0, 1 << 40),
    ("created", (int, float), False, 0, 95e9),
    ("deadline", (int, float), True, 0, 95e9),
    ("committed_at", (int, float), True, 0, 95e9),
    ("grace", (int, float), False, 0, 1e9),
    ("term_grace", (int, float), False, 0, 1e9),
    ("stall_timeout", (int, float), True, 0, 1e9),
)
_STATUS = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def check_manifest(manifest: Manifest) -> None:
    """Raise ``ValueError`` naming the first field of ``manifest`` that this package could not have
    written, and why: a value of another type, a number out of its range (see :data:`_RANGES`; a
    ``stall_timeout`` must be above 0, or it would cancel a healthy run at once), a name that is not
    a run directory's, a status that is not a word, a ``mark`` that is not one :func:`encode_mark`
    writes (its numbers range-checked as the others). Every value a hub uses is checked, so a run
    taken up from a manifest never raises where the value is used (a pid past ``pid_t``,
    a read budget of 0)."""
    for name in ("run", "name"):
        if not isinstance(getattr(manifest, name), str):
            raise ValueError(f"{name} is {getattr(manifest, name)!r}")
    if not _NAME.match(manifest.name):
        raise ValueError(f"name {manifest.name!r} is not a run directory's name")
    for name, kinds, optional, low, high in _RANGES:
        _number(name, getattr(manifest, name), kinds, optional, low, high)
    if manifest.stall_timeout is not None and manifest.stall_timeout <= 0:
        raise ValueError(f"stall_timeout is {manifest.stall_timeout!r}: not above 0")
    if manifest.boot is not None and not isinstance(manifest.boot, str):
        raise ValueError(f"boot is {manifest.boot!r}")
    if manifest.status is not None and not (isinstance(manifest.status, str) and _STATUS.match(manifest.status)):
        raise ValueError(f"status is {manifest.status!r}: not a run's status")
    if manifest.mark is not None:
        _check_mark(manifest.mark)
    if not isinstance(manifest.closed, bool):
        raise ValueError(f"closed is {manifest.closed!r}")
    if not isinstance(manifest.command, list) or not all(isinstance(a, str) for a in manifest.command):
        raise ValueError("command is not a list of strings")
    for name in ("control_path", "event_path", "log_path"):
        if not isinstance(getattr(manifest, name), str):
            raise ValueError(f"{name} is {getattr(manifest, name)!r}")


#: the manifest's fields, in order
_FIELDS = tuple(f.name for f in fields(Manifest))
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _safe(run: str) -> str:
    return _UNSAFE.sub("_", run)[:40] or "_"


class StateDir:
    """A state dir, opened (as a directory descriptor) and locked for one hub.

    Raises :class:`StateDirBusy` when another hub holds it, ``OSError`` when it cannot be made or
    opened. The directory is made (mode 0700) when missing."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.path.abspath(os.fspath(path))
        try:
            os.mkdir(self.path, 0o700)
        except FileExistsError:
            pass
        self.fd: int | None = os.open(self.path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        self._log: int | None = None
        self._logged = 0
        #: the log ends in a line cut short (a short write, or a log found so): the next append
        #: starts with a newline, so the cut line stays a line of its own (ignored)
        self._torn = False
        try:
            # the directory's own descriptor (an open file description of this hub's): a lock file
            # could be unlinked while held, and the next hub would lock a new one
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self.fd)
            self.fd = None
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StateDirBusy(f"state dir {self.path} is in use by another hub") from None
            raise
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        try:
            for stale in os.listdir(self.fd):  # a manifest's writer that died before its rename
                if stale.startswith(".") and stale.endswith(".tmp"):
                    try:
                        os.unlink(stale, dir_fd=self.fd)
                    except OSError:
                        pass
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
            self._log = open_regular(COMMITS, flags, 0o600, dir_fd=self.fd, follow=False)
            self.fold()
        except BaseException:
            self.close()
            raise

    # -- runs -----------------------------------------------------------------------------------

    def new_run_directory(self, run: str) -> tuple[str, str]:
        """Make a run's private directory (mode 0700); return ``(name, path)``."""
        path = tempfile.mkdtemp(prefix=f"run-{_safe(run)}-", dir=self.path)
        os.chmod(path, 0o700)
        return os.path.basename(path), path

    def run_path(self, name: str) -> str:
        return os.path.join(self.path, name)

    def save(self, manifest: Manifest) -> None:
        """Replace ``<name>.json`` whole (a temporary name, then ``rename``)."""
        self._replace(manifest.name + ".json", manifest.to_json())

    def _replace(self, name: str, data: bytes) -> None:
        fd_dir = self.fd
        if fd_dir is None:
            raise OSError(errno.EBADF, "the state dir is closed")
        temporary = f".{name}.{os.getpid()}.tmp"
        fd = open_regular(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=fd_dir, follow=False)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir)

    def manifests(self) -> list[tuple[str, Manifest | str]]:
        """Every manifest here, by name: the manifest, or why it cannot be used (in words)."""
        return read_manifests(self.path, self.fd)

    # -- commits --------------------------------------------------------------------------------

    def record_commits(self, records: list[tuple[str, int, float, str | None, str | None]]) -> None:
        """Append ``(name, seq, when, closed_status, mark)`` records to the commit log in one
        ``write`` (``closed_status``: the run is closed, with that status; ``None``: it is not;
        ``mark``: where an attach may read its event file from, :func:`encode_mark`, or ``None``).
        Folds the log into the manifests once it is large. Raises ``OSError``."""
        if not records:
            return
        if self._log is None:
            raise OSError(errno.EBADF, "the state dir is closed")
        lines = []
        for name, seq, when, status, mark in records:
            closed = "" if status is None else " closed " + (_UNSAFE.sub("_", status) or "_")
            marked = "" if mark is None else " @" + mark
            lines.append(f"{name} {seq} {when:.6f}{closed}{marked} .\n")  # "." ends a whole record
        data = "".join(lines).encode("ascii", "replace")
        if self._torn:  # end the line a short write left, so that this record starts a line of its own
            data = b"\n" + data
        written = os.write(self._log, data)
        if written != len(data):  # a regular file writes short only on errors such as ENOSPC
            self._torn = data[written - 1 : written] != b"\n" if written > 0 else self._torn
            raise OSError(errno.EIO, f"short write to {COMMITS}")
        self._torn = False
        self._logged += written
        if self._logged >= FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """Fold the commit log into the manifests, then empty it (the lock is held)."""
        assert self._log is not None
        commits = read_commits(self.fd)
        if commits:
            for _name, manifest in read_manifests(self.path, self.fd, with_log=False):
                if isinstance(manifest, Manifest) and _apply(manifest, commits):
                    self.save(manifest)
        os.ftruncate(self._log, 0)
        self._logged = 0
        self._torn = False

    def prune(self) -> list[str]:
        """Remove every closed run (its directory, manifest and kept final text); return their
        run ids. A closed run is over for its consumer: nothing in it is needed by ``attach``."""
        removed = []
        for name, manifest in self.manifests():
            if not isinstance(manifest, Manifest) or not manifest.closed:
                continue
            shutil.rmtree(name, dir_fd=self.fd, ignore_errors=True)
            for leftover in (name + ".final", name + ".json"):
                try:
                    os.unlink(leftover, dir_fd=self.fd)
                except FileNotFoundError:
                    pass
            removed.append(manifest.run)
        return removed

    # -- final texts ----------------------------------------------------------------------------

    def keep_final_text(self, name: str, seq: int, text: str) -> None:
        """Keep the final text of ``name``'s ``result`` number ``seq`` (``<name>.final``)."""
        self._replace(name + ".final", b"%d\n" % seq + text.encode("utf-8", "surrogatepass"))

    def final_text(self, name: str, seq: int) -> str | None:
        """The final text kept for ``name``'s ``result`` number ``seq``, if any."""
        data = _read_at(self.fd, name + ".final", None)
        if data is None:
            return None
        head, _, text = data.partition(b"\n")
        if head != b"%d" % seq:
            return None
        return text.decode("utf-8", "surrogatepass")

    def close(self) -> None:
        """Let go of the lock and the descriptors."""
        if self._log is not None:
            os.close(self._log)
            self._log = None
        if self.fd is not None:
            os.close(self.fd)  # and with it the lock
            self.fd = None


def _read_at(dir_fd: int | None, name: str, cap: int | None) -> bytes | None:
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
    data = _read_at(dir_fd, COMMITS, None) or b""
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
    if len(parts) not in (3, 5) or not _NAME.match(parts[0]):
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


#: a mark as the log and manifests keep it (see :func:`encode_mark`): at most this long
_MARK_CAP = 4096
_MARK = re.compile(
    r"^([0-9]{1,19})\.([0-9]{1,16})\.([0-9]{1,10})\.([a-z-]{1,16})\.([0-9]{1,19})\.([A-Za-z0-9_-]{0,%d})$" % _MARK_CAP
)
_ACK_STATUSES = ("accepted", "rejected", "applied")
#: the most acknowledged controls a mark may list (more: no mark, the file is read from its start)
_MARK_ACKS = 1 << 16
_MAX_OFFSET = (1 << 63) - 1


def encode_mark(point: ResumePoint) -> str | None:
    """``point`` as the commit log and the manifests keep it, one word:
    ``OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS`` (decimal numbers, the status's name, and the
    acknowledged controls as URL-safe base64 of a JSON array: ``[first, last, status]`` for
    consecutive ``seq`` acknowledged alike, ``[seq, seq, status, reason]`` for one with a
    reason). ``None`` when that would be longer than :data:`_MARK_CAP` (a run that
    acknowledged many controls with reasons): the run keeps its earlier mark."""
    acks = _encode_acks(point.acks)
    if acks is None:
        return None
    return f"{point.offset}.{point.seq}.{point.tail}.{point.status}.{point.events}.{acks}"


@functools.lru_cache(maxsize=1024)  # a run's acks change seldom: most commits encode the same ones
def _encode_acks(points: tuple[tuple[int, str, str | None], ...]) -> str | None:
    if not points:
        return ""
    acks: list[list[Any]] = []
    for seq, status, reason in points:
        last = acks[-1] if acks else None
        if reason is None and last is not None and len(last) == 3 and last[2] == status and last[1] == seq - 1:
            last[1] = seq
        else:
            acks.append([seq, seq, status] if reason is None else [seq, seq, status, reason])
    text = json.dumps(acks, separators=(",", ":"))  # ASCII: a reason's lone surrogate is escaped
    encoded = base64.urlsafe_b64encode(text.encode("ascii")).rstrip(b"=").decode("ascii")
    return encoded if len(encoded) <= _MARK_CAP else None


def decode_mark(mark: str) -> ResumePoint | None:
    """The :class:`~fenwire_fast.live.parent.channel.ResumePoint` of a mark :func:`encode_mark` wrote, or
    ``None`` for anything else (never raises: every number is bounded before it is used). The
    channel checks it against the files before it reads from it."""
    try:
        return _check_mark(mark)
    except ValueError:
        return None


#: the ranges of a mark's numbers, as :data:`_RANGES` gives a manifest's: ``(part, high)``, each
#: at least 0 (a ``seq`` at most :data:`MAX_SEQ`, as ``committed_seq``)
_MARK_RANGES = (("offset", _MAX_OFFSET), ("seq", MAX_SEQ), ("tail", (1 << 32) - 1), ("events", _MAX_OFFSET))


def _check_mark(mark: object) -> ResumePoint:
    """The point ``mark`` stands for; raises ``ValueError`` saying why when it is not a mark
    :func:`encode_mark` writes (:func:`check_manifest` refuses such a manifest with that reason, and
    the commit log ignores such a record). Each number is at most 19 digits before ``int`` sees it."""
    if not isinstance(mark, str):
        raise ValueError(f"mark is {type(mark).__name__}, not a string")
    found = _MARK.match(mark)
    if found is None:
        shown = mark if len(mark) <= 64 else mark[:64] + "..."
        raise ValueError(f"mark is {shown!r}: not OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS")
    offset, seq, tail, events = (int(found[i]) for i in (1, 2, 3, 5))
    for (part, high), value in zip(_MARK_RANGES, (offset, seq, tail, events), strict=True):
        _number(f"mark's {part}", value, int, False, 0, high)
    acks = _decode_acks(found[6])
    if acks is None:
        raise ValueError("mark's acknowledged controls are not a list of controls and statuses")
    return ResumePoint(offset, seq, tail, found[4], events, acks)


def _count(value: object, most: int) -> bool:
    return type(value) is int and 0 <= value <= most


def _decode_acks(encoded: str) -> tuple[tuple[int, str, str | None], ...] | None:
    if not encoded:
        return ()
    try:
        ranges = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if not isinstance(ranges, list):
        return None
    acks: list[tuple[int, str, str | None]] = []
    for entry in ranges:
        if not isinstance(entry, list) or len(entry) not in (3, 4):
            return None
        first, last, status = entry[:3]
        reason = entry[3] if len(entry) == 4 else None
        if not (_count(first, MAX_SEQ) and _count(last, MAX_SEQ)) or not 0 < first <= last:
            return None
        if status not in _ACK_STATUSES or not (reason is None or isinstance(reason, str) and first == last):
            return None
        if last - first + len(acks) >= _MARK_ACKS:
            return None
        acks.extend((seq, status, reason) for seq in range(first, last + 1))
    return tuple(acks)


def _apply(manifest: Manifest, commits: dict[str, Commit]) -> bool:
    """Bring ``manifest`` up to its run's commits in the log; ``True`` when that changed it."""
    commit = commits.get(manifest.name)
    if commit is None:
        return False
    seq, when, status, mark = commit
    changed = False
    if seq > manifest.committed_seq:
        manifest.committed_seq, manifest.committed_at, changed = seq, when, True
    if mark is not None and mark != manifest.mark:
        manifest.mark, changed = mark, True
    if status is not None and not manifest.closed:
        manifest.closed, manifest.status, changed = True, status, True
    return changed


def read_manifests(path: str, dir_fd: int | None = None, *, with_log: bool = True) -> list[tuple[str, Manifest | str]]:
    """The manifests in state dir ``path``, sorted by name, each brought up to its commits in the
    log (unless ``with_log`` is false). Read-only, no lock: while a hub folds the log, a reader
    may see a position a little behind the latest commit, never ahead of it."""
    found: list[tuple[str, Manifest | str]] = []
    own = dir_fd is None
    if dir_fd is None:
        dir_fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        names = sorted(n for n in os.listdir(dir_fd) if n.endswith(".json") and not n.startswith("."))
        for file_name in names:
            name = file_name[: -len(".json")]
            try:
                data = read_regular(file_name, _MANIFEST_CAP, dir_fd=dir_fd)
            except OSError as exc:
                found.append((name, f"cannot be read: {exc.strerror or exc}"))
                continue
            if len(data) > _MANIFEST_CAP:
                found.append((name, f"larger than {_MANIFEST_CAP} bytes"))
                continue
            try:
                manifest = Manifest.from_json(data)
            except (ValueError, TypeError) as exc:
                found.append((name, f"not a manifest: {exc}"))
                continue
            if manifest.name != name:
                found.append((name, f"names another run directory ({manifest.name!r})"))
                continue
            found.append((name, manifest))
        if with_log:
            commits = read_commits(dir_fd)
            for _name, read in found:
                if isinstance(read, Manifest):
                    _apply(read, commits)
    finally:
        if own:
            os.close(dir_fd)
    return found


def new_manifest(run: str, name: str, directory: str, **settings: Any) -> Manifest:
    """The manifest of a run about to start in ``directory`` (no pid yet)."""
    return Manifest(
        run=run,
        name=name,
        created=time.time(),
        control_path=os.path.join(directory, "control.jsonl"),
        event_path=os.path.join(directory, "events.jsonl"),
        log_path=os.path.join(directory, "child.log"),
        **settings,
    )
