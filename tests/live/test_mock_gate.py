"""The mock's gate: a turn stops at a gated step until the gate file exists, controls still
interrupt it there, an interrupted turn can stop on its way out, the announcements are part of the
script the oracle checks, and the knobs are validated. In process, and once through a real child."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child import Presenter
from fenwire_fast.live.child.agent import TurnInput, TurnInterrupted, Wait
from fenwire_fast.live.child.mock_agent import (
    ConfigError,
    MockAgent,
    config_from_env,
    config_from_mapping,
    gate_label,
    script_events,
)
from fenwire_fast.live.parent.spawn import spawn
from fenwire_fast.testing import check_transcript
from live_harness import GRACE, child_env, release_gate, wait_for_event, wait_gate_blocked


class _Ctx:
    run = "run"

    def take_steering(self) -> list[str]:
        return []


def _line(seq: int, type_: str, **payload: Any) -> bytes:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": "run", **payload}).encode() + b"\n"


def test_knobs_parse_and_validate(tmp_path: Path) -> None:
    gate = str(tmp_path / "gate")
    assert config_from_mapping({"gate_path": gate, "gate-steps": "2, 1"}).gate_steps == (1, 2)
    assert config_from_mapping({"gate_path": gate, "gate_steps": [3, 1, 3]}).gate_steps == (1, 3)
    assert config_from_mapping({"gate_path": gate, "gate_steps": 2}).gate_steps == (2,)
    env = config_from_env({"FENWIRE_MOCK": json.dumps({"gate-path": gate, "gate-steps": [1], "unwind-gate": True})})
    assert (env.gate_path, env.gate_steps, env.unwind_gate) == (gate, (1,), True)
    for bad, message in (
        ({"gate_path": gate, "gate_steps": "1,x"}, "gate_steps"),
        ({"gate_path": gate, "gate_steps": [0]}, "gate_steps"),
        ({"gate_path": gate, "gate_steps": [True]}, "gate_steps"),
        ({"gate_path": gate, "unwind_gate": "yes"}, "unwind_gate"),
        ({"gate_path": 3}, "gate_path"),
        ({"gate_steps": [1]}, "need gate_path"),
        ({"unwind_gate": True}, "need gate_path"),
    ):
        with pytest.raises(ConfigError, match=message):
            config_from_mapping(bad)


def test_the_announcements_are_in_the_script(tmp_path: Path) -> None:
    config = config_from_mapping({"steps": 3, "deltas": 1, "gate_path": str(tmp_path / "g"), "gate_steps": [1, 3]})
    events = script_events(config, TurnInput("go", "prompt", 2))
    infos = [(i, e["summary"]) for i, e in enumerate(events) if e["type"] == "info"]
    assert [s for _, s in infos] == [gate_label(2, 1), gate_label(2, 3)]
    for i, _ in infos:  # each right before its step's model call
        assert events[i + 1]["type"] == "llm-start"
    final = script_events(config, TurnInput("stop", "finalize", 3, tools=False))
    assert [e["summary"] for e in final if e["type"] == "info"] == [gate_label(3, 1)]
    assert gate_label(1) == "mock gate: turn 1 unwinding"


def test_a_gated_step_waits_for_the_gate_file(tmp_path: Path) -> None:
    gate = str(tmp_path / "gate")
    agent = MockAgent(config_from_mapping({"steps": 2, "deltas": 1, "gate_path": gate, "gate_steps": [2]}))
    turn = agent.turn(TurnInput("go", "prompt", 1), _Ctx())
    items = []
    for item in turn:
        items.append(item)
        if isinstance(item, Wait):
            break
    assert items[-2] == {"type": "info", "summary": gate_label(1, 2)}
    assert wait_gate_blocked(gate, timeout=0) == gate_label(1, 2)
    # however often it is resumed, it goes on waiting until the gate file exists
    assert all(isinstance(next(turn), Wait) for _ in range(50))
    release_gate(gate)
    rest = list(turn)
    assert rest[0]["type"] == "llm-start" and not any(isinstance(x, Wait) for x in rest)


def test_an_interrupt_ends_the_wait_and_unwinding_waits_too(tmp_path: Path) -> None:
    gate = str(tmp_path / "gate")
    config = config_from_mapping({"steps": 2, "gate_path": gate, "gate_steps": [1], "unwind_gate": True})
    turn = MockAgent(config).turn(TurnInput("go", "prompt", 1), _Ctx())
    while not isinstance(next(turn), Wait):
        pass
    assert turn.throw(TurnInterrupted("cancel")) == {"type": "info", "summary": gate_label(1)}
    assert all(isinstance(next(turn), Wait) for _ in range(50))
    assert wait_gate_blocked(gate, gate_label(1), timeout=0) == gate_label(1)
    release_gate(gate)
    with pytest.raises(TurnInterrupted):
        next(turn)


def test_a_presenter_run_stopped_at_the_gate_is_driven_by_controls(tmp_path: Path) -> None:
    """A whole run in a thread: the turn is held at the gate while a steer is acknowledged, so the
    steer lands in the running turn; the transcript still matches the script exactly."""
    control, events, gate = tmp_path / "c.jsonl", tmp_path / "e.jsonl", str(tmp_path / "gate")
    control.write_bytes(_line(1, "prompt", text="go"))
    config = config_from_mapping({"steps": 2, "deltas": 2, "gate_path": gate, "gate_steps": [1]})
    presenter = Presenter(MockAgent(config), control_path=str(control), event_path=str(events))
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(presenter.run_loop()))
    thread.start()
    try:
        wait_gate_blocked(gate, gate_label(1, 1))
        with open(control, "ab") as f:
            f.write(_line(2, "steer", text="left"))
        _wait_for(events, lambda e: e["type"] == "control-ack" and e.get("ref") == 2)
        release_gate(gate)
        _wait_for(events, lambda e: e["type"] == "turn-complete")
        with open(control, "ab") as f:
            f.write(_line(3, "close"))
    finally:
        release_gate(gate)
        thread.join(60)
    assert codes == [0]
    lines = [json.loads(x) for x in events.read_bytes().splitlines()]
    types = [e["type"] for e in lines]
    assert types.index("info") < types.index("control-ack", 2) < types.index("llm-start")
    assert [e["ref"] for e in lines if e["type"] == "steering-injected"] == [2]
    assert check_transcript(config, lines) == []
    # the announcement is owed: a whole turn without it is not the script
    without = [e for e in lines if e["type"] != "info"]
    for i, e in enumerate(without, 1):
        e["seq"] = i
    assert any(p.startswith("turn 1 ") for p in check_transcript(config, without))


def _wait_for(path: Path, predicate: Any) -> None:
    """Until the event file holds a line matching ``predicate`` (the timeout only guards a hang)."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if any(predicate(json.loads(x)) for x in path.read_bytes().splitlines()):
            return
        time.sleep(0.005)
    raise TimeoutError(f"no such event in {path}")


