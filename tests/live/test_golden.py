"""The reference's golden lines (copied into tests/fixtures/reference/): our parent reads its event
lines, and our child obeys its control lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.parent.channel import Channel
from live_harness import FIXTURES, package_path

EVENTS = FIXTURES / "events.jsonl"
CONTROLS = FIXTURES / "controls.jsonl"


def _private_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    return d


@pytest.mark.parametrize("max_bytes", [65536, 7, 1])
def test_parent_reads_the_golden_event_lines(tmp_path: Path, max_bytes: int) -> None:
    d = _private_dir(tmp_path)
    events = d / "events.jsonl"
    control = d / "control.jsonl"
    ch = Channel("subagent-1", str(control), str(events), max_bytes=max_bytes)
    assert ch.send("prompt", {"text": "Inspect the README."}) == 1
    assert ch.send("steer", {"text": "Also check docs/."}) == 2
    statuses: list[str] = []
    got: list[dict[str, Any]] = []
    lines = EVENTS.read_bytes().splitlines(keepends=True)
    with open(events, "ab") as out:
        for line in lines:  # one line at a time, so the mirrored status can be watched
            out.write(line)
            out.flush()
            for _ in range(200):
                msgs, errors = ch.poll()
                assert errors == []
                got.extend(msgs)
                statuses.extend(ch.status for _ in msgs)
                if not ch.pending():
                    break
    assert len(got) == len(lines) == 24
    assert [m["seq"] for m in got] == list(range(1, 25))
    assert got == [json.loads(line) for line in lines]
    assert statuses[0] == "ready"
    assert statuses[1] == "running"  # prompt acknowledged
    assert statuses[20] == "ready"  # turn-complete
    assert ch.status == "done" and ch.exit == {"v": 1, "seq": 24, "type": "exit", "run": "subagent-1", "status": "done"}
    assert ch.result is not None and ch.final_text == "The README describes fen."
    assert ch.final_text_note is None
    assert ch.controls[1].status == "accepted" and ch.controls[2].status == "applied"
    assert ch.unacked == {}
    assert ch.idle is False  # done, not ready
    ch.close()


def test_parent_ignores_lines_after_exit_and_reports_foreign_runs(tmp_path: Path) -> None:
    d = _private_dir(tmp_path)
    events = d / "events.jsonl"
    lines = EVENTS.read_bytes().splitlines(keepends=True)
    foreign = lines[1].replace(b'"subagent-1"', b'"subagent-2"')
    events.write_bytes(lines[0] + foreign + b"".join(lines[1:]) + lines[0])
    ch = Channel("subagent-1", str(d / "control.jsonl"), str(events))
    got = []
    for _ in range(10):
        msgs, _ = ch.poll()
        got.extend(msgs)
    # the foreign line is an error and consumes seq 2, so the real seq 2 is out of order;
    # the line after exit is ignored
    assert len(got) == 23
    assert ch.error == "event for foreign run subagent-2"
    assert ch.ignored_after_exit == 1
    assert ch.errors[0].error == "event for foreign run subagent-2"
    assert ch.errors[1].rejection is not None and ch.errors[1].rejection.code == "out-of-order"
    assert len(ch.errors) == 2 and ch.status == "done"


def test_child_obeys_the_golden_control_lines(tmp_path: Path) -> None:
    d = _private_dir(tmp_path)
    control = d / "control.jsonl"
    events = d / "events.jsonl"
    control.write_bytes(CONTROLS.read_bytes())  # all seven lines, before the child starts
    os.chmod(control, 0o600)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*package_path(), env.get("PYTHONPATH")]))
    env.update(
        {
            "FEN_WIRE_CONTROL_PATH": str(control),
            "FEN_WIRE_EVENT_PATH": str(events),
            "FEN_WIRE_RUN_ID": "subagent-1",
            "FENWIRE_MOCK": '{"steps":2,"deltas":3}',
        }
    )
    proc = subprocess.run([sys.executable, "-m", "fenwire_fast", "child"], env=env, timeout=60, capture_output=True)
    assert proc.returncode == 1, proc.stderr  # it ends cancelled
    got = [json.loads(line) for line in events.read_bytes().splitlines()]
    short = [
        (e["type"], e.get("ref"), e.get("status"), e.get("reason"), e.get("refs"), e.get("turn"), e.get("stop-reason"))
        for e in got
    ]
    assert short == [
        ("ready", None, None, None, None, None, None),
        ("control-ack", 1, "accepted", None, None, None, None),  # prompt: starts turn 1
        ("turn-started", None, None, None, None, 1, None),
        ("control-ack", 2, "accepted", None, None, None, None),  # steer: queued
        ("control-ack", 3, "accepted", None, None, None, None),  # follow-up: queued
        ("control-ack", 4, "accepted", None, None, None, None),  # finalize with a note
        ("info", None, None, None, [2, 3], None, None),  # the queue is dropped
        ("control-ack", 5, "applied", None, None, None, None),  # finalize again
        ("control-ack", 6, "accepted", None, None, None, None),  # cancel
        ("control-ack", 7, "rejected", "run is cancelled", None, None, None),  # close
        ("turn-complete", None, None, None, None, 1, "aborted"),
        ("exit", None, "cancelled", None, None, None, None),
    ]
    assert [e["seq"] for e in got] == list(range(1, 13))
    assert all(e["run"] == "subagent-1" for e in got)


def test_transcript_check_accepts_a_turn_interrupted_before_its_first_step() -> None:
    from fenwire_fast.live.child.mock_agent import MockConfig
    from fenwire_fast.testing import check_transcript

    events = [
        {"v": 1, "seq": 1, "type": "ready", "run": "r"},
        {"v": 1, "seq": 2, "type": "control-ack", "run": "r", "ref": 1, "status": "accepted"},
        {"v": 1, "seq": 3, "type": "turn-started", "run": "r", "turn": 1},
        {"v": 1, "seq": 4, "type": "control-ack", "run": "r", "ref": 2, "status": "accepted"},
        {"v": 1, "seq": 5, "type": "turn-complete", "run": "r", "turn": 1, "stop-reason": "aborted"},
        {"v": 1, "seq": 6, "type": "exit", "run": "r", "status": "cancelled"},
    ]
    assert check_transcript(MockConfig(), events) == []
    events[4]["stop-reason"] = "stop"
    assert check_transcript(MockConfig(), events) == ["turn 1 does not start with the user event"]
    events[3]["seq"] = 7
    assert "event 4 has seq 7, expected 4" in check_transcript(MockConfig(), events)
