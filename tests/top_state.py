"""State dirs made for ``fenwire top``'s tests: runs written the way a child writes them (deltas
with escapes, quotes, newlines and non-ASCII; tool results of a few KB), whose "child" is this
test process (alive, with its real start time), so no process is started."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fenwire_fast import Sender
from fenwire_fast.live.parent.adopt import boot_id, process_start
from fenwire_fast.live.parent.durable import StateDir, new_manifest

__all__ = ["make_state", "append_events", "KINDS"]

#: the kinds of run ``make_state`` cycles through
KINDS = ("running", "ready", "done", "failed", "waiting")


def _lines(direction: str, run: str, messages: list[tuple[str, dict[str, object]]], seq: int = 0) -> bytes:
    sender = Sender(direction, run)
    for _ in range(seq):
        sender.next("info", {"summary": "."}) if direction == "event" else None
    out = b""
    for type_, payload in messages:
        line, rejection = sender.next(type_, payload)
        assert rejection is None, rejection
        out += line + b"\n"
    return out


def _turn(n: int, deltas: int) -> list[tuple[str, dict[str, object]]]:
    code = 'def f(x):\n    return "x" * x  # «é» \\t\n'
    return [
        ("turn-started", {"turn": n}),
        *[
            ("assistant-text-delta", {"delta": f'part {i} «é» "q"\n' + (code if i % 5 == 0 else "")})
            for i in range(deltas)
        ],
        ("tool-call", {"id": f"t{n}", "name": "read", "arguments": {"path": "a.py"}}),
        ("tool-result", {"id": f"t{n}", "name": "read", "is-error?": False, "result": code * 60}),
    ]


def events_of(kind: str, run: str, deltas: int = 20) -> tuple[bytes, bytes]:
    """``(events, controls)`` of a run of ``kind`` (see :data:`KINDS`)."""
    controls: list[tuple[str, dict[str, object]]] = [("prompt", {"text": "Do the task."})]
    events: list[tuple[str, dict[str, object]]] = [("ready", {}), ("control-ack", {"ref": 1, "status": "accepted"})]
    events += _turn(1, deltas)
    if kind != "running":
        events.append(("turn-complete", {"turn": 1, "stop-reason": "stop"}))
    if kind == "done":
        controls.append(("close", {}))
        events += [("control-ack", {"ref": 2, "status": "accepted"}), ("result", {"stop-reason": "stop"})]
        events.append(("exit", {"status": "done"}))
    elif kind == "failed":
        events.append(("exit", {"status": "failed", "error": "the model said \x1b[31mno\x1b[0m, twice"}))
    elif kind == "waiting":
        controls.append(("steer", {"text": "go on"}))
    return _lines("event", run, events), _lines("control", run, controls)


def make_state(path: Path, n: int, *, deltas: int = 20) -> list[str]:
    """A state dir at ``path`` with ``n`` runs, their kinds cycling through :data:`KINDS`; the run ids."""
    state = StateDir(path)
    pid = os.getpid()
    runs = []
    try:
        for i in range(n):
            run = f"run-{i:04d}"
            kind = KINDS[i % len(KINDS)]
            name, directory = state.new_run_directory(run)
            events, controls = events_of(kind, run, deltas)
            Path(directory, "control.jsonl").write_bytes(controls)
            Path(directory, "events.jsonl").write_bytes(events)
            Path(directory, "child.log").write_bytes(b"")
            manifest = new_manifest(run, name, directory)
            if kind not in ("done", "failed"):  # this process stands in for a live child
                manifest.pid, manifest.start, manifest.boot = pid, process_start(pid), boot_id()
            else:
                manifest.pid = 1 << 22  # a child that ended
            state.save(manifest)
            runs.append(run)
    finally:
        state.close()
    return runs


def event_path(path: Path, run: str) -> Path:
    """The event file of ``run`` in state dir ``path``."""
    for directory in path.iterdir():
        if directory.is_dir() and directory.name.startswith(f"run-{run}-"):
            return directory / "events.jsonl"
    raise LookupError(run)


def append_events(path: Path, run: str, messages: list[tuple[str, dict[str, object]]]) -> None:
    """Append ``messages`` to ``run``'s event file, after its last seq."""
    file = event_path(path, run)
    last = len(file.read_bytes().splitlines())
    sender = Sender("event", run)
    sender.seq = last
    with open(file, "ab") as out:
        for type_, payload in messages:
            line, rejection = sender.next(type_, payload)
            assert rejection is None, rejection
            out.write(line + b"\n")


def make_old(path: Path, run: str, seconds: float) -> None:
    """Make ``run``'s last event ``seconds`` old."""
    file = event_path(path, run)
    then = time.time() - seconds
    os.utime(file, (then, then))
