"""``fenwire check``: validate a JSONL file of events or controls, of any size.

Each chunk goes through :meth:`Receiver.scan_rejections` (``scan``'s checks, returning only the
rejections with their place: no object at all per accepted line). Line numbers are counted
alongside by :class:`_LineNumbers`, which frames exactly like the receiver: only a chunk with a
rejection is walked line by line, to number it. Memory stays bounded (4 MiB reads) whatever the
file's size.

Everything printed that comes from the file or its name is escaped
(:func:`fenwire_fast.text.printable`), so nothing in the file can forge an output line or reach
the terminal raw; ``--json`` prints JSON objects instead, one a line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, BinaryIO

import orjson

from .. import Receiver, decode
from .._types import MAX_LINE_BYTES, Rejection
from ..text import printable
from .progress import Progress

__all__ = [
    "check_command",
    "check_file",
    "check_stream",
    "guess_direction",
    "CheckResult",
    "CHUNK_BYTES",
    "CHECK_UNREADABLE",
]

#: Exit status of ``fenwire check`` when the file cannot be read (2 is a usage error).
CHECK_UNREADABLE = 3

CHUNK_BYTES = 4 << 20


@dataclass
class CheckResult:
    """What a check found: the line count, the rejections by code, the direction checked,
    whether it was guessed, and the type of the line it was guessed from (``None`` when no line
    told, and ``"event"`` was taken as the default)."""

    lines: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    direction: str = "event"
    guessed: bool = False
    guessed_from: str | None = None

    @property
    def rejected(self) -> int:
        return sum(self.codes.values())


def guess_direction(data: bytes) -> tuple[str, str | None]:
    """The direction of the first line in ``data`` that decodes as exactly one of the two, and
    that line's type; ``("event", None)`` when no line tells."""
    for line in data.split(b"\n"):
        if not line:
            continue
        as_event, _ = decode(line, "event")
        as_control, _ = decode(line, "control")
        if as_control is None and as_event is not None:
            return "event", str(as_event["type"])
        if as_event is None and as_control is not None:
            return "control", str(as_control["type"])
    return "event", None


def check_file(
    path: str,
    direction: str | None = "event",
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    quiet: bool = False,
    progress: bool | None = None,
    json_lines: bool = False,
) -> tuple[int, Counter[str]]:
    """Check every line of a JSONL file; return ``(line_count, rejection_counts_by_code)``.

    A final line without a newline is checked too. Rejections are written to ``out`` as
    ``FILE:LINE: CODE: REASON`` (or JSON objects with ``json_lines``). ``direction=None`` guesses
    it from the first line that decodes in only one direction."""
    with open(path, "rb") as handle:
        total = os.fstat(handle.fileno()).st_size
        result = check_stream(
            handle,
            path,
            direction,
            out=out,
            err=err,
            quiet=quiet,
            progress=progress,
            total=total,
            json_lines=json_lines,
        )
    return result.lines, result.codes


def check_stream(
    handle: BinaryIO,
    name: str,
    direction: str | None = "event",
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    quiet: bool = False,
    progress: bool | None = None,
    total: int | None = None,
    json_lines: bool = False,
) -> CheckResult:
    """Check every line read from ``handle`` (``name`` is what the output calls it)."""
    import sys

    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    first = handle.read(CHUNK_BYTES)
    result = CheckResult()
    if direction is None:
        direction, result.guessed_from = guess_direction(first)
        result.guessed = True
    result.direction = direction
    receiver = Receiver(direction)
    scan = receiver.scan_rejections
    numbers = _LineNumbers()
    codes = result.codes
    lineno = 0
    done = 0
    shown = printable(name)
    show = progress if progress is not None else err.isatty()
    meter = Progress(err, live=show)
    chunk = first
    while True:
        at_end = not chunk
        if at_end:
            if not receiver.buffered:
                break
            chunk = b"\n"  # check a final line that has no newline
        done += len(chunk)
        rejections = scan(chunk)
        if rejections:
            count, nonempty = numbers.advance(chunk, numbered=True)
            for index, item in rejections:
                codes[item.code] += 1
                if not quiet:
                    meter.clear()
                    out.write(_rejection_line(shown, name, lineno + nonempty[index], item, json_lines))
        else:
            count, _ = numbers.advance(chunk, numbered=False)
        lineno += count
        _show_check_progress(meter, done, total, lineno)
        if at_end:
            break
        chunk = handle.read(CHUNK_BYTES)
    _show_check_progress(meter, done, total, lineno, force=True)
    meter.clear()
    result.lines = lineno
    return result


