"""``fenwire top`` on runs that are alive: a state dir a parent is writing, watched in a terminal
while the parent drains it (the parent still gets every event once, in order, and top shows the
runs working, then done), and a named fleet on a Ray cluster (``--fleet``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child.mock_agent import config_from_mapping
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.testing import check_transcript
from live_harness import HANG_GUARD, child_env, package_path
from top_terminal import Pty

MOCK = {"steps": 2, "deltas": 400, "tools": 1, "tool_result_bytes": 3000}


def test_top_watches_a_parent_at_work(tmp_path: Path) -> None:
    state = tmp_path / "state"
    events: dict[str, list[dict[str, Any]]] = {}
    with Hub(state_dir=state) as hub:
        children = [hub.spawn("Do the task.", mock=MOCK, env=child_env()) for _ in range(8)]
        term = Pty([str(state), "--interval", "0.05", "--sort", "run"], (200, 30))
        try:
            term.until(lambda t: "fenwire top  8 runs" in t, "top shows the parent's runs")
            for child in children:
                child.close()
            for child, message in hub:
                events.setdefault(child.run, []).append(message)
            term.until(lambda t: "done 8" in t, "top shows every run done")
            term.send(b"q")
            assert term.wait() == 0 and "Traceback" not in term.text()
        finally:
            term.kill()
        assert all(c.status == "done" for c in children)
    for run, got in events.items():
        assert [e["seq"] for e in got] == list(range(1, len(got) + 1)), run
        assert check_transcript(config_from_mapping(MOCK), got) == [], run


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    pytest.importorskip("ray")
    from live_harness import ray_cluster

    with ray_cluster() as c:
        yield c


def test_top_on_a_named_fleet(cluster: Any, tmp_path: Path) -> None:
    from fenwire_fast.live.fleet import Fleet

    name = f"top{os.getpid()}"
    fleet = Fleet(address=cluster.address, name=name, state_root=str(tmp_path / "roots"))
    try:
        children = [fleet.spawn("Do the task.", mock={"steps": 1}) for _ in range(3)]
        for child in children:
            child.close()
        assert fleet.wait(timeout=HANG_GUARD) == dict.fromkeys((c.run for c in children), "done")
        fleet.commit()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(package_path())}
        command = [sys.executable, "-m", "fenwire_fast", "top", "--fleet", name, "--address", cluster.address]
        done = subprocess.run(
            [*command, "--once", "--json", "--sort", "run"], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(r["run"], r["status"]) for r in rows] == sorted((c.run, "done") for c in children)
        assert all(r["node"] for r in rows)
        missing = subprocess.run(
            [*command[:-4], "--fleet", "nope", *command[-2:], "--once"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert (
            missing.returncode == 1 and "no fleet named 'nope'" in missing.stderr and "Traceback" not in missing.stderr
        )
    finally:
        fleet.close()
