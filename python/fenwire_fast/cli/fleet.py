"""``fenwire fleet NAME --address HOST:PORT``: a named fleet's runs across its nodes.

One line per run: its node (shortened), run id, pid, status, and the committed seq beside the last
seq its node read. Reads only: the driver that holds the fleet goes on undisturbed. Needs the
``ray`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ..text import printable

__all__ = ["fleet_command", "print_fleet"]


def print_fleet(rows: Sequence[dict[str, Any]], out: TextIO, as_json: bool = False) -> None:
    """Write ``rows`` (``fleet_report``'s) to ``out``: a table, or one JSON object per run."""
    if as_json:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        return
    out.write(f"{'NODE':<12} {'RUN':<24} {'PID':>8} {'STATUS':<10} COMMITTED/READ\n")
    for row in rows:
        pid = "-" if row["pid"] is None else str(row["pid"])
        seqs = "-" if row["committed_seq"] is None else f"{row['committed_seq']}/{row['last_seq']}"
        line = f"{row['node'][:12]:<12} {printable(str(row['run']))[:24]:<24} {pid:>8} {str(row['status']):<10} {seqs}"
        if row.get("error"):
            line += f"  {printable(str(row['error'])).splitlines()[0][:80]}"
        out.write(line + "\n")
    out.write(f"{len(rows)} run(s)\n")


def fleet_command(args: argparse.Namespace) -> int:
    """Run ``fenwire fleet``; returns the exit code (1: no such fleet, 2: no Ray or no cluster)."""
    from ..live.fleet.hold import fleet_report
    from ..live.fleet.named import DEFAULT_NAMESPACE, FleetNotFound
    from ..live.fleet.ray_modules import RAY

    if not args.timeout > 0:
        print("fenwire fleet: --timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    ray = RAY.get("ray")
    if ray is None:
        print("fenwire fleet: needs Ray: pip install 'fenwire_fast[ray]'", file=sys.stderr)
        return 2
    from ..live.fleet.driver import _connect

    try:
        _connect(args.address, args.timeout, {"logging_level": "ERROR", "log_to_driver": False})
    except (ConnectionError, ValueError) as exc:
        print(f"fenwire fleet: {exc}", file=sys.stderr)
        return 2
    try:
        rows = fleet_report(args.name, args.namespace or DEFAULT_NAMESPACE, args.timeout)
    except FleetNotFound as exc:
        print(f"fenwire fleet: {exc}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    print_fleet(rows, sys.stdout, args.json)
    return 0