def _rejection_line(shown: str, name: str, lineno: int, rej: Rejection, json_lines: bool) -> str:
    if json_lines:
        record = {"file": name, "line": lineno, **rej.to_dict()}
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE).decode()
    return f"{shown}:{lineno}: {rej.code}: {printable(rej.reason)}\n"


def summary_line(name: str, result: CheckResult, json_lines: bool) -> str:
    """The closing line: ``FILE: N lines, M rejected (code count, ...)``, or a JSON object."""
    if json_lines:
        record = {
            "file": name,
            "direction": result.direction,
            "direction-guessed": result.guessed,
            "lines": result.lines,
            "rejected": result.rejected,
            "codes": dict(sorted(result.codes.items())),
        }
        return orjson.dumps(record).decode()
    detail = ", ".join(f"{code} {count:,}" for code, count in sorted(result.codes.items()))
    text = f"{printable(name)}: {result.lines:,} lines, {result.rejected:,} rejected"
    return text + (f" ({detail})" if detail else "")


class _LineNumbers:
    """The receiver's framing (``Framer``'s rules: split on ``\\n``, a line reaching the cap counts
    once, the rest of it up to its newline is skipped), kept as two numbers: how many lines each
    chunk completes, and, when asked, which of them (1-based in the chunk) are not empty. Those
    are the lines ``Receiver.scan`` returns one result each for, in order."""

    __slots__ = ("held", "skipping", "cap")

    def __init__(self, cap: int = MAX_LINE_BYTES) -> None:
        self.held = 0  # bytes of an unterminated line
        self.skipping = False  # inside the rest of a line that reached the cap
        self.cap = cap

    def advance(self, chunk: bytes, *, numbered: bool) -> tuple[int, list[int]]:
        """``(lines completed, numbers of the non-empty ones)`` for the next chunk (the numbers
        only when ``numbered``)."""
        cap = self.cap
        nonempty: list[int] = []
        count = 0
        pos = 0
        if self.skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return 0, nonempty
            self.skipping = False
            pos = nl + 1
        if self.held:
            nl = chunk.find(b"\n", pos)
            if nl < 0:
                self.held += len(chunk) - pos
                if self.held >= cap:
                    self.held = 0
                    self.skipping = True
                    return 1, [1]
                return 0, nonempty
            self.held = 0
            count = 1
            nonempty.append(1)
            pos = nl + 1
        if numbered:
            find = chunk.find
            while (nl := find(b"\n", pos)) >= 0:
                count += 1
                if nl > pos:
                    nonempty.append(count)
                pos = nl + 1
        else:
            last = chunk.rfind(b"\n", pos)
            if last >= 0:
                count += chunk.count(b"\n", pos)
                pos = last + 1
        tail = len(chunk) - pos
        if tail >= cap:
            count += 1
            nonempty.append(count)
            self.skipping = True
        else:
            self.held = tail
        return count, nonempty


def _show_check_progress(meter: Progress, done: int, total: int | None, lines: int, force: bool = False) -> None:
    """``12.3 / 45.6 MB ( 27.0 %)  1,234 lines  56.7 MB/s`` (without the total for a pipe)."""
    if not meter.due(force):
        return
    rate = f"{done / 1e6 / meter.elapsed():,.1f} MB/s"
    if total:
        done = min(done, total)
        where = f"{done / 1e6:,.1f} / {total / 1e6:,.1f} MB ({100.0 * done / total:5.1f} %)"
    else:
        where = f"{done / 1e6:,.1f} MB"
    meter.show([f"{where}  {lines:,} lines  {rate}"])


def check_command(args: argparse.Namespace) -> int:
    """``fenwire check``: the exit code (0 every line valid, 1 some rejected, :data:`CHECK_UNREADABLE`)."""
    name = "<stdin>" if args.file == "-" else args.file
    direction = args.direction
    try:
        if args.file == "-":
            result = check_stream(
                sys.stdin.buffer, name, direction, quiet=args.quiet, json_lines=args.json, progress=False
            )
        else:
            with open(args.file, "rb") as handle:
                total = os.fstat(handle.fileno()).st_size
                result = check_stream(handle, name, direction, quiet=args.quiet, json_lines=args.json, total=total)
    except OSError as exc:
        print(f"fenwire check: cannot read {printable(name)}: {exc.strerror or exc}", file=sys.stderr)
        return CHECK_UNREADABLE
    if result.guessed and not args.json:
        if result.guessed_from is not None:
            said = f"checking {printable(name)} as {result.direction}s (from its first valid line)"
        else:
            said = f"no line of {printable(name)} tells the direction; checking it as {result.direction}s (the default)"
        print(f"fenwire check: no --direction given; {said}", file=sys.stderr)
    print(summary_line(name, result, args.json))
    return 1 if result.rejected else 0
