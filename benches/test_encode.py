"""encode / Sender.next against orjson.dumps, per message (mixed events)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
import streams
from drains import _native
from fenwire_fast import _pure

N = 20_000


@pytest.fixture(scope="module")
def messages() -> list[dict[str, Any]]:
    return streams.mixed_messages(N, seed=3)


def _encode(backend: Any) -> Callable[[list[dict[str, Any]]], int]:
    def run(msgs: list[dict[str, Any]]) -> int:
        encode = backend.encode
        return sum(1 for m in msgs if encode(m, "event")[0] is not None)

    return run


def _payloads(msgs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(m["type"], {k: v for k, v in m.items() if k not in ("v", "seq", "type", "run")}) for m in msgs]


def _sender(backend: Any) -> Callable[[list[tuple[str, dict[str, Any]]]], int]:
    def run(payloads: list[tuple[str, dict[str, Any]]]) -> int:
        nxt = backend.Sender("event", streams.RUN).next
        return sum(1 for t, p in payloads if nxt(t, p)[0] is not None)

    return run


def _orjson(msgs: list[dict[str, Any]]) -> int:
    dumps = orjson.dumps
    return sum(1 for m in msgs if dumps(m))


IMPLS: dict[str, Callable[[], Callable[[list[dict[str, Any]]], int]]] = {
    "rust encode": lambda: _encode(_native),
    "pure encode": lambda: _encode(_pure),
    "rust Sender.next": lambda: _sender(_native),
    "pure Sender.next": lambda: _sender(_pure),
    "orjson.dumps": lambda: _orjson,
}


@pytest.mark.parametrize("impl", list(IMPLS))
def test_encode(benchmark, impl: str, messages: list[dict[str, Any]]) -> None:  # type: ignore[no-untyped-def]
    if impl.startswith("rust") and _native is None:
        pytest.skip("the Rust extension is not built")
    benchmark.group = f"encode mixed ({N} messages)"
    benchmark.extra_info["items"] = N
    fn = IMPLS[impl]()
    arg: Any = _payloads(messages) if "Sender" in impl else messages
    assert benchmark.pedantic(fn, args=(arg,), rounds=7, iterations=1, warmup_rounds=1) == N


def test_encode_is_orjson_identical(messages: list[dict[str, Any]]) -> None:
    if _native is None:
        pytest.skip("the Rust extension is not built")
    for m in messages[:2000]:
        assert _native.encode(m, "event") == (orjson.dumps(m), None)
