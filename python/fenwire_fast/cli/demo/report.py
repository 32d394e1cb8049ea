"""What ``fenwire demo`` shows: its progress while the children run, and the summary it ends with.

:func:`show_progress` draws a head line and as much per-child detail as the terminal holds;
:func:`summary` prints the run's rates, exits, a table of the children, a line per Ray node and
each check with its problems, every line at most :data:`SUMMARY_WIDTH` columns wide. Both read a
:class:`Track` per child: what the demo saw of it.
"""

from __future__ import annotations

import textwrap
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...live.child.mock_agent import MockConfig
    from ...live.parent.channel import SentControl
    from ..progress import Progress

__all__ = [
    "Child",
    "Track",
    "DemoReport",
    "Cluster",
    "show_progress",
    "summary",
    "totals",
    "exit_text",
    "timeout_lines",
    "SUMMARY_WIDTH",
    "RATE_MIN_SECONDS",
]

#: the summary's width: every line fits in it (a longer one is wrapped)
SUMMARY_WIDTH = 80

_LETTER = {
    "starting": "s",
    "ready": "r",
    "running": "R",
    "closing": "c",
    "finalizing": "F",
    "done": "D",
    "cancelled": "C",
    "failed": "X",
    "timed-out": "T",
}


#: the statuses a child ends in
_ENDED = frozenset({"done", "cancelled", "failed", "timed-out"})


