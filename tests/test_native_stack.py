"""The maximum nesting (1024 levels) decodes on threads with small stacks, as it does with the
pure backend (orjson does not recurse); found by the Rust backend's own review, where the
recursive parser overflowed a 128 KiB thread stack."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fenwire_fast import _pure

native = pytest.importorskip("fenwire_fast._native")

HEAD = b'{"v":1,"seq":1,"type":"tool-call","run":"r","name":"x","arguments":'
OBJECTS = HEAD + b'{"a":' * 1023 + b"1" + b"}" * 1023 + b"}"
ARRAYS = HEAD + b"[" * 1023 + b"]" * 1023 + b"}"
TOO_DEEP = HEAD + b"[" * 1024 + b"]" * 1024 + b"}"


def _deep_dict(levels: int) -> dict[str, Any]:
    msg: dict[str, Any] = {"v": 1, "seq": 1, "type": "tool-call", "run": "r", "name": "x"}
    cur = msg
    for _ in range(levels):
        cur["arguments"] = {}
        cur = cur["arguments"]
    return msg


@pytest.mark.parametrize("stack", [128 * 1024, 256 * 1024])
def test_deep_lines_on_a_small_thread_stack(stack: int) -> None:
    results: dict[str, Any] = {}

    def run() -> None:
        for backend in (native, _pure):
            name = backend.IMPLEMENTATION
            results[name] = [
                backend.decode(OBJECTS, "event"),
                backend.decode(ARRAYS, "event"),
                backend.decode(TOO_DEEP, "event"),
                backend.Receiver("event").feed(OBJECTS + b"\n" + ARRAYS.replace(b'"seq":1', b'"seq":2') + b"\n"),
                backend.encode(_deep_dict(250), "event"),
            ]

    old = threading.stack_size(stack)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    # (The decoded values nest deeper than Python's recursion limit allows `==` to compare.)
    for name in ("rust", "python"):
        decoded_objects, decoded_arrays, too_deep, fed, encoded = results[name]
        assert decoded_objects[1] is None and isinstance(decoded_objects[0], dict)
        assert decoded_arrays[1] is None and isinstance(decoded_arrays[0], dict)
        assert too_deep[0] is None and too_deep[1].reason == "line is not valid JSON"
        assert len(fed) == 2 and all(isinstance(m, dict) for m in fed)
    assert results["rust"][2] == results["python"][2]
    assert results["rust"][4] == results["python"][4]
