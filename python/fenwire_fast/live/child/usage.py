"""Token usage summed key by key: what a turn's ``llm-end`` events and its result add up to."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["add_usage"]


def add_usage(total: dict[str, Any], usage: object) -> None:
    """Add every finite number of the ``usage`` mapping into ``total``, key by key; ignore the rest."""
    if not isinstance(usage, Mapping):
        return
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            total[key] = total.get(key, 0) + value