class Child(Protocol):
    """A child as the demo drives and checks it: a hub's
    :class:`~fenwire_fast.live.parent.live_child.LiveChild` or a fleet's
    :class:`~fenwire_fast.live.fleet.FleetChild`, as it is (both show these names)."""

    @property
    def run(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def finished(self) -> bool: ...
    @property
    def idle(self) -> bool: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def controls(self) -> Mapping[int, SentControl]: ...
    @property
    def rejected(self) -> list[SentControl]: ...
    @property
    def errors(self) -> Sequence[str]: ...
    @property
    def result(self) -> dict[str, Any] | None: ...
    @property
    def final_text(self) -> str | None: ...
    @property
    def bytes(self) -> int: ...
    def steer(self, text: str) -> int: ...
    def follow_up(self, text: str) -> int: ...
    def finalize(self, note: str | None = None) -> int: ...
    def cancel(self) -> int: ...
    def close(self) -> int: ...


@dataclass
class Track:
    """What the demo saw of one child: its role and script, its events, how far its driving got."""

    child: Child
    role: str
    config: MockConfig
    #: false for an ACP agent's child: its answers are not scripted, so only the checks that hold
    #: for any agent apply (acks, exactly-once delivery, exits)
    scripted: bool = True
    #: the Ray node the child runs on (``None`` on a local hub)
    node: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0
    deltas_in_first_turn: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    turns_done: int = 0
    trigger_seq: int | None = None
    closed: bool = False
    acks: Counter[int] = field(default_factory=Counter)
    #: a turn ended after the control's ack: what the control started or changed is written
    settled: bool = False

    @property
    def expected_status(self) -> str:
        """How the child must end: ``cancelled`` for the one cancelled, ``done`` for the others."""
        return "cancelled" if self.role == "cancel" else "done"


@dataclass
class DemoReport:
    """What a demo run found; ``ok`` is true when every check passed."""

    children: int
    seconds: float
    events: int
    bytes: int
    rejections: int
    statuses: dict[str, str]
    checks: list[tuple[str, bool, list[str]]]
    drain_seconds: float = 0.0
    parent_cpu_seconds: float = 0.0
    #: on Ray: the runs on each node, by node id (empty on a local hub)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    #: the runs still running when the timeout came (each killed on the way out)
    unfinished: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(passed for _, passed, _ in self.checks)


#: a child's rate is shown once its events span this many seconds (before, one read of a few
#: events over a millisecond would read as thousands a second)
RATE_MIN_SECONDS = 0.5


def _rate(t: Track, now: float) -> str:
    """A child's events per second, from its first event to its last (or to ``now`` while it runs),
    as ``1,234/s``; ``-`` until that span is :data:`RATE_MIN_SECONDS` long."""
    span = (t.last_at if t.child.finished else now) - t.first_at
    if not t.events or span < RATE_MIN_SECONDS:
        return "-"
    return f"{len(t.events) / span:,.0f}/s"


def totals(tracks: list[Track]) -> tuple[int, int]:
    """Events and bytes received so far, over every child."""
    return sum(len(t.events) for t in tracks), sum(t.bytes for t in tracks)


def _wrap(items: Sequence[str], width: int, indent: str = "  ", sep: str = " ") -> list[str]:
    """``items`` joined by ``sep`` on as few rows as fit in ``width``, each row after ``indent``
    (an item is never split; one wider than ``width`` is left for the display to cut)."""
    rows: list[str] = []
    row = ""
    for item in items:
        if row and len(indent + row + sep + item) > width:
            rows.append(indent + row)
            row = ""
        row = row + sep + item if row else item
    if row:
        rows.append(indent + row)
    return rows


def show_progress(
    progress: Progress, tracks: list[Track], total: int, force: bool = False, now: float | None = None
) -> None:
    """A head line (children, events, bytes, rate, children by status), then as much detail as the
    terminal holds: a row per child when they all fit, else a letter per child in a grid as wide as
    the terminal, with its legend when there is room, else the head alone. Nothing is ever wider or
    taller than the terminal: on a narrow one the children by status get rows of their own, by
    letter when their names do not fit. A child's row says its turns done (the one running is not
    counted) and its rate once it means something (see :func:`_rate`; ``now``: the time it is
    taken at, by default the clock's)."""
    if not progress.due(force):
        return
    now = time.monotonic() if now is None else now
    elapsed = progress.elapsed()
    events, nbytes = totals(tracks)
    counts = Counter(t.child.status for t in tracks)
    states = [f"{k} {v}" for k, v in sorted(counts.items())]
    spawned = len(tracks)
    count = f"{spawned}/{total}" if spawned < total else f"{spawned}"
    head = f"[{elapsed:5.1f}s] {count} children | {events:,} events {nbytes / 1e6:.2f} MB {events / elapsed:,.0f}/s"
    one_line = f"{head} | {', '.join(states)}"
    if not progress.live:
        progress.show([one_line])
        return
    width = progress.size()[0]
    rows = [one_line]
    if len(one_line) > width:
        rows = [head, *_wrap([s + "," for s in states[:-1]] + states[-1:], width)]
        if len(rows) > 2:  # the names take more than a row: the letters of the legend instead
            rows = [head, *_wrap([f"{_LETTER.get(k, '?')} {v}" for k, v in sorted(counts.items())], width, sep="  ")]
    room = progress.rows_available() - len(rows)
    if len(tracks) <= room:
        for t in tracks:
            rows.append(
                f"  {t.child.run:<9} {t.role:<9} {t.child.status:<10} "
                + (f"{t.node[:8]} " if t.node else "")
                + f"turns done {t.turns_done:>2} events {len(t.events):>7,} {_rate(t, now):>9}"
            )
    else:
        letters = "".join(_LETTER.get(t.child.status, "?") for t in tracks)
        per_row = max(1, min(width - 2, 100))
        grid = ["  " + letters[i : i + per_row] for i in range(0, len(letters), per_row)]
        legend = _wrap([f"{_LETTER[k]}={k}" for k in _LETTER], width)
        if len(grid) + len(legend) <= room:
            rows.extend(grid)
            rows.extend(legend)
        elif len(grid) <= room:
            rows.extend(grid)
    progress.show(rows)


def _exit_cell(child: Child) -> str:
    """A child's exit code, or what stands for it while the child has not exited (``still
    exiting`` once it has said how it ended)."""
    if child.returncode is not None:
        return str(child.returncode)
    if child.finished:
        return "unknown"
    return "still exiting" if child.status in _ENDED else "still running"


def exit_text(child: Child) -> str:
    """``exit code N``, or what stands for it while the child has not exited."""
    cell = _exit_cell(child)
    return f"exit code {cell}" if child.returncode is not None or child.finished else cell


def _named(head: str, runs: list[str], width: int) -> str:
    """``head`` then as many of ``runs`` as fit in ``width`` (at least one), and how many more."""
    line = head
    for shown in range(1, len(runs) + 1):
        rest = len(runs) - shown
        candidate = head + " " + ", ".join(runs[:shown]) + (f" and {rest} more" if rest else "")
        if shown > 1 and len(candidate) > width:
            break
        line = candidate
    return line


def timeout_lines(unfinished: list[str], tracks: list[Track], children: int) -> list[str]:
    """What the timeout's check says: the children not finished (how many, the first few, and
    that the other checks leave them out), and how many were never started."""
    lines = []
    if unfinished:
        lines.append(_named(f"{len(unfinished)} not finished:", unfinished, _PROBLEM_WIDTH))
        lines.append("killed at the timeout; their exits, events and acks are not checked")
    if len(tracks) < children:
        lines.append(f"{children - len(tracks)} never started")
    return lines


#: a check's problem line starts 9 columns in; it fits in 80
_PROBLEM_WIDTH = 80 - 9


def _fitted(line: str, width: int, indent: int) -> list[str]:
    """``line`` as it is when it fits in ``width`` columns, else wrapped at spaces with the rows
    after the first ``indent`` columns in (a word wider than a row is split)."""
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False)


def _counted(prefix: str, counts: Counter[str], width: int, indent: int) -> list[str]:
    """``prefix`` then ``status n, ...``, on as many rows as fit in ``width``; a ``status n`` is
    never split, and the rows after the first are ``indent`` columns in."""
    items = [f"{k} {v}" for k, v in sorted(counts.items())]
    items = [item + "," for item in items[:-1]] + items[-1:]
    rows = [prefix]
    for item in items:
        if len(rows) == 1 and rows[0] == prefix:
            rows[0] += item
        elif len(rows[-1]) + 1 + len(item) > width:
            rows.append(" " * indent + item)
        else:
            rows[-1] += " " + item
    return rows


