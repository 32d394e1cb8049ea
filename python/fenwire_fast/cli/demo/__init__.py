"""``fenwire demo``: one parent driving many live mock children, every event checked.

- this module: the command, :func:`demo_main` (its options, their misuse, its exit codes);
- :mod:`~fenwire_fast.cli.demo.driver`: the demo itself (:func:`~fenwire_fast.cli.demo.driver.run_demo`):
  the children spawned, driven and checked;
- :mod:`~fenwire_fast.cli.demo.local`: its children on a local hub;
- :mod:`~fenwire_fast.cli.demo.ray`: its children on the nodes of a Ray cluster (``--ray``);
- :mod:`~fenwire_fast.cli.demo.jetstream`: its events through NATS JetStream (``--nats``);
- :mod:`~fenwire_fast.cli.demo.report`: the progress it shows and the summary it ends with.

The live layer is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..child import ACP_EXTRA_MESSAGE

if TYPE_CHECKING:
    from ...live.child.mock_agent import MockConfig

__all__ = ["demo_main", "build_demo_parser"]


def demo_main(argv: Sequence[str] | None = None) -> int:
    """``fenwire demo``: returns 0 when every check passes, 1 otherwise."""
    from .driver import default_config, paced_config

    parser = build_demo_parser()
    args, command = _parse(parser, argv)
    try:
        config = default_config(args.steps, args.deltas, args.delta_bytes, args.final_bytes)
        paced = paced_config(config, args.paced_deltas, args.delay)
        paced.check()
    except ValueError as exc:
        parser.error(str(exc))
    return _run(args, command, config, paced)


def build_demo_parser() -> argparse.ArgumentParser:
    """The ``fenwire demo`` argument parser."""
    from .driver import TIMEOUT_BASE, TIMEOUT_PER_CHILD

    parser = argparse.ArgumentParser(
        prog="fenwire demo",
        description="Spawn live mock children, steer, follow up, finalize and cancel some, drain them "
        "all, and check that every event arrived exactly once and in order.",
    )
    parser.add_argument("--children", type=int, default=8, help="how many children (default 8)")
    parser.add_argument("--steps", type=int, default=3, help="model steps per turn (default 3)")
    parser.add_argument(
        "--deltas",
        type=int,
        default=1000,
        help="text deltas per step of the children left alone, which run at full speed (default 1000)",
    )
    parser.add_argument(
        "--paced-deltas",
        type=int,
        default=20,
        help="text deltas per step of the children that get controls mid-turn (default 20)",
    )
    parser.add_argument(
        "--delay", type=float, default=0.005, help="seconds before each delta of those paced children (default 0.005)"
    )
    parser.add_argument("--delta-bytes", type=int, default=24, help="bytes per delta (default 24)")
    parser.add_argument("--final-bytes", type=int, default=200, help="bytes of each final answer (default 200)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"give up after this many seconds (default {TIMEOUT_BASE:g} plus {TIMEOUT_PER_CHILD:g} per child)",
    )
    parser.add_argument("--plain", action="store_true", help="plain progress lines even on a terminal")
    acp = parser.add_argument_group("on an ACP agent (pip install 'fenwire_fast[acp]')")
    acp.add_argument(
        "--acp",
        action="store_true",
        help="run every child on the Agent Client Protocol agent given after -- (fenwire demo --acp -- "
        "COMMAND [ARGS...]) instead of the mock; its answers are not scripted, so the checks are the "
        "acks, exactly-once delivery and the exits",
    )
    _add_nats(parser)
    ray = parser.add_argument_group("on a Ray cluster (pip install 'fenwire_fast[ray]')")
    ray.add_argument(
        "--ray",
        action="store_true",
        help="run the children on the nodes of a Ray cluster (through fenwire_fast.live.fleet) instead of a local hub",
    )
    ray.add_argument(
        "--nodes",
        type=int,
        default=None,
        metavar="N",
        help="with --ray: start a local cluster of this many nodes, the head included, and shut it down "
        "at the end (default 2)",
    )
    ray.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="with --ray: join the cluster at this address instead (left running)",
    )
    ray.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="S",
        help="with --ray: give up joining the cluster after this many seconds (default 30)",
    )
    return parser


def _add_nats(parser: argparse.ArgumentParser) -> None:
    """``--nats [URL]``."""
    stream = parser.add_argument_group("through NATS JetStream (pip install 'fenwire_fast[nats]')")
    stream.add_argument(
        "--nats",
        nargs="?",
        const="local",
        default=None,
        metavar="URL",
        help="publish every event to JetStream and take the demo's events back from there: the server "
        "at URL, or without one a local nats-server started for the demo",
    )


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str] | None]:
    """The options, and the ACP agent's command (the words after ``--``); misuse is a parser error."""
    words = list(argv) if argv is not None else sys.argv[2:]
    command: list[str] | None = None
    if "--" in words:  # --acp's command: everything after the first --
        at = words.index("--")
        words, command = words[:at], words[at + 1 :]
    args = parser.parse_args(words)
    if args.children < 1:
        parser.error("--children must be at least 1")
    if args.acp and not command:
        parser.error("--acp needs the agent's command after --: fenwire demo --acp -- COMMAND [ARGS...]")
    if command is not None and not args.acp:
        parser.error("a command after -- is the ACP agent to run: give --acp too")
    if args.acp and importlib.util.find_spec("acp") is None:
        parser.exit(1, f"fenwire demo: {ACP_EXTRA_MESSAGE}\n")
    for flag, value in (
        ("--nodes", args.nodes),
        ("--address", args.address),
        ("--connect-timeout", args.connect_timeout),
    ):
        if value is not None and not args.ray:
            parser.error(f"{flag} needs --ray")
    if args.nats is not None and args.ray:
        parser.error("--nats runs the children on a local hub: it cannot be used with --ray")
    if args.nats is not None and importlib.util.find_spec("nats") is None:
        parser.exit(1, "fenwire demo: --nats needs nats-py: pip install 'fenwire_fast[nats]'\n")
    if args.nodes is not None and args.nodes < 1:
        parser.error("--nodes must be at least 1")
    if args.nodes is not None and args.address is not None:
        parser.error("--nodes starts a local cluster; it cannot be used with --address")
    if args.connect_timeout is not None and not args.connect_timeout > 0:
        parser.error("--connect-timeout must be a positive number of seconds")
    if args.steps < 2:
        parser.error("--steps must be at least 2 (finalize and cancel happen mid-turn)")
    if args.deltas < 2 or args.paced_deltas < 2:
        parser.error("--deltas and --paced-deltas must be at least 2")
    return args, command


