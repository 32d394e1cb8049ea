"""``fenwire forward --state-dir PATH --nats URL``: a durable hub's runs forwarded into JetStream.

Takes up every unfinished run of the state dir (``Hub.attach``: the runs another parent left, or
ones this command forwarded before it was killed) and forwards each accepted line to the stream
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

__all__ = ["forward_command"]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def forward_command(args: argparse.Namespace) -> int:
    """Run ``fenwire forward``; returns the exit code."""
    try:
        from ..forward import Forwarder, ForwardUnavailable
    except ImportError as exc:
        print(f"fenwire forward: needs nats-py: pip install 'fenwire_fast[nats]' ({exc})", file=sys.stderr)
        return 2
    from ..live.parent.durable import StateDirBusy
    from ..live.parent.hub import Hub

    if args.max_in_flight < 1:
        print("fenwire forward: --max-in-flight must be at least 1", file=sys.stderr)
        return 2
    try:
        hub = Hub.attach(args.state_dir)
    except (FileNotFoundError, NotADirectoryError, StateDirBusy, PermissionError) as exc:
        print(f"fenwire forward: {exc}", file=sys.stderr)
        return 2
    for error in hub.attach_errors:
        _say(f"fenwire forward: not taken up: {error}")
    try:
        forwarder = Forwarder(
            hub,
            args.nats,
            stream=args.stream,
            prefix=args.prefix,
            max_in_flight=args.max_in_flight,
            say=_say,
        )
    except ValueError as exc:
        hub.detach()
        print(f"fenwire forward: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(forwarder.run())
    except ForwardUnavailable as exc:
        hub.detach()
        print(f"fenwire forward: {exc}", file=sys.stderr)
        return 2
    except BaseException:
        hub.detach()  # the runs go on; what was not committed is forwarded again next time
        raise
    hub.close()
    print(
        f"fenwire forward: {forwarder.lines} lines from {len(list(forwarder.lanes()))} runs, "
        f"{forwarder.acked - forwarder.duplicates} stored, {forwarder.duplicates} already there, "
        f"{forwarder.reconnects} reconnects, {len(forwarder.refused)} runs refused"
    )
    for refusal in forwarder.refused.values():
        print(f"fenwire forward: refused {refusal}", file=sys.stderr)
    return 1 if forwarder.refused else 0
