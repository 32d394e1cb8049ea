"""The child's polling cadence (30 ms per tick while a turn runs, 300 ms idle, a size check between
reads), observed in-process on a fake clock: the presenter's sleeps only move the clock forward,
so what is measured is the schedule itself, never how fast the machine ran it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child import BUSY_TICK, IDLE_TICK, Presenter
from fenwire_fast.live.child import presenter as presenter_module
from fenwire_fast.live.child import runner as runner_module
from fenwire_fast.live.child import turn as turn_module
from fenwire_fast.live.child.mock_agent import MockAgent, MockConfig


class FakeClock:
    """``time``, ``monotonic`` and ``sleep`` for the presenter: ``sleep`` records the delay, runs
    ``on_sleep`` (where the test plays the parent) and advances the clock; nothing else moves it."""

    def __init__(self) -> None:
        self.wall = time.time()
        self.mono = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: Callable[[float], None] = lambda seconds: None

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.on_sleep(seconds)
        self.wall += seconds
        self.mono += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    for module in (presenter_module, runner_module, turn_module):
        monkeypatch.setattr(module, "time", fake)
    return fake


def _line(seq: int, type_: str, **payload: Any) -> bytes:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": "run", **payload}).encode() + b"\n"


def test_sleeps_follow_the_cadence(tmp_path: Path, clock: FakeClock) -> None:
    control = tmp_path / "c.jsonl"
    events = tmp_path / "e.jsonl"
    control.write_bytes(_line(1, "prompt", text="go"))
    active: list[bool] = []  # per sleep: a turn was running
    reads: list[int] = []
    presenter = Presenter(
        MockAgent(MockConfig(steps=2, deltas=5, delay=0.05)), control_path=str(control), event_path=str(events)
    )
    idle_sleeps = 0

    def parent(seconds: float) -> None:
        nonlocal idle_sleeps
        active.append(presenter.turns.current is not None)
        if b'"turn-complete"' in events.read_bytes():
            idle_sleeps += 1
            if idle_sleeps == 3:  # the run has been idle for three ticks: close it
                with open(control, "ab") as f:
                    f.write(_line(2, "close"))

    clock.on_sleep = parent
    real_read = presenter._reader.read

    def counting_read() -> tuple[list[bytes], str]:
        out = real_read()
        reads.append(len(out[0]))
        return out

    presenter._reader.read = counting_read  # type: ignore[method-assign]
    assert presenter.run_loop() == 0
    busy = [s for s, on in zip(clock.sleeps, active, strict=True) if on]
    idle = [s for s, on in zip(clock.sleeps, active, strict=True) if not on]
    # every Wait(0.05) of the 10 deltas is slept in busy ticks: 30 ms, then the 20 ms left
    assert busy == pytest.approx([BUSY_TICK, 0.05 - BUSY_TICK] * 10)
    assert idle == [IDLE_TICK] * 3
    # the control file is checked before every sleep: one read per loop at least
    assert len(reads) >= len(clock.sleeps)
    lines = [json.loads(x) for x in events.read_bytes().splitlines()]
    assert lines[-1]["type"] == "exit" and lines[-1]["status"] == "done"


def test_idle_sleep_stops_at_the_deadline(tmp_path: Path, clock: FakeClock) -> None:
    presenter = Presenter(
        MockAgent(),
        control_path=str(tmp_path / "c.jsonl"),
        event_path=str(tmp_path / "e.jsonl"),
        deadline=clock.time() + 0.75,
    )
    assert presenter.run_loop() == 1
    assert presenter.exit_status == "timed-out"
    # idle ticks, the last one cut short by the deadline
    assert clock.sleeps == pytest.approx([IDLE_TICK, IDLE_TICK, 0.75 - 2 * IDLE_TICK])
    lines = [json.loads(x) for x in (tmp_path / "e.jsonl").read_bytes().splitlines()]
    assert [x["type"] for x in lines] == ["ready", "exit"]
    assert lines[1]["error"] == "run deadline exceeded"
