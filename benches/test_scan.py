"""``Receiver.scan_batch`` / ``scan`` (validate and forward) against ``Receiver.feed`` and the
floors, per stream, one 64 KiB piece per call: the drains of ``scan.py`` (see its docstring) as
pytest-benchmark groups ``scan STREAM (N lines)``, for ``report.py``'s table and charts.
``scan.py`` remains the script of BENCHMARKS.md's scan tables (GB/s, CPU time, threads)."""

from __future__ import annotations

import pytest
from drains import _native
from groups import group_name, stream_chunks
from realistic import all_streams

if _native is None:  # scan.py imports the extension by name
    pytest.skip("the Rust extension is not built", allow_module_level=True)

from scan import DRAINS


@pytest.mark.parametrize("impl", list(DRAINS))
@pytest.mark.parametrize("stream", list(all_streams()))
def test_scan(benchmark, stream: str, impl: str, bench_lines: int, bench_rounds: int) -> None:  # type: ignore[no-untyped-def]
    chunks = stream_chunks(stream, bench_lines)
    lines = sum(c.count(b"\n") for c in chunks)
    benchmark.group = group_name("scan", stream, bench_lines)
    benchmark.extra_info["items"] = lines
    benchmark.extra_info["bytes"] = sum(map(len, chunks))
    rounds = 3 if impl.startswith("pure") else 15
    if bench_rounds:
        rounds = min(rounds, bench_rounds)
    assert benchmark.pedantic(DRAINS[impl], args=(chunks,), rounds=rounds, iterations=1, warmup_rounds=1) == lines
