"""The ACP bridge's reading of one line of the agent's stdout (``vet_message``): JSON-RPC 2.0 that
the SDK can take is passed on, anything else is skipped with the ``info`` that says why, and an
error answer that is not an error object still ends its request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("acp")

from fenwire_fast.live.acp.client import MAX_DEPTH, vet_message

NOT_JSON_RPC = "ACP agent wrote a line that is not JSON-RPC; skipped"
TOO_DEEP = f"ACP agent wrote a message nested more than {MAX_DEPTH} levels deep; skipped"


def vet(message: Any, sent: set[int] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    line = message if isinstance(message, bytes) else json.dumps(message).encode()
    return vet_message(line, set() if sent is None else sent)


def nested(depth: int) -> dict[str, Any]:
    """A notification nested ``depth`` levels deep in all (the message itself is level 1)."""
    return {"method": "_x", "params": {"a": json.loads("[" * (depth - 2) + "]" * (depth - 2))}}


@pytest.mark.parametrize(
    "line",
    [b"not json", b"[1, 2]", b'"text"', b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "1.0", "method": "x"}',
     b'{"method": "x", "params": {"n": NaN}}', b'{"method": "x", "params": [Infinity]}', b"\xff\xfe{}"],
)  # fmt: skip
def test_what_is_not_a_json_rpc_object_is_skipped(line: bytes) -> None:
    assert vet(line) == (None, NOT_JSON_RPC)


def test_nesting_is_bounded_whether_or_not_python_could_parse_it() -> None:
    assert vet(nested(MAX_DEPTH)) == (nested(MAX_DEPTH), None)
    assert vet(nested(MAX_DEPTH + 1)) == (None, TOO_DEEP)
    assert vet(b"[" * 100_000) == (None, TOO_DEEP)
    assert vet(b'{"method": "x", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") == (None, TOO_DEEP)


@pytest.mark.parametrize("rid", ["a", 7, -3, 1.5, None])
def test_a_request_id_may_be_a_string_a_number_or_null(rid: Any) -> None:
    message = {"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": {}}
    assert vet(message) == (message, None)


@pytest.mark.parametrize(("rid", "shown"), [(True, "true"), ([1], "[1]"), ({"a": 1}, '{"a": 1}')])
def test_a_request_or_answer_id_of_another_kind_is_skipped(rid: Any, shown: str) -> None:
    got = vet({"id": rid, "method": "session/request_permission", "params": {}})
    assert got == (None, f'ACP agent sent "session/request_permission" with {ID}; skipped')
    got = vet({"id": rid, "result": {}}, {0, 1})
    assert got == (None, f"ACP agent answered with {ID} ({shown}); skipped")


ID = "an id that is not a string, number or null"


@pytest.mark.parametrize(
    ("message", "summary"),
    [
        ({"method": 5}, "ACP agent sent a message whose method is not a string (5); skipped"),
        ({"method": None, "id": 0, "result": {}}, "ACP agent sent a message whose method is not a string (null); skipped"),
        ({"method": "x", "params": "p"}, 'ACP agent sent "x" with params that are not an object or array; skipped'),
        ({"method": "x", "params": None}, 'ACP agent sent "x" with params that are not an object or array; skipped'),
    ],
)  # fmt: skip
def test_a_method_must_be_a_string_and_params_structured(message: dict[str, Any], summary: str) -> None:
    assert vet(message) == (None, summary)
    assert vet({"method": "_x", "params": [1]})[1] is None  # positional params are JSON-RPC too
    assert vet({"id": 1, "method": "x", "params": [1]})[1] is None  # (the SDK answers what it cannot take)


def update(kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": kind, **fields}},
    }


def test_a_notification_must_be_a_valid_session_update_or_an_extension() -> None:
    """The SDK drops any other notification, and a session/update it cannot read, with a
    traceback in the log: the bridge skips them with an info instead."""
    good = update("agent_message_chunk", content={"type": "text", "text": "hi"})
    assert vet(good) == (good, None)
    assert vet({"method": "_vendor/note", "params": {"a": 1}})[1] is None
    assert vet({"method": "foo/bar", "params": {}}) == (
        None,
        'ACP agent sent a notification the bridge does not know ("foo/bar"); skipped',
    )
    message, summary = vet(update("bogus"))
    assert message is None and summary is not None
    assert summary.startswith("ACP agent sent a session/update that is not valid ACP (update: Input tag 'bogus'")
    assert summary.endswith("; skipped") and len(summary) < 200
    assert vet({"method": "session/update"})[1] == (
        "ACP agent sent a session/update that is not valid ACP (Input should be a valid dictionary or instance of"
        " SessionNotification); skipped"
    )


def test_an_answer_passes_once_and_only_for_a_request_sent() -> None:
    sent = {2, 3}
    answer = {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    assert vet(answer, sent) == (answer, None)
    assert sent == {3}
    unknown = "ACP agent answered a request the bridge did not send or that had its answer (id {}); skipped"
    assert vet(answer, sent) == (None, unknown.format(2))
    assert vet({"id": 9, "result": None}, sent) == (None, unknown.format(9))
    assert vet({"id": "3", "result": None}, sent) == (None, unknown.format('"3"'))
    assert vet({"id": 3.0, "result": None}, sent) == (None, unknown.format("3.0"))
    assert vet({"id": None, "error": {"code": -32700, "message": "Parse error"}}, sent)[0] is None
    assert sent == {3}


@pytest.mark.parametrize(
    "error", ["boom", [1], 0, None, {"code": "1", "message": "m"}, {"code": 1}, {"code": True, "message": "m"}]
)
def test_an_error_that_is_not_an_error_object_still_ends_its_request(error: Any) -> None:
    message, summary = vet({"jsonrpc": "2.0", "id": 4, "error": error}, {4})
    shown = json.dumps(error)
    assert message == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32603, "message": f"malformed error answer: {shown}"},
    }
    assert summary == f"ACP agent answered request 4 with a malformed error ({shown}); read as error -32603"


def test_an_error_object_passes_as_it_is() -> None:
    answer = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "no key", "data": [1]}}
    assert vet(answer, {4}) == (answer, None)


def test_what_the_sdk_logs_goes_to_the_log_on_one_line_without_a_traceback() -> None:
    """The SDK logs a task's failure with ``logging.exception`` (a killed agent's stdin, ...): in a
    bridged child that is one line on stderr, never a traceback."""
    code = (
        "import logging\n"
        "from fenwire_fast.live.acp.agent import _log_on_one_line\n"
        "_log_on_one_line()\n"
        "try:\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "except OSError as exc:\n"
        "    logging.exception('Send loop failed', exc_info=exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "fenwire child: root ERROR: Send loop failed BrokenPipeError: [Errno 32] Broken pipe\n"
