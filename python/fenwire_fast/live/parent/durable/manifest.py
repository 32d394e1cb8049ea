"""Manifests: what a state dir keeps about one run (``<name>.json``), checked when read back, and
brought up to the commit log (see :mod:`~fenwire_fast.live.parent.durable`)."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field, fields
from typing import Any

from ...._regular import read_regular
from .bounds import MAX_SEQ, RUN_NAME, check_number
from .commits import Commit, read_commits
from .marks import check_mark

__all__ = [
    "MANIFEST_VERSION",
    "Manifest",
    "check_manifest",
    "apply_commits",
    "manifest_files",
    "read_manifest",
    "read_manifests",
    "new_manifest",
]

MANIFEST_VERSION = 1
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: the largest pid a ``pid_t`` holds
_PID_MAX = (1 << 31) - 1
#: a manifest larger than this is not read (it is not one this package wrote)
_MANIFEST_CAP = 1 << 20


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
    #: :class:`~fenwire_fast.live.parent.channel.ResumePoint`, see :func:`.marks.encode_mark`); ``None``: its start
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


#: the ranges of a manifest's numbers: ``(field, types, optional, low, high)``. A pid is a positive
#: ``pid_t`` (what the kernel's calls take); a ``seq`` is at most :data:`MAX_SEQ` (the wire's largest,
#: as in the commit log); a time is a Unix time before the year 5000; a duration (seconds) at most
#: 30 years; a read budget at most 1 GiB. A ``mark`` (:func:`.marks.decode_mark`) has its numbers checked
#: the same way, by :data:`.marks._MARK_RANGES`.
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
    a run directory's, a status that is not a word, a ``mark`` that is not one :func:`.marks.encode_mark`
    writes (its numbers range-checked as the others). Every value a hub uses is checked, so a run
    taken up from a manifest never raises where the value is used (a pid past ``pid_t``,
    a read budget of 0)."""
    for name in ("run", "name"):
        if not isinstance(getattr(manifest, name), str):
            raise ValueError(f"{name} is {getattr(manifest, name)!r}")
    if not RUN_NAME.match(manifest.name):
        raise ValueError(f"name {manifest.name!r} is not a run directory's name")
    for name, kinds, optional, low, high in _RANGES:
        check_number(name, getattr(manifest, name), kinds, optional, low, high)
    if manifest.stall_timeout is not None and manifest.stall_timeout <= 0:
        raise ValueError(f"stall_timeout is {manifest.stall_timeout!r}: not above 0")
    if manifest.boot is not None and not isinstance(manifest.boot, str):
        raise ValueError(f"boot is {manifest.boot!r}")
    if manifest.status is not None and not (isinstance(manifest.status, str) and _STATUS.match(manifest.status)):
        raise ValueError(f"status is {manifest.status!r}: not a run's status")
    if manifest.mark is not None:
        check_mark(manifest.mark)
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


def apply_commits(manifest: Manifest, commits: dict[str, Commit]) -> bool:
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


def manifest_files(dir_fd: int) -> list[str]:
    """The names of the manifest files in the state dir open as ``dir_fd``, sorted."""
    return sorted(n for n in os.listdir(dir_fd) if n.endswith(".json") and not n.startswith("."))


def read_manifest(dir_fd: int, file_name: str) -> Manifest | str:
    """The manifest in ``file_name`` of the state dir open as ``dir_fd``, checked, or why it is not
    one (not brought up to the commit log: see :func:`apply_commits`)."""
    name = file_name[: -len(".json")]
    try:
        data = read_regular(file_name, _MANIFEST_CAP, dir_fd=dir_fd)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if len(data) > _MANIFEST_CAP:
        return f"larger than {_MANIFEST_CAP} bytes"
    try:
        manifest = Manifest.from_json(data)
    except (ValueError, TypeError) as exc:
        return f"not a manifest: {exc}"
    if manifest.name != name:
        return f"names another run directory ({manifest.name!r})"
    return manifest


def read_manifests(path: str, dir_fd: int | None = None, *, with_log: bool = True) -> list[tuple[str, Manifest | str]]:
    """The manifests in state dir ``path``, sorted by name, each brought up to its commits in the
    log (unless ``with_log`` is false). Read-only, no lock: while a hub folds the log, a reader
    may see a position a little behind the latest commit, never ahead of it."""
    found: list[tuple[str, Manifest | str]] = []
    own = dir_fd is None
    if dir_fd is None:
        dir_fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for file_name in manifest_files(dir_fd):
            found.append((file_name[: -len(".json")], read_manifest(dir_fd, file_name)))
        if with_log:
            commits = read_commits(dir_fd)
            for _name, read in found:
                if isinstance(read, Manifest):
                    apply_commits(read, commits)
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
