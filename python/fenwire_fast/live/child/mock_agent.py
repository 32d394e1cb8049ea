"""A deterministic scripted mock agent, and a checker for the transcript it produces.

The mock is what tests, ``fenwire demo`` and the benchmarks run as the child's agent. Every turn
follows a script that depends only on the :class:`MockConfig` knobs and the turn (number, input
text, tool-free or not), so a parent can verify that it received the script exactly
(:func:`check_transcript`).

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


# ---------------------------------------------------------------------------------------------
# Transcript checking
#
# This is the oracle the live child is checked against, so it does not use the code under test:
# the wire form of each scripted event is written out below from the wire contract
# (docs/wire-protocol.md; docs/design-decisions.md, "Text bounds" and "normalize"), without
# ``normalize``, ``scrub``, ``first_line``, ``truncate_line`` or the codec. The mock's events are
# simple: no control characters, one long string at most per event, far below the 12 KiB budget.

_ENVELOPE = ("v", "seq", "run", "timestamp")
_CHILD_MADE = ("control-ack", "steering-injected", "follow-up-injected")
#: a display event's ``summary``: the first line of its text, at most this many UTF-8 bytes
_SUMMARY_LIMIT = 160
#: any string field of a display event: at most this many UTF-8 bytes, note included
_STRING_LIMIT = 4096
_ELLIPSIS = "\u2026"
_UNSAFE = frozenset(
    [*map(chr, range(0x00, 0x09)), "\x0b", "\x0c", *map(chr, range(0x0E, 0x20)), *map(chr, range(0x7F, 0xA0))]
)


def _dropped_input(event: Mapping[str, Any]) -> bool:
    """The child's own ``info`` (the queued input it dropped, listed in ``refs``); the mock's
    ``info`` events (its gate announcements) have no ``refs`` and belong to the script."""
    return event.get("type") == "info" and "refs" in event


def _strip(event: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in _ENVELOPE}


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes (never half a character)."""
    return text.encode("utf-8")[: max(0, limit)].decode("utf-8", "ignore")


def _wire_summary(text: str) -> str:
    """The first line, kept whole when it fits 160 bytes, else cut to 157 bytes plus ``…``."""
    line = text.split("\n", 1)[0]
    if _nbytes(line) <= _SUMMARY_LIMIT:
        return line
    return _prefix(line, _SUMMARY_LIMIT - len(_ELLIPSIS.encode("utf-8"))) + _ELLIPSIS


