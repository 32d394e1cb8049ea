"""A state dir's manifests, read again only when their file changed: what ``fenwire top`` looks at
every frame.

Reading and checking a thousand manifests costs about 40 ms; a frame that finds none changed costs
a ``stat`` per manifest instead. A manifest is read again when its file's inode, size or time
changed (the hub replaces it whole, with a rename), and every manifest is brought up to the commit
log again when the log's file changed. Everything is opened through the state dir's descriptor.
"""

from __future__ import annotations

import os

from ...live.parent.durable import COMMITS, Manifest
from ...live.parent.durable.commits import read_commits
from ...live.parent.durable.manifest import apply_commits, manifest_files, read_manifest

__all__ = ["ManifestCache"]

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

_Key = tuple[int, int, int] | None


def _key(dir_fd: int, name: str) -> _Key:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class ManifestCache:
    """The manifests of state dir ``path`` (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._read: dict[str, tuple[_Key, Manifest | str]] = {}  # file -> (its key, as read)
        self._log: _Key = None
        self._commits: dict[str, tuple[int, float, str | None, str | None]] = {}

    def manifests(self) -> list[tuple[str, Manifest | str]]:
        """``(name, manifest or why it is not one)`` per manifest file, sorted, each brought up to
        the commit log. Raises ``OSError`` when the state dir cannot be read."""
        fd = os.open(self.path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            log = _key(fd, COMMITS)
            if log != self._log:
                self._log, self._commits = log, read_commits(fd) if log is not None else {}
                self._read = {name: (None, read) for name, (_, read) in self._read.items()}  # read again
            out = []
            files = manifest_files(fd)
            for name in files:
                key = _key(fd, name)
                cached = self._read.get(name)
                if cached is None or cached[0] is None or cached[0] != key:  # changed, or the log did
                    read = read_manifest(fd, name)
                    if isinstance(read, Manifest):
                        apply_commits(read, self._commits)
                    cached = self._read[name] = (key, read)
                out.append((name[: -len(".json")], cached[1]))
            for gone in set(self._read) - set(files):
                del self._read[gone]
            return out
        finally:
            os.close(fd)
