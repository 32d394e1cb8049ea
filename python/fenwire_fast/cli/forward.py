"""``fenwire forward --state-dir PATH --nats URL``: a durable hub's runs forwarded into JetStream
(``--fleet NAME --address ADDR``: a named fleet's).

Takes up every unfinished run of the state dir (``Hub.attach``: the runs another parent left, or
ones this command forwarded before it was killed), or of the named fleet (``Fleet.attach``, with
``--takeover`` from a driver that is gone), and forwards each accepted line to the stream
(:class:`~fenwire_fast.forward.Forwarder`), committing each run only as far as the stream
acknowledged, until every run has finished. One line per event worth telling (a lost connection, a
refusal) on stderr, and a summary at the end. Needs the ``nats`` extra.

Exit status: 0 every line stored; 1 some run was refused (which run and seq is said); 2 bad usage,
no state dir, or no server or JetStream at the URL; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["forward_command"]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _open_source(args: argparse.Namespace) -> tuple[Any, Callable[[bool], None]] | str:
    """The hub of ``--state-dir`` or the named fleet of ``--fleet``, and how to let it go (``True``:
    it is done; ``False``: stopped early, its runs go on); or why it cannot be had, in one line."""
    if args.fleet is None:
        from ..live.parent.durable import StateDirBusy
        from ..live.parent.hub import Hub

        try:
            hub = Hub.attach(args.state_dir)
        except (FileNotFoundError, NotADirectoryError, StateDirBusy, PermissionError) as exc:
            return str(exc)
        for error in hub.attach_errors:
            _say(f"fenwire forward: not taken up: {error}")
        return hub, lambda done: hub.close() if done else hub.detach()
    from ..forward.fleet_source import FleetSource
    from ..live.fleet.ray_modules import RAY

    if RAY.get("ray") is None:
        return "--fleet needs Ray: pip install 'fenwire_fast[ray]'"
    from ..live.fleet import Fleet
    from ..live.fleet.named import FleetBusy, FleetNotFound, FleetVersionMismatch

    try:
        fleet = Fleet.attach(args.address, name=args.fleet, namespace=args.namespace, takeover=args.takeover)
    except (FleetNotFound, FleetBusy, FleetVersionMismatch, ConnectionError, ValueError) as exc:
        return str(exc).strip().splitlines()[0]
    if fleet.forward is not None:
        fleet.detach()
        return f"the nodes of fleet {args.fleet!r} forward its lines themselves, to {fleet.forward.get('url')}"
    source = FleetSource(fleet)

    def let_go(done: bool) -> None:
        source.close()
        fleet.detach()  # the fleet stays (its finished runs closed); another driver may take it

    return source, let_go


def forward_command(args: argparse.Namespace) -> int:
    """Run ``fenwire forward``; returns the exit code."""
    try:
        from ..forward import Forwarder, ForwardUnavailable
    except ImportError as exc:
        print(f"fenwire forward: needs nats-py: pip install 'fenwire_fast[nats]' ({exc})", file=sys.stderr)
        return 2
    if args.max_in_flight < 1:
        print("fenwire forward: --max-in-flight must be at least 1", file=sys.stderr)
        return 2
    if (args.state_dir is None) == (args.fleet is None) or (args.fleet is not None and args.address is None):
        print("fenwire forward: give --state-dir PATH, or --fleet NAME with --address", file=sys.stderr)
        return 2
    opened = _open_source(args)
    if isinstance(opened, str):
        print(f"fenwire forward: {opened}", file=sys.stderr)
        return 2
    source, let_go = opened
    try:
        forwarder = Forwarder(
            source, args.nats, stream=args.stream, prefix=args.prefix, max_in_flight=args.max_in_flight, say=_say
        )
        asyncio.run(forwarder.run())
    except (ForwardUnavailable, ValueError) as exc:
        let_go(False)
        print(f"fenwire forward: {exc}", file=sys.stderr)
        return 2
    except BaseException:
        let_go(False)  # the runs go on; what was not committed is forwarded again next time
        raise
    let_go(True)
    print(
        f"fenwire forward: {forwarder.lines} lines from {len(list(forwarder.lanes()))} runs, "
        f"{forwarder.acked - forwarder.duplicates} stored, {forwarder.duplicates} already there, "
        f"{forwarder.reconnects} reconnects, {len(forwarder.refused)} runs refused"
    )
    for refusal in forwarder.refused.values():
        print(f"fenwire forward: refused {refusal}", file=sys.stderr)
    return 1 if forwarder.refused else 0
