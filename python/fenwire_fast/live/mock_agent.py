"""A deterministic scripted mock agent, and a checker for the transcript it produces.

The mock is what tests, ``fenwire demo`` and the benchmarks run as the child's agent. Every turn
follows a script that depends only on the :class:`MockConfig` knobs and the turn (number, input
text, tool-free or not), so a parent can verify that it received the script exactly
(:func:`check_transcript`).

A turn of ``steps`` steps (one step for the tool-free finalize turn). Each step:

1. between steps: ``take_steering()`` (steering injections show up here);
2. ``llm-start``; ``thinking`` thinking deltas and one ``assistant-thinking`` (when ``thinking > 0``);
3. ``deltas`` text deltas of ``delta_bytes`` bytes each (a :class:`~fenwire_fast.live.agent.Wait` of
   ``delay`` seconds before each one), one ``assistant-text`` holding their concatenation (the last
   step's carries the final answer instead: ``final_bytes`` bytes, with multi-byte characters, and
   ``final?: true``), ``assistant-stream-end``;
4. ``llm-end`` with stop reason ``tool-use`` (or ``stop`` on the last step) and a usage;
5. on every step but the last, ``tools`` tool calls, each followed by its ``tool-result`` whose
   text is ``tool_result_bytes`` bytes.

The first event of a turn is ``user`` with the turn's input text.

Failure modes, counted in steps across the whole run (1-based; 0 = never): ``fail_step`` raises
in that step, ``hang_step`` hangs that step's first tool (``hang="yield"`` keeps yielding
``Wait`` forever, so cancel/finalize/deadline still work; ``hang="block"`` blocks in ``time.sleep``,
so only the parent's kill backstop helps), ``exit_step`` ends the process at once with
``exit_code`` (no ``exit`` line). ``unwind_delay`` makes an interrupted turn take that many
seconds (cooperatively) to unwind, so the run can be observed in its terminal state.

Knobs come from ``FENWIRE_MOCK`` (a JSON object; ``snake_case`` or ``kebab-case`` keys) and/or the
child's command-line flags (``--steps 3 --delay 0.01 ...``), flags winning.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from .agent import TurnContext, TurnGenerator, TurnInput, TurnInterrupted, Wait

__all__ = [
    "MockConfig",
    "MockAgent",
    "MockFailure",
    "ConfigError",
    "config_from_env",
    "config_from_mapping",
    "make_agent",
    "script_events",
    "final_text",
    "filler",
    "check_transcript",
    "MOCK_ENV",
]

MOCK_ENV = "FENWIRE_MOCK"
_PATTERN = "fen wire ünïcödé 日本語 "


@dataclass(frozen=True)
class MockConfig:
    """The mock agent's knobs (see the module docstring)."""

    steps: int = 2
    deltas: int = 4
    delta_bytes: int = 24
    thinking: int = 0
    tools: int = 1
    tool_result_bytes: int = 64
    delay: float = 0.0
    final_bytes: int = 48
    fail_step: int = 0
    hang_step: int = 0
    hang: str = "yield"
    hang_seconds: float = 3600.0
    exit_step: int = 0
    exit_code: int = 3
    unwind_delay: float = 0.0
    announce: bool = False

    def check(self) -> None:
        """Raise :class:`ConfigError` when a knob is out of range."""
        for name in (
            "steps",
            "deltas",
            "delta_bytes",
            "thinking",
            "tools",
            "tool_result_bytes",
            "final_bytes",
            "fail_step",
            "hang_step",
            "exit_step",
            "exit_code",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"mock knob {name} must be a non-negative integer, not {value!r}")
        if self.steps < 1:
            raise ConfigError("mock knob steps must be at least 1")
        for name in ("delay", "hang_seconds", "unwind_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ConfigError(f"mock knob {name} must be a non-negative number, not {value!r}")
        if self.hang not in ("yield", "block"):
            raise ConfigError(f"mock knob hang must be 'yield' or 'block', not {self.hang!r}")
        if not isinstance(self.announce, bool):
            raise ConfigError("mock knob announce must be true or false")


class ConfigError(ValueError):
    """A mock knob is unknown or has a bad value."""


class MockFailure(RuntimeError):
    """Raised by the mock in its ``fail_step``."""


_FIELDS = {f.name: f for f in fields(MockConfig)}


def config_from_mapping(values: Mapping[str, Any], base: MockConfig | None = None) -> MockConfig:
    """Build a config from ``{knob: value}`` (``kebab-case`` keys accepted) over ``base``."""
    changes: dict[str, Any] = {}
    for key, value in values.items():
        name = str(key).replace("-", "_")
        if name not in _FIELDS:
            raise ConfigError(f"unknown mock knob {key!r} (known: {', '.join(sorted(_FIELDS))})")
        floats = ("delay", "hang_seconds", "unwind_delay")
        if name in floats and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        changes[name] = value
    config = replace(base or MockConfig(), **changes)
    config.check()
    return config


def config_from_env(environ: Mapping[str, str] | None = None) -> MockConfig:
    """The config given by ``FENWIRE_MOCK`` (defaults when unset or blank)."""
    raw = (environ if environ is not None else os.environ).get(MOCK_ENV, "")
    if not raw.strip():
        return MockConfig()
    try:
        values = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{MOCK_ENV} is not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise ConfigError(f"{MOCK_ENV} must be a JSON object")
    return config_from_mapping(values)


def config_to_env(config: MockConfig) -> str:
    """The ``FENWIRE_MOCK`` value that reproduces ``config`` (only knobs that differ from the defaults)."""
    default = MockConfig()
    values = {name: getattr(config, name) for name in _FIELDS if getattr(config, name) != getattr(default, name)}
    return json.dumps(values, separators=(",", ":"))


def filler(nbytes: int, seed: str = "") -> str:
    """Deterministic text of exactly ``nbytes`` UTF-8 bytes, multi-byte characters included:
    ``seed`` and then a repeated pattern, cut before the first character that does not fit, padded
    with dots."""
    if nbytes <= 0:
        return ""
    text = seed + _PATTERN * (nbytes // len(_PATTERN.encode("utf-8")) + 2)
    kept = text.encode("utf-8")[:nbytes].decode("utf-8", "ignore")
    return kept + "." * (nbytes - len(kept.encode("utf-8")))


def final_text(config: MockConfig, turn: int) -> str:
    """The final answer text of ``turn`` (``final_bytes`` bytes)."""
    return filler(config.final_bytes, f"Answer {turn}: ")


# Script items: ("step",), ("boundary",), ("wait", seconds), ("event", dict), ("tool", call, result)
_Item = tuple[Any, ...]


def _script(config: MockConfig, request: TurnInput) -> Iterator[_Item]:
    turn = request.turn
    steps = 1 if not request.tools else config.steps
    yield ("event", {"type": "user", "text": request.text})
    for step in range(1, steps + 1):
        last = step == steps
        if step > 1:
            yield ("boundary",)
        yield ("step",)
        yield ("event", {"type": "llm-start", "provider": "mock", "model": "mock-1"})
        if config.thinking:
            parts = []
            for i in range(1, config.thinking + 1):
                delta = filler(config.delta_bytes, f"think t{turn}s{step}d{i} ")
                parts.append(delta)
                if config.delay:
                    yield ("wait", config.delay)
                yield ("event", {"type": "assistant-thinking-delta", "content-index": 0, "delta": delta})
            yield ("event", {"type": "assistant-thinking", "final?": False, "content-index": 0, "text": "".join(parts)})
        parts = []
        for i in range(1, config.deltas + 1):
            delta = filler(config.delta_bytes, f"t{turn}s{step}d{i} ")
            parts.append(delta)
            if config.delay:
                yield ("wait", config.delay)
            yield ("event", {"type": "assistant-text-delta", "content-index": 1, "delta": delta})
        text = final_text(config, turn) if last else "".join(parts)
        yield ("event", {"type": "assistant-text", "final?": last, "content-index": 1, "text": text})
        yield ("event", {"type": "assistant-stream-end", "final?": last})
        use_tools = not last and config.tools > 0
        yield (
            "event",
            {
                "type": "llm-end",
                "stop-reason": "tool-use" if use_tools else "stop",
                "usage": {"input": 100 * step + turn, "output": config.deltas + 1},
            },
        )
        if use_tools:
            for k in range(1, config.tools + 1):
                call_id = f"call-t{turn}s{step}n{k}"
                call = {"type": "tool-call", "name": "read", "id": call_id, "arguments": {"path": f"file-{k}.txt"}}
                result = {
                    "type": "tool-result",
                    "name": "read",
                    "id": call_id,
                    "tool-call-id": call_id,
                    "is-error?": False,
                    "duration-seconds": 0.0,
                    "result": {"content": [{"type": "text", "text": filler(config.tool_result_bytes, f"{call_id} ")}]},
                }
                yield ("tool", call, result, k)


def script_events(config: MockConfig, request: TurnInput) -> list[dict[str, Any]]:
    """The display events a full, uninterrupted turn yields, in order (before normalization)."""
    out: list[dict[str, Any]] = []
    for item in _script(config, request):
        if item[0] == "event":
            out.append(item[1])
        elif item[0] == "tool":
            out.append(item[1])
            out.append(item[2])
    return out


class MockAgent:
    """The scripted mock agent; see the module docstring."""

    def __init__(self, config: MockConfig | None = None) -> None:
        self.config = config or MockConfig()
        self.config.check()
        self.steps_run = 0

    def start(self) -> Iterable[dict[str, Any]]:
        """``agent-started`` when ``announce`` is set, else nothing."""
        if self.config.announce:
            return [{"type": "agent-started", "provider": "mock", "model": "mock-1"}]
        return []

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        """Run one scripted turn."""
        return self._turn(request, ctx)

    def _turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        try:
            result = yield from self._steps(request, ctx)
        except TurnInterrupted:
            if self.config.unwind_delay:
                yield Wait(self.config.unwind_delay)
            raise
        return result

    def _steps(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        config = self.config
        hang_here = False
        for item in _script(config, request):
            kind = item[0]
            if kind == "event":
                yield item[1]
            elif kind == "wait":
                yield Wait(item[1])
            elif kind == "boundary":
                ctx.take_steering()
            elif kind == "step":
                self.steps_run += 1
                n = self.steps_run
                hang_here = n == config.hang_step
                if n == config.exit_step:
                    os._exit(config.exit_code)
                if n == config.fail_step:
                    raise MockFailure(f"mock agent failed at step {n}")
            elif kind == "tool":
                yield item[1]
                if hang_here and item[3] == 1:
                    if config.hang == "block":
                        time.sleep(config.hang_seconds)
                    else:
                        end = time.monotonic() + config.hang_seconds
                        while time.monotonic() < end:
                            yield Wait(0.05)
                yield item[2]
        return None


def make_agent(config: dict[str, Any] | None = None) -> MockAgent:
    """Factory for ``--agent fenwire_fast.live.mock_agent:make_agent`` (knobs from the argument or ``FENWIRE_MOCK``)."""
    if config is None:
        return MockAgent(config_from_env())
    return MockAgent(config_from_mapping(config))


# ---------------------------------------------------------------------------------------------
# Transcript checking


_ENVELOPE = ("v", "seq", "run", "timestamp")
_CHILD_MADE = ("control-ack", "steering-injected", "follow-up-injected", "info")


def _strip(event: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in _ENVELOPE}


def _expected(config: MockConfig, request: TurnInput) -> list[dict[str, Any]]:
    from ..normalize import normalize

    return [_strip(normalize(e)) for e in script_events(config, request)]


def _is_cancelled_result(event: Mapping[str, Any]) -> bool:
    return event.get("type") == "tool-result" and event.get("result") == "cancelled"


def check_transcript(config: MockConfig, events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check a child's event stream against the mock's script; return the problems (empty = exact).

    Checks: ``seq`` runs 1, 2, 3, ... without gaps; ``exit`` is the last line and ``result`` (if
    any) the one before it; turns are numbered 1, 2, ... and bracketed; inside every turn the
    agent's events are exactly the script of that turn (a prefix of it, plus presenter-made
    ``cancelled`` tool results, when the turn was aborted or failed); ``turn-complete`` usage is the sum of
    the turn's ``llm-end`` usage."""
    problems: list[str] = []
    for i, event in enumerate(events, 1):
        if event.get("seq") != i:
            problems.append(f"event {i} has seq {event.get('seq')!r}, expected {i}")
            break
    if not events:
        return ["no events"]
    if events[-1].get("type") != "exit":
        problems.append(f"last event is {events[-1].get('type')}, not exit")
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    if len(results) > 1:
        problems.append("more than one result")
    if results and results[0] != len(events) - 2:
        problems.append("result is not right before exit")
    turn = 0
    body: list[Mapping[str, Any]] | None = None
    for event in events:
        etype = event.get("type")
        if etype == "turn-started":
            if body is not None:
                problems.append(f"turn {turn + 1} started inside turn {turn}")
            turn += 1
            if event.get("turn") != turn:
                problems.append(f"turn-started says {event.get('turn')!r}, expected {turn}")
            body = []
        elif etype == "turn-complete":
            if body is None:
                problems.append("turn-complete outside a turn")
                continue
            problems.extend(_check_turn(config, turn, body, event))
            body = None
        elif etype in ("ready", "result", "exit") or etype in _CHILD_MADE:
            continue
        elif body is None:
            problems.append(f"{etype} outside a turn")
        else:
            body.append(event)
    if body is not None and events[-1].get("type") == "exit" and events[-1].get("status") == "done":
        problems.append(f"turn {turn} never completed")
    return problems


def _check_turn(config: MockConfig, turn: int, body: list[Mapping[str, Any]], complete: Mapping[str, Any]) -> list[str]:
    got = [_strip(e) for e in body]
    aborted = complete.get("stop-reason") in ("aborted", "error")
    if aborted:
        while got and _is_cancelled_result(got[-1]):
            got.pop()
    if not got and aborted:
        return []  # interrupted before its first step
    if not got or got[0].get("type") != "user":
        return [f"turn {turn} does not start with the user event"]
    text = got[0].get("text", "")
    problems: list[str] = []
    matched = False
    for tools in (True, False):
        want = _expected(config, TurnInput(text=text, kind="prompt" if tools else "finalize", turn=turn, tools=tools))
        if got == want or (aborted and got == want[: len(got)]):
            matched = True
            break
    if not matched:
        want = _expected(config, TurnInput(text=text, kind="prompt", turn=turn, tools=True))
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            if a != b:
                problems.append(f"turn {turn} event {i}: got {a!r}, expected {b!r}")
                break
        else:
            problems.append(f"turn {turn}: got {len(got)} agent events, expected {len(want)}")
    usage: dict[str, Any] = {}
    for e in got:
        if e.get("type") == "llm-end":
            for k, v in (e.get("usage") or {}).items():
                usage[k] = usage.get(k, 0) + v
    if usage and complete.get("usage") != usage:
        problems.append(f"turn {turn} usage {complete.get('usage')!r} is not the sum {usage!r}")
    return problems
