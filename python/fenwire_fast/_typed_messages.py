"""The source of ``fenwire_fast.messages``, a ``TypedDict`` per message type, from the tables in ``_schema``.

``scripts/gen_schema_files.py`` writes it; ``tests/test_messages.py`` checks the committed module is
current. The field names (``final?``, ``run-id``) are not identifiers, so every ``TypedDict`` is
written in the functional syntax, each field ``Required`` or ``NotRequired``.
"""

from __future__ import annotations

import json

from ._schema import CONTROL_SCHEMAS, ENUMS, ENVELOPE, EVENT_SCHEMAS, Schema
from ._types import CONTROL_TYPE_ORDER, EVENT_TYPE_ORDER, VERSION

__all__ = ["messages_source", "class_name"]

#: field kind -> its Python type (the enum kinds are Literal aliases, named by :func:`_alias`)
_PYTHON_TYPES = {
    "string": "str",
    "boolean": "bool",
    "number": "float",
    "integer": "int",
    "pos": "int",
    "object": "dict[str, Any]",
    "array": "list[Any]",
    "refs": "list[int]",
    "any": "Any",
}

_HEADER = '''"""Typed messages: a ``TypedDict`` per message type of the Fen wire protocol, for type checkers.

Generated from the tables in ``fenwire_fast._schema`` by ``python scripts/gen_schema_files.py``: do
not edit. Events are ``<Type>Event`` (``ToolCallEvent``), controls ``<Type>Control``
(``PromptControl``); ``Event`` and ``Control`` are the unions of each direction. The ``type`` field
and the enum kinds are ``Literal`` types; the envelope (``v``, ``seq``, ``type``, ``run``) is in
every one.

Field kinds and their types: string ``str``, boolean ``bool``, number ``float`` (an ``int`` is one
too), integer and pos ``int``, object ``dict[str, Any]``, array ``list[Any]``, refs ``list[int]``,
any ``Any``. They say what a sender writes; the validator accepts a little more, which these types
cannot say: ``2.0`` for an integer, an empty list for an object, an empty dict for an array, the
bounds of pos (1 to 2**53 - 1), fields the schema does not know (ignored), and a ``control-ack``
without ``ref`` only when its ``status`` is ``"rejected"``. ``fenwire_fast.decode`` checks all of it.
"""

# ruff: noqa: UP013 - the functional syntax throughout: most field names are not identifiers

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict
'''


def class_name(type_name: str, direction: str) -> str:
    """The ``TypedDict``'s name: ``tool-call`` (event) -> ``ToolCallEvent``."""
    return "".join(part.capitalize() for part in type_name.split("-")) + direction.capitalize()


def _quoted(text: str) -> str:
    return json.dumps(text)


def _alias(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("-"))


def _python_type(kind: str) -> str:
    return _alias(kind) if kind in ENUMS else _PYTHON_TYPES[kind]


def _typed_dict(type_name: str, schema: Schema, direction: str) -> str:
    name = class_name(type_name, direction)
    fields = [("v", f"Literal[{VERSION}]", True)]
    for field, kind in ENVELOPE.fields:
        python = f"Literal[{_quoted(type_name)}]" if field == "type" else _python_type(kind)
        fields.append((field, python, True))
    fields += [(field, _python_type(kind), field in schema.required) for field, kind in schema.fields]
    body = "".join(
        f"        {_quoted(field)}: {'Required' if required else 'NotRequired'}[{python}],\n"
        for field, python, required in fields
    )
    return f"{name} = TypedDict(\n    {_quoted(name)},\n    {{\n{body}    }},\n)\n"


def _union(name: str, members: list[str], what: str) -> str:
    line = f"{name}: TypeAlias = {' | '.join(members)}"
    if len(line) > 120:  # as ruff format writes it
        line = f"{name}: TypeAlias = (\n    " + "\n    | ".join(members) + "\n)"
    return f"#: {what}\n{line}\n"


def messages_source() -> str:
    """The text of ``fenwire_fast/messages.py``."""
    events = [class_name(name, "event") for name in EVENT_TYPE_ORDER]
    controls = [class_name(name, "control") for name in CONTROL_TYPE_ORDER]
    aliases = [_alias(kind) for kind in ENUMS]
    names = ["Event", "Control", *aliases, *events, *controls]
    parts = [_HEADER + "\n__all__ = [\n" + "".join(f"    {_quoted(name)},\n" for name in names) + "]\n"]
    parts += [f"{_alias(kind)}: TypeAlias = Literal[{', '.join(_quoted(c) for c in ENUMS[kind])}]\n" for kind in ENUMS]
    parts += [_typed_dict(name, EVENT_SCHEMAS[name], "event") for name in EVENT_TYPE_ORDER]
    parts += [_typed_dict(name, CONTROL_SCHEMAS[name], "control") for name in CONTROL_TYPE_ORDER]
    parts += [
        _union("Event", events, "Any event: a line a child writes."),
        _union("Control", controls, "Any control: a line a parent writes."),
    ]
    return "\n\n".join(part.rstrip("\n") + "\n" for part in parts)
