"""What a benchmark ran on, for the charts' footnotes: written into every run's JSON (the
pytest-benchmark file by ``conftest.py``, ``hub.py --json``) so a chart made later from the file
says where its numbers come from, not where it was drawn."""

from __future__ import annotations

import datetime
import os
import platform
from typing import Any


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (``platform.processor()`` elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages (empty where there are none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def describe() -> dict[str, Any]:
    """The machine, the Python, the backend, the load and the time, now."""
    from fenwire_fast import IMPLEMENTATION

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "python": platform.python_version(),
        "backend": IMPLEMENTATION,
        "load_average": load_average(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def footnote(info: dict[str, Any]) -> str:
    """One line for a chart: ``CPU (N cores) · Python X · backend · date · load``."""
    load = info.get("load_average") or []
    parts = [
        f"{info.get('cpu', '?')} ({info.get('cores', '?')} cores)",
        f"Python {info.get('python', '?')}",
        f"backend {info.get('backend', '?')}",
        str(info.get("date", "?")),
    ]
    end = info.get("load_average_end") or []
    if load and end:
        parts.append(f"load average {load[0]:.1f} at the start, {end[0]:.1f} at the end")
    elif load:
        parts.append(f"load average {load[0]:.1f}")
    return " · ".join(parts)
