"""The ``fenwire`` command's argument parser, and :func:`main`, which hands each command to its module.

- ``fenwire --version``: the package version and the backend in use.
- ``fenwire check FILE|- [--direction event|control] [--json] [-q]``: stream a JSONL file through a
  receiver (:mod:`fenwire_fast.cli.check`), print one line per rejection and a summary; exit 1 if any
  line was rejected, 3 if the file cannot be read.
- ``fenwire tail FILE [--direction event|control] [--json] [--no-follow]``: follow a live event or
  control file as it grows, one line per message (:mod:`fenwire_fast.cli.tail`); exit 2 if it cannot
  be opened.
- ``fenwire runs PATH [--json] [--prune]``: the runs kept in a state dir (:mod:`fenwire_fast.cli.runs`).
- ``fenwire top PATH | --fleet NAME --address HOST:PORT [--once] [--json]``: a live view of every
  run (:mod:`fenwire_fast.cli.top`).
- ``fenwire fleet NAME --address HOST:PORT [--json]``: a named fleet's runs (:mod:`fenwire_fast.cli.fleet`).
- ``fenwire forward --state-dir PATH --nats URL``: a durable hub's runs forwarded into NATS JetStream
  (:mod:`fenwire_fast.cli.forward`).
- ``fenwire schema [--direction event|control]``: print the protocol's JSON Schema (draft 2020-12)
  for one direction, or both in one document (:mod:`fenwire_fast.cli.schema`).
- ``fenwire child``: run an agent as a live child over two files (:mod:`fenwire_fast.cli.child`; see
  ``fenwire child --help``).
- ``fenwire demo``: a parent driving many live mock children, on a local hub or (``--ray``) on the
  nodes of a Ray cluster (:mod:`fenwire_fast.cli.demo`; see ``fenwire demo --help``).

``child`` and ``demo`` parse their own options. Each command's module is imported when it runs:
``check``, ``tail`` and ``schema`` need only the codec; the other commands import
:mod:`fenwire_fast.live`.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import IMPLEMENTATION

__all__ = ["main", "CHECK_EPILOG", "TAIL_EPILOG"]


def _version_text() -> str:
    from .. import __version__  # looked up on first use (package metadata)

    return f"fenwire_fast {__version__} ({IMPLEMENTATION} backend)"


CHECK_EPILOG = """\
The direction is the side that wrote the file: "event" (a child's event file) or "control" (a
parent's control file). Without --direction, it is guessed from the first line that is valid in
only one direction, and the guess is said on stderr.

exit status: 0 every line is valid; 1 some lines were rejected; 2 bad usage; 3 the file cannot be
read.
"""


TAIL_EPILOG = """\
Each message is one line: its timestamp (else the time it was read), seq, type, and what it says
(a delta's text, a summary, a prompt, an exit's status), escaped and cut to fit. A rejected line
is shown as "line N: REJECTED CODE: REASON". With --json, each message is printed as it travels on
the wire, each rejection as {"line": N, "rejected": {...}}.

exit status: 0 done (an exit event, or the end of the file with --no-follow); 1 some lines were
rejected, or the file was truncated; 2 bad usage or the file cannot be opened; 130 interrupted.
"""


def _add_direction(command: argparse.ArgumentParser, verb: str) -> None:
    command.add_argument(
        "--direction",
        choices=("event", "control"),
        default=None,
        help=f"which side {verb} the file (default: guessed from its first valid line)",
    )


def _add_forward(sub: Any) -> None:
    """``fenwire forward``'s options."""
    forward = sub.add_parser(
        "forward",
        help="forward a state dir's runs into NATS JetStream",
        description="Take up every unfinished run of a state dir (Hub.attach), or of a named fleet "
        "(Fleet.attach), and publish each accepted "
        "line to the stream, one message per line on PREFIX.RUN with the id RUN:SEQ, committing each run "
        "only as far as the stream acknowledged, until every run has finished. Killed and started again, "
        "it goes on from the last commit and nothing is stored twice. Needs the nats extra.",
        epilog="exit status: 0 every line stored; 1 some run was refused; 2 bad usage, no state dir, or "
        "no server or JetStream at the URL.",
    )
    forward.set_defaults(command_parser=forward)
    forward.add_argument("--state-dir", help="the durable hub's state dir")
    forward.add_argument("--fleet", metavar="NAME", help="instead: the named fleet NAME (needs --address and Ray)")
    forward.add_argument("--address", help="with --fleet: the Ray cluster's head, HOST:PORT (or auto)")
    forward.add_argument("--namespace", default=None, help="with --fleet: its Ray namespace (default: fenwire)")
    forward.add_argument(
        "--takeover", action="store_true", help="with --fleet: take it from a driver that is gone (FleetBusy otherwise)"
    )
    forward.add_argument("--nats", required=True, metavar="URL", help="the NATS server, e.g. nats://127.0.0.1:4222")
    forward.add_argument("--stream", default="FENWIRE", help="the JetStream stream (made if missing; default FENWIRE)")
    forward.add_argument("--prefix", default="fenwire", help="the subjects' prefix: PREFIX.RUN (default fenwire)")
    forward.add_argument(
        "--max-in-flight", type=int, default=4096, help="lines read and not yet stored, at most (default 4096)"
    )


def _add_views(sub: Any) -> None:
    """The commands that look at runs: ``runs``, ``fleet`` and ``top``."""
    runs = sub.add_parser(
        "runs",
        help="list the durable runs kept in a state dir",
        description="One line per run kept in a state dir (Hub(state_dir=PATH)): run id, pid, whether "
        "that process still runs, the mirrored status, events and bytes written so far, when the child "
        "last wrote, and the committed position (committed seq / last seq written). Reads only: "
        "works while the hub runs and after its parent died.",
    )
    runs.set_defaults(command_parser=runs)
    runs.add_argument("path", help="the state dir")
    runs.add_argument("--json", action="store_true", help="one JSON object per run")
    runs.add_argument(
        "--prune",
        action="store_true",
        help="first remove the closed runs (finished, every event committed); needs the state dir free of any hub",
    )
    fleet = sub.add_parser(
        "fleet",
        help="list a named fleet's runs across its Ray nodes",
        description="One line per run of a named fleet (Fleet(name=NAME)): its node, run id, pid, "
        "status, and the committed seq beside the last seq read. Reads only: the driver that holds "
        "the fleet goes on. Needs the ray extra.",
    )
    fleet.set_defaults(command_parser=fleet)
    fleet.add_argument("name", help="the fleet's name")
    fleet.add_argument("--address", required=True, help="the Ray cluster's head, HOST:PORT (or auto)")
    fleet.add_argument("--namespace", default=None, help="the fleet's Ray namespace (default: fenwire)")
    fleet.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster and each node")
    fleet.add_argument("--json", action="store_true", help="one JSON object per run")
    from .top import add_top

    add_top(sub)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fenwire", description="The Fen wire protocol, fast.")
    parser.add_argument("--version", action="version", version=_version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser(
        "check",
        help="validate a JSONL file of events or controls",
        description="Check every line of a JSONL file against the protocol: one line per rejection "
        "(FILE:LINE: CODE: REASON), then a summary.",
        epilog=CHECK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.set_defaults(command_parser=check)
    check.add_argument("file", help="the JSONL file to check, or - for standard input")
    _add_direction(check, "wrote")
    check.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    check.add_argument("--json", action="store_true", help="one JSON object per rejection and for the summary")
    tail = sub.add_parser(
        "tail",
        help="follow a live event or control file, one line per message",
        description="Follow a JSONL event or control file as it grows: one line per message "
        "(TIME SEQ TYPE TEXT), rejected lines shown where they stand. Stops after an exit event.",
        epilog=TAIL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tail.set_defaults(command_parser=tail)
    tail.add_argument("file", help="the JSONL file to follow")
    _add_direction(tail, "writes")
    tail.add_argument("--json", action="store_true", help="each message as it travels on the wire, one a line")
    tail.add_argument(
        "--no-follow", dest="follow", action="store_false", help="stop at the end of the file instead of waiting"
    )
    _add_views(sub)
    _add_forward(sub)
    schema = sub.add_parser(
        "schema",
        help="print the protocol's JSON Schema, for parents and children in other languages",
        description="Print the JSON Schema (draft 2020-12) of one direction's lines, generated from this "
        "package's message tables: the envelope, one $defs entry per message type, a dispatch on type. "
        "Without --direction, one document holds both, as $defs/event and $defs/control. The line cap, "
        "the JSON dialect and the seq order are not expressible in a schema: see docs/schema.md.",
    )
    schema.set_defaults(command_parser=schema)
    schema.add_argument(
        "--direction",
        choices=("event", "control"),
        default=None,
        help="event: a child's lines; control: a parent's lines (default: both, in one document)",
    )
    sub.add_parser("child", help="run an agent as a live child over two files", add_help=False)
    sub.add_parser("demo", help="a parent driving many live mock children", add_help=False)
    return parser


def _command(name: str) -> Callable[[argparse.Namespace], int] | None:
    """The function that runs the command ``name`` parsed here (its module imported now), or ``None``."""
    if name == "check":
        from .check import check_command

        return check_command
    if name == "tail":
        from .tail import tail_command

        return tail_command
    if name == "fleet":
        from .fleet import fleet_command

        return fleet_command
    if name == "forward":
        from .forward import forward_command

        return forward_command
    if name == "top":
        from .top import top_command

        return top_command
    if name == "runs":
        from .runs import runs_command

        return runs_command
    if name == "schema":
        from .schema import schema_command

        return schema_command
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fenwire`` command; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "child":
        from .child import child_main

        return child_main(args_list[1:])
    if args_list and args_list[0] == "demo":
        from .demo import demo_main

        return demo_main(args_list[1:])
    parser = _build_parser()
    args, extra = parser.parse_known_args(args_list)
    if extra:  # said by the command they were given to, with its own usage
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    for stream in (sys.stdout, sys.stderr):  # a strict ASCII or Latin-1 terminal gets escapes, not a traceback
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    command = _command(args.command)
    if command is not None:
        try:
            return command(args)
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return 1
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
