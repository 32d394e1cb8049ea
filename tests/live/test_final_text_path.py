"""The parent's handling of ``final-text-path``: read, then remove; refuse anything
that is not a private regular file of ours in the run's directory, and say so."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.channel import Channel

FULL = "Ünïcödé answer: " + "x" * 70_000
CUT = FULL[:1000]


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    events = d / "events.jsonl"
    control = d / "control.jsonl"
    for p in (events, control):
        p.touch(mode=0o600)
    return d, events, control


def _result(events: Path, control: Path, payload: dict[str, Any]) -> Channel:
    lines = [
        {"v": 1, "seq": 1, "type": "ready", "run": "r"},
        {"v": 1, "seq": 2, "type": "result", "run": "r", "stop-reason": "stop", **payload},
        {"v": 1, "seq": 3, "type": "exit", "run": "r", "status": "done"},
    ]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ch = Channel("r", str(control), str(events))
    ch.poll()
    assert ch.result is not None and ch.status == "done"
    return ch


def _file(path: Path, text: str = FULL, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


def test_a_private_file_is_read_and_removed(tmp_path: Path) -> None:
    d, events, control = _setup(tmp_path)
    f = _file(d / "fenwire-final-1.txt")
    ch = _result(events, control, {"final-text": CUT, "truncated?": True, "final-text-path": str(f)})
    assert ch.final_text == FULL
    assert ch.final_text_note is None
    assert not f.exists()
    assert ch.result is not None and ch.result["final-text"] == CUT  # the wire message is kept as is


@pytest.mark.parametrize(
    "case",
    ["symlink", "mode", "outside", "hardlink", "event-file", "prefix", "relative", "missing", "fifo", "directory"],
)
def test_refusals_keep_the_cut_text_and_remove_nothing(tmp_path: Path, case: str) -> None:
    d, events, control = _setup(tmp_path)
    keep: list[Path] = []
    if case == "symlink":
        target = _file(d / "target.txt")
        path = d / "link.txt"
        path.symlink_to(target)
        keep += [target, path]
        why = "is a symlink"
    elif case == "mode":
        path = _file(d / "f.txt", mode=0o644)
        keep.append(path)
        why = "accessible to others (mode 0644)"
    elif case == "outside":
        other = tmp_path / "elsewhere"
        other.mkdir(mode=0o700)
        path = _file(other / "f.txt")
        keep.append(path)
        why = "is not directly inside the run's private directory"
    elif case == "hardlink":
        path = _file(d / "f.txt")
        os.link(path, tmp_path / "second-name")
        keep.append(path)
        why = "has other hard links"
    elif case == "event-file":
        path = control
        control.write_text(FULL)
        keep.append(path)
        why = "one of the channel's own files"
    elif case == "prefix":
        path = _file(d / "f.txt", text="something else entirely")
        keep.append(path)
        why = "does not start with the result's final-text"
    elif case == "relative":
        path = Path("f.txt")
        why = "is not absolute"
    elif case == "missing":
        path = d / "nothing.txt"
        why = "cannot open"
    elif case == "fifo":
        path = d / "pipe"
        os.mkfifo(path, 0o600)
        keep.append(path)
        why = "is not a regular file"
    else:
        path = d / "sub"
        path.mkdir(mode=0o700)
        keep.append(path)
        why = "is not a regular file"
    ch = _result(events, control, {"final-text": CUT, "truncated?": True, "final-text-path": str(path)})
    assert ch.final_text == CUT
    assert ch.final_text_note is not None and why in ch.final_text_note, ch.final_text_note
    assert ch.final_text_note.startswith(f"final text truncated to {len(CUT.encode())} bytes: ")
    for p in keep:
        assert os.path.lexists(p), f"{p} was removed"
    assert events.exists() and control.exists()


def test_truncated_without_a_path_is_noted(tmp_path: Path) -> None:
    _, events, control = _setup(tmp_path)
    ch = _result(events, control, {"final-text": CUT, "truncated?": True})
    assert ch.final_text == CUT
    assert ch.final_text_note == f"final text truncated to {len(CUT.encode())} bytes; the child kept no full copy"


def test_a_complete_result_needs_no_note(tmp_path: Path) -> None:
    _, events, control = _setup(tmp_path)
    ch = _result(events, control, {"final-text": "short"})
    assert ch.final_text == "short" and ch.final_text_note is None
