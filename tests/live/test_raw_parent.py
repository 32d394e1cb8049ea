"""An independent minimal parent, written only against the wire files and the four variables.

Nothing from ``fenwire_fast`` is used on the parent side: controls are ``json.dumps`` lines
appended with ``os.write``, events are read back with ``json.loads``, and the child is started with
``subprocess``. Each scenario writes its controls before the child starts (so the child reads them
in one batch, deterministically) and asserts the exact ack / event / exit sequence.
"""

from __future__ import annotations

import importlib.util
import json
import os
import site
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# where the package under test lives (found without importing it: this parent is independent)
_SPEC = importlib.util.find_spec("fenwire_fast")
assert _SPEC is not None and _SPEC.origin is not None
PACKAGE_ROOT = Path(_SPEC.origin).resolve().parent.parent
# an installed package is found by the child as it is; a source tree goes on PYTHONPATH
_INSTALLED = any(Path(p).resolve() == PACKAGE_ROOT for p in [*site.getsitepackages(), site.getusersitepackages()])
EXTRA_PATH = [] if _INSTALLED else [str(PACKAGE_ROOT)]
MOCK = {"steps": 2, "deltas": 1, "tools": 1}

# The events of one mock turn with MOCK's knobs, by type (the steering point is marked).
TURN = [
    "user",
    "llm-start",
    "assistant-text-delta",
    "assistant-text",
    "assistant-stream-end",
    "llm-end",
    "tool-call",
    "tool-result",
    "|",
    "llm-start",
    "assistant-text-delta",
    "assistant-text",
    "assistant-stream-end",
    "llm-end",
]
FINAL_TURN = ["user", "llm-start", "assistant-text-delta", "assistant-text", "assistant-stream-end", "llm-end"]


def turn(steering: list[str] | None = None) -> list[str]:
    out: list[str] = []
    for t in TURN:
        if t == "|":
            out.extend(steering or [])
        else:
            out.append(t)
    return out


def control(seq: int, type_: str, run: str, **payload: Any) -> bytes:
    msg = {"v": 1, "seq": seq, "type": type_, "run": run, **payload}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


