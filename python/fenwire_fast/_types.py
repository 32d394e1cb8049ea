"""Constants, message-type sets, ``Rejection`` and ``Scanned``: defined once, shared by both backends.

The Rust extension imports this module and builds the same ``Rejection`` and ``Scanned`` objects, so
equality, ``isinstance`` and ``repr`` behave the same whichever backend made them.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

__all__ = [
    "VERSION",
    "MAX_LINE_BYTES",
    "DRAIN_BYTE_BUDGET",
    "DRAIN_EVENT_BUDGET",
    "MAX_SAFE_INTEGER",
    "SUMMARY_BYTES",
    "EVENT_PAYLOAD_BYTES",
    "EVENT_STRING_BYTES",
    "EVENT_TABLE_ENTRIES",
    "EVENT_MAX_DEPTH",
    "REJECTION_CODES",
    "DISPLAY_EVENT_TYPES",
    "LIFECYCLE_EVENT_TYPES",
    "EVENT_TYPES",
    "CONTROL_TYPES",
    "EVENT_TYPE_ORDER",
    "CONTROL_TYPE_ORDER",
    "Rejection",
    "Scanned",
    "is_event_type",
    "is_control_type",
]

VERSION: Final = 1
#: A line (newline excluded) is too large when its UTF-8 byte length is >= this.
MAX_LINE_BYTES: Final = 65536
DRAIN_BYTE_BUDGET: Final = 65536
DRAIN_EVENT_BUDGET: Final = 64
MAX_SAFE_INTEGER: Final = 2**53 - 1
SUMMARY_BYTES: Final = 160
EVENT_PAYLOAD_BYTES: Final = 12 * 1024
EVENT_STRING_BYTES: Final = 4 * 1024
EVENT_TABLE_ENTRIES: Final = 64
EVENT_MAX_DEPTH: Final = 8

REJECTION_CODES: Final = (
    "malformed",
    "too-large",
    "invalid",
    "version-mismatch",
    "unknown-type",
    "invalid-payload",
    "out-of-order",
)

#: Normalized display events, forwarded from the agent as they are (in the Rust backend's order).
_DISPLAY_ORDER = (
    "agent-started",
    "user",
    "llm-start",
    "llm-end",
    "assistant-text",
    "assistant-text-delta",
    "assistant-thinking",
    "assistant-thinking-delta",
    "assistant-stream-end",
    "tool-call",
    "tool-result",
    "steering-injected",
    "follow-up-injected",
    "agent-turn-complete",
    "error",
    "info",
)
#: Events only the child's own loop emits (in the Rust backend's order).
_LIFECYCLE_ORDER = ("ready", "turn-started", "turn-complete", "control-ack", "result", "exit")
#: The types in a fixed order, the Rust backend's: a ``ScanBatch``'s ``types`` column holds each
#: line's type as its index here (``EVENT_TYPE_ORDER`` for an event receiver).
EVENT_TYPE_ORDER: Final = _DISPLAY_ORDER + _LIFECYCLE_ORDER
CONTROL_TYPE_ORDER: Final = ("prompt", "steer", "follow-up", "finalize", "cancel", "close")
DISPLAY_EVENT_TYPES: Final = frozenset(_DISPLAY_ORDER)
LIFECYCLE_EVENT_TYPES: Final = frozenset(_LIFECYCLE_ORDER)
EVENT_TYPES: Final = DISPLAY_EVENT_TYPES | LIFECYCLE_EVENT_TYPES
CONTROL_TYPES: Final = frozenset(CONTROL_TYPE_ORDER)


def is_event_type(value: object) -> bool:
    """True when ``value`` is one of the 22 event (child to parent) types."""
    return isinstance(value, str) and value in EVENT_TYPES


def is_control_type(value: object) -> bool:
    """True when ``value`` is one of the 6 control (parent to child) types."""
    return isinstance(value, str) and value in CONTROL_TYPES


class Rejection:
    """Why a line or message was refused. Immutable and equal by value.

    ``code`` is one of :data:`REJECTION_CODES`; ``reason`` is a human-readable sentence;
    ``fatal`` is true only for ``version-mismatch``; ``seq`` (an ``int``), ``type`` and ``run`` are
    set only when the message had usable values for them; ``errors`` is a tuple of
    ``(field, message)`` pairs for ``invalid`` and ``invalid-payload``, else ``None``.
    """

    __slots__ = ("code", "reason", "fatal", "seq", "type", "run", "errors")

    code: str
    reason: str
    fatal: bool
    seq: int | None
    type: str | None
    run: str | None
    errors: tuple[tuple[str, str], ...] | None

    def __init__(
        self,
        code: str,
        reason: str,
        seq: int | None = None,
        type: str | None = None,
        run: str | None = None,
        errors: tuple[tuple[str, str], ...] | None = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "code", code)
        setter(self, "reason", reason)
        setter(self, "fatal", code == "version-mismatch")
        setter(self, "seq", seq)
        setter(self, "type", type)
        setter(self, "run", run)
        setter(self, "errors", errors)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Rejection is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Rejection is immutable")

    def _key(self) -> tuple[Any, ...]:
        return (self.code, self.reason, self.fatal, self.seq, self.type, self.run, self.errors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rejection):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"code={self.code!r}", f"reason={self.reason!r}"]
        for name in ("seq", "type", "run", "errors"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value!r}")
        return f"Rejection({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Rejection, (self.code, self.reason, self.seq, self.type, self.run, self.errors))

    def to_dict(self) -> dict[str, Any]:
        """The rejection in the wire's shape: ``{code, reason, fatal?, seq?, type?, run?, errors?}``."""
        out: dict[str, Any] = {"code": self.code, "reason": self.reason, "fatal?": self.fatal}
        if self.seq is not None:
            out["seq"] = self.seq
        if self.type is not None:
            out["type"] = self.type
        if self.run is not None:
            out["run"] = self.run
        if self.errors is not None:
            out["errors"] = [{"field": f, "message": m} for f, m in self.errors]
        return out


class Scanned(NamedTuple):
    """A line ``Receiver.scan`` accepted: valid, in order, not turned into a dict.

    ``type`` is the message's type, ``seq`` its sequence number (always an ``int``, even when the
    line wrote it as ``2.0``) and ``line`` the exact bytes of the line as received, without its
    newline: pass them on as they are. Immutable, equal by value (a ``typing.NamedTuple``, so also
    equal to the plain tuple ``(type, seq, line)``), picklable.
    """

    type: str
    seq: int
    line: bytes
