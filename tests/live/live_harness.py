"""Run many live-child scenarios at once, with real processes.

A scenario is a generator function ``script(ctx)`` that yields *conditions* (callables taking the
:class:`Ctx`) and acts on the child when each one holds (``ctx.send(...)``, ``ctx.raw(...)``).
:func:`run_scenarios` spawns every scenario's child, drains them all through their channels,
advances each script as its conditions come true, and returns an :class:`Outcome` per scenario
once every child has finished. Running them together keeps the live suite fast on 2 cores.

Nothing here waits for time to pass. "A control arrives while the turn runs" is arranged with the
mock's gate (``gated(...)``): the turn stops at a chosen step, the script waits for its
announcement (``at_gate``), sends the control, waits for its ack (``acked``) and only then lets the
turn go on (``ctx.release()``). Timeouts (``run_scenarios``' ``timeout``, the children's ``grace``)
only guard against hangs: on a slow machine a scenario takes longer, it does not fail.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fenwire_fast
from fenwire_fast.live.child.mock_agent import BLOCKING_LABEL, MockConfig, config_from_mapping, gate_label
from fenwire_fast.live.parent.spawn import LiveChild, spawn

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
#: where the fenwire_fast under test was imported from (the source tree or an installed copy)
PACKAGE_ROOT = Path(fenwire_fast.__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "reference"

Condition = Callable[["Ctx"], bool]
Script = Callable[["Ctx"], Generator[Condition, None, None]]

#: The children's supervision grace in these tests: only a guard against a child that hangs.
GRACE = 15.0
#: How long a scenario set or a wait may take before it counts as hung.
HANG_GUARD = 120.0


def package_path() -> list[str]:
    """``[PACKAGE_ROOT]`` when children need it on PYTHONPATH (a source tree), else ``[]`` (an
    installed package: prepending site-packages could shadow the standard library)."""
    from fenwire_fast.live.parent.spawn import _on_default_path

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
    gate_path: str | None = None

    def release(self) -> None:
        """Open the mock's gate: every turn waiting at it goes on (and later gated steps pass)."""
        assert self.gate_path is not None, "this scenario's mock has no gate"
        release_gate(self.gate_path)

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


def at_gate(turn: int = 1, step: int = 1) -> Condition:
    """Holds once the mock announced that ``turn`` stopped at the gate in ``step``."""
    return seen("info", summary=gate_label(turn, step))


def unwinding(turn: int = 1) -> Condition:
    """Holds once the mock announced that the interrupted ``turn`` stopped at the gate on its way out."""
    return seen("info", summary=gate_label(turn))


def blocking_in_tool(ctx: Ctx) -> bool:
    """Holds once a ``hang="block"`` mock has stopped reading controls (its gate marker says so)."""
    assert ctx.gate_path is not None, "this scenario's mock has no gate file"
    try:
        with open(ctx.gate_path + ".blocked", encoding="utf-8") as handle:
            return handle.read().strip() == BLOCKING_LABEL
    except FileNotFoundError:
        return False


def acked(*names: str) -> Condition:
    """Holds once every control sent under these names (``ctx.send(..., name=...)``) has its ack."""

    def cond(ctx: Ctx) -> bool:
        refs = {e.get("ref") for e in ctx.events if e["type"] == "control-ack"}
        return all(ctx.sent[name] in refs for name in names)

    return cond


def gated(mock: dict[str, Any], steps: Iterable[int] = (1,), *, unwind: bool = False) -> dict[str, Any]:
    """``mock`` with the gate on at these steps (and on the way out of an interrupted turn); the
    harness gives each scenario its own gate file."""
    return {**mock, "gate_steps": list(steps), "unwind_gate": unwind}


def release_gate(path: str) -> None:
    """Create the gate file (idempotent): a turn waiting at the gate goes on at its next look."""
    with open(path, "a", encoding="utf-8"):
        pass


def wait_gate_blocked(path: str, label: str | None = None, *, timeout: float = HANG_GUARD) -> str:
    """Wait until a turn stopped at the gate ``path`` (its ``.blocked`` marker, holding ``label``
    when given); return what the marker says. The timeout only guards against a hang."""
    marker = path + ".blocked"
    end = time.monotonic() + timeout
    while True:
        try:
            with open(marker, encoding="utf-8") as handle:
                said = handle.read().strip()
        except FileNotFoundError:
            said = ""
        if said and (label is None or said == label):
            return said
        if time.monotonic() > end:
            raise TimeoutError(f"no turn stopped at the gate {path} ({label or 'any step'}) within {timeout} s")
        time.sleep(0.01)


