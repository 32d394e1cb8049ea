"""``fenwire_fast.messages``: the committed module is current, its ``TypedDict``s follow the
schema tables, and mypy --strict sees them (a message with a wrong field type fails)."""

from __future__ import annotations

import os
import textwrap
import typing
from pathlib import Path
from typing import Any

import fenwire_fast
import orjson
import pytest
from fenwire_fast import messages
from fenwire_fast._schema import CONTROL_SCHEMAS, ENUMS, EVENT_SCHEMAS
from fenwire_fast._typed_messages import class_name, messages_source
from test_wire_fixtures import CONTROL_LINES, EVENT_LINES

ENVELOPE = {"v", "seq", "type", "run"}
TABLES = {"event": EVENT_SCHEMAS, "control": CONTROL_SCHEMAS}


def test_the_committed_module_is_current() -> None:
    path = Path(messages.__file__)
    assert path.read_text() == messages_source(), f"{path} is not current: run python scripts/gen_schema_files.py"


@pytest.mark.parametrize("direction", ["event", "control"])
def test_one_typed_dict_per_type_with_the_schema_s_fields(direction: str) -> None:
    union = typing.get_args(messages.Event if direction == "event" else messages.Control)
    assert len(union) == len(TABLES[direction])
    for type_name, schema in TABLES[direction].items():
        cls = getattr(messages, class_name(type_name, direction))
        assert cls in union
        assert cls.__required_keys__ == ENVELOPE | set(schema.required)
        assert cls.__optional_keys__ == {name for name, _ in schema.fields} - set(schema.required)
        hints = typing.get_type_hints(cls)
        assert typing.get_args(hints["type"]) == (type_name,)
        assert typing.get_args(hints["v"]) == (fenwire_fast.VERSION,)
        for name, kind in schema.fields:
            if kind in ENUMS:
                assert typing.get_args(hints[name]) == ENUMS[kind]


def test_fixture_messages_have_the_typed_keys() -> None:
    for direction, lines in (("event", EVENT_LINES), ("control", CONTROL_LINES)):
        for line in lines:
            msg: dict[str, Any] = orjson.loads(line)
            cls = getattr(messages, class_name(msg["type"], direction))
            assert cls.__required_keys__ <= msg.keys()


GOOD = """
from fenwire_fast.messages import Control, ControlAckEvent, Event, PromptControl, ToolResultEvent

prompt: PromptControl = {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "hi"}
ack: ControlAckEvent = {"v": 1, "seq": 2, "type": "control-ack", "run": "r", "status": "accepted", "ref": 1}
tool: ToolResultEvent = {"v": 1, "seq": 3, "type": "tool-result", "run": "r", "name": "ls", "is-error?": False,
                         "duration-seconds": 2, "result": [1, "x"]}
control: Control = prompt
events: list[Event] = [ack, tool]


def text_of(control: Control) -> str:
    if control["type"] == "prompt":
        return control["text"]
    return ""
"""

#: one mistake a line, each line marked with the error mypy must report there
BAD = """
from fenwire_fast.messages import ControlAckEvent, Event, PromptControl, ToolCallEvent

a: PromptControl = {"v": 1, "seq": "1", "type": "prompt", "run": "r", "text": "hi"}  # E: seq
b: PromptControl = {"v": 1, "seq": 1, "type": "steer", "run": "r", "text": "hi"}  # E: type
c: ControlAckEvent = {"v": 1, "seq": 1, "type": "control-ack", "run": "r", "status": "maybe"}  # E: status
d: ToolCallEvent = {"v": 1, "seq": 1, "type": "tool-call", "run": "r"}  # E: missing name
e: PromptControl = {"v": 2, "seq": 1, "type": "prompt", "run": "r", "text": "hi"}  # E: v
f: Event = {"v": 1, "seq": 1, "type": "prompt", "run": "r", "text": "hi"}  # E: a control is no event
"""


def run_mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    mypy_api = pytest.importorskip("mypy.api")  # in the test extra; not in CI's other-CPython venvs
    path = tmp_path / "usage.py"
    path.write_text(textwrap.dedent(source))
    package_root = Path(fenwire_fast.__file__).parent.parent
    env = {} if "site-packages" in package_root.parts else {"MYPYPATH": str(package_root)}
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        out, err, status = mypy_api.run(
            ["--strict", "--no-incremental", "--cache-dir", os.devnull, "--follow-imports", "silent", str(path)]
        )
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return out + err, status


def test_mypy_accepts_correct_messages(tmp_path: Path) -> None:
    out, status = run_mypy(tmp_path, GOOD)
    assert status == 0, out


def test_mypy_rejects_each_wrong_message(tmp_path: Path) -> None:
    out, status = run_mypy(tmp_path, BAD)
    assert status == 1, out
    expected = {i for i, line in enumerate(BAD.splitlines(), start=1) if "# E:" in line}
    flagged = {int(line.split(":")[1]) for line in out.splitlines() if "usage.py:" in line and ": error:" in line}
    assert flagged == expected, out
