"""Text primitives for transport bounds: every cut is UTF-8 safe and within its budget.

``utf8_prefix``, ``truncate_line`` and ``scrub`` come from the selected backend; ``first_line`` and
``printable`` are plain Python.
"""

from __future__ import annotations

import re

from . import scrub, truncate_line, utf8_prefix

__all__ = ["first_line", "printable", "utf8_prefix", "truncate_line", "scrub"]

# C0 and C1 controls, DEL, line and paragraph separators, bidirectional overrides and isolates
# (they reorder what a terminal shows), and lone surrogates (undecodable bytes of a file name).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as os.fsdecode carries it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` safe to print on one terminal line: control characters (newlines and escape
    sequences included), bidirectional overrides and undecodable bytes become ``\\xNN`` /
    ``\\uNNNN`` escapes; everything else, non-ASCII included, is kept."""
    return _UNPRINTABLE.sub(_escape, text)


def first_line(text: object) -> str:
    """``text`` (``str(text)`` for non-strings, ``""`` for ``None``) up to its first ``\\n``."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    nl = s.find("\n")
    return s if nl < 0 else s[:nl]
