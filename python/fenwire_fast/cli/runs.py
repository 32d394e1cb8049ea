"""``fenwire runs PATH``: the runs kept in a state dir, read without touching anything.

One :class:`RunReport` per manifest: the run id, the child's pid and whether that process still
runs (pid and start time), the mirrored status (rebuilt from the control and event files, as
``Hub.attach`` would: from the run's mark when it holds up), the events and bytes the child wrote
so far, when it last wrote, and the consumer's committed position. Nothing is written, no lock is taken and no final-text file is
opened, so a state dir can be looked at while its hub runs, or after its parent died.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TextIO

from .. import DRAIN_BYTE_BUDGET
from .._regular import read_regular
from ..live.parent.adopt import alive
from ..live.parent.channel import Channel
from ..live.parent.durable import COMMITS, Manifest, StateDir, StateDirBusy, decode_mark, read_manifests
from ..text import printable

__all__ = ["RunReport", "inspect", "look_channel", "print_runs", "runs_command", "settle"]


@dataclass
class RunReport:
    """One run in a state dir (see the module docstring); ``problem`` says why a manifest or a
    run's files could not be read (the other fields are then as far as they could be had)."""

    name: str
    run: str | None = None
    pid: int | None = None
    alive: bool = False
    status: str | None = None
    events: int = 0
    bytes: int = 0
    last_event: float | None = None
    committed_seq: int = 0
    last_seq: int = 0
    closed: bool = False
    error: str | None = None
    problem: str | None = None


def _report(path: str, manifest: Manifest) -> RunReport:
    report = RunReport(
        name=manifest.name,
        run=manifest.run,
        pid=manifest.pid,
        alive=alive(manifest),
        committed_seq=manifest.committed_seq,
        closed=manifest.closed,
    )
    directory = os.path.join(path, manifest.name)
    try:
        st = os.lstat(os.path.join(directory, "events.jsonl"))  # a symlink is refused by the channel, in words
        report.bytes, report.last_event = st.st_size, st.st_mtime
        channel = look_channel(path, manifest)
    except OSError as exc:
        report.problem = f"cannot read its files: {exc.strerror or exc}"
        return report
    try:
        while True:
            messages, errors = channel.poll()
            if not messages and not errors and not channel.pending():
                break
    except OSError as exc:
        report.problem = f"cannot read its files: {exc.strerror or exc}"
    finally:
        channel.close()
    settle(report, manifest, channel)
    return report


def look_channel(path: str, manifest: Manifest, max_bytes: int | None = None) -> Channel:
    """A channel that only reads the run of ``manifest`` in state dir ``path``: taken up from its
    mark (or its start), its control file read and never written, no final-text file opened;
    ``max_bytes`` bounds one read (default: a channel's). Raises ``OSError`` when the run's files
    cannot be opened."""
    directory = os.path.join(path, manifest.name)
    channel = Channel(
        manifest.run,
        *(() if max_bytes is None else ()),
        os.path.join(directory, "control.jsonl"),
        os.path.join(directory, "events.jsonl"),
        protected_paths=[os.path.join(directory, "child.log")],
        follow_final_text=False,
        max_bytes=DRAIN_BYTE_BUDGET if max_bytes is None else max_bytes,
    )
    try:
        start = decode_mark(manifest.mark) if manifest.mark else None
        channel.resume(manifest.committed_seq, repair=False, start=start)
    except BaseException:
        channel.close()
        raise
    return channel


