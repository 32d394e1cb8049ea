"""Reading a child's final-text file without trusting the child.

A child whose final answer does not fit one line writes it whole to a file in the run's private
directory and names that file in its ``result`` line (``final-text-path``), with the start of the
text in ``final-text``. Everything in that line is the child's word, so the parent:

- opens the private directory once, as a directory descriptor, before the child starts
  (:class:`PrivateDirectory`), and reaches the file only through it: the path must name a file
  directly inside that directory, and only its last component is opened (``O_NOFOLLOW``), so no
  directory component can be swapped for a symlink between the check and the use;
- accepts only a regular file owned by this user, readable by nobody else, with one link, that is
  not one of the channel's own files, and whose text starts with the ``final-text`` the line
  carried (a ``final-text-path`` without a ``final-text`` is refused);
- checks again when the read is done, and once more right before removing the file, that its name
  still refers to the file it opened and that the file has one link: the link count can drop
  after ``open`` (a child that hard-links an outside file in and removes that name at once), so a
  file that had another link at any of those moments is refused; and after removing the name, the
  open file must have no link left (else it had a name elsewhere, and is refused);
- reads at most ``cap`` bytes (one more to tell that the file is larger), in steps of bounded size
  (:meth:`FinalTextRead.step`), so a huge or growing file neither fills the parent's memory nor
  blocks it for long: each step's bytes are decoded, checked against the prefix and appended to
  the text as they come, so no step does more work for a larger file, and the parent holds the
  text once plus a few steps' buffers;
- removes the file through the same directory descriptor, and only if the name still refers to
  the file it read (checked right before the ``unlink``); a refused file is not removed, except
  when it is only after the ``unlink`` that it shows another link (then only the name in the
  private directory is gone).

Nothing here raises on what the child wrote: every refusal is a reason, in words.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

__all__ = [
    "DEFAULT_FINAL_TEXT_CAP",
    "READ_STEP",
    "PrivateDirectory",
    "FinalTextRead",
    "FinalTextFollower",
    "FinalTextStore",
]

#: Largest final text a channel reads by default (bytes).
DEFAULT_FINAL_TEXT_CAP = 256 * 1024 * 1024
#: Bytes read per :meth:`FinalTextRead.step` by default: a few milliseconds of work (reading,
#: decoding, appending).
READ_STEP = 2 * 1024 * 1024
#: A file read whole and removed that is at least this large is closed on a thread of its own.
_CLOSE_APART = 16 * 1024 * 1024

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _utf8_decoder() -> codecs.IncrementalDecoder:
    """UTF-8, bytes that are not UTF-8 replaced by U+FFFD: the same text as decoding the whole
    file at once with ``errors="replace"``, however it is cut into steps."""
    return codecs.getincrementaldecoder("utf-8")("replace")


class PrivateDirectory:
    """The run's private directory, held open as a directory descriptor.

    ``protected`` are files in it that a child may never hand over as its final text (the channel's
    own control, event and log files); they are identified now, by device and inode."""

    def __init__(self, path: str, protected: Iterable[str] = ()) -> None:
        self.path = os.path.abspath(path)
        #: a final-text file was asked for already: a run gets one attempt
        self.used = False
        self.fd: int | None = None
        self.error: str | None = None
        try:
            self.fd = os.open(self.path, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
        except OSError as exc:
            self.error = f"cannot open the private directory {self.path}: {exc.strerror}"
        self._protected_paths = list(protected)
        self._protected: set[tuple[int, int]] = set()
        for other in self._protected_paths:
            try:
                self._protected.add(_identity(os.stat(other)))
            except OSError:
                continue

    def name_of(self, path: object) -> tuple[str | None, str | None]:
        """The name of ``path`` inside this directory, or ``(None, why)`` when it is not a path
        directly inside it."""
        if not isinstance(path, str) or not path:
            return None, "final-text-path is not a path"
        if "\x00" in path:
            return None, "final-text-path contains a NUL character"
        if not os.path.isabs(path):
            return None, f"final-text-path {path!r} is not absolute"
        parent, name = os.path.split(path)
        if parent != self.path or name in ("", ".", ".."):
            return None, f"{path!r} is not directly inside the run's private directory"
        return name, None

    def is_protected(self, st: os.stat_result) -> bool:
        """``st`` is one of the protected files (as they were when the channel started, or now)."""
        if _identity(st) in self._protected:
            return True
        for other in self._protected_paths:
            try:
                if _identity(os.stat(other)) == _identity(st):
                    return True
            except OSError:
                continue
        return False

    def discard(self, path: object) -> None:
        """Remove the name ``path`` in this directory if it is a regular file and not a protected
        one (a final text already had from a kept copy: a parent that died between keeping the copy
        and removing the file left it). Only the name goes: a file linked elsewhere keeps its other
        names. Never raises."""
        name, _why = self.name_of(path)
        if name is None or self.fd is None:
            return
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and not self.is_protected(st):
                os.unlink(name, dir_fd=self.fd)
        except OSError:
            pass

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


class FinalTextRead:
    """One read of a final-text file, started by :meth:`start` and advanced by :meth:`step`.

    When :attr:`done` is true, :attr:`text` holds the whole text (and the file is gone) or
    :attr:`why` says why it was refused (and nothing was removed, unless the file showed another
    link only once its name was removed: then that name is gone, the file's other names stay)."""

    def __init__(self) -> None:
        self.done = False
        self.text: str | None = None
        self.why: str | None = None
        self._fd: int | None = None
        self._name = ""
        self._path = ""
        self._st: os.stat_result | None = None
        self._directory: PrivateDirectory | None = None
        self._prefix = ""
        self._cap = 0
        self._size = 0  # bytes read so far
        #: the text decoded so far (grown in place, see :meth:`_append`)
        self._text = ""
        self._matched = 0  # characters of the prefix found at the start of the text so far
        self._decoder = _utf8_decoder()
        self._buffer = bytearray()
        #: called with the whole text after the last check and before the file is removed (a
        #: durable run keeps a copy there); an ``OSError`` refuses the read and removes nothing
        self.keep: Callable[[str], None] | None = None

    @classmethod
    def start(
        cls,
        directory: PrivateDirectory,
        path: object,
        prefix: object,
        cap: int,
        keep: Callable[[str], None] | None = None,
    ) -> FinalTextRead:
        """Check ``path`` and open it; the read then goes on with :meth:`step`."""
        read = cls()
        read.keep = keep
        read._start(directory, path, prefix, cap)
        return read

    def _refuse(self, why: str) -> None:
        self._close()
        self._text = ""
        self._buffer = bytearray()
        self.done = True
        self.why = why

    def _start(self, directory: PrivateDirectory, path: object, prefix: object, cap: int) -> None:
        why = self._open(directory, path, prefix, cap)
        if why is not None:
            self._refuse(why)

    def _open(self, directory: PrivateDirectory, path: object, prefix: object, cap: int) -> str | None:
        """Open and check the file; ``None`` when the read can go on, else why not."""
        if not isinstance(prefix, str):
            return "the result names a final-text-path but carries no final-text"
        if directory.fd is None:
            return directory.error or "the private directory is not open"
        name, why = directory.name_of(path)
        if name is None:
            return why or "final-text-path refused"
        self._path = shown = repr(path)
        flags = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
        try:
            self._fd = os.open(name, flags, dir_fd=directory.fd)
            st = os.fstat(self._fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"{shown} is a symlink"
            return f"cannot open {shown}: {exc.strerror}"
        if not stat.S_ISREG(st.st_mode):
            return f"{shown} is not a regular file"
        if st.st_uid != os.geteuid():
            return f"{shown} is not owned by this user"
        if st.st_mode & 0o077:
            return f"{shown} is accessible to others (mode {stat.S_IMODE(st.st_mode):04o})"
        if st.st_nlink != 1:
            return f"{shown} has other hard links"
        if directory.is_protected(st):
            return f"{shown} is one of the channel's own files"
        if st.st_size > cap:
            return f"{shown} is larger than {cap} bytes"
        self._name, self._st, self._directory, self._prefix, self._cap = name, st, directory, prefix, cap
        return None

    def step(self, budget: int = READ_STEP) -> bool:
        """Read up to ``budget`` more bytes, decode them and check them against the prefix; finish
        when the file ends. Returns :attr:`done`.

        Each step costs about the same whatever the text's size: the bytes are read into one
        reused buffer, decoded as they come (a character cut between two steps is completed by the
        next), compared with the part of the prefix they cover (a mismatch is refused at once),
        and appended to the text, which grows in place (see :meth:`_append`)."""
        if self.done:
            return True
        fd = self._fd
        assert fd is not None
        try:
            while budget > 0:
                want = min(budget, self._cap + 1 - self._size)
                if len(self._buffer) < want:
                    self._buffer = bytearray(want)
                with memoryview(self._buffer) as view:
                    got = os.readv(fd, [view[:want]])
                    if not got:
                        return self._finish()
                    self._size += got
                    budget -= got
                    if self._size > self._cap:
                        self._refuse(f"{self._path} grew larger than {self._cap} bytes")
                        return True
                    piece = self._decoder.decode(view[:got])
                if not self._take(piece):
                    return True
        except OSError as exc:
            self._refuse(f"cannot read {self._path}: {exc.strerror}")
            return True
        return False

    def _take(self, piece: str) -> bool:
        """Check ``piece`` against the prefix and append it; ``False`` (refused) on a mismatch."""
        matched, prefix = self._matched, self._prefix
        if matched < len(prefix) and piece:
            covered = min(len(prefix) - matched, len(piece))
            if not piece.startswith(prefix[matched : matched + covered]):
                self._refuse(f"{self._path} does not start with the result's final-text")
                return False
            self._matched = matched + covered
        self._append(piece)
        return True

    def _append(self, piece: str) -> None:
        """Append ``piece`` to the text, in place when the interpreter can.

        CPython grows a string that nothing else refers to in place (``text += piece`` into a
        local variable: a ``realloc``, which for a large block remaps its pages rather than copying
        them), so the text costs one copy of each piece, and the parent holds the text once plus a
        step's worth of buffers. Joining pieces at the end instead would hold them all and the
        joined text at once (twice the text) and copy everything in one go. What copies the text
        so far: a piece with wider characters than the text had until then (ASCII, then Latin-1,
        then the Basic Multilingual Plane, then beyond it: at most three times per text), for
        CPython then makes a new, wider string; and a tracer on CPython 3.11 (a debugger,
        coverage), which runs the ``+=`` unspecialised (see :func:`_warm_up`)."""
        text = self._text
        self._text = ""
        text += piece
        self._text = text

    def _finish(self) -> bool:
        why = self._still_the_file_read()
        if why is not None:
            self._refuse(why)
            return True
        self._buffer = bytearray()
        if not self._take(self._decoder.decode(b"", True)):  # a character cut off at the end
            return True
        if self._matched < len(self._prefix):
            self._refuse(f"{self._path} does not start with the result's final-text")
            return True
        why = self._still_the_file_read() or self._kept() or self._remove()  # checked right before the unlink
        self._close(unlinked=True)
        if why is not None:
            self._refuse(why)
            return True
        self.text, self._text = self._text, ""
        self.done = True
        return True

    def _kept(self) -> str | None:
        """Hand the whole text to :attr:`keep` (if any); why not, when it could not keep it."""
        if self.keep is None:
            return None
        try:
            self.keep(self._text)
        except OSError as exc:
            return f"cannot keep a copy of {self._path}: {exc.strerror or exc}"
        return None

    def _still_the_file_read(self) -> str | None:
        """``None`` when the name still refers to the file that was opened and that file has one
        link, now and when it was opened; else why not.

        One link at ``open`` proves nothing by itself: a child can hard-link a file from outside
        into its directory, and remove that second name between the parent's ``open`` and its
        ``fstat``; the count then drops to one while the open file is still the outside one. Only
        a file that had one link when it was opened, still has one, and still has the name it was
        opened by (the one name it has) is the child's own."""
        directory, st = self._directory, self._st
        if directory is None or directory.fd is None or st is None or self._fd is None:
            return "the read was abandoned"
        try:
            now = os.fstat(self._fd)
            named = os.stat(self._name, dir_fd=directory.fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return f"{self._path} was removed while it was read"
            return f"cannot check {self._path} again: {exc.strerror}"
        if _identity(named) != _identity(st):
            return f"{self._path} was replaced while it was read"
        if st.st_nlink != 1 or now.st_nlink != 1 or named.st_nlink != 1:
            return f"{self._path} has other hard links"
        return None

    def _remove(self) -> str | None:
        """Remove the name, then make sure the file has no link left; else why not.

        The checks before cannot be the last word: while a child removes a link, the kernel drops
        the link count before the name is gone, so for a moment the name still finds the file with
        one link although its other link (outside) is the only one left. After the parent's own
        ``unlink`` the open file must have no link at all: a file with a name anywhere else was not
        the child's own. (What is removed is only ever the name in the private directory, checked
        right before to refer to the file read; an outside file keeps its own name.)"""
        directory = self._directory
        if directory is None or directory.fd is None or self._fd is None:
            return "the read was abandoned"
        try:
            os.unlink(self._name, dir_fd=directory.fd)
            left = os.fstat(self._fd).st_nlink
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return f"{self._path} was removed while it was read"
            return f"cannot remove {self._path}: {exc.strerror}"
        if left != 0:
            return f"{self._path} has other hard links (found when its name was removed)"
        return None

    def _close(self, unlinked: bool = False) -> None:
        """Close the file. Once its name is removed, the last ``close`` frees the file's pages and
        blocks, about 45 ms for 255 MiB: a large file is closed on a thread of its own, so that the
        poll that finishes the read does not wait for it (``close`` lets go of the GIL)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if unlinked and self._size >= _CLOSE_APART:
            try:
                threading.Thread(
                    target=_close_quietly, args=(fd,), name="fenwire final-text close", daemon=True
                ).start()
                return
            except RuntimeError:  # no thread to be had: close it here
                pass
        _close_quietly(fd)

    def cancel(self) -> None:
        """Stop the read and let go of the file (nothing is removed)."""
        if not self.done:
            self._refuse("the read was abandoned")


def _warm_up() -> None:
    """Have CPython specialise :meth:`FinalTextRead._append` for strings now.

    CPython appends in place only once the ``+=`` is specialised (3.11: after a few calls of the
    method); until then every append copies the whole text so far, so the first large text a
    process reads would copy tens of MiB in each of its first steps."""
    read = FinalTextRead()
    for _ in range(64):
        read._append("warm")


_warm_up()


class FinalTextStore(Protocol):
    """Where a durable run keeps the final texts it read (the files are removed once read)."""

    def load(self, seq: int) -> str | None:
        """The text kept for the ``result`` numbered ``seq``, if any."""

    def keep(self, seq: int, text: str) -> None:
        """Keep the text of the ``result`` numbered ``seq``; raises ``OSError``."""


class FinalTextFollower:
    """One run's final text: taken from its ``result`` line, completed from the file it names.

    ``directory`` is the run's private directory (opened now, see :class:`PrivateDirectory`) and
    ``protected`` the files in it a child may not hand over. :meth:`follow` takes a ``result``;
    while :attr:`reading`, each :meth:`step` reads at most ``step_bytes`` more, at most ``cap`` in
    all. :attr:`text` is the whole answer when it could be had; :attr:`note` says why not. A run gets
    one attempt: only the first ``result`` that names a file is followed.

    With a ``store``, a text kept there for the ``result`` is taken instead of the file (a
    ``result`` delivered again after a restart), and a text read whole is kept there before its
    file is removed. ``follow=False`` never opens a file (a read-only look at a run)."""

    def __init__(
        self,
        directory: str,
        protected: Iterable[str],
        cap: int,
        step_bytes: int,
        store: FinalTextStore | None = None,
        follow: bool = True,
    ) -> None:
        if cap < 0 or step_bytes < 1:
            raise ValueError("final_text_cap must be >= 0 and final_text_step positive")
        self.cap = cap
        self.step_bytes = step_bytes
        self.text: str | None = None
        self.note: str | None = None
        self._private = PrivateDirectory(directory, protected)
        self._read: FinalTextRead | None = None
        self._cut = 0
        self._store = store
        self._follow = follow

    @property
    def reading(self) -> bool:
        """A file read is under way: the ``result`` waits until :meth:`step` returns ``True``."""
        return self._read is not None

    def follow(self, msg: dict[str, object]) -> None:
        """Take a ``result`` message: its ``final-text``, then the file its ``final-text-path`` names."""
        text = msg.get("final-text")
        self.text = text if isinstance(text, str) else None
        self.note = None
        self._cut = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
        path = msg.get("final-text-path")
        if path is None:
            if msg.get("truncated?"):
                self.note = f"final text truncated to {self._cut} bytes; the child kept no full copy"
            return
        if self._private.used:
            self.note = f"final text truncated to {self._cut} bytes: a final-text-path was already followed in this run"
            return
        self._private.used = True
        seq = msg.get("seq")
        store = self._store if isinstance(seq, int) else None
        if store is not None:
            kept = store.load(seq)  # type: ignore[arg-type]
            if kept is not None:
                self.text = kept
                if self._follow:
                    self._private.discard(path)  # normally gone already: removed right after keeping
                return
        if not self._follow:
            self.note = f"final text truncated to {self._cut} bytes: its file was not read"
            return
        keep = None if store is None else (lambda whole: store.keep(seq, whole))  # type: ignore[arg-type]
        self._read = FinalTextRead.start(self._private, path, text, self.cap, keep)
        self.step()

    def step(self) -> bool:
        """One bounded step of the file read; ``True`` once it is over (:attr:`text` or :attr:`note` set)."""
        reading = self._read
        if reading is None:
            return True
        if not reading.step(self.step_bytes):
            return False
        self._read = None
        if reading.text is not None:
            self.text = reading.text
        else:
            self.note = f"final text truncated to {self._cut} bytes: {reading.why}"
        return True

    def close(self) -> None:
        """Abandon a read under way and close the directory descriptor."""
        if self._read is not None:
            self._read.cancel()
            self._read = None
        self._private.close()
