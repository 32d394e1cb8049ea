"""The protocol's message rules as JSON Schema (draft 2020-12), built from the tables in ``_schema``.

One document per direction: the envelope (``v``, ``seq``, ``type``, ``run``), one ``$defs`` entry
per message type (complete: the envelope, ``type`` pinned with ``const``, the fields), one per
field kind used (``kind-pos``, ``kind-object``...), and a dispatch on ``type``: ``type`` is one of
the direction's types (else the line fails, as the validator rejects it: ``unknown-type``), and an
``if``/``then`` per type sends the line to its ``$defs`` entry. The dispatch says the same as a
``oneOf`` of the entries would, and a validator's errors then name the field at fault rather than
"not valid under any of the given schemas". Unknown fields are allowed
(``additionalProperties: true``), as the validator ignores them.

What a JSON Schema cannot say, and this package's validator enforces: the line cap
(``MAX_LINE_BYTES`` of UTF-8), the JSON dialect (UTF-8 only, no NaN or infinity, a number literal
that overflows a double is malformed, duplicate keys keep the last value), and the ``seq`` order
within a stream. See docs/schema.md.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._schema import CONTROL_SCHEMAS, ENUMS, ENVELOPE, EVENT_SCHEMAS, Schema
from ._types import CONTROL_TYPE_ORDER, EVENT_TYPE_ORDER, MAX_LINE_BYTES, MAX_SAFE_INTEGER, VERSION

__all__ = ["json_schema", "schema_text", "DIRECTIONS"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
DIRECTIONS = ("event", "control")

_TABLES: dict[str, tuple[dict[str, Schema], tuple[str, ...]]] = {
    "event": (EVENT_SCHEMAS, EVENT_TYPE_ORDER),
    "control": (CONTROL_SCHEMAS, CONTROL_TYPE_ORDER),
}
_TITLES = {
    "event": "events (a child's lines, child to parent)",
    "control": "controls (a parent's lines, parent to child)",
}

_POS = {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER}


def _kind(kind: str) -> dict[str, Any]:
    """The schema of one field kind, as faithful as JSON Schema allows."""
    if kind in ENUMS:
        return {"enum": list(ENUMS[kind])}
    kinds: dict[str, dict[str, Any]] = {
        "string": {"type": "string"},
        "boolean": {"type": "boolean"},
        # JSON Schema's number and integer never accept a boolean; integer accepts 2.0
        "number": {"type": "number"},
        "integer": {"type": "integer"},
        "pos": _POS,
        "object": {"anyOf": [{"type": "object"}, {"type": "array", "maxItems": 0}]},
        "array": {"anyOf": [{"type": "array"}, {"type": "object", "maxProperties": 0}]},
        "refs": {"anyOf": [{"type": "array", "items": _POS}, {"type": "object", "maxProperties": 0}]},
        "any": {},
    }
    if kind not in kinds:
        raise ValueError(f"no JSON Schema for field kind {kind!r}")
    description = {
        "number": "an integer or a float, never a boolean",
        "integer": "an integer, or a float with an integral value, never a boolean",
        "pos": f"an integer from 1 to {MAX_SAFE_INTEGER} (2.0 counts as 2)",
        "object": "an object, or an empty array",
        "array": "an array, or an empty object",
        "refs": "an array of positive integers, or an empty object",
        "any": "any JSON value",
    }.get(kind)
    return kinds[kind] | ({"description": description} if description else {})


def _ref(kind: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/kind-{kind}"}


def _envelope() -> dict[str, Any]:
    properties: dict[str, Any] = {
        "v": {"const": VERSION, "description": f"the wire version: {VERSION} (or {VERSION}.0)"}
    }
    properties |= {name: _ref(kind) for name, kind in ENVELOPE.fields}
    return {
        "description": "The fields every message carries.",
        "type": "object",
        "properties": properties,
        "required": ["v", *ENVELOPE.required],
    }


def _message(type_name: str, schema: Schema) -> dict[str, Any]:
    properties: dict[str, Any] = {"type": {"const": type_name}}
    properties |= {name: _ref(kind) for name, kind in schema.fields}
    out: dict[str, Any] = {
        "title": type_name,
        "type": "object",
        "allOf": [{"$ref": "#/$defs/envelope"}],
        "properties": properties,
        "required": ["type", *schema.required],
        "additionalProperties": True,
    }
    if type_name == "control-ack":
        out["if"] = {"properties": {"status": {"const": "rejected"}}, "required": ["status"]}
        out["else"] = {"required": ["ref"]}
        out["description"] = "ref is required unless status is rejected"
    return out


def _dispatch(type_name: str) -> dict[str, Any]:
    """The branch of one type: a line of that type must match its ``$defs`` entry."""
    return {
        "if": {"properties": {"type": {"const": type_name}}, "required": ["type"]},
        "then": {"$ref": f"#/$defs/{type_name}"},
    }


def _document(direction: str) -> dict[str, Any]:
    schemas, order = _TABLES[direction]
    kinds = sorted({kind for schema in schemas.values() for _, kind in schema.fields} | {k for _, k in ENVELOPE.fields})
    defs: dict[str, Any] = {"envelope": _envelope()}
    defs |= {f"kind-{kind}": _kind(kind) for kind in kinds}
    defs |= {name: _message(name, schemas[name]) for name in order}
    body: dict[str, Any] = {
        "$schema": DIALECT,
        "title": f"Fen wire protocol {VERSION}: {_TITLES[direction]}",
        "description": (
            "One line of the Fen wire protocol, a JSON object. Not expressible here, and enforced by the "
            f"fenwire_fast validator: the line cap (fewer than {MAX_LINE_BYTES} bytes of UTF-8, newline "
            "excluded), the JSON dialect (strict UTF-8, no byte-order mark, no NaN or infinity, no lone "
            "surrogate, a number overflowing a double or nesting deeper than 1024 is malformed; duplicate "
            "keys keep the last value) and the seq order (each line's seq above the last one)."
        ),
        "type": "object",
        "properties": {"type": {"enum": list(order)}},
        "allOf": [{"$ref": "#/$defs/envelope"}, *(_dispatch(name) for name in order)],
        "$defs": defs,
    }
    version = f"{VERSION}.{_digest(body)}"
    return {"$id": f"urn:fenwire:schema:{direction}:{version}", "$comment": f"schema version {version}"} | body


def _digest(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


def json_schema(direction: str | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one direction's lines, built from this package's tables.

    ``direction`` is ``"event"`` (a child's lines) or ``"control"`` (a parent's lines): the document
    has the envelope, one ``$defs`` entry per message type, and an ``if``/``then`` per type
    dispatching on ``type`` (an unknown type fails an ``enum``). ``None`` gives one document holding both, as the embedded
    schemas ``$defs/event`` and ``$defs/control`` (validate against one of them, not the whole).

    ``$id`` and ``$comment`` carry a schema version, ``VERSION.DIGEST``, the digest changing with
    the tables. Rules a JSON Schema cannot express (the line cap, the JSON dialect, the ``seq``
    order) are left to this package's validator; docs/schema.md lists them.

    A bad ``direction`` raises ``ValueError``.
    """
    if direction is None:
        parts = {name: _document(name) for name in DIRECTIONS}
        body = {
            "$schema": DIALECT,
            "title": f"Fen wire protocol {VERSION}: both directions",
            "description": "Validate a child's lines against $defs/event and a parent's against $defs/control.",
            "$defs": parts,
        }
        version = f"{VERSION}.{_digest(body)}"
        return {"$id": f"urn:fenwire:schema:wire:{version}", "$comment": f"schema version {version}"} | body
    if not (isinstance(direction, str) and direction in DIRECTIONS):
        raise ValueError(f'direction must be "event" or "control", not {direction!r}')
    return _document(direction)


def schema_text(direction: str | None = None) -> str:
    """:func:`json_schema` as the text ``fenwire schema`` prints: sorted keys, indent 2, a final newline."""
    return json.dumps(json_schema(direction), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
