"""``fenwire tail``: follow a live event or control file as it grows, one line per message.

Each message becomes ``TIME  SEQ  TYPE  TEXT``: the message's own ``timestamp`` (else the time it
was read), its ``seq`` and ``type``, and what it says in a few words (a delta's text, a summary,
a prompt, an exit's status...). A rejected line is shown where it stands, as
``line N: REJECTED CODE: REASON``. Everything from the file is escaped
(:func:`fenwire_fast.text.printable`): nothing in it can forge a line or reach the terminal raw.
``--json`` prints each message as it travels on the wire instead, and each rejection as
``{"line": N, "rejected": {...}}``.

It stops after an ``exit`` event, or at the end of the file with ``--no-follow``; otherwise it
sleeps until the file grows, woken by inotify on Linux (polling elsewhere, or with
``FENWIRE_WAKEUPS=poll``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import orjson

from .. import Receiver
from .._types import Rejection
from ..text import printable
from .check import _LineNumbers, guess_direction

__all__ = ["tail_command", "tail_file", "TailResult", "message_line", "CHUNK_BYTES", "TEXT_WIDTH"]

CHUNK_BYTES = 1 << 20
#: characters of a message's text shown on its line (the rest is cut, with "…")
TEXT_WIDTH = 160

# what each type says, in the order looked for; the first key present is shown
_SAYS = ("summary", "delta", "text", "final-text", "error", "note", "name", "reason")


@dataclass
class TailResult:
    """What a tail saw: messages shown, lines rejected, whether it ended at an ``exit``."""

    messages: int = 0
    rejected: int = 0
    exited: bool = False
    truncated: bool = False


def _time(msg: dict[str, Any]) -> str:
    stamp = msg.get("timestamp")
    if isinstance(stamp, str) and "T" in stamp:
        return printable(stamp.split("T", 1)[1][:12].rstrip("Z"))
    return time.strftime("%H:%M:%S")


def _says(msg: dict[str, Any]) -> str:
    kind = msg.get("type")
    if kind == "control-ack":
        text = f"ref {msg.get('ref')} {msg.get('status')}"
        return text + (f": {msg['reason']}" if msg.get("reason") else "")
    if kind == "exit":
        return str(msg.get("status")) + (f": {msg['error']}" if msg.get("error") else "")
    if kind == "turn-complete" and "stop-reason" in msg:
        return f"stop-reason {msg['stop-reason']}"
    for key in _SAYS:
        value = msg.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def message_line(msg: dict[str, Any], width: int = TEXT_WIDTH) -> str:
    """One readable line for a message: ``TIME  SEQ  TYPE  TEXT`` (escaped, the text cut)."""
    says = _says(msg)
    if len(says) > width:
        says = says[:width] + "…"
    seq = msg.get("seq")
    return f"{_time(msg)}  {seq!s:>6}  {printable(str(msg.get('type'))):<24} {printable(says)}".rstrip() + "\n"


def _rejection_line(lineno: int, rej: Rejection, json_lines: bool) -> str:
    if json_lines:
        return orjson.dumps({"line": lineno, "rejected": rej.to_dict()}, option=orjson.OPT_APPEND_NEWLINE).decode()
    return f"line {lineno}: REJECTED {rej.code}: {printable(rej.reason)}\n"


class _Printer:
    """Feeds chunks to a receiver and prints what they complete, numbering rejected lines."""

    def __init__(self, direction: str, out: IO[str], json_lines: bool, result: TailResult) -> None:
        self.receiver = Receiver(direction)
        self.numbers = _LineNumbers()
        self.lineno = 0
        self.out = out
        self.json_lines = json_lines
        self.result = result

    def feed(self, chunk: bytes) -> None:
        items = self.receiver.feed(chunk)
        count, nonempty = self.numbers.advance(chunk, numbered=True)
        write = self.out.write
        for n, item in zip(nonempty, items, strict=True):
            if type(item) is Rejection:
                self.result.rejected += 1
                write(_rejection_line(self.lineno + n, item, self.json_lines))
                continue
            self.result.messages += 1
            write(orjson.dumps(item).decode() + "\n" if self.json_lines else message_line(item))
            if item.get("type") == "exit":
                self.result.exited = True
                break
        self.lineno += count
        self.out.flush()


def _waiter(fd: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(wait, close)``: sleep until the file open as ``fd`` grows (inotify), else poll."""
    from ..live.proc.backoff import Backoff
    from ..live.proc.wakeups import KERNEL, KernelWakeups, choose

    try:
        mode, _why = choose(None)
    except ValueError:  # a FENWIRE_WAKEUPS that means nothing: poll, the safe way
        mode = "poll"
    if mode == KERNEL:
        try:
            wakeups: KernelWakeups[int] = KernelWakeups()
            wakeups.watch_file(fd, f"/proc/self/fd/{fd}")
        except OSError:
            pass
        else:

            def wait() -> None:
                if wakeups.broken is not None:
                    time.sleep(0.25)
                elif wakeups.armed(fd):
                    wakeups.collect(None)
                else:
                    wakeups.rearm(fd)  # then read once more before sleeping: a write may have come between

            return wait, wakeups.close
    backoff = Backoff(0.01, 0.25)
    return backoff.sleep, lambda: None


def tail_file(
    path: str,
    direction: str | None = None,
    *,
    out: IO[str],
    follow: bool = True,
    json_lines: bool = False,
) -> TailResult:
    """Print the messages of ``path`` as it grows (see the module docstring); return what was seen.

    ``direction`` ``None`` guesses it from the first line valid in only one direction. Raises
    ``OSError`` when the file cannot be opened."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    result = TailResult()
    wait, close = _waiter(fd) if follow else (lambda: None, lambda: None)
    try:
        offset = 0
        printer: _Printer | None = None
        while not result.exited:
            chunk = os.pread(fd, CHUNK_BYTES, offset)
            if chunk:
                offset += len(chunk)
                if printer is None:
                    printer = _Printer(direction or guess_direction(chunk)[0], out, json_lines, result)
                printer.feed(chunk)
                continue
            if os.fstat(fd).st_size < offset:
                result.truncated = True
                break
            if not follow:
                if printer is not None and printer.receiver.buffered:
                    printer.feed(b"\n")  # a last line without its newline is shown too
                break
            wait()
    finally:
        close()
        os.close(fd)
    return result


def tail_command(args: argparse.Namespace) -> int:
    """``fenwire tail``: the exit code (0 done, 1 rejections or a truncated file, 2 unreadable)."""
    try:
        result = tail_file(args.file, args.direction, out=sys.stdout, follow=args.follow, json_lines=args.json)
    except BrokenPipeError:
        raise
    except OSError as exc:
        print(f"fenwire tail: cannot read {printable(args.file)}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if result.truncated:
        print(f"fenwire tail: {printable(args.file)} was truncated; stopping", file=sys.stderr)
    return 1 if result.rejected or result.truncated else 0