@dataclass
class Cluster:
    """The Ray cluster a demo's children ran on, as its summary says it."""

    #: how many nodes are alive at the end
    nodes: int
    #: the head node's id, when the demo started the cluster
    head: str | None
    #: the address of the cluster joined (``None``: a local cluster the demo started)
    joined: str | None
    #: how long starting or joining the cluster took
    setup_seconds: float


def summary(
    out: IO[str],
    report: DemoReport,
    tracks: list[Track],
    implementation: str,
    cluster: Cluster | None = None,
    width: int = SUMMARY_WIDTH,
) -> None:
    """The summary, every line at most ``width`` columns wide (a longer one is wrapped)."""
    secs = max(report.seconds, 1e-9)

    def w(line: str, indent: int = 15) -> None:
        for row in _fitted(line, width, indent):
            out.write(row + "\n")

    where = ""
    if cluster is not None:
        where = f" on {cluster.nodes} Ray node{'s' if cluster.nodes != 1 else ''}"
    out.write("\n")
    w(f"fenwire demo: {report.children} children{where}, {implementation} backend, {report.seconds:.2f} s", 2)
    if cluster is not None:
        how = f"joined {cluster.joined}" if cluster.joined is not None else "a local cluster, shut down at the end"
        w(f"  ray          {how}; ready in {cluster.setup_seconds:.1f} s")
    drain = max(report.drain_seconds, 1e-9)
    w(
        f"  events       {report.events:,}: {report.events / secs:,.0f}/s overall, "
        f"{report.events / drain:,.0f}/s first to last ({report.drain_seconds:.2f} s)"
    )
    w(
        f"  bytes        {report.bytes:,}: {report.bytes / secs / 1e6:,.2f} MB/s overall, "
        f"{report.bytes / drain / 1e6:,.2f} MB/s first to last"
    )
    if report.events:
        w(
            f"  parent CPU   {report.parent_cpu_seconds:.2f} s, "
            f"{report.parent_cpu_seconds / report.events * 1e6:.1f} us per event (spawning included)"
        )
    sent = sum(len(t.child.controls) for t in tracks)
    w(f"  controls     {sent} sent; rejections {report.rejections}")
    for line in _counted("  exits        ", Counter(report.statuses.values()), width, 15):
        w(line)
    _child_table(w, tracks, cluster is not None)
    if cluster is not None:
        _node_lines(w, tracks, cluster.head, width)
    for name, passed, problems in report.checks:
        w(f"  [{'ok' if passed else 'FAIL'}] {name}", 9)
        for problem in problems[:10]:
            w(f"         {problem}", 11)
        if len(problems) > 10:
            w(f"         ... and {len(problems) - 10} more", 11)
    w("PASS" if report.ok else "FAIL")
    out.flush()


def _child_table(w: Callable[[str, int], None], tracks: list[Track], on_nodes: bool) -> None:
    """A row per child when they are few; else the first eight and any that finished but not as
    expected (the ones still running at a timeout are named by its check), and how many more."""
    listed = [
        t
        for i, t in enumerate(tracks)
        if len(tracks) <= 16 or i < 8 or (t.child.finished and t.child.status != t.expected_status)
    ]
    # a table: the widest cells (a role with its note, a node's id) still fit in 80 columns
    row = "    {:<9} {:<18} {:<10} {:<13} {:>5} {:>7}"
    w(row.format("run", "role", "status", "exit code", "turns", "events") + (" node" if on_nodes else ""), 6)
    for t in listed:
        child = t.child
        aborted = any(e["type"] == "turn-complete" and e.get("stop-reason") == "aborted" for e in t.events)
        role = f"{t.role}, mid-turn" if t.role in ("finalize", "cancel") and aborted else t.role
        cells = row.format(child.run, role, child.status, _exit_cell(child), t.turns_done, f"{len(t.events):,}")
        w(cells + (f" {t.node[:8]}" if t.node else ""), 6)
    if len(listed) < len(tracks):
        shown = {id(t) for t in listed}
        running = sum(1 for t in tracks if id(t) not in shown and not t.child.finished)
        more = f"    ... and {len(tracks) - len(listed)} more"
        if running == len(tracks) - len(listed):
            more += ", not finished"
        elif running:
            more += f": {len(tracks) - len(listed) - running} ended as expected, {running} not finished"
        else:
            more += ", each ended as expected"
        w(more, 6)


def _node_lines(w: Callable[[str, int], None], tracks: list[Track], head: str | None, width: int) -> None:
    """One line per node that ran children: how many, their events, how they ended."""
    by_node: dict[str, list[Track]] = {}
    for t in tracks:
        by_node.setdefault(t.node or "?", []).append(t)
    w(f"  nodes        {len(by_node)} ran children", 15)
    for node, on_node in by_node.items():
        label = node[:8] + (" (head)" if node == head else "")
        statuses = Counter(t.child.status for t in on_node)
        events = sum(len(t.events) for t in on_node)
        prefix = f"    node {label:<15} children {len(on_node):<3} events {events:>8,}  "
        for line in _counted(prefix, statuses, width, 8):
            w(line, 8)
