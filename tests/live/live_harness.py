"""Run many live-child scenarios at once, with real processes.

A scenario is a generator function ``script(ctx)`` that yields *conditions* (callables taking the
:class:`Ctx`) and acts on the child when each one holds (``ctx.send(...)``, ``ctx.raw(...)``).
:func:`run_scenarios` spawns every scenario's child, drains them all through their channels,
advances each script as its conditions come true, and returns an :class:`Outcome` per scenario
once every child has finished. Running them together keeps the live suite fast on 2 cores.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fenwire_fast
from fenwire_fast.live.spawn import LiveChild, spawn

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
#: where the fenwire_fast under test was imported from (the source tree or an installed copy)
PACKAGE_ROOT = Path(fenwire_fast.__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "reference"

Condition = Callable[["Ctx"], bool]
Script = Callable[["Ctx"], Generator[Condition, None, None]]


def package_path() -> list[str]:
    """``[PACKAGE_ROOT]`` when children need it on PYTHONPATH (a source tree), else ``[]`` (an
    installed package: prepending site-packages could shadow the standard library)."""
    from fenwire_fast.live.spawn import _on_default_path

    return [] if _on_default_path(str(PACKAGE_ROOT)) else [str(PACKAGE_ROOT)]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment additions so children find the package and the test agents."""
    paths = package_path() + [str(HERE)]
    old = os.environ.get("PYTHONPATH")
    if old:
        paths.append(old)
    env = {"PYTHONPATH": os.pathsep.join(paths)}
    if extra:
        env.update(extra)
    return env


@dataclass
class Ctx:
    """What a script sees: the child, every event so far, and the controls it sent."""

    child: LiveChild
    events: list[dict[str, Any]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def send(self, type_: str, payload: dict[str, Any] | None = None, *, name: str | None = None) -> int:
        seq = self.child.send(type_, payload)
        self.sent[name or type_] = seq
        return seq

    def raw(self, data: bytes) -> None:
        """Append raw bytes to the control file (the channel's seq counter does not move)."""
        fd = os.open(self.child.control_path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def count(self, type_: str, **fields: Any) -> int:
        return sum(1 for e in self.events if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()))


def seen(type_: str, n: int = 1, **fields: Any) -> Condition:
    """Holds once ``n`` events of ``type_`` (with these field values) have arrived."""
    return lambda ctx: ctx.count(type_, **fields) >= n


def elapsed(seconds: float) -> Condition:
    """Holds ``seconds`` after the scenario started."""
    return lambda ctx: time.monotonic() - ctx.started >= seconds


def wall_clock(unix: float) -> Condition:
    """Holds once the wall clock reaches ``unix``."""
    return lambda ctx: time.time() >= unix


@dataclass
class Scenario:
    name: str
    script: Script | None = None
    prompt: str | None = "Do the task."
    mock: dict[str, Any] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    before_spawn: Callable[[LiveChild], None] | None = None


@dataclass
class Outcome:
    name: str
    child: LiveChild
    ctx: Ctx
    timed_out: bool = False
    script_error: BaseException | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.ctx.events

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    @property
    def status(self) -> str:
        return self.child.status

    def acks(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "control-ack"]

    def ack(self, name: str) -> dict[str, Any]:
        seq = self.ctx.sent[name]
        found = [e for e in self.acks() if e.get("ref") == seq]
        assert len(found) == 1, f"control {name} (seq {seq}) acked {len(found)} times\n{self.describe()}"
        return found[0]

    def index(self, type_: str, **fields: Any) -> int:
        for i, e in enumerate(self.events):
            if e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()):
                return i
        raise AssertionError(f"{self.name}: no {type_} {fields} in {self.types}")

    def describe(self) -> str:
        lines = [
            f"{self.name}: status {self.status}, rc {self.child.returncode}, "
            f"error {self.child.error!r}, timed out {self.timed_out}"
        ]
        for e in self.events:
            short = {k: v for k, v in e.items() if k not in ("v", "run", "timestamp", "summary")}
            text = repr(short)
            lines.append("  " + (text if len(text) < 200 else text[:200] + "..."))
        lines.append("  log: " + self.child.log_text()[-2000:])
        return "\n".join(lines)


def run_scenarios(scenarios: Iterable[Scenario], *, timeout: float = 60.0, grace: float = 5.0) -> dict[str, Outcome]:
    """Run every scenario concurrently; return the outcomes by name (children cleaned up)."""
    outcomes: dict[str, Outcome] = {}
    scripts: dict[str, Generator[Condition, None, None] | None] = {}
    waiting: dict[str, Condition | None] = {}
    try:
        for sc in scenarios:
            kwargs: dict[str, Any] = {"grace": grace, "env": child_env(sc.kwargs.pop("env", None))}
            kwargs.update(sc.kwargs)
            child = spawn(
                sc.prompt,
                run=sc.kwargs.get("run", f"run-{sc.name}"),
                mock=sc.mock,
                **{k: v for k, v in kwargs.items() if k != "run"},
            )
            ctx = Ctx(child=child)
            outcomes[sc.name] = Outcome(sc.name, child, ctx)
            scripts[sc.name] = sc.script(ctx) if sc.script is not None else None
            waiting[sc.name] = None
            _advance(outcomes[sc.name], scripts, waiting)
        end = time.monotonic() + timeout
        while any(not o.child.finished for o in outcomes.values()):
            progressed = False
            for outcome in outcomes.values():
                if outcome.child.finished:
                    continue
                messages, _ = outcome.child.poll()
                if messages:
                    outcome.ctx.events.extend(messages)
                    progressed = True
                _advance(outcome, scripts, waiting)
            if time.monotonic() > end:
                for outcome in outcomes.values():
                    if not outcome.child.finished:
                        outcome.timed_out = True
                break
            if not progressed:
                time.sleep(0.005)
    finally:
        for outcome in outcomes.values():
            outcome.child.cleanup()
    return outcomes


def _advance(outcome: Outcome, scripts: dict[str, Any], waiting: dict[str, Condition | None]) -> None:
    name = outcome.name
    gen = scripts.get(name)
    if gen is None:
        return
    while True:
        cond = waiting[name]
        if cond is not None and not cond(outcome.ctx):
            return
        try:
            waiting[name] = next(gen)
        except StopIteration:
            scripts[name] = None
            return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            outcome.script_error = exc
            scripts[name] = None
            return


def python_child_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "fenwire_fast", "child", *args]