class RawChild:
    def __init__(self, root: Path, name: str, lines: list[bytes], mock: dict[str, Any]) -> None:
        self.run = f"raw-{name}"
        self.dir = root / name
        self.dir.mkdir(mode=0o700)
        self.control = self.dir / "control.jsonl"
        self.events = self.dir / "events.jsonl"
        for path in (self.control, self.events):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        self.append(b"".join(lines))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*EXTRA_PATH, env.get("PYTHONPATH")]))
        env.update(
            {
                "FEN_WIRE_CONTROL_PATH": str(self.control),
                "FEN_WIRE_EVENT_PATH": str(self.events),
                "FEN_WIRE_RUN_ID": self.run,
                "FENWIRE_MOCK": json.dumps(mock),
            }
        )
        env.pop("FEN_WIRE_DEADLINE", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fenwire_fast", "child"], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def append(self, data: bytes) -> None:
        fd = os.open(self.control, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        data = self.events.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        return [json.loads(line) for line in complete.split(b"\n") if line]

    def wait_for(self, predicate: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
        end = time.monotonic() + timeout
        while True:
            events = self.read()
            if predicate(events):
                return events
            if time.monotonic() > end:
                raise AssertionError(f"{self.run}: timed out; events so far: {[e['type'] for e in events]}")
            time.sleep(0.01)

    def finish(self, timeout: float = 30.0) -> tuple[int, list[dict[str, Any]], str]:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, self.read(), err.decode(errors="replace")


def shape(events: list[dict[str, Any]]) -> list[Any]:
    """Types, with the identifying fields of lifecycle events."""
    out: list[Any] = []
    for e in events:
        t = e["type"]
        if t == "control-ack":
            out.append((t, e.get("ref"), e["status"], e.get("reason")))
        elif t in ("turn-started",):
            out.append((t, e["turn"]))
        elif t == "turn-complete":
            out.append((t, e["turn"], e["stop-reason"]))
        elif t in ("steering-injected", "follow-up-injected"):
            out.append((t, e.get("ref"), e["text"]))
        elif t == "exit":
            out.append((t, e["status"]))
        elif t == "info":
            out.append((t, e.get("refs")))
        else:
            out.append(t)
    return out


def check_envelopes(child: RawChild, events: list[dict[str, Any]]) -> None:
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["v"] == 1 and e["run"] == child.run for e in events)
    raw = child.events.read_bytes()
    assert raw.endswith(b"\n") and all(len(line) < 65536 for line in raw.split(b"\n"))


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RawChild]:
    root = tmp_path_factory.mktemp("raw")
    os.chmod(root, 0o700)
    specs: dict[str, tuple[list[bytes], dict[str, Any]]] = {}

    def add(name: str, *lines: tuple[Any, ...], mock: dict[str, Any] | None = None) -> None:
        run = f"raw-{name}"
        specs[name] = ([control(i + 1, t, run, **p) for i, (t, p) in enumerate(lines)], mock or MOCK)

    add("prompt-close", ("prompt", {"text": "task"}), ("close", {}))
    add("steer", ("prompt", {"text": "task"}), ("steer", {"text": "look left"}), ("close", {}))
    add("follow-up", ("prompt", {"text": "task"}), ("follow-up", {"text": "and then"}))
    add("finalize", ("prompt", {"text": "task"}), ("finalize", {"note": "answer now"}))
    add("cancel", ("prompt", {"text": "task"}), ("cancel", {}))
    add("close-ready", ("close", {}))
    add("big", ("prompt", {"text": "task"}), ("close", {}), mock={"steps": 1, "deltas": 1, "final_bytes": 100_000})
    return {name: RawChild(root, name, lines, mock) for name, (lines, mock) in specs.items()}


def test_prompt_then_close(children: dict[str, RawChild]) -> None:
    c = children["prompt-close"]
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    assert shape(events) == [
        "ready",
        ("control-ack", 1, "accepted", None),
        ("turn-started", 1),
        ("control-ack", 2, "accepted", None),
        *turn(),
        ("turn-complete", 1, "stop"),
        "result",
        ("exit", "done"),
    ]
    result = events[-2]
    assert result["stop-reason"] == "stop" and result["final-text"].startswith("Answer 1: ")
    assert "truncated?" not in result and "final-text-path" not in result


def test_steer_is_injected_at_the_step_boundary(children: dict[str, RawChild]) -> None:
    c = children["steer"]
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    assert shape(events) == [
        "ready",
        ("control-ack", 1, "accepted", None),
        ("turn-started", 1),
        ("control-ack", 2, "accepted", None),
        ("control-ack", 3, "accepted", None),
        *turn([("steering-injected", 2, "look left")]),
        ("turn-complete", 1, "stop"),
        "result",
        ("exit", "done"),
    ]


def test_follow_up_starts_its_own_turn(children: dict[str, RawChild]) -> None:
    c = children["follow-up"]
    c.wait_for(lambda ev: sum(e["type"] == "turn-complete" for e in ev) == 2)
    c.append(control(3, "close", c.run))
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    assert shape(events) == [
        "ready",
        ("control-ack", 1, "accepted", None),
        ("turn-started", 1),
        ("control-ack", 2, "accepted", None),
        *turn(),
        ("turn-complete", 1, "stop"),
        ("turn-started", 2),
        ("follow-up-injected", 2, "and then"),
        *turn(),
        ("turn-complete", 2, "stop"),
        ("control-ack", 3, "accepted", None),
        "result",
        ("exit", "done"),
    ]
    assert events[-2]["final-text"].startswith("Answer 2: ")
    users = [e["text"] for e in events if e["type"] == "user"]
    assert users == ["task", "and then"]


def test_finalize_runs_one_tool_free_turn_then_the_result(children: dict[str, RawChild]) -> None:
    c = children["finalize"]
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    assert shape(events) == [
        "ready",
        ("control-ack", 1, "accepted", None),
        ("turn-started", 1),
        ("control-ack", 2, "accepted", None),
        ("turn-complete", 1, "aborted"),
        ("turn-started", 2),
        *FINAL_TURN,
        ("turn-complete", 2, "stop"),
        "result",
        ("exit", "done"),
    ]
    assert [e["text"] for e in events if e["type"] == "user"] == ["answer now"]
    assert events[-2]["final-text"].startswith("Answer 2: ")


def test_cancel_aborts_the_turn_and_exits_cancelled(children: dict[str, RawChild]) -> None:
    c = children["cancel"]
    rc, events, err = c.finish()
    assert rc == 1, err
    check_envelopes(c, events)
    assert shape(events) == [
        "ready",
        ("control-ack", 1, "accepted", None),
        ("turn-started", 1),
        ("control-ack", 2, "accepted", None),
        ("turn-complete", 1, "aborted"),
        ("exit", "cancelled"),
    ]


def test_close_while_ready(children: dict[str, RawChild]) -> None:
    c = children["close-ready"]
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    assert shape(events) == ["ready", ("control-ack", 1, "accepted", None), "result", ("exit", "done")]
    assert events[2] == {"v": 1, "seq": 3, "type": "result", "run": c.run, "stop-reason": "none"}


def test_over_long_final_text_goes_to_a_private_file(children: dict[str, RawChild]) -> None:
    c = children["big"]
    rc, events, err = c.finish()
    assert rc == 0, err
    check_envelopes(c, events)
    result = events[-2]
    assert result["type"] == "result" and result["truncated?"] is True
    path = result["final-text-path"]
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid()
    full = Path(path).read_bytes().decode("utf-8")
    assert len(full.encode()) == 100_000
    cut = result["final-text"]
    assert full.startswith(cut) and len(cut.encode()) <= 65536 - 1024
    # the longest prefix of at most 65536 - 1024 bytes that does not split a character
    assert len(cut.encode()) + len(full[len(cut)].encode()) > 65536 - 1024
    os.unlink(path)  # the parent owns the file
