"""The pytest-benchmark suites' shared inputs and group names (``test_drain.py``, ``test_scan.py``;
``charts.py`` finds its groups by these names)."""

from __future__ import annotations

import re
from typing import Any

import streams
from realistic import all_streams

_CHUNKS: dict[tuple[str, int], list[bytes]] = {}


def stream_chunks(stream: str, lines: int) -> list[bytes]:
    """``stream`` of ``lines`` lines in 64 KiB pieces (made once per session)."""
    if (stream, lines) not in _CHUNKS:
        _CHUNKS[stream, lines] = streams.chunks(all_streams()[stream](lines))
    return _CHUNKS[stream, lines]


def group_name(what: str, stream: str, lines: int) -> str:
    """``drain realistic mixed (200k lines)``: ``what`` of ``stream``, ``lines`` lines long."""
    return f"{what} {stream} ({lines // 1000}k lines)" if lines % 1000 == 0 else f"{what} {stream} ({lines} lines)"


def parse_group(group: str) -> tuple[str, str] | None:
    """``(what, stream)`` of a name made by ``group_name``, or None."""
    m = re.fullmatch(r"(\w+) (.+) \((\d+k?) lines\)", group)
    return (m[1], m[2]) if m else None


def impl_name(bench: dict[str, Any]) -> str:
    """The implementation a benchmark of a pytest-benchmark JSON file times: its ``impl`` (or
    ``backend``) parameter, without the stream's."""
    params = bench.get("params") or {}
    return str(params.get("impl") or params.get("backend") or bench.get("param") or bench["name"])
