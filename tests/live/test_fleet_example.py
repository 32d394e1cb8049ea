"""docs/examples/fleet_restart.py, run as a user runs it: it starts its own Ray cluster, kills its
first driver halfway, attaches again and checks every run (its own checks, each printed); here it
must print each of them ``ok`` and ``PASS``. Skipped without Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

from live_harness import HANG_GUARD, package_path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fleet_restart.py"


def test_the_fleet_restart_example_passes() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [*package_path(), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=3 * HANG_GUARD
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert lines[-1] == "PASS"
    checks = [line for line in lines if line.lstrip().startswith("[")]
    assert len(checks) == 6 and all(line.lstrip().startswith("[ok]") for line in checks), checks
    assert lines[0].startswith("first driver: took ") and "killed" in lines[0]
