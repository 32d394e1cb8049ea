"""``fenwire top``: a live view of every run of a state dir or a named fleet, that stays on screen.

One row per run (status, turn, events per second, the age of its last event, controls waiting for
an ack, events, bytes, pid, and the error of a run that failed), the totals and the runs by status
above them; a run with no event for longer than ``--stall`` seconds is marked ``!`` and listed
first. It only reads: no lock is taken and no file of a run is written, so it can watch a state dir
while its parent runs. ``--once`` prints one frame (``--json``: one JSON object per run) for
scripts.

- :mod:`.rows`: what a row holds, totals, sorting and filtering;
- :mod:`.state_source` and :mod:`.fleet_source`: where the rows come from;
- :mod:`.view`: the frame, fitted to the terminal; :mod:`.screen`: the live loop and its keys.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from .rows import SORTS, filter_rows, sort_rows, totals
from .screen import Source, TopScreen
from .view import render

__all__ = ["top_command", "add_top", "open_source"]


def add_top(sub: Any) -> None:
    """``fenwire top``'s options (on the ``fenwire`` parser's subcommands)."""
    top = sub.add_parser(
        "top",
        help="a live view of every run of a state dir or a named fleet",
        description="One row per run, redrawn in place: status, turn, events per second, the age of the last "
        "event, controls waiting for an ack, events, bytes, pid and error; totals and runs by status above. "
        "A run with no event for --stall seconds is marked ! and listed first. Reads only: no lock is taken, "
        "nothing is written. Keys: q quits, s changes the order, f the status filter.",
        epilog="exit status: 0 done; 1 the state dir or fleet cannot be read; 2 bad usage.",
    )
    top.set_defaults(command_parser=top)
    top.add_argument("path", nargs="?", help="the state dir")
    top.add_argument("--fleet", metavar="NAME", help="instead: the named fleet NAME (needs --address and Ray)")
    top.add_argument("--address", help="with --fleet: the Ray cluster's head, HOST:PORT (or auto)")
    top.add_argument("--namespace", default=None, help="with --fleet: its Ray namespace (default: fenwire)")
    top.add_argument(
        "--once",
        action="store_true",
        help="print one frame and stop (no terminal needed): two looks --interval apart, for the rates",
    )
    top.add_argument("--json", action="store_true", help="with --once: one JSON object per run")
    top.add_argument("--sort", choices=tuple(SORTS), default="status", help="the rows' order (default: status)")
    top.add_argument(
        "--status",
        action="append",
        default=[],
        metavar="STATUS",
        help="show only runs of this status "
        "(repeatable; 'active' is every run not finished, 'stalled' the stalled ones)",
    )
    top.add_argument("--stall", type=float, default=60.0, help="seconds without an event that flag a run (60)")
    top.add_argument("--interval", type=float, default=1.0, help="seconds between frames (1)")
    top.add_argument("--size", help=argparse.SUPPRESS)  # COLSxLINES: a fixed terminal size (tests)


def open_source(args: argparse.Namespace) -> Source | str:
    """The state dir or named fleet to look at, or why it cannot be had, in one line."""
    if args.fleet is None:
        from .state_source import StateSource

        source = StateSource(args.path, stall=args.stall)
        try:
            source.look()  # the first look says at once whether the dir can be read
        except OSError as exc:
            return f"cannot read {args.path}: {exc.strerror or exc}"
        return source
    from ...live.fleet.ray_modules import RAY

    if RAY.get("ray") is None:
        return "--fleet needs Ray: pip install 'fenwire_fast[ray]'"
    from ...live.fleet.driver import _connect
    from ...live.fleet.named import DEFAULT_NAMESPACE, FleetNotFound
    from .fleet_source import FleetTopSource

    try:
        _connect(args.address, 30.0, {"logging_level": "ERROR", "log_to_driver": False})
        fleet = FleetTopSource(args.fleet, args.namespace or DEFAULT_NAMESPACE, 30.0, stall=args.stall)
        fleet.look()
    except (ConnectionError, ValueError, FleetNotFound) as exc:
        return str(exc).strip().splitlines()[0]
    return fleet


def _usage(args: argparse.Namespace) -> str | None:
    if (args.path is None) == (args.fleet is None) or (args.fleet is not None and args.address is None):
        return "give a state dir PATH, or --fleet NAME with --address"
    if args.json and not args.once:
        return "--json goes with --once"
    if not args.stall > 0 or not args.interval > 0:
        return "--stall and --interval must be positive numbers of seconds"
    if args.size is not None:
        try:
            columns, lines = (int(n) for n in args.size.lower().split("x"))
        except ValueError:
            return "--size is COLSxLINES"
        args.size = (columns, lines)
    return None


def _once(source: Source, args: argparse.Namespace) -> None:
    time.sleep(args.interval)  # the rates are the events written between two looks this far apart
    rows = source.look()
    shown = sort_rows(filter_rows(rows, args.status), args.sort)
    if args.json:
        for row in shown:
            sys.stdout.write(json.dumps(row.as_json(), ensure_ascii=False) + "\n")
        return
    size = args.size or (200, len(shown) + 6)
    for line in render(shown, totals(rows), size, title=source.title, sort=args.sort, statuses=args.status):
        sys.stdout.write(line + "\n")


def top_command(args: argparse.Namespace) -> int:
    """Run ``fenwire top``; returns the exit code."""
    wrong = _usage(args)
    if wrong is not None:
        print(f"fenwire top: {wrong}", file=sys.stderr)
        return 2
    source = open_source(args)
    if isinstance(source, str):
        print(f"fenwire top: {source}", file=sys.stderr)
        return 1
    try:
        if args.once or not sys.stdout.isatty():
            _once(source, args)
            return 0
        statuses = tuple(args.status)
        screen = TopScreen(
            source, sys.stdout, interval=args.interval, sort=args.sort, statuses=statuses, size=args.size
        )
        screen.run(keys=sys.stdin)
        return 0
    finally:
        source.close()
