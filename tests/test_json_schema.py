"""``fenwire_fast.json_schema`` and ``fenwire schema``: the documents, their pinned copies in
schema/, the command line. (Their agreement with the validator: tests/test_schema_agreement.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import fenwire_fast
import jsonschema
import pytest
from conftest import TESTS, run_cli
from fenwire_fast import _json_schema
from fenwire_fast._schema import EVENT_SCHEMAS, Schema

ROOT = TESTS.parent


def test_the_committed_schemas_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_schema_files.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    for direction in ("event", "control"):
        text = (ROOT / "schema" / f"{direction}.schema.json").read_text()
        assert text == _json_schema.schema_text(direction), (
            f"schema/{direction}.schema.json is not current: run python scripts/gen_schema_files.py"
        )


@pytest.mark.parametrize("direction", ["event", "control", None])
def test_every_document_is_a_valid_2020_12_schema(direction: str | None) -> None:
    doc = fenwire_fast.json_schema(direction)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(doc)


def test_one_def_per_type_and_a_branch_each() -> None:
    for direction, types in (("event", fenwire_fast.EVENT_TYPES), ("control", fenwire_fast.CONTROL_TYPES)):
        doc = fenwire_fast.json_schema(direction)
        assert sorted(doc["properties"]["type"]["enum"]) == sorted(types)
        assert doc["allOf"][0] == {"$ref": "#/$defs/envelope"}
        branches = {branch["if"]["properties"]["type"]["const"]: branch["then"]["$ref"] for branch in doc["allOf"][1:]}
        assert branches == {name: f"#/$defs/{name}" for name in types}
        for name in types:
            assert doc["$defs"][name]["properties"]["type"] == {"const": name}


def test_the_version_changes_with_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    before = fenwire_fast.json_schema("event")
    assert before["$id"] == f"urn:fenwire:schema:event:{before['$comment'].removeprefix('schema version ')}"
    assert fenwire_fast.json_schema("event") == before  # stable from call to call
    monkeypatch.setitem(EVENT_SCHEMAS, "ready", Schema(("x",), (("x", "string"),)))
    after = fenwire_fast.json_schema("event")
    assert after["$id"] != before["$id"]
    assert after["$defs"]["ready"]["required"] == ["type", "x"]


@pytest.mark.parametrize("direction", [None, "", "events", 1, "EVENT"])
def test_a_bad_direction_is_a_value_error(direction: object) -> None:
    if direction is None:
        assert set(fenwire_fast.json_schema()["$defs"]) == {"event", "control"}
        return
    with pytest.raises(ValueError, match='^direction must be "event" or "control", not '):
        fenwire_fast.json_schema(direction)  # type: ignore[arg-type]


def test_json_schema_is_public_and_documented() -> None:
    assert "json_schema" in fenwire_fast.__all__
    assert "direction" in (fenwire_fast.json_schema.__doc__ or "")


def test_the_command_prints_the_pinned_schema() -> None:
    for direction in ("event", "control"):
        proc = run_cli("schema", "--direction", direction)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (ROOT / "schema" / f"{direction}.schema.json").read_text()
        assert proc.stderr == ""
    proc = run_cli("schema")
    assert proc.returncode == 0, proc.stderr
    both = json.loads(proc.stdout)
    assert both["$defs"]["event"] == fenwire_fast.json_schema("event")
    assert proc.stdout.endswith("}\n")


@pytest.mark.parametrize(
    "args,message",
    [
        (["--direction", "events"], "argument --direction: invalid choice: 'events'"),
        (["--direction"], "argument --direction: expected one argument"),
        (["extra"], "unrecognized arguments: extra"),
    ],
)
def test_misuse_is_one_line_of_error(args: list[str], message: str) -> None:
    proc = run_cli("schema", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"fenwire schema: error: {message}")


def test_schema_is_in_the_help() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "    schema " in proc.stdout
    assert "--direction {event,control}" in run_cli("schema", "--help").stdout


def test_the_package_does_not_import_jsonschema() -> None:
    code = "import sys, fenwire_fast; fenwire_fast.json_schema('event'); print('jsonschema' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_schema_doc_s_python_blocks_run() -> None:
    """docs/schema.md's Python examples run as pasted (with the backend and the package this run
    tests: from the repository's root, where a relative PYTHONPATH=python means the source)."""
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "docs" / "schema.md").read_text(), re.S | re.M)
    assert len(blocks) >= 2
    for code in blocks:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert proc.returncode == 0, f"{code}\n{proc.stdout}\n{proc.stderr}"


def test_the_docs_link_the_schema_doc() -> None:
    assert "(docs/schema.md)" in (ROOT / "README.md").read_text()
    cli = (ROOT / "docs" / "cli.md").read_text()
    assert "## `fenwire schema`" in cli and "(schema.md)" in cli
