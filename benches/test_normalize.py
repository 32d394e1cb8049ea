"""normalize (fenwire_fast.normalize, plain Python over the backend's text primitives), with each
backend's scrub / truncate_line underneath."""

from __future__ import annotations

from typing import Any

import pytest
import streams
from drains import _native
from fenwire_fast import _pure

normalize_mod = pytest.importorskip("fenwire_fast.normalize")

N = 20_000


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    out = []
    for m in streams.mixed_messages(N, seed=4):
        ev = {k: v for k, v in m.items() if k not in ("v", "seq", "run", "summary", "timestamp")}
        out.append(ev)
    return out


@pytest.mark.parametrize("backend", ["rust", "pure"])
def test_normalize(benchmark, backend: str, events: list[dict[str, Any]], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    impl = _native if backend == "rust" else _pure
    if impl is None:
        pytest.skip("the Rust extension is not built")
    for name in ("scrub", "truncate_line", "utf8_prefix"):
        if hasattr(normalize_mod, name):
            monkeypatch.setattr(normalize_mod, name, getattr(impl, name))
    normalize = normalize_mod.normalize
    now = "2026-12-02T11:00:00Z"

    def run(evs: list[dict[str, Any]]) -> int:
        return sum(1 for e in evs if normalize(e, now=now))

    benchmark.group = f"normalize mixed ({N} events)"
    benchmark.extra_info["items"] = N
    assert benchmark.pedantic(run, args=(events,), rounds=5, iterations=1, warmup_rounds=1) == N
