"""Drain the anchor streams one 64 KiB piece per call (BENCHMARKS.md, "What is measured")."""

from __future__ import annotations

import pytest
import streams
from drains import DRAINS, _native
from groups import group_name, stream_chunks
from realistic import all_streams

IMPLS = list(DRAINS)


def _run(benchmark, group: str, impl: str, chunks: list[bytes], max_rounds: int) -> None:  # type: ignore[no-untyped-def]
    if impl.startswith("rust") and _native is None:
        pytest.skip("the Rust extension is not built")
    lines = sum(c.count(b"\n") for c in chunks)
    benchmark.group = group
    benchmark.extra_info["items"] = lines
    benchmark.extra_info["bytes"] = sum(map(len, chunks))
    rounds = 5 if impl.startswith("pure") else 15
    if max_rounds:
        rounds = min(rounds, max_rounds)
    n = benchmark.pedantic(DRAINS[impl], args=(chunks,), rounds=rounds, iterations=1, warmup_rounds=1)
    assert n == lines


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("stream", list(all_streams()))
def test_drain(benchmark, stream: str, impl: str, bench_lines: int, bench_rounds: int) -> None:  # type: ignore[no-untyped-def]
    _run(benchmark, group_name("drain", stream, bench_lines), impl, stream_chunks(stream, bench_lines), bench_rounds)


def test_streams_match_the_anchor() -> None:
    data = streams.mixed_stream()
    lines = data.count(b"\n")
    assert lines == 200_000
    assert 300 <= len(data) / lines <= 340
