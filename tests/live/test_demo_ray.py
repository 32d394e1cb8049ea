"""``fenwire demo --ray``: the demo's children on the nodes of a Ray cluster, checked as on a hub.

Skipped when Ray is not installed. One test starts a cluster (the demo's own, 2 nodes, about 15 s
here); the others never reach one. Nothing waits for time to pass: what the demo leaves behind is
looked for once it has returned, and processes still ending are waited for (bounded).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fenwire_fast.cli.demo as demo_command
import pytest
from fenwire_fast.cli import parser as cli
from fenwire_fast.cli.demo.ray import FleetSource
from live_harness import child_env, wait_gone

ray = pytest.importorskip("ray")

#: set in the environment of the demo's cluster (its processes inherit it): how they are found after
MARK = "FENWIRE_DEMO_RAY_TEST"
NODE_LINE = re.compile(r"^    node ([0-9a-f]{8})( \(head\))?\s+children (\d+)\s+events\s+([\d,]+)\s+(.+)$")


def marked(value: str) -> list[int]:
    """The processes (other than this one) whose environment holds ``MARK=value``."""
    needle = f"{MARK}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def test_demo_on_a_local_cluster(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--ray --nodes 2 --children 4``: every check passes, the children are spread over both
    nodes (a line each), and the cluster, its processes and the children's files are gone after."""
    value = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(MARK, value)
    # the children's private directories go under tmp_path (the nodes' workers inherit TMPDIR);
    # Ray's own session files stay where Ray would put them
    monkeypatch.setenv("RAY_TMPDIR", os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    # while the children run, SIGTERM is still the command's (it unwinds: the fleet is closed and
    # the cluster shut down), not the one a Ray node started in this process puts in
    handlers = []
    real_spawn = FleetSource.spawn

    def spawn(self: Any, prompt: str, mock: Any) -> Any:
        handlers.append(signal.getsignal(signal.SIGTERM))
        return real_spawn(self, prompt, mock)

    monkeypatch.setattr(FleetSource, "spawn", spawn)
    argv = ["--ray", "--nodes", "2", "--children", "4", "--steps", "2", "--deltas", "30", "--plain"]
    started = time.monotonic()
    code = cli.main(["demo", *argv, "--timeout", "120"])
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert out.startswith("fenwire demo: starting a local Ray cluster of 2 nodes\n"), out
    assert out.rstrip().endswith("PASS") and out.count("[ok]") == 4 and "[FAIL]" not in out, out
    assert re.search(r"^fenwire demo: 4 children on 2 Ray nodes, ", out, re.M), out
    assert "cancelled 1, done 3" in out and "rejections 0" in out, out
    nodes = [m for m in map(NODE_LINE.match, out.splitlines()) if m]
    assert len(nodes) == 2, out
    assert [m.group(2) is not None for m in nodes].count(True) == 1, out  # the head ran children too
    assert all(int(m.group(3)) >= 1 for m in nodes) and sum(int(m.group(3)) for m in nodes) == 4, out
    total = re.search(r"^  events       ([\d,]+):", out, re.M)
    assert total is not None and sum(int(m.group(4).replace(",", "")) for m in nodes) == int(
        total.group(1).replace(",", "")
    )
    ids = {m.group(1) for m in nodes}
    rows = re.findall(r"^    child-\d .* ([0-9a-f]{8})$", out, re.M)  # the table's last column
    assert len(rows) == 4 and set(rows) == ids, out
    assert "Traceback" not in err, err
    assert handlers == [demo_command._terminated] * 4
    # nothing left behind: the connection, the cluster's processes, the children and their files
    assert not ray.is_initialized()
    wait_gone(marked(value), timeout=60)
    assert list(tmp_path.glob("fenwire-*")) == []
    print(f"demo --ray --nodes 2 --children 4: {took:.1f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_nothing_listening_fails_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    assert cli.main(["demo", "--ray", "--address", address]) == 1
    assert time.monotonic() - started < 10
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"fenwire demo: cannot reach a Ray cluster at {address}: ") and err.count("\n") == 1, err
    assert not ray.is_initialized()


def test_a_silent_address_is_given_up() -> None:
    """Something listens there but no Ray answers: given up after --connect-timeout, exit 1. In a
    process of its own: the connection attempt Ray goes on with is that process's."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # connections are taken into the backlog, never answered
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        env = {**os.environ, **child_env()}
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "fenwire_fast", "demo", "--ray", "--address", address, "--connect-timeout", "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        took = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert f"fenwire demo: no Ray cluster answered at {address} within 2 s\n" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 60, took
