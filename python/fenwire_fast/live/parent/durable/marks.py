"""Marks: where an attach may read a run's event file from (see :mod:`~fenwire_fast.live.parent.durable`).

A mark is one word, ``OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS`` (:func:`encode_mark`); every number of
one read back is bounded before it is used (:func:`decode_mark`, :func:`check_mark`)."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from typing import Any

from ..channel import ResumePoint
from .bounds import MAX_SEQ, check_number

__all__ = ["encode_mark", "decode_mark", "check_mark"]


#: a mark as the log and manifests keep it (see :func:`encode_mark`): at most this long
_MARK_CAP = 4096
_MARK = re.compile(
    r"^([0-9]{1,19})\.([0-9]{1,16})\.([0-9]{1,10})\.([a-z-]{1,16})\.([0-9]{1,19})\.([A-Za-z0-9_-]{0,%d})$" % _MARK_CAP
)
_ACK_STATUSES = ("accepted", "rejected", "applied")
#: the most acknowledged controls a mark may list (more: no mark, the file is read from its start)
_MARK_ACKS = 1 << 16
_MAX_OFFSET = (1 << 63) - 1


def encode_mark(point: ResumePoint) -> str | None:
    """``point`` as the commit log and the manifests keep it, one word:
    ``OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS`` (decimal numbers, the status's name, and the
    acknowledged controls as URL-safe base64 of a JSON array: ``[first, last, status]`` for
    consecutive ``seq`` acknowledged alike, ``[seq, seq, status, reason]`` for one with a
    reason). ``None`` when that would be longer than :data:`_MARK_CAP` (a run that
    acknowledged many controls with reasons): the run keeps its earlier mark."""
    acks = _encode_acks(point.acks)
    if acks is None:
        return None
    return f"{point.offset}.{point.seq}.{point.tail}.{point.status}.{point.events}.{acks}"


@functools.lru_cache(maxsize=1024)  # a run's acks change seldom: most commits encode the same ones
def _encode_acks(points: tuple[tuple[int, str, str | None], ...]) -> str | None:
    if not points:
        return ""
    acks: list[list[Any]] = []
    for seq, status, reason in points:
        last = acks[-1] if acks else None
        if reason is None and last is not None and len(last) == 3 and last[2] == status and last[1] == seq - 1:
            last[1] = seq
        else:
            acks.append([seq, seq, status] if reason is None else [seq, seq, status, reason])
    text = json.dumps(acks, separators=(",", ":"))  # ASCII: a reason's lone surrogate is escaped
    encoded = base64.urlsafe_b64encode(text.encode("ascii")).rstrip(b"=").decode("ascii")
    return encoded if len(encoded) <= _MARK_CAP else None


def decode_mark(mark: str) -> ResumePoint | None:
    """The :class:`~fenwire_fast.live.parent.channel.ResumePoint` of a mark :func:`encode_mark` wrote, or
    ``None`` for anything else (never raises: every number is bounded before it is used). The
    channel checks it against the files before it reads from it."""
    try:
        return check_mark(mark)
    except ValueError:
        return None


#: the ranges of a mark's numbers, as :data:`.manifest._RANGES` gives a manifest's: ``(part, high)``, each
#: at least 0 (a ``seq`` at most :data:`MAX_SEQ`, as ``committed_seq``)
_MARK_RANGES = (("offset", _MAX_OFFSET), ("seq", MAX_SEQ), ("tail", (1 << 32) - 1), ("events", _MAX_OFFSET))


def check_mark(mark: object) -> ResumePoint:
    """The point ``mark`` stands for; raises ``ValueError`` saying why when it is not a mark
    :func:`encode_mark` writes (:func:`.manifest.check_manifest` refuses such a manifest with that reason, and
    the commit log ignores such a record). Each number is at most 19 digits before ``int`` sees it."""
    if not isinstance(mark, str):
        raise ValueError(f"mark is {type(mark).__name__}, not a string")
    found = _MARK.match(mark)
    if found is None:
        shown = mark if len(mark) <= 64 else mark[:64] + "..."
        raise ValueError(f"mark is {shown!r}: not OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS")
    offset, seq, tail, events = (int(found[i]) for i in (1, 2, 3, 5))
    for (part, high), value in zip(_MARK_RANGES, (offset, seq, tail, events), strict=True):
        check_number(f"mark's {part}", value, int, False, 0, high)
    acks = _decode_acks(found[6])
    if acks is None:
        raise ValueError("mark's acknowledged controls are not a list of controls and statuses")
    return ResumePoint(offset, seq, tail, found[4], events, acks)


def _count(value: object, most: int) -> bool:
    return type(value) is int and 0 <= value <= most


def _decode_acks(encoded: str) -> tuple[tuple[int, str, str | None], ...] | None:
    if not encoded:
        return ()
    try:
        ranges = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if not isinstance(ranges, list):
        return None
    acks: list[tuple[int, str, str | None]] = []
    for entry in ranges:
        if not isinstance(entry, list) or len(entry) not in (3, 4):
            return None
        first, last, status = entry[:3]
        reason = entry[3] if len(entry) == 4 else None
        if not (_count(first, MAX_SEQ) and _count(last, MAX_SEQ)) or not 0 < first <= last:
            return None
        if status not in _ACK_STATUSES or not (reason is None or isinstance(reason, str) and first == last):
            return None
        if last - first + len(acks) >= _MARK_ACKS:
            return None
        acks.extend((seq, status, reason) for seq in range(first, last + 1))
    return tuple(acks)
