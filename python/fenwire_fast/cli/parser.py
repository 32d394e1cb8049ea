"""The ``fenwire`` command.

- ``fenwire --version``: the package version and the backend in use.
- ``fenwire check FILE|- [--direction event|control] [--json] [-q]``: stream a JSONL file through a
  receiver (:mod:`fenwire_fast.cli.check`), print one line per rejection and a summary; exit 1 if any
  line was rejected, 3 if the file cannot be read.
- ``fenwire tail FILE [--direction event|control] [--json] [--no-follow]``: follow a live event or
  control file as it grows, one line per message (:mod:`fenwire_fast.cli.tail`); exit 2 if it cannot
  be opened.
- ``fenwire schema [--direction event|control]``: print the protocol's JSON Schema (draft 2020-12)
  for one direction, or both in one document (:func:`fenwire_fast.json_schema`).
- ``fenwire child``: run an agent as a live child over two files (see ``fenwire child --help``).
- ``fenwire demo``: a parent driving many live mock children, on a local hub or (``--ray``) on the
  nodes of a Ray cluster (see ``fenwire demo --help``).

``check`` needs only the codec; ``child`` and ``demo`` import :mod:`fenwire_fast.live` when they run.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import IMPLEMENTATION
from ..text import printable
from .check import check_file, check_stream, summary_line

if TYPE_CHECKING:  # the live layer is imported only when `child` or `demo` runs
    from ..live.child.agent import Agent

__all__ = ["main", "check_file", "child_main", "demo_main", "build_child_parser", "TAIL_EPILOG"]


def _version_text() -> str:
    from .. import __version__  # looked up on first use (package metadata)

    return f"fenwire_fast {__version__} ({IMPLEMENTATION} backend)"


def _cmd_check(args: argparse.Namespace) -> int:
    name = "<stdin>" if args.file == "-" else args.file
    direction = args.direction
    try:
        if args.file == "-":
            result = check_stream(
                sys.stdin.buffer, name, direction, quiet=args.quiet, json_lines=args.json, progress=False
            )
        else:
            with open(args.file, "rb") as handle:
                total = os.fstat(handle.fileno()).st_size
                result = check_stream(handle, name, direction, quiet=args.quiet, json_lines=args.json, total=total)
    except OSError as exc:
        print(f"fenwire check: cannot read {printable(name)}: {exc.strerror or exc}", file=sys.stderr)
        return CHECK_UNREADABLE
    if result.guessed and not args.json:
        if result.guessed_from is not None:
            said = f"checking {printable(name)} as {result.direction}s (from its first valid line)"
        else:
            said = f"no line of {printable(name)} tells the direction; checking it as {result.direction}s (the default)"
        print(f"fenwire check: no --direction given; {said}", file=sys.stderr)
    print(summary_line(name, result, args.json))
    return 1 if result.rejected else 0


#: Exit status of ``fenwire check`` when the file cannot be read (2 is a usage error).
CHECK_UNREADABLE = 3

CHECK_EPILOG = """\
The direction is the side that wrote the file: "event" (a child's event file) or "control" (a
parent's control file). Without --direction, it is guessed from the first line that is valid in
only one direction, and the guess is said on stderr.

exit status: 0 every line is valid; 1 some lines were rejected; 2 bad usage; 3 the file cannot be
read.
"""


# ---------------------------------------------------------------------------------------------
# fenwire tail

TAIL_EPILOG = """\
Each message is one line: its timestamp (else the time it was read), seq, type, and what it says
(a delta's text, a summary, a prompt, an exit's status), escaped and cut to fit. A rejected line
is shown as "line N: REJECTED CODE: REASON". With --json, each message is printed as it travels on
the wire, each rejection as {"line": N, "rejected": {...}}.

exit status: 0 done (an exit event, or the end of the file with --no-follow); 1 some lines were
rejected, or the file was truncated; 2 bad usage or the file cannot be opened; 130 interrupted.
"""


def _cmd_tail(args: argparse.Namespace) -> int:
    from .tail import tail_file

    try:
        result = tail_file(args.file, args.direction, out=sys.stdout, follow=args.follow, json_lines=args.json)
    except BrokenPipeError:
        raise
    except OSError as exc:
        print(f"fenwire tail: cannot read {printable(args.file)}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if result.truncated:
        print(f"fenwire tail: {printable(args.file)} was truncated; stopping", file=sys.stderr)
    return 1 if result.rejected or result.truncated else 0


# ---------------------------------------------------------------------------------------------
# fenwire child


class _Fail(Exception):
    """A setup problem reported on stderr (exit 1, no traceback)."""


def _yes_no(text: str) -> bool:
    """A boolean flag value: ``true``/``false`` (also ``1``/``0``, ``yes``/``no``)."""
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


_MOCK_FLAGS: Sequence[tuple[str, Callable[[str], Any], str]] = (
    ("steps", int, "model steps per turn"),
    ("deltas", int, "text deltas per step"),
    ("delta-bytes", int, "bytes per delta"),
    ("thinking", int, "thinking deltas per step"),
    ("tools", int, "tool calls per step (all steps but the last)"),
    ("tool-result-bytes", int, "bytes of each tool result"),
    ("delay", float, "seconds to wait before each delta"),
    ("final-bytes", int, "bytes of the final answer"),
    ("fail-step", int, "raise in this step (counted across the run; 0 = never)"),
    ("hang-step", int, "hang the first tool of this step"),
    ("hang", str, "how the tool hangs: yield (cancellable) or block"),
    ("hang-seconds", float, "how long a hang lasts"),
    ("exit-step", int, "exit the process abruptly in this step"),
    ("exit-code", int, "the code of that abrupt exit"),
    ("unwind-delay", float, "seconds an interrupted turn takes to unwind"),
    ("announce", _yes_no, "emit agent-started before ready (true/false)"),
    ("gate-path", str, "the gate file: gated steps wait until it exists (empty = no gate)"),
    ("gate-steps", str, "steps (within each turn, comma-separated) that wait at the gate"),
    ("unwind-gate", _yes_no, "an interrupted turn also waits at the gate on its way out (true/false)"),
)


def build_child_parser() -> argparse.ArgumentParser:
    """The ``fenwire child`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="fenwire child",
        description="Run an agent as a live child over the Fen wire protocol. The control and event "
        "files come from FEN_WIRE_CONTROL_PATH and FEN_WIRE_EVENT_PATH; FEN_WIRE_RUN_ID and "
        "FEN_WIRE_DEADLINE are optional. Without --agent the built-in scripted mock agent runs; its "
        "knobs come from FENWIRE_MOCK (a JSON object) and the flags below.",
    )
    parser.add_argument(
        "--agent", metavar="MODULE:FACTORY", help="load the agent from this factory instead of the mock"
    )
    parser.add_argument(
        "--agent-config", metavar="JSON", help="a JSON object passed to the factory as its only argument"
    )
    acp = parser.add_argument_group(
        "ACP bridge",
        "fenwire child --acp [options] -- COMMAND [ARGS...] runs an Agent Client Protocol agent (needs the acp extra)",
    )
    acp.add_argument("--acp", action="store_true", help="run the ACP agent given after -- through the ACP bridge")
    acp.add_argument(
        "--acp-permissions",
        metavar="P",
        help="answer its permission requests: deny (default), allow-once or allow-always",
    )
    acp.add_argument(
        "--acp-grace",
        metavar="S",
        type=float,
        help="seconds it has to answer session/cancel before its group is killed (default 5)",
    )
    acp.add_argument(
        "--acp-init-timeout", metavar="S", type=float, help="seconds for initialize and session/new (default 30)"
    )
    parser.add_argument("--print", dest="print_", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prompt-file", help=argparse.SUPPRESS)
    mock = parser.add_argument_group("mock agent knobs")
    for name, kind, help_text in _MOCK_FLAGS:
        mock.add_argument(f"--{name}", type=kind, default=None, help=help_text)
    return parser


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value if value else None


_ACP_OPTIONS = (
    ("acp-permissions", "acp_permissions"),
    ("acp-grace", "acp_grace"),
    ("acp-init-timeout", "acp_init_timeout"),
)
ACP_EXTRA_MESSAGE = "the ACP bridge needs the acp extra: pip install 'fenwire_fast[acp]'"


def _make_acp_agent(
    args: argparse.Namespace, flags: Mapping[str, Any], command: Sequence[str] | None, deadline: float | None
) -> Agent:
    """``--acp -- COMMAND``: the ACP bridge (:mod:`fenwire_fast.live.acp.agent`)."""
    given = [f"--{flag}" for flag, attr in _ACP_OPTIONS if getattr(args, attr) is not None]
    if not args.acp:
        if given:
            raise _Fail(f"{given[0]} needs --acp")
        if command is not None:
            raise _Fail("a command after -- needs --acp (fenwire child --acp -- COMMAND [ARGS...])")
        raise AssertionError("not an ACP child")
    if args.agent or args.agent_config is not None:
        raise _Fail(f"--acp cannot be used with {'--agent' if args.agent else '--agent-config'}")
    if flags:
        raise _Fail(f"mock knobs (--{next(iter(flags))}) cannot be used with --acp")
    if not command:
        raise _Fail("--acp needs the ACP agent's command after --: fenwire child --acp -- COMMAND [ARGS...]")
    config: dict[str, Any] = {"command": list(command), "permissions": args.acp_permissions or "deny"}
    if config["permissions"] not in ("deny", "allow-once", "allow-always"):
        raise _Fail(f"--acp-permissions must be deny, allow-once or allow-always, not {args.acp_permissions!r}")
    for flag, attr in _ACP_OPTIONS[1:]:
        value = getattr(args, attr)
        if value is not None:
            if not 0 < value < math.inf:
                raise _Fail(f"--{flag} must be a positive number of seconds, not {value!r}")
            config[attr[len("acp_") :]] = value
    if deadline is not None:  # the agent's start gives up at the run's deadline too
        config["run_deadline"] = deadline
    try:
        from ..live.acp.agent import bridge
    except ImportError as exc:
        if exc.name == "acp" or (exc.name or "").startswith("acp.") or exc.name == "pydantic":
            raise _Fail(ACP_EXTRA_MESSAGE) from None
        raise _Fail(f"cannot load the ACP bridge: {exc}") from None
    try:
        return bridge(config)
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _make_agent(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    command: Sequence[str] | None = None,
    deadline: float | None = None,
) -> Agent:
    """The agent ``fenwire child`` runs: ``--agent``'s factory, the ACP bridge, or the mock with its knobs."""
    from ..live.child.agent import AgentLoadError, load_agent
    from ..live.child.mock_agent import ConfigError, MockAgent, config_from_env, config_from_mapping

    flags = {name: getattr(args, name.replace("-", "_")) for name, _, _ in _MOCK_FLAGS}
    flags = {k: v for k, v in flags.items() if v is not None}
    if args.acp or command is not None or any(getattr(args, attr) is not None for _, attr in _ACP_OPTIONS):
        return _make_acp_agent(args, flags, command, deadline)
    if args.agent:
        if flags:
            raise _Fail(f"mock knobs (--{next(iter(flags))}) cannot be used with --agent")
        config = None
        if args.agent_config is not None:
            try:
                config = json.loads(args.agent_config)
            except ValueError as exc:
                raise _Fail(f"--agent-config is not valid JSON: {exc}") from None
        try:
            return load_agent(args.agent, config)
        except AgentLoadError as exc:
            raise _Fail(str(exc)) from None
    if args.agent_config is not None:
        raise _Fail("--agent-config needs --agent")
    try:
        return MockAgent(config_from_mapping(flags, config_from_env(environ)))
    except ConfigError as exc:
        raise _Fail(str(exc)) from None


_FILE_VARIABLES = {
    "FEN_WIRE_CONTROL_PATH": "the control file to read",
    "FEN_WIRE_EVENT_PATH": "the event file to write",
}


def _missing_files_message(missing: Sequence[str]) -> str:
    """The file variables that are not set, each named once with what it is for."""
    names = " and ".join(f"{name} ({_FILE_VARIABLES[name]})" for name in missing)
    verb = "is" if len(missing) == 1 else "are"
    return f"{names} {verb} not set; the parent that spawns a child sets both (see fenwire child --help)"


def child_main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """``fenwire child``: run one live child; returns the exit code (0 only after ``exit done``)."""
    env = os.environ if environ is None else environ
    from ..live.child import Presenter
    from ..live.child.turn import trace_context

    words = list(argv) if argv is not None else sys.argv[1:]
    command: list[str] | None = None
    if "--" in words:  # --acp's command: everything after the first --
        at = words.index("--")
        words, command = words[:at], words[at + 1 :]
    args = build_child_parser().parse_args(words)
    try:
        if args.print_ or args.prompt_file is not None:
            raise _Fail(
                "--print and --prompt-file cannot be used with a live child; the task arrives as the first prompt"
            )
        control = _env(env, "FEN_WIRE_CONTROL_PATH")
        events = _env(env, "FEN_WIRE_EVENT_PATH")
        missing = [n for n, v in (("FEN_WIRE_CONTROL_PATH", control), ("FEN_WIRE_EVENT_PATH", events)) if v is None]
        if missing:
            raise _Fail(_missing_files_message(missing))
        run = _env(env, "FEN_WIRE_RUN_ID") or "run"
        deadline: float | None = None
        raw_deadline = _env(env, "FEN_WIRE_DEADLINE")
        if raw_deadline is not None:
            try:
                deadline = float(raw_deadline)
            except ValueError:
                deadline = math.nan
            if math.isnan(deadline):
                raise _Fail(f"FEN_WIRE_DEADLINE must be a Unix time in seconds, not {raw_deadline!r}")
        agent = _make_agent(args, env, command, deadline)
        assert control is not None and events is not None
        traceparent = trace_context(_env(env, "TRACEPARENT"))
        try:
            presenter = Presenter(
                agent, control_path=control, event_path=events, run=run, deadline=deadline, traceparent=traceparent
            )
        except OSError as exc:
            raise _Fail(f"cannot open {exc.filename or events}: {exc.strerror or exc}") from None
    except _Fail as exc:
        print(f"fenwire child: {exc}", file=sys.stderr)
        return 1
    from ..live.proc.orphans import PARENT_FD_ENV, TERM_GRACE_ENV, watch_parent

    watch_parent(env, lambda text: print(text, file=sys.stderr, flush=True))
    if env is os.environ:  # the agent's own subprocesses are not watchers
        for name in (PARENT_FD_ENV, TERM_GRACE_ENV):
            os.environ.pop(name, None)
    return presenter.run_loop()


# ---------------------------------------------------------------------------------------------
# fenwire demo


def demo_main(argv: Sequence[str] | None = None) -> int:
    """``fenwire demo``: returns 0 when every check passes, 1 otherwise."""
    from .demo.driver import TIMEOUT_BASE, TIMEOUT_PER_CHILD, DemoSetupError, default_config, paced_config, run_demo

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
    try:
        config = default_config(args.steps, args.deltas, args.delta_bytes, args.final_bytes)
        paced = paced_config(config, args.paced_deltas, args.delay)
        paced.check()
    except ValueError as exc:
        parser.error(str(exc))
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


def _cmd_schema(args: argparse.Namespace) -> int:
    from .._json_schema import schema_text

    sys.stdout.write(schema_text(args.direction))
    sys.stdout.flush()
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    from .runs import inspect, print_runs

    if args.prune:
        from ..live.parent.durable import StateDir, StateDirBusy

        try:
            state = StateDir(args.path)
        except (OSError, StateDirBusy) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            print(f"fenwire runs: cannot prune {args.path}: {why}", file=sys.stderr)
            return 1
        try:
            removed = state.prune()
        finally:
            state.close()
        print(f"pruned {len(removed)} closed run(s)", file=sys.stderr)
    try:
        reports = inspect(args.path)
    except OSError as exc:
        print(f"fenwire runs: cannot read {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print_runs(reports, sys.stdout, as_json=args.json)
    return 0


class _Terminated(Exception):
    """SIGTERM arrived: unwind, so that every ``with`` block cleans up."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated


# ---------------------------------------------------------------------------------------------
# fenwire


def _add_direction(command: argparse.ArgumentParser, verb: str) -> None:
    command.add_argument(
        "--direction",
        choices=("event", "control"),
        default=None,
        help=f"which side {verb} the file (default: guessed from its first valid line)",
    )


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fenwire`` command; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "child":
        return child_main(args_list[1:])
    if args_list and args_list[0] == "demo":
        return demo_main(args_list[1:])
    parser = _build_parser()
    args, extra = parser.parse_known_args(args_list)
    if extra:  # said by the command they were given to, with its own usage
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    for stream in (sys.stdout, sys.stderr):  # a strict ASCII or Latin-1 terminal gets escapes, not a traceback
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    commands = {"check": _cmd_check, "tail": _cmd_tail, "runs": _cmd_runs, "schema": _cmd_schema}
    if args.command in commands:
        try:
            return commands[args.command](args)
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return 1
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