def _run(args: argparse.Namespace, command: list[str] | None, config: MockConfig, paced: MockConfig) -> int:
    """Run the demo with SIGTERM unwinding it (so that every child is stopped); the exit code."""
    from .driver import DemoSetupError, run_demo

    previous = None
    if threading.current_thread() is threading.main_thread():  # so the hub's cleanup runs on the way out
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        report = run_demo(
            args.children,
            config=config,
            paced=paced,
            timeout=args.timeout,
            live=False if args.plain else None,
            ray=args.ray,
            nodes=2 if args.nodes is None else args.nodes,
            address=args.address,
            connect_timeout=30.0 if args.connect_timeout is None else args.connect_timeout,
            acp=command,
            nats=args.nats,
        )
    except DemoSetupError as exc:
        print(f"fenwire demo: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fenwire demo: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("fenwire demo: terminated; the children were stopped and their files removed", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:  # e.g. piped into head: the children were cleaned up on the way out
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's final flush
        except OSError:
            pass
        return 1
    except OSError as exc:
        print(f"fenwire demo: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0 if report.ok else 1


class _Terminated(BaseException):
    """SIGTERM arrived: unwind, so that every ``with`` block cleans up. A ``BaseException``, as
    ``KeyboardInterrupt`` is: the code that turns a failure into a report (``except Exception``)
    must not swallow it."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated
