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
the directory can be removed to get around it (a lock file could be unlinked while held). This
package knows the files; :mod:`~fenwire_fast.live.parent.adopt` rebuilds runs from them. Its
modules: :mod:`.manifest` (manifests and their checks), :mod:`.commits` (the commit log),
:mod:`.marks` (resume marks), :mod:`.process` (pid start times, the boot id) and :mod:`.bounds`;
every name is importable from the package itself.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import tempfile

from ...._regular import open_regular
from .bounds import MAX_SEQ
from .commits import COMMITS, Commit, parse_seq, read_at, read_commits
from .manifest import MANIFEST_VERSION, Manifest, apply_commits, check_manifest, new_manifest, read_manifests
from .marks import decode_mark, encode_mark
from .process import boot_id, process_start

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
    "new_manifest",
    "parse_seq",
    "Commit",
    "MAX_SEQ",
    "FOLD_AT",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: the size past which the commit log is folded into the manifests (see the package docstring)
FOLD_AT = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class StateDirBusy(RuntimeError):
    """Another hub (in this process or another) holds the state dir."""


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
                if isinstance(manifest, Manifest) and apply_commits(manifest, commits):
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
        data = read_at(self.fd, name + ".final", None)
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