def wait_for_event(
    child: LiveChild,
    predicate: Callable[[dict[str, Any]], bool],
    events: list[dict[str, Any]] | None = None,
    *,
    timeout: float = HANG_GUARD,
) -> dict[str, Any]:
    """Drain ``child`` (appending to ``events`` when given) until an event matching ``predicate``
    arrives, and return it; ``AssertionError`` if the child finishes first. The timeout only guards
    against a hang."""
    got = events if events is not None else []
    end = time.monotonic() + timeout
    start = len(got)
    while True:
        for event in got[start:]:
            if predicate(event):
                return event
        start = len(got)
        if child.finished:
            raise AssertionError(f"child {child.run} finished without the awaited event; it sent {got}")
        messages, _ = child.poll()
        got.extend(messages)
        if time.monotonic() > end:
            raise TimeoutError(f"child {child.run}: no awaited event within {timeout} s")
        if not messages:
            time.sleep(0.005)


def group_members(pgid: int) -> list[str]:
    """The processes of group ``pgid`` (``pid state command``), from ``/proc``; ``[]`` elsewhere."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        command, _, rest = stat.partition("(")[2].rpartition(")")
        fields = rest.split()
        if len(fields) > 2 and fields[2] == str(pgid):
            found.append(f"{name} {fields[0]} {command}")
    return found


def group_empty(pgid: int) -> bool:
    """No process is left in group ``pgid`` (``killpg(pgid, 0)`` raises ``ProcessLookupError``)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def assert_groups_empty(children: Iterable[LiveChild], *, timeout: float = 10.0) -> None:
    """Wait (at most ``timeout`` seconds) until every child's process group is empty; fail naming
    what is left. A killed process is gone at once, but a zombie stays in its group until its new
    parent reaps it (here PID 1, which may take a second or two): hence the wait."""
    pgids = [c.pgid for c in children if c.pgid > 0]  # 0: an adopted run whose process was never found
    end = time.monotonic() + timeout
    while True:
        left = [p for p in pgids if not group_empty(p)]
        if not left:
            return
        if time.monotonic() > end:
            raise AssertionError(
                f"process groups not empty after {timeout} s: " + "; ".join(f"{p}: {group_members(p)}" for p in left)
            )
        time.sleep(0.02)


