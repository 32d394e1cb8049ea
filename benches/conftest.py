"""pytest-benchmark suites for the Rust backend (not collected by `pytest tests`).

Run: ``pytest benches --benchmark-only`` (see BENCHMARKS.md for the exact command and table).
``--bench-lines N`` and ``--bench-rounds N`` make a smaller run (``report.py --quick``: the
charts' smoke test); a run's JSON carries ``fenwire_machine`` (``machine.describe()``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import machine

_MACHINE: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fenwire benches")
    group.addoption("--bench-lines", type=int, default=200_000, help="lines of each stream (default 200,000)")
    group.addoption(
        "--bench-rounds", type=int, default=0, help="at most this many rounds per benchmark (0: each's own)"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    _MACHINE.update(machine.describe())


@pytest.fixture(scope="session")
def bench_lines(request: pytest.FixtureRequest) -> int:
    return int(request.config.getoption("--bench-lines"))


@pytest.fixture(scope="session")
def bench_rounds(request: pytest.FixtureRequest) -> int:
    return int(request.config.getoption("--bench-rounds"))


def pytest_benchmark_update_json(config, benchmarks, output_json):  # type: ignore[no-untyped-def]
    """Record how many items one round handles, so the report can give ns per line/message."""
    for bench in output_json["benchmarks"]:
        bench.setdefault("extra_info", {})
    output_json["fenwire_machine"] = {**_MACHINE, "load_average_end": machine.load_average()}
