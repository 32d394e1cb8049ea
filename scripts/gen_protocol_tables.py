"""Write the message tables of docs/wire-protocol.md from the schema tables in ``_schema.py``.

Every type's fields, their kinds and which are required come from
``fenwire_fast._schema`` (the table both backends validate against); only the "what it reports"
column is written here. The tables sit between ``<!-- BEGIN GENERATED: name -->`` and
``<!-- END GENERATED: name -->`` markers; ``tests/test_docs.py`` fails when they are not current.

    python scripts/gen_protocol_tables.py           # rewrite the tables in place
    python scripts/gen_protocol_tables.py --check   # exit 1 when they are not current
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "wire-protocol.md"
sys.path.insert(0, str(ROOT / "python"))

from fenwire_fast._schema import CONTROL_SCHEMAS, DISPLAY_FIELDS, ENUMS, EVENT_SCHEMAS, Schema  # noqa: E402
from fenwire_fast._types import LIFECYCLE_EVENT_TYPES  # noqa: E402

KINDS = {
    "pos": "positive integer",
    "refs": "array of positive integers",
}

DISPLAY_FIELD_MEANINGS = {
    "timestamp": "UTC time of the event, `YYYY-MM-DDTHH:MM:SSZ`",
    "summary": "a one-line summary of the event (`normalize` keeps it within 160 bytes)",
    "run-id": "where the event comes from",
    "agent": "where the event comes from",
    "requested-cwd": "where the event comes from",
    "cwd": "where the event comes from",
    "physical-cwd": "where the event comes from",
    "transport-truncated?": "present, as `true`, only when the child had to cut, escape or replace part of the "
    "event to make it fit",
}

DISPLAY_EVENTS = {
    "agent-started": "the agent came up (its working directory goes in the display field `cwd`)",
    "user": "a user message given to the agent",
    "llm-start": "a model call begins",
    "llm-end": "a model call ended: why it stopped and what it used",
    "assistant-text": "a complete block of assistant text",
    "assistant-text-delta": "a piece of assistant text as it streams",
    "assistant-thinking": "a complete block of thinking",
    "assistant-thinking-delta": "a piece of thinking as it streams",
    "assistant-stream-end": "the model's stream for this step is over",
    "tool-call": "the agent calls a tool",
    "tool-result": "a tool's answer",
    "steering-injected": "queued steering text was given to the agent; `ref` is the `seq` of the `steer` control "
    "it came from",
    "follow-up-injected": "a queued follow-up was given to the agent; `ref` is the `seq` of its `follow-up` control",
    "agent-turn-complete": "the agent's own end-of-turn report",
    "error": "something went wrong inside the agent",
    "info": "a notice; the child uses it to list, in `refs`, the `seq` of queued controls it dropped",
}

LIFECYCLE_EVENTS = {
    "ready": "the child has started and reads controls from now on",
    "turn-started": "a turn begins; turns are numbered from 1 in each run",
    "turn-complete": "a turn ended: the stop reason of its last model call and the usage summed over the turn",
    "control-ack": "the answer to the control whose `seq` is `ref`",
    "result": "the run's answer, written once, just before `exit` with status `done`",
    "exit": "the run is over; always the child's last line",
}

CONTROLS = {
    "prompt": "start a turn with this text; the task itself is the run's first `prompt`",
    "steer": "give the agent this text at its next step (while a turn runs), or start a turn with it (while ready)",
    "follow-up": "run this text after the current turn (while a turn runs), or start a turn with it (while ready)",
    "finalize": "stop, then run one last turn with tools disabled and write the `result`; `note` is that turn's "
    "instruction",
    "cancel": "stop the run now; it exits `cancelled`",
    "close": "finish the run after the current turn; it exits `done` with a `result`",
}

#: Rules the validator applies beyond the table (see the _schema docstring).
EXTRA_REQUIRED = {"control-ack": "and `ref` unless `status` is `rejected`"}


def kind(name: str) -> str:
    if name in ENUMS:
        return "one of " + ", ".join(f"`{v}`" for v in ENUMS[name])
    return KINDS.get(name, name)


def own_fields(schema: Schema) -> list[tuple[str, str]]:
    display = dict(DISPLAY_FIELDS)
    return [(f, k) for f, k in schema.fields if f not in display]


def row(name: str, schema: Schema, meaning: str) -> str:
    fields = ", ".join(f"`{f}` {kind(k)}" for f, k in own_fields(schema)) or "none"
    required = ", ".join(f"`{f}`" for f in schema.required)
    if name in EXTRA_REQUIRED:
        required = f"{required}, {EXTRA_REQUIRED[name]}" if required else EXTRA_REQUIRED[name]
    return f"| `{name}` | {fields} | {required or '—'} | {meaning} |"


def type_table(schemas: dict[str, Schema], meanings: dict[str, str], verb: str) -> str:
    lines = [f"| type | its fields | required | {verb} |", "|---|---|---|---|"]
    lines += [row(name, schemas[name], meaning) for name, meaning in meanings.items()]
    return "\n".join(lines)


def display_fields_table() -> str:
    lines = ["| field | kind | meaning |", "|---|---|---|"]
    groups: dict[str, list[tuple[str, str]]] = {}
    for field, k in DISPLAY_FIELDS:
        groups.setdefault(DISPLAY_FIELD_MEANINGS[field], []).append((field, k))
    for meaning, fields in groups.items():
        names = ", ".join(f"`{f}`" for f, _ in fields)
        lines.append(f"| {names} | {kind(fields[0][1])} | {meaning} |")
    return "\n".join(lines)


def tables() -> dict[str, str]:
    display = {n: s for n, s in EVENT_SCHEMAS.items() if n not in LIFECYCLE_EVENT_TYPES}
    lifecycle = {n: s for n, s in EVENT_SCHEMAS.items() if n in LIFECYCLE_EVENT_TYPES}
    for schemas, meanings in ((display, DISPLAY_EVENTS), (lifecycle, LIFECYCLE_EVENTS), (CONTROL_SCHEMAS, CONTROLS)):
        if set(schemas) != set(meanings):
            raise SystemExit(f"the descriptions do not cover the schema: {sorted(set(schemas) ^ set(meanings))}")
    return {
        "display fields": display_fields_table(),
        "display events": type_table(display, DISPLAY_EVENTS, "what it reports"),
        "lifecycle events": type_table(lifecycle, LIFECYCLE_EVENTS, "what it reports"),
        "controls": type_table(CONTROL_SCHEMAS, CONTROLS, "what it asks for"),
    }


def render(doc: str) -> str:
    """``doc`` with every generated table replaced by the current one."""
    for name, table in tables().items():
        pattern = re.compile(
            rf"(<!-- BEGIN GENERATED: {re.escape(name)} -->\n).*?(\n<!-- END GENERATED: {re.escape(name)} -->)",
            re.S,
        )
        if not pattern.search(doc):
            raise SystemExit(f"{DOC}: no markers for the {name!r} table")
        doc = pattern.sub(lambda m, table=table: m.group(1) + table + m.group(2), doc)
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the tables are not current")
    args = parser.parse_args()
    doc = DOC.read_text()
    new = render(doc)
    if args.check:
        if new != doc:
            print(f"{DOC} is not current: run python scripts/gen_protocol_tables.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
