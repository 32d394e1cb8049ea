"""Text primitives for transport bounds: every cut is UTF-8 safe and within its budget.

``utf8_prefix``, ``truncate_line`` and ``scrub`` come from the selected backend; ``first_line`` is
plain Python.
"""

from __future__ import annotations

from . import scrub, truncate_line, utf8_prefix

__all__ = ["first_line", "utf8_prefix", "truncate_line", "scrub"]


def first_line(text: object) -> str:
    """``text`` (``str(text)`` for non-strings, ``""`` for ``None``) up to its first ``\\n``."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    nl = s.find("\n")
    return s if nl < 0 else s[:nl]
