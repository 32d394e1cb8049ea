"""The bounds a state dir's records are checked against: a run directory's name, a ``seq``, and
numbers in their ranges (:func:`check_number`)."""

from __future__ import annotations

import re
from typing import Any

from ...._types import MAX_SAFE_INTEGER

__all__ = ["MAX_SEQ", "RUN_NAME", "check_number"]

#: a run directory's name in a state dir
RUN_NAME = re.compile(r"^run-[A-Za-z0-9_.-]{1,80}$")
#: the largest ``seq`` a record may hold (the wire's largest ``seq``)
MAX_SEQ = MAX_SAFE_INTEGER


def check_number(name: str, value: object, kinds: Any, optional: bool, low: float, high: float) -> None:
    """``value`` (field ``name``) is of ``kinds`` (never a bool) and within ``[low, high]``."""
    if value is None and optional:
        return
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise ValueError(f"{name} is {value!r}")
    assert isinstance(value, (int, float))
    if value < 0 <= low:
        raise ValueError(f"{name} is {value!r}: negative")
    if not low <= value <= high:  # NaN is not either
        raise ValueError(f"{name} is {value!r}: not between {_bound(low)} and {_bound(high)} (out of range)")


def _bound(value: float) -> str:
    """A bound of a manifest's ranges as words: an integer in full (``9007199254740991``), else ``:g``."""
    return str(value) if isinstance(value, int) else f"{value:g}"