def process_gone(pid: int) -> bool:
    """``pid`` has ended (gone, or a zombie waiting to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def wait_gone(pids: Iterable[int], *, timeout: float = 10.0) -> None:
    """Wait (at most ``timeout`` seconds) until every process in ``pids`` has ended."""
    pids = list(pids)
    end = time.monotonic() + timeout
    while True:
        left = [p for p in pids if not process_gone(p)]
        if not left:
            return
        if time.monotonic() > end:
            raise AssertionError(f"processes still running after {timeout} s: {left}")
        time.sleep(0.02)


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
    mock: dict[str, Any] | None = None

    @property
    def config(self) -> MockConfig:
        """The mock config the child ran with (its gate file included), for ``check_transcript``."""
        return config_from_mapping(self.mock or {})

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


def run_scenarios(
    scenarios: Iterable[Scenario], *, timeout: float = HANG_GUARD, grace: float = GRACE
) -> dict[str, Outcome]:
    """Run every scenario concurrently; return the outcomes by name (children cleaned up).

    A scenario whose mock uses the gate gets its own gate file (``ctx.gate_path``). ``timeout``
    only guards against a hang: scenarios still running then are marked ``timed_out``."""
    outcomes: dict[str, Outcome] = {}
    scripts: dict[str, Generator[Condition, None, None] | None] = {}
    waiting: dict[str, Condition | None] = {}
    gates = tempfile.mkdtemp(prefix="fenwire-gates-")
    try:
        for sc in scenarios:
            kwargs: dict[str, Any] = {"grace": grace, "env": child_env(sc.kwargs.pop("env", None))}
            kwargs.update(sc.kwargs)
            mock = sc.mock
            gate_path = None
            if mock is not None and (mock.get("gate_steps") or mock.get("unwind_gate") or mock.get("hang") == "block"):
                gate_path = os.path.join(gates, re.sub(r"[^A-Za-z0-9_.-]", "_", sc.name) + ".gate")
                mock = {**mock, "gate_path": gate_path}
            child = spawn(
                sc.prompt,
                run=sc.kwargs.get("run", f"run-{sc.name}"),
                mock=mock,
                **{k: v for k, v in kwargs.items() if k != "run"},
            )
            ctx = Ctx(child=child, gate_path=gate_path)
            outcomes[sc.name] = Outcome(sc.name, child, ctx, mock=mock)
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
        shutil.rmtree(gates, ignore_errors=True)
    return outcomes


def rerun_until_arranged(
    outcome: Outcome, make: Callable[[float], Scenario], arranged: Callable[[Outcome], bool], seconds: float
) -> Outcome:
    """For a scenario with a deadline (``make(seconds)``): the deadline is fixed when the child
    starts, so on a slow enough machine it can pass before the child reached the point the test
    arranged (``arranged`` is false). Then the scenario is run again, alone, with twice the time,
    until the arrangement held or the time exceeds the hang guard. A slow machine makes the test
    slower, never wrong."""
    while not arranged(outcome) and seconds * 2 <= HANG_GUARD:
        seconds *= 2
        print(f"{outcome.name}: not arranged before its deadline; again with {seconds:g} s", file=sys.stderr)
        scenario = make(seconds)
        outcome = run_scenarios([scenario])[scenario.name]
    return outcome


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


@contextmanager
def ray_cluster(*, nodes: int = 2) -> Iterator[Any]:
    """A Ray ``Cluster`` on this machine: a head with no CPUs (so no actor lands on it) and
    ``nodes`` nodes of one CPU each, whose workers find this ``fenwire_fast`` and these test
    modules through ``PYTHONPATH``; shut down, with the driver's connection, on exit."""
    import ray
    from ray.cluster_utils import Cluster

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), str(HERE), *([old] if old else [])])
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        c.fenwire_nodes = [c.add_node(num_cpus=1) for _ in range(nodes)]
        c.wait_for_nodes()
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def recorded_run(
    state_path: str | os.PathLike[str], run: str, *, committed_seq: int = 0, **manifest_fields: Any
) -> Any:
    """A durable run's directory and manifest as a parent leaves them mid-turn: the prompt sent,
    the child started the turn and wrote no more (four events), ``committed_seq`` of them
    committed. Returns the saved :class:`~fenwire_fast.live.parent.durable.Manifest`."""
    import json

    from fenwire_fast.live.parent import durable

    state = durable.StateDir(state_path)
    try:
        name, directory = state.new_run_directory(run)
        manifest = durable.new_manifest(run, name, directory, command=["agent"], **manifest_fields)
        manifest.committed_seq = committed_seq
        control = [{"v": 1, "seq": 1, "type": "prompt", "run": run, "text": "go"}]
        events = [
            {"v": 1, "seq": 1, "type": "ready", "run": run},
            {"v": 1, "seq": 2, "type": "control-ack", "run": run, "ref": 1, "status": "accepted"},
            {"v": 1, "seq": 3, "type": "turn-started", "run": run, "turn": 1},
            {"v": 1, "seq": 4, "type": "user", "run": run, "text": "go", "summary": "go"},
        ]
        for path, lines in ((manifest.control_path, control), (manifest.event_path, events), (manifest.log_path, [])):
            with open(path, "w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(line) + "\n" for line in lines)
            os.chmod(path, 0o600)
        state.save(manifest)
    finally:
        state.close()
    return manifest


def drain_fleet(fleet: Any, events: dict[str, list[dict[str, Any]]], until: Callable[[], bool]) -> None:
    """Take a fleet's events into ``events`` (per run) until ``until()`` holds; the time limit
    only guards against a hang."""
    end = time.monotonic() + HANG_GUARD
    while not until():
        assert time.monotonic() < end, f"hung: {[repr(c) for c in fleet.children]}"
        for child, messages in fleet.poll_batches(timeout=0.5):
            events.setdefault(child.run, []).extend(messages)


@contextmanager
def nats_server() -> Iterator[Any]:
    """A real ``nats-server -js`` on a free loopback port (:class:`fenwire_fast.forward.LocalServer`),
    closed with its store on exit; the test is skipped when no binary is found."""
    import pytest
    from fenwire_fast.forward.server import LocalServer, ServerUnavailable

    try:
        local = LocalServer().start()
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield local
    finally:
        local.close()
