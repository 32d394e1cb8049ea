"""fenwire_fast: the Fen wire protocol (JSONL between a parent and live child agents), fast.

The codec (``decode``, ``validate``, ``encode``, ``Sender``, ``Receiver``, ...) comes from one of two
interchangeable backends with identical behaviour: the Rust extension ``fenwire_fast._native`` when
it imports, or the pure-Python ``fenwire_fast._pure`` when ``FENWIRE_NO_EXTENSIONS=1`` is set or the
extension is missing. ``IMPLEMENTATION`` says which (``"rust"`` or ``"python"``).

Nothing in the codec raises on bad input: every call returns a ``Rejection`` instead.

``json_schema(direction)`` gives the protocol's rules as a JSON Schema for parents and children
written in other languages (docs/schema.md); ``fenwire_fast.messages`` has a ``TypedDict`` per
message type.
"""

from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING

from . import _moved
from ._types import (
    CONTROL_TYPE_ORDER,
    CONTROL_TYPES,
    DISPLAY_EVENT_TYPES,
    DRAIN_BYTE_BUDGET,
    DRAIN_EVENT_BUDGET,
    EVENT_MAX_DEPTH,
    EVENT_PAYLOAD_BYTES,
    EVENT_STRING_BYTES,
    EVENT_TABLE_ENTRIES,
    EVENT_TYPE_ORDER,
    EVENT_TYPES,
    LIFECYCLE_EVENT_TYPES,
    MAX_LINE_BYTES,
    MAX_SAFE_INTEGER,
    REJECTION_CODES,
    SUMMARY_BYTES,
    VERSION,
    Rejection,
    Scanned,
    is_control_type,
    is_event_type,
)

if TYPE_CHECKING:
    from ._json_schema import json_schema

    __version__: str


def __getattr__(name: str) -> object:
    # ``__version__`` is written once, in Cargo.toml, and maturin copies it into the package's
    # metadata. It is looked up on first use: importlib.metadata costs ~15 ms at import time.
    if name == "__version__":
        from importlib import metadata

        try:
            version = metadata.version("fenwire_fast")
        except metadata.PackageNotFoundError:  # imported from a source tree that is not installed
            version = "0+unknown"
        globals()["__version__"] = version
        return version
    if name == "json_schema":  # imported on first use: the codec never needs it
        from ._json_schema import json_schema

        globals()["json_schema"] = json_schema
        return json_schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_NATIVE_IMPORT_ERROR: BaseException | None = None

if TYPE_CHECKING:
    from . import _pure as _backend
elif _os.environ.get("FENWIRE_NO_EXTENSIONS", "") not in ("", "0"):
    from . import _pure as _backend
else:
    try:
        import importlib as _importlib

        _backend = _importlib.import_module("fenwire_fast._native")
    except ImportError as exc:  # not built, or built for another interpreter
        _NATIVE_IMPORT_ERROR = exc
        from . import _pure as _backend

#: ``"rust"`` when the extension is in use, ``"python"`` for the pure fallback.
IMPLEMENTATION: str = _backend.IMPLEMENTATION

decode = _backend.decode
validate = _backend.validate
encode = _backend.encode
message = _backend.message
rejection_ack = _backend.rejection_ack
Sender = _backend.Sender
Receiver = _backend.Receiver
Framer = _backend.Framer
ScanBatch = _backend.ScanBatch
utf8_prefix = _backend.utf8_prefix
truncate_line = _backend.truncate_line
scrub = _backend.scrub

_moved.install()  # modules' old paths (``fenwire_fast.fleet``...) keep working, and warn

__all__ = [
    "IMPLEMENTATION",
    "__version__",
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
    "EVENT_TYPES",
    "CONTROL_TYPES",
    "EVENT_TYPE_ORDER",
    "CONTROL_TYPE_ORDER",
    "DISPLAY_EVENT_TYPES",
    "LIFECYCLE_EVENT_TYPES",
    "Rejection",
    "Scanned",
    "is_event_type",
    "is_control_type",
    "json_schema",
    "decode",
    "validate",
    "encode",
    "message",
    "rejection_ack",
    "Sender",
    "Receiver",
    "Framer",
    "ScanBatch",
    "utf8_prefix",
    "truncate_line",
    "scrub",
]
