"""``fenwire demo --acp -- COMMAND``: the demo's children on an ACP agent (through the bridge), with
the checks that hold for an agent whose answers are not scripted; ``check_stream``, the
exactly-once check those children get, against transcripts with an event dropped, repeated or
moved; and the option's misuse."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.cli import parser as cli
from fenwire_fast.cli.demo.driver import run_demo
from fenwire_fast.testing import check_stream

ECHO = str(Path(__file__).resolve().parent / "acp_agents" / "echo_agent.py")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--acp"], "--acp needs the agent's command after --"),
        (["--acp", "--"], "--acp needs the agent's command after --"),
        (["--", "gemini"], "a command after -- is the ACP agent to run: give --acp too"),
    ],
)
def test_misuse_is_a_parser_error(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["demo", *argv])
    assert stop.value.code == 2
    _, err = capsys.readouterr()
    assert f"fenwire demo: error: {said}" in err, err


def test_the_sdk_missing_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "acp" else real(name, *a))
    with pytest.raises(SystemExit) as stop:
        cli.main(["demo", "--acp", "--", "gemini"])
    assert stop.value.code == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "fenwire demo: the ACP bridge needs the acp extra: pip install 'fenwire_fast[acp]'\n"


def test_the_demo_passes_on_an_acp_agent() -> None:
    pytest.importorskip("acp")
    out = io.StringIO()
    report = run_demo(5, out=out, live=False, acp=[sys.executable, ECHO], timeout=60)
    text = out.getvalue()
    assert report.ok, text
    assert report.statuses == {
        "child-1": "done",
        "child-2": "cancelled",
        "child-3": "done",
        "child-4": "done",
        "child-5": "done",
    }, text
    assert "(seq, turns, exit)" in text and "[FAIL]" not in text


def run_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "ready"},
        {"type": "control-ack", "ref": 1, "status": "accepted"},
        {"type": "turn-started", "turn": 1},
        {"type": "assistant-text-delta", "delta": "a"},
        {"type": "turn-complete", "turn": 1, "stop-reason": "stop"},
        {"type": "turn-started", "turn": 2},
        {"type": "turn-complete", "turn": 2, "stop-reason": "stop"},
        {"type": "result", "stop-reason": "stop"},
        {"type": "exit", "status": "done"},
    ]
    return [dict(e, seq=i) for i, e in enumerate(events, 1)]


def test_check_stream_accepts_a_whole_run() -> None:
    assert check_stream(run_events()) == []


@pytest.mark.parametrize("index", range(9))
def test_check_stream_finds_a_dropped_event(index: int) -> None:
    events = run_events()
    del events[index]
    assert check_stream(events)


@pytest.mark.parametrize("index", range(9))
def test_check_stream_finds_a_repeated_event(index: int) -> None:
    events = run_events()
    events.insert(index, dict(events[index]))
    assert check_stream(events)


@pytest.mark.parametrize("index", range(8))
def test_check_stream_finds_two_events_swapped(index: int) -> None:
    events = run_events()
    events[index], events[index + 1] = events[index + 1], events[index]
    assert check_stream(events)


def test_check_stream_finds_bad_turns_and_exits() -> None:
    events = run_events()
    events[5]["turn"] = 3  # turn 2 is numbered 3
    assert check_stream(events)
    events = run_events()
    events[-1]["status"] = "failed"  # a result before a failed exit
    assert check_stream(events)
    assert check_stream([]) == ["no events"]
