"""``fenwire child``: run an agent as a live child over the two files its parent names.

The agent is the built-in scripted mock (:mod:`fenwire_fast.live.child.mock_agent`, its knobs from
``FENWIRE_MOCK`` and the flags), an agent factory given with ``--agent MODULE:FACTORY``, or an Agent
Client Protocol agent run through the ACP bridge (``--acp -- COMMAND [ARGS...]``). The live layer is
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the live layer is imported only when the command runs
    from ..live.child.agent import Agent

__all__ = ["child_main", "build_child_parser", "ACP_EXTRA_MESSAGE"]


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
