"""pytest-benchmark suites for the Rust backend (not collected by `pytest tests`).

Run: ``pytest benches --benchmark-only`` (see BENCHMARKS.md for the exact command and table).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_benchmark_update_json(config, benchmarks, output_json):  # type: ignore[no-untyped-def]
    """Record how many items one round handles, so the report can give ns per line/message."""
    for bench in output_json["benchmarks"]:
        bench.setdefault("extra_info", {})
