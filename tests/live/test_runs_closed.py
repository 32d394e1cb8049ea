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
from pathlib import Path

import pytest
from conftest import run_cli
from fenwire_fast.live.hub import Hub
from fenwire_fast.live.runs import inspect
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
