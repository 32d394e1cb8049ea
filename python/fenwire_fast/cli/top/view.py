"""The screen of ``fenwire top``: a head (totals, runs by status, the order and filter in use),
the column titles, and one line per run, fitted to the terminal.

Every line is at most as wide as the terminal and there are never more lines than it has rows: on
a narrow terminal the least needed columns go first (see :data:`COLUMNS`), the run id and the
error are cut with an ellipsis, and rows that do not fit are counted on the last line. What a
child wrote or named (run ids, errors) has its control characters escaped, as every command of
``fenwire`` prints them. A stalled run is marked ``!`` in the first column and listed first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...text import printable
from .rows import TopRow, Totals

__all__ = ["Column", "COLUMNS", "render", "human_bytes"]


def human_bytes(n: int | None) -> str:
    """``1.2M`` style: bytes in at most five characters."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1000 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "B" or value >= 10 else f"{value:.1f}{unit}"
        value /= 1024
    return f"{n}B"  # pragma: no cover - the loop always returns


def _age(row: TopRow) -> str:
    if row.age is None:
        return "-"
    a = row.age
    if a < 60:
        return f"{a:.0f}s"
    if a < 3600:
        return f"{a // 60:.0f}m"
    if a < 86400:
        return f"{a // 3600:.0f}h"
    return f"{a // 86400:.0f}d"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value < 100_000 else f"{value / 1000:.0f}k"


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


@dataclass(frozen=True)
class Column:
    """A column: its title, width (the least, for a column that stretches), how to fill a cell,
    whether it is cut from the left, and its rank (the highest rank goes first when space runs short)."""

    title: str
    width: int
    cell: Callable[[TopRow], str]
    rank: int
    stretch: bool = False
    right: bool = False


#: every column, in screen order; ``rank`` 0 columns are never cut
COLUMNS: tuple[Column, ...] = (
    Column("RUN", 12, lambda r: printable(r.run), 0, stretch=True),
    Column("STATUS", 10, lambda r: printable(r.status), 0),
    Column("TURN", 4, lambda r: _opt(r.turn), 3, right=True),
    Column("EV/S", 6, lambda r: _rate(r.rate), 1, right=True),
    Column("AGE", 4, _age, 1, right=True),
    Column("WAIT", 4, lambda r: _opt(r.waiting), 2, right=True),
    Column("EVENTS", 8, lambda r: str(r.events), 5, right=True),
    Column("BYTES", 6, lambda r: human_bytes(r.bytes), 4, right=True),
    Column("PID", 7, lambda r: _opt(r.pid), 6, right=True),
    Column("ERROR", 16, lambda r: printable(" ".join(str(r.problem or r.error or "").split())), 2, stretch=True),
)

_GAP = 1
_FLAG = 2  # the stalled mark and a space


def _fit(columns: Sequence[Column], width: int) -> list[Column]:
    """The columns that fit ``width`` (the highest ranks cut first)."""
    kept = list(columns)
    while len(kept) > 1 and _FLAG + sum(c.width for c in kept) + _GAP * (len(kept) - 1) > width:
        worst = max(kept, key=lambda c: (c.rank, COLUMNS.index(c)))
        if worst.rank == 0:
            break
        kept.remove(worst)
    return kept


def _cut(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _widths(columns: list[Column], rows: Sequence[TopRow], width: int) -> list[int]:
    """Each column's width: the stretching ones share what is left (the run id up to its longest)."""
    widths = [c.width for c in columns]
    spare = width - _FLAG - sum(widths) - _GAP * (len(columns) - 1)
    for i, column in enumerate(columns):
        if column.stretch and column.title == "RUN" and spare > 0:
            longest = max((len(printable(r.run)) for r in rows), default=0)
            grow = min(spare, max(0, longest - column.width))
            widths[i] += grow
            spare -= grow
    for i, column in enumerate(columns):
        if column.stretch and column.title != "RUN" and spare > 0:
            widths[i] += spare
            spare = 0
    return widths


def _line(cells: list[str], columns: list[Column], widths: list[int], flag: str, width: int) -> str:
    parts = [
        (_cut(cell, w).rjust(w) if column.right else _cut(cell, w).ljust(w))
        for cell, column, w in zip(cells, columns, widths, strict=True)
    ]
    return _cut((flag + " " + (" " * _GAP).join(parts)).rstrip(), width)


def _head(title: str, total: Totals, shown: int, sort: str, statuses: Sequence[str], width: int) -> list[str]:
    clock = time.strftime("%H:%M:%S")
    first = (
        f"fenwire top  {total.runs} runs  {_rate(total.rate)} ev/s  {human_bytes(total.bytes)}"
        f"  stalled {total.stalled}  waiting {total.waiting}  {clock}  {printable(title)}"
    )
    counts = "  ".join(f"{status} {n}" for status, n in sorted(total.statuses.items(), key=lambda kv: (-kv[1], kv[0])))
    how = (
        f"sort {sort}  filter {','.join(statuses) if statuses else 'none'}  showing {shown}  (q quit, s sort, f filter)"
    )
    return [_cut(first, width), _cut(counts or "no runs", width), _cut(how, width)]


def render(
    rows: Sequence[TopRow],
    total: Totals,
    size: tuple[int, int],
    *,
    title: str = "",
    sort: str = "status",
    statuses: Sequence[str] = (),
) -> list[str]:
    """The screen's lines for ``rows`` (sorted and filtered already) on a terminal of ``size``
    ``(columns, lines)``: at most ``lines - 1`` of them, none wider than ``columns``."""
    width, height = max(1, size[0]), max(1, size[1])
    out = _head(title, total, len(rows), sort, statuses, width)
    columns = _fit(COLUMNS, width)
    widths = _widths(columns, rows, width)
    out.append(_line([c.title for c in columns], columns, widths, " ", width))
    room = height - 1 - len(out)
    if room < 1:
        return out[: height - 1] if height > 1 else out[:1]
    listed = rows if len(rows) <= room else rows[: room - 1]
    for row in listed:
        out.append(_line([c.cell(row) for c in columns], columns, widths, "!" if row.stalled else " ", width))
    if len(listed) < len(rows):
        out.append(_cut(f"  … {len(rows) - len(listed)} more runs", width))
    return out
