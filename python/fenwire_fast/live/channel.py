"""The parent's channel over a child's two files.

:class:`Channel` stamps and appends controls, drains events through a receiver, and mirrors the
run's state from the events alone: ``ready``
moves ``starting`` to ``ready``; each acknowledged control applies ``session.decide`` (rejections
change nothing); ``turn-started`` moves ``ready`` to ``running``; ``turn-complete`` applies
``session.advance(..., "turn-done")`` unless that would end the run; ``exit`` sets the final status.

A ``result`` that names a ``final-text-path`` is completed from that file, which is then removed.
The file is only trusted when it is a regular file (never a symlink: ``O_NOFOLLOW``) directly inside
an allowed directory (by default, the event file's directory), owned by this user, readable by
nobody else, with no other hard links, not one of the channel's own files, and starting with the
cut text the line carried. Otherwise nothing is removed, the cut text is kept and
:attr:`Channel.final_text_note` says why.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import DRAIN_BYTE_BUDGET, Rejection, Sender, session

__all__ = ["Channel", "SentControl", "PollError", "SendError", "read_final_text", "MAX_FINAL_TEXT_BYTES"]

MAX_FINAL_TEXT_BYTES = 256 * 1024 * 1024
_MIRRORED = frozenset({"ready", "control-ack", "turn-started", "turn-complete", "result", "exit"})


@dataclass
class SentControl:
    """A control this channel sent; ``status`` / ``reason`` fill in when its ack arrives."""

    seq: int
    type: str
    text: str | None = None
    status: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class PollError:
    """A problem found while polling: a rejected event line, a foreign run, a truncated file."""

    error: str
    rejection: Rejection | None = None


class SendError(ValueError):
    """A control could not be encoded (the message says why; ``rejection`` has the details)."""

    def __init__(self, message: str, rejection: Rejection | None = None) -> None:
        super().__init__(message)
        self.rejection = rejection


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def read_final_text(
    path: object,
    allowed_dirs: Iterable[str],
    *,
    protected: Iterable[str] = (),
    expected_prefix: str | None = None,
) -> tuple[str | None, str | None]:
    """Read and remove a child's ``final-text-path`` file, safely.

    Returns ``(text, None)`` on success (the file is then removed), or ``(None, why)`` when the
    file is refused or unreadable (nothing is removed then)."""
    if not isinstance(path, str) or not path:
        return None, "final-text-path is not a path"
    if not os.path.isabs(path):
        return None, f"final-text-path {path!r} is not absolute"
    try:
        parent = os.stat(os.path.dirname(path))
    except OSError as exc:
        return None, f"cannot inspect the directory of {path}: {exc.strerror}"
    allowed = False
    for directory in allowed_dirs:
        try:
            if _same_file(parent, os.stat(directory)):
                allowed = True
                break
        except OSError:
            continue
    if not allowed:
        return None, f"{path} is not in the run's private directory"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"{path} is a symlink"
        return None, f"cannot open {path}: {exc.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file"
        if st.st_uid != os.geteuid():
            return None, f"{path} is not owned by this user"
        if st.st_mode & 0o077:
            return None, f"{path} is accessible to others (mode {stat.S_IMODE(st.st_mode):04o})"
        if st.st_nlink != 1:
            return None, f"{path} has other hard links"
        for other in protected:
            try:
                if _same_file(st, os.stat(other)):
                    return None, f"{path} is one of the channel's own files"
            except OSError:
                continue
        if st.st_size > MAX_FINAL_TEXT_BYTES:
            return None, f"{path} is larger than {MAX_FINAL_TEXT_BYTES} bytes"
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror}"
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8", "replace")
    if expected_prefix is not None and not text.startswith(expected_prefix):
        return None, f"{path} does not start with the result's final-text"
    try:
        now = os.lstat(path)
        if _same_file(now, st):
            os.unlink(path)
    except OSError:
        pass
    return text, None


class Channel:
    """A parent's view of one run over its control and event files.

    ``send`` appends controls; ``poll`` drains events (at most ``max_bytes`` per call) and returns
    ``(messages, errors)``. State: :attr:`status` (mirrored), :attr:`result`, :attr:`exit`,
    :attr:`error` (the first fatal problem: a version mismatch, a foreign run, a truncated file),
    :attr:`final_text` (the whole answer when it could be had) and :attr:`final_text_note`."""

    def __init__(
        self,
        run: str,
        control_path: str,
        event_path: str,
        *,
        max_bytes: int = DRAIN_BYTE_BUDGET,
        final_text_dirs: Sequence[str] | None = None,
        protected_paths: Sequence[str] = (),
    ) -> None:
        from ..lines import Tailer

        self.run = run
        self.control_path = os.fspath(control_path)
        self.event_path = os.fspath(event_path)
        self.status = "starting"
        self.result: dict[str, Any] | None = None
        self.exit: dict[str, Any] | None = None
        self.error: str | None = None
        self.final_text: str | None = None
        self.final_text_note: str | None = None
        self.unacked: dict[int, SentControl] = {}
        self.controls: dict[int, SentControl] = {}
        self.errors: list[PollError] = []
        self.events = 0
        self.last_seq = 0
        self.ignored_after_exit = 0
        self.final_text_dirs = (
            list(final_text_dirs)
            if final_text_dirs is not None
            else [os.path.dirname(os.path.abspath(self.event_path))]
        )
        self._protected = [self.control_path, self.event_path, *protected_paths]
        self._sender = Sender("control", run)
        self._tailer = Tailer(self.event_path, "event", max_bytes=max_bytes)
        self._fd: int | None = None

    # -- sending --------------------------------------------------------------------------------

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        """Stamp, validate and append one control line; return its ``seq``.

        Raises :class:`SendError` for a control that does not validate, ``OSError`` when the
        control file cannot be written."""
        line, rej = self._sender.next(type_, payload or {})
        if line is None:
            reason = rej.reason if rej is not None else "cannot encode"
            raise SendError(f"cannot send {type_}: {reason}", rej)
        if self._fd is None:
            self._fd = os.open(
                self.control_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600
            )
        data = line + b"\n"
        written = os.write(self._fd, data)
        if written != len(data):  # a regular file only writes short on errors such as ENOSPC
            raise OSError(errno.EIO, f"short write to {self.control_path}")
        seq = self._sender.seq
        text = (payload or {}).get("text")
        sent = SentControl(seq, type_, text if isinstance(text, str) else None)
        self.unacked[seq] = sent
        self.controls[seq] = sent
        return seq

    # -- polling --------------------------------------------------------------------------------

    def pending(self) -> bool:
        """True when the event file has bytes not read yet (a size check, no read)."""
        return self._tailer.pending()

    def poll(self) -> tuple[list[dict[str, Any]], list[PollError]]:
        """Drain the next chunk of the event file; return its messages and errors, in order."""
        items, status = self._tailer.poll()
        messages: list[dict[str, Any]] = []
        errors: list[PollError] = []
        if status == "truncated":
            if self.error is None:
                self.error = "event file truncated"
                errors.append(PollError(self.error))
        run = self.run
        append = messages.append
        exited = self.exit is not None
        for item in items:
            if exited:
                self.ignored_after_exit += 1
                continue
            if type(item) is not dict and isinstance(item, Rejection):
                if item.fatal and self.error is None:
                    self.error = item.reason
                errors.append(PollError(item.reason, item))
                continue
            if item.get("run") != run:
                self.error = f"event for foreign run {item.get('run')}"
                errors.append(PollError(self.error))
                continue
            if item["type"] in _MIRRORED:
                self._mirror(item)
                exited = self.exit is not None
            append(item)
        if messages:
            self.events += len(messages)
            self.last_seq = messages[-1]["seq"]
        if errors:
            self.errors.extend(errors)
        return messages, errors

    def _mirror(self, msg: dict[str, Any]) -> None:
        etype = msg["type"]
        if etype == "ready":
            transition = session.advance(self.status, "started")
            if transition is not None:
                self.status = transition.next
        elif etype == "control-ack":
            ref = msg.get("ref")
            sent = self.unacked.pop(int(ref), None) if ref is not None else None
            if sent is not None:
                sent.status = msg.get("status")
                sent.reason = msg.get("reason")
                if sent.status != "rejected":
                    decision = session.decide(self.status, sent.type)
                    if decision.next is not None:
                        self.status = decision.next
        elif etype == "turn-started":
            if self.status == "ready":
                self.status = "running"
        elif etype == "turn-complete":
            transition = session.advance(self.status, "turn-done")
            if transition is not None and not session.is_terminal(transition.next):
                self.status = transition.next
        elif etype == "result":
            self.result = msg
            self._complete_result(msg)
        elif etype == "exit":
            self.exit = msg
            self.status = msg["status"]

    def _complete_result(self, msg: dict[str, Any]) -> None:
        text = msg.get("final-text")
        self.final_text = text
        self.final_text_note = None
        cut = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
        path = msg.get("final-text-path")
        if path is not None:
            full, why = read_final_text(
                path,
                self.final_text_dirs,
                protected=self._protected,
                expected_prefix=text if isinstance(text, str) else None,
            )
            if full is not None:
                self.final_text = full
                return
            self.final_text_note = f"final text truncated to {cut} bytes: {why}"
        elif msg.get("truncated?"):
            self.final_text_note = f"final text truncated to {cut} bytes; the child kept no full copy"

    # -- state ----------------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """The run is ``ready`` and every control sent has been acknowledged."""
        return self.status == "ready" and not self.unacked

    @property
    def done(self) -> bool:
        """An ``exit`` line has arrived."""
        return self.exit is not None

    @property
    def rejected(self) -> list[SentControl]:
        """Controls the child answered with ``rejected``."""
        return [c for c in self.controls.values() if c.status == "rejected"]

    @property
    def offset(self) -> int:
        """Bytes of the event file read so far."""
        return self._tailer.offset

    def close(self) -> None:
        """Close the file handles."""
        self._tailer.close()
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
