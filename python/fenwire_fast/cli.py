"""The ``fenwire`` command.

- ``fenwire --version``: the package version and the backend in use.
- ``fenwire check FILE [--direction event|control]``: stream a JSONL file through a receiver, print
  one line per rejection (line number, code, reason) and a summary; exit 1 if any line was rejected.
  Memory stays bounded whatever the file's size; a progress line is shown on a terminal.
- ``fenwire child``: run an agent as a live child over two files (see ``fenwire child --help``).
- ``fenwire demo``: a parent driving many live mock children (see ``fenwire demo --help``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import IO

from . import IMPLEMENTATION, Framer, Receiver, __version__

__all__ = ["main", "check_file"]

CHUNK_BYTES = 1 << 20


def _version_text() -> str:
    return f"fenwire_fast {__version__} ({IMPLEMENTATION} backend)"


class _Progress:
    """A one-line progress display on a terminal; silent elsewhere."""

    def __init__(self, stream: IO[str], total: int, enabled: bool) -> None:
        self.stream = stream
        self.total = total
        self.enabled = enabled
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, done: int, lines: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        elapsed = max(now - self.started, 1e-9)
        pct = 100.0 * done / self.total if self.total else 100.0
        self.stream.write(
            f"\r{done / 1e6:,.1f} / {self.total / 1e6:,.1f} MB ({pct:5.1f} %)  "
            f"{lines:,} lines  {done / 1e6 / elapsed:,.1f} MB/s "
        )
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def check_file(
    path: str,
    direction: str = "event",
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    quiet: bool = False,
    progress: bool | None = None,
) -> tuple[int, Counter[str]]:
    """Check every line of a JSONL file; return ``(line_count, rejection_counts_by_code)``.

    Reads in 1 MiB chunks, so memory stays bounded. A final line without a newline is checked
    too. Rejections are written to ``out`` as ``FILE:LINE: CODE: REASON``.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    receiver = Receiver(direction)
    framer = Framer()
    receive = receiver.receive
    codes: Counter[str] = Counter()
    lineno = 0
    done = 0
    with open(path, "rb") as handle:
        total = os.fstat(handle.fileno()).st_size
        show = progress if progress is not None else err.isatty()
        meter = _Progress(err, total, show)
        while True:
            chunk = handle.read(CHUNK_BYTES)
            at_end = not chunk
            if at_end:
                if not framer.buffered:
                    break
                chunk = b"\n"  # check a final line that has no newline
            done += len(chunk)
            for line in framer.feed(chunk):
                lineno += 1
                if not line:
                    continue
                msg, rejection = receive(line)
                if rejection is not None:
                    codes[rejection.code] += 1
                    if not quiet:
                        meter.clear()
                        out.write(f"{path}:{lineno}: {rejection.code}: {rejection.reason}\n")
            meter.update(min(done, total), lineno)
            if at_end:
                break
        meter.update(total, lineno, force=True)
        meter.clear()
    return lineno, codes


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        lines, codes = check_file(args.file, args.direction, quiet=args.quiet)
    except OSError as exc:
        print(f"fenwire check: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    rejected = sum(codes.values())
    detail = ", ".join(f"{code} {count}" for code, count in sorted(codes.items()))
    summary = f"{args.file}: {lines} lines, {rejected} rejected"
    print(summary + (f" ({detail})" if detail else ""))
    return 1 if rejected else 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fenwire", description="The Fen wire protocol, fast.")
    parser.add_argument("--version", action="version", version=_version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser("check", help="validate a JSONL file of events or controls")
    check.add_argument("file", help="the JSONL file to check")
    check.add_argument("--direction", choices=("event", "control"), default="event", help="which side wrote the file")
    check.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    sub.add_parser("child", help="run an agent as a live child over two files", add_help=False)
    sub.add_parser("demo", help="a parent driving many live mock children", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fenwire`` command; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "child":
        from .live.child import main as child_main

        return child_main(args_list[1:])
    if args_list and args_list[0] == "demo":
        from .live.demo import main as demo_main

        return demo_main(args_list[1:])
    parser = _build_parser()
    args = parser.parse_args(args_list)
    if args.command == "check":
        try:
            return _cmd_check(args)
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return 1
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
