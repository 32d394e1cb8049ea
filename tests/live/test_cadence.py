"""The child's polling cadence (30 ms per tick while a turn runs, 300 ms idle, a size check between
reads), observed in-process by recording the presenter's sleeps and reads."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child import BUSY_TICK, IDLE_TICK, Presenter
from fenwire_fast.live.child import presenter as presenter_module
from fenwire_fast.live.mock_agent import MockAgent, MockConfig


def _line(seq: int, type_: str, **payload: Any) -> bytes:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": "run", **payload}).encode() + b"\n"


def test_sleeps_follow_the_cadence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    control = tmp_path / "c.jsonl"
    events = tmp_path / "e.jsonl"
    control.write_bytes(_line(1, "prompt", text="go"))
    sleeps: list[tuple[float, bool]] = []  # (seconds, a turn was active)
    reads: list[int] = []
    real_sleep = time.sleep
    presenter: Presenter

    def fake_sleep(seconds: float) -> None:
        sleeps.append((seconds, presenter.turns.current is not None))
        real_sleep(min(seconds, 0.01))  # keep the test fast

    monkeypatch.setattr(presenter_module.time, "sleep", fake_sleep)
    presenter = Presenter(
        MockAgent(MockConfig(steps=2, deltas=5, delay=0.05)), control_path=str(control), event_path=str(events)
    )
    real_read = presenter._reader.read

    def counting_read() -> tuple[list[bytes], str]:
        out = real_read()
        reads.append(len(out[0]))
        return out

    presenter._reader.read = counting_read  # type: ignore[method-assign]

    def closer() -> None:
        while b'"turn-complete"' not in events.read_bytes():
            real_sleep(0.005)
        real_sleep(0.05)
        with open(control, "ab") as f:
            f.write(_line(2, "close"))

    t = threading.Thread(target=closer)
    t.start()
    assert presenter.run_loop() == 0
    t.join()
    busy = [s for s, active in sleeps if active]
    idle = [s for s, active in sleeps if not active]
    assert busy and all(0 < s <= BUSY_TICK for s in busy)
    assert idle and all(s == IDLE_TICK for s in idle)
    # the control file is checked before every sleep: one read per loop at least
    assert len(reads) >= len(sleeps)
    lines = [json.loads(x) for x in events.read_bytes().splitlines()]
    assert lines[-1]["type"] == "exit" and lines[-1]["status"] == "done"


def test_idle_sleep_stops_at_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = time.sleep

    def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(presenter_module.time, "sleep", fake_sleep)
    presenter = Presenter(
        MockAgent(),
        control_path=str(tmp_path / "c.jsonl"),
        event_path=str(tmp_path / "e.jsonl"),
        deadline=time.time() + 0.1,
    )
    assert presenter.run_loop() == 1
    assert presenter.exit_status == "timed-out"
    assert sleeps and all(s < IDLE_TICK for s in sleeps)  # idle sleeps cut short by the deadline
    lines = [json.loads(x) for x in (tmp_path / "e.jsonl").read_bytes().splitlines()]
    assert [x["type"] for x in lines] == ["ready", "exit"]
    assert lines[1]["error"] == "run deadline exceeded"
