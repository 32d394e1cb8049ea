"""What ``fenwire top`` shows of one run (:class:`TopRow`), and of all of them (:class:`Totals`).

A source (:mod:`~fenwire_fast.cli.top.state_source` for a state dir,
:mod:`~fenwire_fast.cli.top.fleet_source` for a named fleet) makes the rows; the view
(:mod:`~fenwire_fast.cli.top.view`) sorts, filters and draws them; ``--json`` prints them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...session import is_terminal

__all__ = ["TopRow", "Totals", "SORTS", "sort_rows", "filter_rows", "totals"]


@dataclass
class TopRow:
    """One run as ``fenwire top`` shows it. ``None`` is what the source cannot tell (a fleet's
    node reports no bytes, and a first look has no rate yet)."""

    run: str
    status: str
    pid: int | None = None
    alive: bool = False
    turn: int | None = None
    events: int = 0
    #: events per second since the previous look
    rate: float | None = None
    #: seconds since the run's last event (its event file's last write)
    age: float | None = None
    #: controls sent and not acknowledged yet
    waiting: int | None = None
    bytes: int | None = None
    last_seq: int = 0
    error: str | None = None
    #: why the run's files could not be read (the other fields are as far as they could be had)
    problem: str | None = None
    stalled: bool = False
    node: str | None = None

    @property
    def finished(self) -> bool:
        """The run has ended (its status is final)."""
        return is_terminal(self.status)

    def as_json(self) -> dict[str, Any]:
        """The row as plain values (``--json``)."""
        return {
            "run": self.run,
            "status": self.status,
            "pid": self.pid,
            "alive": self.alive,
            "turn": self.turn,
            "events": self.events,
            "rate": None if self.rate is None else round(self.rate, 3),
            "age": None if self.age is None else round(self.age, 3),
            "waiting": self.waiting,
            "bytes": self.bytes,
            "last_seq": self.last_seq,
            "error": self.error,
            "problem": self.problem,
            "stalled": self.stalled,
            "node": self.node,
        }


@dataclass
class Totals:
    """The head of the screen: counts over every run (filtered or not)."""

    runs: int = 0
    rate: float = 0.0
    bytes: int = 0
    stalled: int = 0
    waiting: int = 0
    statuses: Counter[str] = field(default_factory=Counter)


def totals(rows: Iterable[TopRow]) -> Totals:
    """Runs, events per second, bytes, stalled runs, waiting controls and runs by status."""
    out = Totals()
    for row in rows:
        out.runs += 1
        out.rate += row.rate or 0.0
        out.bytes += row.bytes or 0
        out.stalled += row.stalled
        out.waiting += row.waiting or 0
        out.statuses[row.status] += 1
    return out


def _age_key(row: TopRow) -> float:
    return -1.0 if row.age is None else row.age


#: the orders rows can be sorted in: name -> (key, largest first)
SORTS: dict[str, tuple[Any, bool]] = {
    "run": (lambda r: r.run, False),
    "status": (lambda r: (r.finished, r.status, r.run), False),
    "rate": (lambda r: (r.rate or 0.0, r.run), True),
    "age": (lambda r: (not r.finished, _age_key(r)), True),
    "events": (lambda r: (r.events, r.run), True),
    "bytes": (lambda r: (r.bytes or 0, r.run), True),
    "waiting": (lambda r: (r.waiting or 0, r.run), True),
}


def sort_rows(rows: Sequence[TopRow], by: str, *, stalled_first: bool = True) -> list[TopRow]:
    """``rows`` in the order ``by`` (one of :data:`SORTS`), stalled runs first unless told not to."""
    key, reverse = SORTS[by]
    out = sorted(rows, key=key, reverse=reverse)
    if stalled_first:
        out.sort(key=lambda r: not r.stalled)  # stable: the order above holds within each part
    return out


def filter_rows(rows: Iterable[TopRow], statuses: Iterable[str]) -> list[TopRow]:
    """The rows whose status is one of ``statuses`` (``"stalled"`` and ``"active"``, every run not
    finished, count as statuses); all of them when ``statuses`` is empty."""
    wanted = set(statuses)
    if not wanted:
        return list(rows)
    return [
        r
        for r in rows
        if r.status in wanted or ("stalled" in wanted and r.stalled) or ("active" in wanted and not r.finished)
    ]
