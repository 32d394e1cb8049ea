"""The message schemas: every event and control type, its fields, their kinds and what is required.

This is data, the one description of what each message carries. The pure backend validates against it; the Rust
backend carries the same table in ``rust/src/schema/types.rs`` and the test suite checks they agree.

Field kinds:

- ``string``, ``boolean``, ``number`` (int or float, never bool), ``integer`` (an int, or a float
  with an integral value, never bool), ``pos`` (an integer from 1 to ``MAX_SAFE_INTEGER``),
- ``object`` (a dict, or an empty list), ``array`` (a list, or an empty dict),
- ``refs`` (an ``array`` whose items are ``pos``), ``any`` (no check),
- ``ack-status`` / ``exit-status`` (one of the listed strings).

Errors are reported in a fixed order: missing required fields in ``required`` order, then each
present field in ``fields`` order, then the ``control-ack`` rule "ref is required unless status is
rejected".
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["Schema", "ENVELOPE", "EVENT_SCHEMAS", "CONTROL_SCHEMAS", "ENUMS", "DISPLAY_FIELDS"]


class Schema(NamedTuple):
    required: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]


ENUMS: Final[dict[str, tuple[str, ...]]] = {
    "ack-status": ("accepted", "rejected", "applied"),
    "exit-status": ("done", "cancelled", "failed", "timed-out"),
}

ENVELOPE: Final = Schema(("seq", "type", "run"), (("seq", "pos"), ("type", "string"), ("run", "string")))

DISPLAY_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("timestamp", "string"),
    ("summary", "string"),
    ("run-id", "string"),
    ("agent", "string"),
    ("requested-cwd", "string"),
    ("cwd", "string"),
    ("physical-cwd", "string"),
    ("transport-truncated?", "boolean"),
)


def _display(required: tuple[str, ...], *fields: tuple[str, str]) -> Schema:
    return Schema(required, tuple(fields) + DISPLAY_FIELDS)


_TEXT_BLOCK = (("final?", "boolean"), ("content-index", "integer"), ("text", "string"))
_DELTA = (("content-index", "integer"), ("delta", "string"))

EVENT_SCHEMAS: Final[dict[str, Schema]] = {
    # display events
    "tool-call": _display(("name",), ("name", "string"), ("id", "string"), ("arguments", "any")),
    "tool-result": _display(
        ("name", "is-error?"),
        ("name", "string"),
        ("id", "string"),
        ("tool-call-id", "string"),
        ("duration-seconds", "number"),
        ("is-error?", "boolean"),
        ("result", "any"),
    ),
    "assistant-text": _display(("final?",), *_TEXT_BLOCK),
    "assistant-thinking": _display(("final?",), *_TEXT_BLOCK),
    "assistant-text-delta": _display((), *_DELTA),
    "assistant-thinking-delta": _display((), *_DELTA),
    "assistant-stream-end": _display(("final?",), ("final?", "boolean")),
    "user": _display((), ("text", "string")),
    "steering-injected": _display((), ("text", "string"), ("ref", "pos")),
    "follow-up-injected": _display((), ("text", "string"), ("ref", "pos")),
    "llm-start": _display((), ("provider", "string"), ("model", "string")),
    "llm-end": _display((), ("stop-reason", "string"), ("usage", "object")),
    "agent-started": _display((), ("provider", "string"), ("model", "string")),
    "agent-turn-complete": _display((), ("status", "string"), ("error", "string")),
    "error": _display((), ("error", "string"), ("source", "string")),
    "info": _display((), ("refs", "refs")),
    # lifecycle events
    "ready": Schema((), ()),
    "turn-started": Schema(("turn",), (("turn", "pos"),)),
    "turn-complete": Schema(("turn", "stop-reason"), (("turn", "pos"), ("stop-reason", "string"), ("usage", "object"))),
    "control-ack": Schema(("status",), (("ref", "pos"), ("status", "ack-status"), ("reason", "string"))),
    "result": Schema(
        ("stop-reason",),
        (
            ("final-text", "string"),
            ("stop-reason", "string"),
            ("usage", "object"),
            ("truncated?", "boolean"),
            ("final-text-path", "string"),
        ),
    ),
    "exit": Schema(("status",), (("status", "exit-status"), ("error", "string"))),
}

CONTROL_SCHEMAS: Final[dict[str, Schema]] = {
    "prompt": Schema(("text",), (("text", "string"),)),
    "steer": Schema(("text",), (("text", "string"),)),
    "follow-up": Schema(("text",), (("text", "string"),)),
    "finalize": Schema((), (("note", "string"),)),
    "cancel": Schema((), ()),
    "close": Schema((), ()),
}
