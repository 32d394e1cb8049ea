"""``fenwire top --fleet NAME --address HOST:PORT``: a named fleet's runs, as its nodes report them.

Each look asks every node's actor for its runs (``fleet_report``: read-only, the driver that holds
the fleet goes on undisturbed). A node reports a run's status, pid, error and the last seq it read;
the rate is that seq's growth between looks, and a run's age counts from the look at which its seq
last moved (the nodes report no file times), so a run is flagged stalled once ``stall`` seconds
pass with no new event. A node that cannot be reached has its runs reported ``failed``.
"""

from __future__ import annotations

import time
from typing import Any

from .rows import TopRow

__all__ = ["FleetTopSource"]


class FleetTopSource:
    """The runs of the named fleet ``name`` (Ray connected already: see :func:`top_command`)."""

    def __init__(self, name: str, namespace: str, timeout: float, stall: float = 60.0) -> None:
        self.name = name
        self.namespace = namespace
        self.timeout = timeout
        self.stall = stall
        self.title = f"fleet {name}"
        self._seen: dict[str, tuple[float, int, float]] = {}  # run -> (when looked, seq, when it moved)

    def look(self) -> list[TopRow]:
        """Every run now; raises ``FleetNotFound`` when the fleet is gone."""
        from ...live.fleet.hold import fleet_report

        now = time.monotonic()
        return [self._row(report, now) for report in fleet_report(self.name, self.namespace, self.timeout)]

    def _row(self, report: dict[str, Any], now: float) -> TopRow:
        run = str(report["run"])
        seq = int(report["last_seq"] or 0)
        row = TopRow(
            run=run,
            status=str(report["status"] or "unknown"),
            pid=report["pid"],
            alive=report["pid"] is not None and report["status"] not in (None, "failed"),
            events=seq,
            last_seq=seq,
            error=report.get("error"),
            node=str(report["node"]),
        )
        before = self._seen.get(run)
        moved = now if before is None or before[1] != seq else before[2]
        if before is not None and now > before[0]:
            row.rate = 0.0 if row.finished else max(0.0, (seq - before[1]) / (now - before[0]))
            row.age = now - moved
            row.stalled = not row.finished and row.age > self.stall
        self._seen[run] = (now, seq, moved)
        return row

    def close(self) -> None:
        """Nothing to close: the fleet's driver and nodes go on."""
