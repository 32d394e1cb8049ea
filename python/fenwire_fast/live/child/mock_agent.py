"""A deterministic scripted mock agent.

The mock is what tests, ``fenwire demo`` and the benchmarks run as the child's agent. Every turn
follows a script that depends only on the :class:`MockConfig` knobs and the turn (number, input
text, tool-free or not), so a parent can verify that it received the script exactly
(:func:`fenwire_fast.testing.check_transcript`).

A turn of ``steps`` steps (one step for the tool-free finalize turn). Each step:

1. between steps: ``take_steering()`` (steering injections show up here);
2. ``llm-start``; ``thinking`` thinking deltas and one ``assistant-thinking`` (when ``thinking > 0``);
3. ``deltas`` text deltas of ``delta_bytes`` bytes each (a :class:`~fenwire_fast.live.child.agent.Wait` of
   ``delay`` seconds before each one), one ``assistant-text`` holding their concatenation (the last
   step's carries the final answer instead: ``final_bytes`` bytes, with multi-byte characters, and
   ``final?: true``), ``assistant-stream-end``;
4. ``llm-end`` with stop reason ``tool-use`` (or ``stop`` on the last step) and a usage;
5. on every step but the last, ``tools`` tool calls, each followed by its ``tool-result`` whose
   text is ``tool_result_bytes`` bytes.

The first event of a turn is ``user`` with the turn's input text. In a traced run (the child got
``TRACEPARENT``, see ``ctx.traceparent``), the first turn opens with an ``info`` event before it,
whose summary is ``mock traceparent: `` and the traceparent (:func:`reported_traceparent`).

Failure modes, counted in steps across the whole run (1-based; 0 = never): ``fail_step`` raises
in that step, ``hang_step`` hangs that step's first tool (``hang="yield"`` keeps yielding
``Wait`` forever, so cancel/finalize/deadline still work; ``hang="block"`` blocks in ``time.sleep``,
so only the parent's kill backstop helps; with ``gate_path`` set it first writes
``mock blocking in tool`` to ``<gate_path>.blocked``, so a test knows no control will be read), ``exit_step`` ends the process at once with
``exit_code`` (no ``exit`` line). ``unwind_delay`` makes an interrupted turn take that many
seconds (cooperatively) to unwind, so the run can be observed in its terminal state.

The gate lets a test decide when a turn moves on, instead of racing it. With ``gate_path`` set,
every step whose number (within its turn, from 1; the finalize turn has one step) is in
``gate_steps`` stops at its start, after the steering of the step boundary was taken: the turn
yields an ``info`` event whose summary is ``mock gate: turn T step S``, writes that text to
``<gate_path>.blocked``, and then yields ``Wait`` until the file ``gate_path`` exists. Controls are
read and acknowledged meanwhile, and cancel, finalize or a deadline interrupt the turn at once. With
``unwind_gate`` an interrupted turn also stops on its way out (``mock gate: turn T unwinding``), so
the run stays in its terminal state, reading controls, until the test releases it. The
announcements are part of the script: the same config always yields the same events.

Knobs come from ``FENWIRE_MOCK`` (a JSON object; ``snake_case`` or ``kebab-case`` keys) and/or the
child's command-line flags (``--steps 3 --delay 0.01 ...``), flags winning.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..._moved import moved_name
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
    "MOCK_ENV",
    "GATE_POLL",
    "gate_label",
    "TRACEPARENT_REPORT",
    "reported_traceparent",
]

MOCK_ENV = "FENWIRE_MOCK"
#: the summary of the ``info`` event the mock opens a traced run's first turn with, before the
#: traceparent it got (``ctx.traceparent``)
TRACEPARENT_REPORT = "mock traceparent: "
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
    gate_path: str = ""
    gate_steps: tuple[int, ...] = ()
    unwind_gate: bool = False

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
        for name in ("announce", "unwind_gate"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"mock knob {name} must be true or false")
        if not isinstance(self.gate_path, str):
            raise ConfigError(f"mock knob gate_path must be a string, not {self.gate_path!r}")
        steps = self.gate_steps
        if not isinstance(steps, tuple) or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in steps):
            raise ConfigError(f"mock knob gate_steps must list step numbers of at least 1, not {steps!r}")
        if (steps or self.unwind_gate) and not self.gate_path:
            raise ConfigError("mock knobs gate_steps and unwind_gate need gate_path")


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
        if name == "gate_steps":
            value = _step_numbers(value)
        changes[name] = value
    config = replace(base or MockConfig(), **changes)
    config.check()
    return config


def _step_numbers(value: Any) -> Any:
    """``gate_steps`` as a sorted tuple: from ``"1,3"``, ``[1, 3]`` or ``2`` (a value of another
    kind is returned as it is, for :meth:`MockConfig.check` to refuse)."""
    if isinstance(value, str):
        try:
            return tuple(sorted({int(part) for part in value.replace(" ", "").split(",") if part}))
        except ValueError:
            return value
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        return tuple(sorted(set(value)))
    return value


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


#: How often a turn stopped at the gate looks for the gate file (one ``Wait`` each time).
#: what ``<gate_path>.blocked`` says once a ``hang="block"`` tool has stopped reading controls
BLOCKING_LABEL = "mock blocking in tool"
GATE_POLL = 0.05
GATE_PREFIX = "mock gate: "


def gate_label(turn: int, step: int | None = None) -> str:
    """The summary of the ``info`` event a turn yields when it stops at the gate: ``mock gate: turn
    T step S`` at a gated step, ``mock gate: turn T unwinding`` (``step`` ``None``) on its way out."""
    where = "unwinding" if step is None else f"step {step}"
    return f"{GATE_PREFIX}turn {turn} {where}"


def _gate_event(label: str) -> dict[str, Any]:
    return {"type": "info", "summary": label}


# Script items: ("step",), ("boundary",), ("gate", label), ("wait", seconds), ("event", dict),
# ("tool", call, result)
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
        if step in config.gate_steps:
            yield ("gate", gate_label(turn, step))
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
        elif item[0] == "gate":
            out.append(_gate_event(item[1]))
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
        traceparent = getattr(ctx, "traceparent", None)
        if request.turn == 1 and traceparent is not None:
            yield {"type": "info", "summary": TRACEPARENT_REPORT + str(traceparent)}
        try:
            result = yield from self._steps(request, ctx)
        except TurnInterrupted:
            if self.config.unwind_gate:
                label = gate_label(request.turn)
                yield _gate_event(label)
                yield from self._gate(label)
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
            elif kind == "gate":
                yield _gate_event(item[1])
                yield from self._gate(item[1])
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
                        if config.gate_path:
                            self._mark(BLOCKING_LABEL)  # no control is read from here on
                        time.sleep(config.hang_seconds)
                    else:
                        end = time.monotonic() + config.hang_seconds
                        while time.monotonic() < end:
                            yield Wait(0.05)
                yield item[2]
        return None

    def _gate(self, label: str) -> Iterator[Wait]:
        """Say where the turn stopped (``<gate_path>.blocked``), then wait until ``gate_path`` exists."""
        self._mark(label)
        while not os.path.exists(self.config.gate_path):
            yield Wait(GATE_POLL)

    def _mark(self, label: str) -> None:
        """Write ``label`` to ``<gate_path>.blocked``, whole or not at all (a reader polls it)."""
        marker = self.config.gate_path + ".blocked"
        scratch = f"{marker}.{os.getpid()}"
        with open(scratch, "w", encoding="utf-8") as handle:
            handle.write(label + "\n")
        os.replace(scratch, marker)


def make_agent(config: dict[str, Any] | None = None) -> MockAgent:
    """Factory for ``--agent fenwire_fast.live.child.mock_agent:make_agent`` (knobs from the argument or ``FENWIRE_MOCK``)."""
    if config is None:
        return MockAgent(config_from_env())
    return MockAgent(config_from_mapping(config))


def reported_traceparent(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The traceparent the mock reported among ``events`` (its first ``info`` saying
    :data:`TRACEPARENT_REPORT`), or ``None``."""
    for event in events:
        summary = event.get("summary")
        if event.get("type") == "info" and isinstance(summary, str) and summary.startswith(TRACEPARENT_REPORT):
            return summary[len(TRACEPARENT_REPORT) :]
    return None


def __getattr__(name: str) -> Any:
    """``check_transcript`` moved to :mod:`fenwire_fast.testing.transcript`: found there, with a warning."""
    return moved_name(__name__, name)