def _wire_string(text: str) -> tuple[str, bool]:
    """A string field as the wire carries it, and whether it was cut.

    Up to 4096 bytes it is unchanged. Longer, it becomes the longest prefix that leaves room for a
    blank line and the note ``[fenwire: kept K of N bytes]`` written with the widest K (4096),
    then the blank line and the note with the real K: 4096 bytes at most in all."""
    if any(c in _UNSAFE or "\ud800" <= c <= "\udfff" for c in text):
        raise ValueError("the transcript oracle does not model escaped characters")
    total = _nbytes(text)
    if total <= _STRING_LIMIT:
        return text, False
    room = _STRING_LIMIT - 2 - len(f"[fenwire: kept {_STRING_LIMIT} of {total} bytes]")
    kept = _prefix(text, room)
    return f"{kept}\n\n[fenwire: kept {_nbytes(kept)} of {total} bytes]", True


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _wire_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """The wire form (without the envelope and ``timestamp``) of one event of the mock's script."""
    etype = event["type"]
    out: dict[str, Any] = {"type": etype}
    cut = False

    def text(key: str, value: str) -> str:
        nonlocal cut
        wired, was_cut = _wire_string(value)
        cut = cut or was_cut
        return wired

    if etype == "user":
        out["text"] = text("text", event["text"])
        out["summary"] = _wire_summary(event["text"])
    elif etype in ("llm-start", "agent-started"):
        out["provider"] = text("provider", event["provider"])
        out["model"] = text("model", event["model"])
    elif etype in ("assistant-text-delta", "assistant-thinking-delta"):
        out["content-index"] = event["content-index"]
        out["delta"] = text("delta", event["delta"])
        out["summary"] = _wire_summary(event["delta"])
    elif etype in ("assistant-text", "assistant-thinking"):
        out["final?"] = event["final?"]
        out["content-index"] = event["content-index"]
        out["text"] = text("text", event["text"])
        out["summary"] = _wire_summary(event["text"])
    elif etype == "assistant-stream-end":
        out["final?"] = event["final?"]
    elif etype == "info":
        out["summary"] = _wire_summary(event["summary"])
    elif etype == "llm-end":
        out["stop-reason"] = event["stop-reason"]
        out["usage"] = dict(event["usage"])
    elif etype == "tool-call":
        out["name"] = event["name"]
        out["id"] = event["id"]
        out["arguments"] = {k: text(k, v) for k, v in event["arguments"].items()}
        out["summary"] = _wire_summary(_compact_json(event["arguments"]))
    elif etype == "tool-result":
        content = event["result"]["content"]
        out["name"] = event["name"]
        out["id"] = event["id"]
        out["tool-call-id"] = event["tool-call-id"]
        out["duration-seconds"] = event["duration-seconds"]
        out["is-error?"] = event["is-error?"]
        out["result"] = {"content": [{"type": c["type"], "text": text("text", c["text"])} for c in content]}
        out["summary"] = _wire_summary(_compact_json(content))
    else:  # pragma: no cover - the script yields nothing else
        raise ValueError(f"the transcript oracle does not know {etype} events")
    if cut:
        out["transport-truncated?"] = True
    return out


def _cancelled_result(call: Mapping[str, Any]) -> dict[str, Any]:
    """What the child writes for a tool call its cut-short turn left open."""
    return {
        "type": "tool-result",
        "name": call["name"],
        "id": call["id"],
        "tool-call-id": call["id"],
        "is-error?": True,
        "result": "cancelled",
        "summary": "cancelled",
    }


