"""A test ACP agent without the SDK: JSON-RPC written by hand, so it can break the protocol in ways
the SDK's agent side never would, chosen by ``--mode``.

    python3 raw_agent.py --mode MODE

It answers ``initialize`` and ``session/new`` and each ``session/prompt`` with
``scripted.BAD_MESSAGE`` (one ``agent_message_chunk`` per piece) and ``end_turn``; the misbehaviour
comes between the first chunk and the rest (unless the mode says otherwise):

- ``deep-line``: one write holds a line of ``scripted.RAW_DEEP_BRACKETS`` ``[``, the rest of the
  message and the prompt's answer (everything the bridge must still read after that line);
- ``list-id``, ``object-id``: an answer whose id is a list / an object (the prompt's id inside);
- ``bool-id``: answers ``session/new`` first with id ``true`` (the SDK's id for it is 1) and
  another session id, then properly;
- ``error-string``: answers the prompt with ``"error": "boom"`` (after the first chunk only);
- ``unknown-id``: an answer to a request never sent (id ``scripted.RAW_UNKNOWN_ID``), and a second
  answer to ``session/new``;
- ``bad-method``: a notification whose method is a number and a request whose method is a list;
- ``bad-params``: a ``session/update`` whose params are a string and a request whose params are
  a number;
- ``bad-notification``: a ``session/update`` of a kind ACP does not have, and a notification
  that is not ACP's;
- ``request-flood``: ``scripted.RAW_REQUESTS`` ``fs/read_text_file`` requests, written without
  reading its stdin (where their answers wait) in between;
- ``lone-surrogate``: its last chunk ends with a lone surrogate (``scripted.RAW_LONE``, written as
  the escape ``\\ud800``, which JSON allows);
- ``early-flood``: ``scripted.RAW_EARLY_UPDATES`` ``available_commands_update`` notifications
  before its answer to ``session/new``;
- ``early-garbage``: ``scripted.RAW_EARLY_GARBAGE`` lines that are not JSON before its answer to
  ``session/new``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from scripted import (
    BAD_MESSAGE,
    RAW_DEEP_BRACKETS,
    RAW_EARLY_GARBAGE,
    RAW_EARLY_UPDATES,
    RAW_LONE,
    RAW_REQUESTS,
    RAW_UNKNOWN_ID,
    SESSION,
)

MODES = (
    "deep-line",
    "list-id",
    "object-id",
    "bool-id",
    "error-string",
    "unknown-id",
    "bad-method",
    "bad-params",
    "bad-notification",
    "lone-surrogate",
    "request-flood",
    "early-flood",
    "early-garbage",
)


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def answer(rid: Any, result: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "result": result})


def update(kind: str, **fields: Any) -> bytes:
    params = {"sessionId": SESSION, "update": {"sessionUpdate": kind, **fields}}
    return line({"jsonrpc": "2.0", "method": "session/update", "params": params})


def chunk(text: str) -> bytes:
    return update("agent_message_chunk", content={"type": "text", "text": text})


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def misbehave(mode: str, rid: Any, ids: dict[str, Any]) -> bytes:
    """What the agent writes between the first chunk and the rest of its answer to prompt ``rid``."""
    if mode == "list-id":
        return answer([rid], {"stopReason": "end_turn"})
    if mode == "object-id":
        return answer({"id": rid}, {"stopReason": "end_turn"})
    if mode == "unknown-id":
        return answer(RAW_UNKNOWN_ID, {"stopReason": "end_turn"}) + answer(ids["session/new"], {"sessionId": SESSION})
    if mode == "bad-method":
        return line({"jsonrpc": "2.0", "method": 5, "params": {}}) + line(
            {"jsonrpc": "2.0", "id": 900, "method": ["session/request_permission"], "params": {}}
        )
    if mode == "bad-params":
        return line({"jsonrpc": "2.0", "method": "session/update", "params": "x"}) + line(
            {"jsonrpc": "2.0", "id": 901, "method": "session/request_permission", "params": 5}
        )
    if mode == "request-flood":
        read = {"sessionId": SESSION, "path": "/etc/hostname"}
        for start in range(0, RAW_REQUESTS, 1000):
            asks = (
                line({"jsonrpc": "2.0", "id": start + i, "method": "fs/read_text_file", "params": read})
                for i in range(1000)
            )
            write(b"".join(asks))
        return b""
    if mode == "bad-notification":
        return update("bogus", content={"type": "text", "text": "not shown"}) + line(
            {"jsonrpc": "2.0", "method": "foo/bar", "params": {}}
        )
    return b""


def prompt(mode: str, rid: Any, ids: dict[str, Any]) -> None:
    write(chunk(BAD_MESSAGE[0]))
    if mode == "error-string":
        write(line({"jsonrpc": "2.0", "id": rid, "error": "boom"}))
        return
    pieces = BAD_MESSAGE[1:-1] + [BAD_MESSAGE[-1] + (RAW_LONE if mode == "lone-surrogate" else "")]
    rest = b"".join(chunk(text) for text in pieces) + answer(rid, {"stopReason": "end_turn"})
    if mode == "deep-line":
        write(b"[" * RAW_DEEP_BRACKETS + b"\n" + rest)  # one write: the bridge reads it at once
        return
    write(misbehave(mode, rid, ids) + rest)


def new_session(mode: str, rid: Any) -> None:
    if mode == "bool-id":
        if rid != 1:
            sys.exit(f"raw-agent: session/new has id {rid!r}, not 1: bool-id cannot be shown")
        write(answer(True, {"sessionId": "not-" + SESSION}))
    if mode == "early-flood":
        commands = update("available_commands_update", availableCommands=[])
        for _ in range(RAW_EARLY_UPDATES // 1000):
            write(commands * 1000)
    if mode == "early-garbage":
        write(((b"not JSON " * 11)[:99] + b"\n") * RAW_EARLY_GARBAGE)  # 100 bytes a line
    write(answer(rid, {"sessionId": SESSION}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=MODES, required=True)
    mode = parser.parse_args().mode
    ids: dict[str, Any] = {}
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, rid = message.get("method"), message.get("id")
        if method is None or rid is None:
            continue  # an answer of the client's, or a notification (session/cancel)
        ids[method] = rid
        if method == "initialize":
            info = {"name": "raw-agent", "version": "1"}
            write(answer(rid, {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info}))
        elif method == "session/new":
            new_session(mode, rid)
        elif method == "session/prompt":
            prompt(mode, rid, ids)
        else:
            write(line({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}))


if __name__ == "__main__":
    main()