def test_a_spawned_child_held_at_the_gate(tmp_path: Path) -> None:
    """The same, through the wire with a real child and no scenario harness: the helpers for a test
    that drives a child itself (``wait_gate_blocked``, ``wait_for_event``, ``release_gate``)."""
    gate = str(tmp_path / "gate")
    mock = {"steps": 2, "deltas": 2, "gate_path": gate, "gate_steps": [2], "unwind_gate": True}
    child = spawn("go", mock=mock, env=child_env(), grace=GRACE)
    events: list[dict[str, Any]] = []
    try:
        assert wait_gate_blocked(gate) == gate_label(1, 2)  # the marker, for a driver that reads no events
        wait_for_event(child, lambda e: e.get("summary") == gate_label(1, 2), events)
        seq = child.cancel()
        wait_for_event(child, lambda e: e.get("summary") == gate_label(1), events)  # unwinding, cancelled
        assert child.channel.status == "cancelled"
        late = child.steer("too late")
        ack = wait_for_event(child, lambda e: e["type"] == "control-ack" and e.get("ref") == late, events)
        assert ack["status"] == "rejected" and ack["reason"] == "run is cancelled"
        release_gate(gate)
        wait_for_event(child, lambda e: e["type"] == "exit", events)
        assert child.wait(GRACE) == "cancelled"
    finally:
        child.cleanup()
    assert [e["ref"] for e in events if e["type"] == "control-ack"] == [1, seq, late]
    assert check_transcript(config_from_mapping(mock), events, controls=child.channel.controls) == []