def _usage_sum(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for e in events:
        if e.get("type") in ("llm-end", "turn-complete"):
            for k, v in (e.get("usage") or {}).items():
                total[k] = total.get(k, 0) + v
    return total


def _control_type(sent: Any) -> str | None:
    """The type of a control the parent sent: a type string, a ``SentControl`` or a control dict."""
    if sent is None or isinstance(sent, str):
        return sent
    if isinstance(sent, Mapping):
        value = sent.get("type")
    else:
        value = getattr(sent, "type", None)
    return value if isinstance(value, str) else None


def _turn_kinds(events: Sequence[Mapping[str, Any]], controls: Mapping[int, Any] | None) -> dict[int, str | None]:
    """``{turn: "finalize" | "full" | None}``: which script each turn must follow.

    The turn that starts after a ``finalize`` was accepted is the tool-free finalize turn; a turn
    started after only controls of other known types is a full one. ``None`` (either script) when
    a control acknowledged before it is not in ``controls``, or when no controls are given."""
    kinds: dict[int, str | None] = {}
    finalize = unknown = False
    turn = 0
    for event in events:
        etype = event.get("type")
        if etype == "control-ack" and event.get("status") == "accepted":
            ctype = _control_type(controls.get(event.get("ref"))) if controls is not None else None  # type: ignore[arg-type]
            if ctype == "finalize":
                finalize = True
            elif ctype is None:
                unknown = True
        elif etype == "turn-started":
            turn += 1
            kinds[turn] = "finalize" if finalize else None if unknown or controls is None else "full"
            finalize = unknown = False
    return kinds


def _traced(event: Mapping[str, Any]) -> bool:
    return reported_traceparent([event]) is not None


def reported_traceparent(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The traceparent the mock reported among ``events`` (its first ``info`` saying
    :data:`TRACEPARENT_REPORT`), or ``None``."""
    for event in events:
        summary = event.get("summary")
        if event.get("type") == "info" and isinstance(summary, str) and summary.startswith(TRACEPARENT_REPORT):
            return summary[len(TRACEPARENT_REPORT) :]
    return None


def check_transcript(
    config: MockConfig,
    events: Sequence[Mapping[str, Any]],
    *,
    controls: Mapping[int, Any] | None = None,
) -> list[str]:
    """Check a child's event stream against the mock's script; return the problems (empty = exact).

    ``controls``: the controls the parent sent, by ``seq`` (e.g. ``Channel.controls``; values are
    ``SentControl`` objects, control dicts or type strings). With them every turn must follow the
    script its input calls for: the turn a ``finalize`` starts the tool-free one, any other the
    full one. Without them (or for a turn started by a control not listed) either script passes.

    Checks: ``seq`` runs 1, 2, 3, ... without gaps; one ``exit``, last; a ``result`` right before
    it exactly when the status is ``done``, with the usage of every turn and, when the last turn
    that spoke ran to its end, that turn's scripted answer; turns are numbered 1, 2, ... and
    bracketed; inside every turn the agent's events are exactly the wire form of the turn's script
    -- or, only when the turn ended ``aborted`` or ``error``, a prefix of it followed (with
    ``unwind_gate``, for an aborted turn) by the unwinding announcement and then by one
    ``cancelled`` tool result per tool call the prefix left open; ``turn-complete`` carries the
    stop reason and the usage of the ``llm-end`` events the turn sent. The mock's gate
    announcements are part of the script; the child's own ``info`` (the dropped input it lists in
    ``refs``) and the mock's traceparent report may come anywhere."""
    if not events:
        return ["no events"]
    problems: list[str] = []
    for i, event in enumerate(events, 1):
        if event.get("seq") != i:
            problems.append(f"event {i} has seq {event.get('seq')!r}, expected {i}")
            break
    exits = [i for i, e in enumerate(events) if e.get("type") == "exit"]
    last = events[-1]
    if last.get("type") != "exit":
        problems.append(f"last event is {last.get('type')}, not exit")
    if len(exits) > 1:
        problems.append(f"{len(exits)} exit events")
    results = [i for i, e in enumerate(events) if e.get("type") == "result"]
    if len(results) > 1:
        problems.append("more than one result")
    if results and results[0] != len(events) - 2:
        problems.append("result is not right before exit")
    done = last.get("type") == "exit" and last.get("status") == "done"
    if done and not results:
        problems.append("a done run without a result")
    if results and last.get("type") == "exit" and not done:
        problems.append(f"a {last.get('status')} run with a result")
    kinds = _turn_kinds(events, controls)
    turn = 0
    body: list[Mapping[str, Any]] | None = None
    spoke: tuple[int, Mapping[str, Any], bool] | None = None  # last turn that spoke: number, complete, ran to its end
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
            turn_problems, whole = _check_turn(config, turn, kinds.get(turn), body, event)
            problems.extend(turn_problems)
            if any(e.get("type") in ("llm-end", "assistant-text") for e in body):
                spoke = (turn, event, whole)
            body = None
        elif etype == "agent-started" and body is None and config.announce and not turn:
            want = _wire_event({"type": "agent-started", "provider": "mock", "model": "mock-1"})
            if _strip(event) != want:
                problems.append(f"agent-started is {_strip(event)!r}, expected {want!r}")
        elif etype in ("ready", "result", "exit") or etype in _CHILD_MADE or _dropped_input(event) or _traced(event):
            continue
        elif body is None:
            problems.append(f"{etype} outside a turn")
        else:
            body.append(event)
    if body is not None and done:
        problems.append(f"turn {turn} never completed")
    if results:
        problems.extend(_check_result(config, events[results[0]], events, spoke))
    return problems


def _check_result(
    config: MockConfig,
    result: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    spoke: tuple[int, Mapping[str, Any], bool] | None,
) -> list[str]:
    problems: list[str] = []
    usage = _usage_sum(e for e in events if e.get("type") == "turn-complete")
    if result.get("usage", {}) != usage:
        problems.append(f"result usage {result.get('usage')!r} is not the sum of the turns' {usage!r}")
    reason = spoke[1].get("stop-reason") if spoke is not None else "none"
    if result.get("stop-reason") != reason:
        problems.append(f"result stop-reason {result.get('stop-reason')!r}, expected {reason!r}")
    if spoke is not None and spoke[2]:
        want = final_text(config, spoke[0])
        got = result.get("final-text")
        if not (got == want or result.get("truncated?") and isinstance(got, str) and want.startswith(got)):
            problems.append(f"result final-text {got!r} is not turn {spoke[0]}'s answer {want!r}")
    return problems


def _check_turn(
    config: MockConfig,
    turn: int,
    kind: str | None,
    body: list[Mapping[str, Any]],
    complete: Mapping[str, Any],
) -> tuple[list[str], bool]:
    """The problems of one turn, and whether it ran its whole script."""
    problems: list[str] = []
    if complete.get("turn") != turn:
        problems.append(f"turn-complete says {complete.get('turn')!r}, expected {turn}")
    got = [_strip(e) for e in body]
    cut_short = complete.get("stop-reason") in ("aborted", "error")
    aborted = complete.get("stop-reason") == "aborted"
    if not got:
        if not cut_short:
            return [*problems, f"turn {turn} does not start with the user event"], False
        if "usage" in complete:
            problems.append(f"turn {turn} usage {complete.get('usage')!r}, but it made no model call")
        return problems, False  # interrupted before its first step
    text = got[0].get("text")
    if got[0].get("type") != "user" or not isinstance(text, str):
        return [*problems, f"turn {turn} does not start with the user event"], False
    scripts = {"finalize": (False,), "full": (True,)}.get(kind or "", (True, False))
    first_mismatch: list[str] = []
    for tools in scripts:
        request = TurnInput(text=text, kind="prompt" if tools else "finalize", turn=turn, tools=tools)
        try:
            want = [_wire_event(e) for e in script_events(config, request)]
        except ValueError as exc:
            return [*problems, f"turn {turn}: {exc}"], False
        if cut_short:
            n = 0
            while n < min(len(got), len(want)) and got[n] == want[n]:
                n += 1
            answered = {e["tool-call-id"] for e in want[:n] if e["type"] == "tool-result"}
            open_calls = [e for e in want[:n] if e["type"] == "tool-call" and e["id"] not in answered]
            # an aborted turn of a mock with unwind_gate announces its unwinding first
            unwind = [_wire_event(_gate_event(gate_label(turn)))] if config.unwind_gate and aborted else []
            want = want[:n] + unwind + [_cancelled_result(call) for call in open_calls]
            sent = want[:n]
        else:
            sent = want
        if got == want:
            return problems + _check_complete(turn, complete, sent, cut_short), not cut_short
        if not first_mismatch:
            first_mismatch = _first_difference(turn, got, want, "tool-free" if not tools else "full")
    return problems + first_mismatch, False


def _first_difference(turn: int, got: list[dict[str, Any]], want: list[dict[str, Any]], which: str) -> list[str]:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return [f"turn {turn} event {i}: got {a!r}, expected {b!r} ({which} script)"]
    return [f"turn {turn}: got {len(got)} agent events, expected {len(want)} ({which} script)"]


def _check_complete(turn: int, complete: Mapping[str, Any], sent: list[dict[str, Any]], cut_short: bool) -> list[str]:
    """``turn-complete``: the usage of the turn's ``llm-end`` events; a whole turn stops with the
    stop reason of its last one."""
    problems: list[str] = []
    usage = _usage_sum(sent)
    if complete.get("usage", {}) != usage:
        problems.append(f"turn {turn} usage {complete.get('usage')!r} is not the sum {usage!r}")
    if not cut_short:
        reasons = [e["stop-reason"] for e in sent if e["type"] == "llm-end"]
        want = reasons[-1] if reasons else "none"
        if complete.get("stop-reason") != want:
            problems.append(f"turn {turn} stop-reason {complete.get('stop-reason')!r}, expected {want!r}")
    return problems
