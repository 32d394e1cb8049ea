"""``fenwire runs`` and ``inspect()`` on a run that was closed while its events say it still runs.

A child that dies mid-turn writes no ``exit`` line: its events stop in the middle of a turn, so
the status mirrored from them is ``running``. Its parent saw the process end, ended the run
``failed`` and, once every event was committed, closed it with that status (the commit log
records it). A look at the state dir afterwards must report that recorded end, not the status
the events alone suggest.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fenwire_fast import Sender
from fenwire_fast.cli.runs import inspect
from fenwire_fast.live.parent import durable
from fenwire_fast.live.parent.durable import StateDir
from fenwire_fast.live.parent.hub import Hub
from live_harness import child_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")


def _run_that_died_mid_turn(state: Path) -> tuple[str, str]:
    """A durable run whose child exits in its first step (no ``exit`` line), read to its end and
    committed (so closed); return its run id and the status its parent ended it with."""
    with Hub(state_dir=state) as hub:
        child = hub.spawn(
            "go", run="died", mock={"steps": 3, "tools": 1, "exit_step": 2, "exit_code": 3}, env=child_env()
        )
        types = []
        for _, message in hub:  # until the run has finished
            types.append(message["type"])
            hub.commit()
        hub.commit()  # the finished run, every event committed: closed now
        assert "turn-started" in types and "exit" not in types and "turn-complete" not in types, types
        assert child.status == "failed" and child.channel.status == "running", (child.status, child.channel.status)
        return child.run, child.status


def test_inspect_reports_the_recorded_end_of_a_closed_run(tmp_path: Path) -> None:
    run, status = _run_that_died_mid_turn(tmp_path / "state")
    (report,) = inspect(tmp_path / "state")
    assert report.run == run and report.closed and not report.alive
    assert report.status == status == "failed", report
    assert report.committed_seq == report.last_seq > 0


@pytest.mark.parametrize("form", ["table", "json"])
def test_fenwire_runs_reports_the_recorded_end_of_a_closed_run(tmp_path: Path, form: str) -> None:
    run, status = _run_that_died_mid_turn(tmp_path / "state")
    if form == "table":
        table = run_cli("runs", str(tmp_path / "state"))
        assert table.returncode == 0, table.stderr
        header, *rows = table.stdout.splitlines()
        at = header.split().index("STATUS")
        (row,) = [r.split() for r in rows if r.split() and r.split()[0] == run]
        assert row[at] == status == "failed", table.stdout
        assert "closed" in row, table.stdout
    else:
        as_json = run_cli("runs", str(tmp_path / "state"), "--json")
        assert as_json.returncode == 0, as_json.stderr
        (report,) = [json.loads(line) for line in as_json.stdout.splitlines()]
        assert report["run"] == run and report["closed"] is True
        assert report["status"] == status == "failed", report


# -- what a look at a run that was not closed infers ----------------------------------------------


def _event_lines(messages: list[tuple[str, str, dict[str, Any]]]) -> bytes:
    """``(run, type, payload)`` lines, numbered 1, 2, ... in the file (whatever their run)."""
    out = b""
    for seq, (run, type_, payload) in enumerate(messages, 1):
        sender = Sender("event", run)
        sender.seq = seq - 1
        line, rejection = sender.next(type_, payload)
        assert line is not None, rejection
        out += line + b"\n"
    return out


#: a pid no process can have (above the kernel's largest)
NO_SUCH_PID = 2**22 + 7


@pytest.mark.parametrize(
    ("case", "status", "error"),
    [
        ("deadline-passed", "timed-out", "its process ended without an exit line"),
        ("deadline-ahead", "failed", "its process ended without an exit line"),
        ("died", "failed", "its process ended without an exit line"),
        ("no-pid", "failed", "no process was recorded"),
        ("exit-error", "failed", "the agent broke"),
        ("foreign-line", "timed-out", "event for foreign run other"),
    ],
)
def test_inspect_infers_the_end_of_a_run_that_was_not_closed(
    tmp_path: Path, case: str, status: str, error: str
) -> None:
    """A run left unclosed by a parent that died: ``inspect()`` says how it ended, from its files
    and its manifest (its pid names no process)."""
    now = time.time()
    settings: dict[str, Any] = {"command": ["agent"], "pid": NO_SUCH_PID, "start": 1}
    messages: list[tuple[str, str, dict[str, Any]]] = [("r", "ready", {}), ("r", "turn-started", {"turn": 1})]
    if case == "deadline-passed":
        settings["deadline"] = now - 60
    elif case == "deadline-ahead":
        settings["deadline"] = now + 3600
    elif case == "no-pid":
        settings["pid"] = settings["start"] = None
    elif case == "exit-error":
        messages.append(("r", "exit", {"status": "failed", "error": "the agent broke"}))
    elif case == "foreign-line":  # the run timed out on its own; another run's line came before its exit
        messages.append(("other", "info", {"summary": "not mine"}))
        messages.append(("r", "exit", {"status": "timed-out"}))
    state = StateDir(tmp_path / "state")
    try:
        name, directory = state.new_run_directory("r")
        Path(directory, "control.jsonl").write_bytes(b"")
        Path(directory, "child.log").write_bytes(b"")
        events = _event_lines(messages)
        Path(directory, "events.jsonl").write_bytes(events)
        state.save(durable.new_manifest("r", name, directory, **settings))
    finally:
        state.close()
    (report,) = inspect(tmp_path / "state")
    assert (report.status, report.error) == (status, error), report
    assert not report.closed and not report.alive