def settle(report: RunReport, manifest: Manifest, channel: Channel) -> None:
    """Fill in ``report``'s status, events, last seq and error from what ``channel`` read: a child
    that is gone without an exit line is reported as its parent would report it."""
    report.status, report.last_seq = channel.status, channel.last_seq
    report.events = channel.earlier_events + channel.events
    if report.problem is None and not channel.stopped and manifest.committed_seq > channel.read_seq:
        report.problem = (
            f"committed_seq {manifest.committed_seq} is past the last event of its file (seq {channel.read_seq})"
        )
    if channel.exit is None and not report.alive and report.problem is None:
        # what a parent reports for a child that died without an exit line
        report.error = "its process ended without an exit line" if manifest.pid else "no process was recorded"
        if manifest.closed and manifest.status:
            report.status = manifest.status
        elif any(sent.type == "cancel" for sent in channel.controls.values()):
            report.status = "cancelled"
        elif manifest.deadline is not None and time.time() >= manifest.deadline:
            report.status = "timed-out"
        else:
            report.status = "failed"
    elif channel.exit is not None and channel.exit.get("error"):
        report.error = str(channel.exit["error"])
    elif channel.error is not None:
        report.error = channel.error


def _log_problem(path: str) -> RunReport | None:
    """A report for a commit log that is there but cannot be read (a FIFO, a directory, a symlink,
    no permission): the positions shown are then those of the manifests alone, and the reader
    says so rather than skipping the log in silence."""
    try:
        read_regular(os.path.join(path, COMMITS), 0)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = f"cannot be read: {exc.strerror or exc}; committed positions are the manifests' alone"
        return RunReport(name=COMMITS, problem=why)
    return None


def inspect(path: str | os.PathLike[str]) -> list[RunReport]:
    """A report per manifest in state dir ``path``, sorted by name, after one for the commit log
    when it is there but cannot be read (named ``commits.log``, with its problem). Raises
    ``OSError`` when the state dir cannot be read."""
    path = os.path.abspath(os.fspath(path))
    log = _log_problem(path)
    reports = [] if log is None else [log]
    for name, manifest in read_manifests(path):
        if isinstance(manifest, str):
            reports.append(RunReport(name=name, problem=manifest))
        else:
            reports.append(_report(path, manifest))
    return reports


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_HEADER = ("RUN", "PID", "PROCESS", "STATUS", "EVENTS", "BYTES", "LAST EVENT", "COMMITTED")


def _row(report: RunReport) -> tuple[str, ...]:
    committed = f"{report.committed_seq}/{report.last_seq}" + (" closed" if report.closed else "")
    return (
        printable(report.run if report.run is not None else report.name),
        str(report.pid) if report.pid is not None else "-",
        "alive" if report.alive else "ended",
        printable(report.status or "-"),
        str(report.events),
        str(report.bytes),
        _when(report.last_event),
        committed,
    )


def print_runs(reports: Sequence[RunReport], out: TextIO, *, as_json: bool = False) -> None:
    """Print ``reports``: a table (a problem on a line of its own after its run), or with
    ``as_json`` one JSON object per run. In the table, what a child wrote or named (run ids, errors,
    problems) has its control characters escaped (:func:`~fenwire_fast.text.printable`), as
    ``fenwire check`` and ``fenwire tail`` print them."""
    if as_json:
        for report in reports:
            out.write(json.dumps(asdict(report), ensure_ascii=False) + "\n")
        return
    rows = [_HEADER, *(_row(r) for r in reports)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    shown: list[RunReport | None] = [None, *reports]
    for row, shown_report in zip(rows, shown, strict=True):
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")
        if shown_report is not None and (shown_report.problem or shown_report.error):
            why = " ".join(str(shown_report.problem or shown_report.error).split())  # one line, whatever it held
            out.write(f"  {printable(shown_report.name)}: {printable(why)}\n")  # escaped, as check prints


def runs_command(args: argparse.Namespace) -> int:
    """``fenwire runs``: the exit code (0 listed, 1 the state dir cannot be read or pruned)."""
    if args.prune:
        try:
            state = StateDir(args.path)
        except (OSError, StateDirBusy) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            print(f"fenwire runs: cannot prune {args.path}: {why}", file=sys.stderr)
            return 1
        try:
            removed = state.prune()
        finally:
            state.close()
        print(f"pruned {len(removed)} closed run(s)", file=sys.stderr)
    try:
        reports = inspect(args.path)
    except OSError as exc:
        print(f"fenwire runs: cannot read {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print_runs(reports, sys.stdout, as_json=args.json)
    return 0
