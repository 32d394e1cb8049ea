"""``fenwire tail``: readable lines, --json, --no-follow, following a growing file, a missing file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.cli import main, tail

RUN = "r1"


def _line(seq: int, type_: str, **payload: Any) -> str:
    return json.dumps({"v": 1, "seq": seq, "type": type_, "run": RUN, **payload}, separators=(",", ":")) + "\n"


EVENTS = (
    _line(1, "ready")
    + _line(2, "control-ack", ref=1, status="accepted")
    + _line(3, "assistant-text-delta", delta="hello\x1b[31m red\nworld", timestamp="2026-12-03T07:01:02Z")
    + '{"v":1,"seq":4,"type":"nonsense","run":"r1"}\n'
    + _line(5, "exit", status="done")
)


def _tail(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["tail", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_one_readable_line_per_message_and_rejections_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(EVENTS)
    code, out, err = _tail(capsys, "--no-follow", str(path))
    assert code == 1 and err == ""  # a line was rejected
    assert [line.split()[1:3] for line in out if not line.startswith("line ")] == [
        ["1", "ready"],
        ["2", "control-ack"],
        ["3", "assistant-text-delta"],
        ["5", "exit"],
    ]
    assert out[1].endswith("ref 1 accepted")
    assert out[2].split(None, 3) == ["07:01:02", "3", "assistant-text-delta", "hello\\x1b[31m red\\x0aworld"]
    assert out[3].startswith("line 4: REJECTED ") and "nonsense" in out[3]
    assert out[4].split()[2:] == ["exit", "done"]


def test_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(EVENTS)
    code, out, _err = _tail(capsys, "--json", "--no-follow", str(path))
    records = [json.loads(line) for line in out]
    assert code == 1 and len(records) == 5
    assert records[2]["delta"] == "hello\x1b[31m red\nworld"  # as it travels on the wire
    assert records[3]["line"] == 4 and records[3]["rejected"]["code"] == "unknown-type"
    assert records[4]["type"] == "exit"


def test_no_follow_stops_at_the_end_and_shows_a_last_line_without_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "controls.jsonl"
    path.write_text(_line(1, "prompt", text="Inspect the README.") + _line(2, "cancel").rstrip("\n"))
    code, out, _err = _tail(capsys, "--no-follow", str(path))
    assert code == 0
    assert [line.split()[2] for line in out] == ["prompt", "cancel"]
    assert out[0].endswith("Inspect the README.")


def test_a_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _tail(capsys, str(tmp_path / "nope\x1b.jsonl"))
    assert code == 2 and out == []
    assert err == f"fenwire tail: cannot read {tmp_path}/nope\\x1b.jsonl: No such file or directory\n"


@pytest.mark.parametrize("wakeups", ["kernel", "poll"])
def test_following_a_growing_file_until_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], wakeups: str
) -> None:
    """The file grows while tail sleeps: the lines are written just before its first sleep, so a
    tail that was not woken by the write would sleep for ever (kernel) or a tick (poll)."""
    from fenwire_fast.live.proc.wakeups import kernel_unavailable

    if wakeups == "kernel" and kernel_unavailable() is not None:
        pytest.skip(str(kernel_unavailable()))
    monkeypatch.setenv("FENWIRE_WAKEUPS", wakeups)
    path = tmp_path / "events.jsonl"
    path.write_text(_line(1, "ready"))
    real_waiter = tail._waiter
    waits = []

    def waiter(fd: int) -> Any:
        wait, close = real_waiter(fd)

        def first_write_then_wait() -> None:
            if not waits:
                with path.open("a") as f:
                    f.write(_line(2, "assistant-text-delta", delta="more") + _line(3, "exit", status="done"))
                    f.write(_line(4, "assistant-text-delta", delta="after the exit: not shown"))
            waits.append(1)
            wait()

        return first_write_then_wait, close

    monkeypatch.setattr(tail, "_waiter", waiter)
    code, out, _err = _tail(capsys, str(path))
    assert code == 0
    assert [line.split()[2] for line in out] == ["ready", "assistant-text-delta", "exit"]
    assert len(waits) == 1 if wakeups == "kernel" else len(waits) >= 1


def test_tail_follows_a_live_child(tmp_path: Path) -> None:
    """End to end: ``fenwire tail`` in its own process on a running mock child's event file."""
    from fenwire_fast.live.parent.hub import Hub

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tail.__file__).parent.parent), *sys.path])}
    with Hub() as hub:
        child = hub.spawn("hello", mock={"steps": 1, "deltas": 5}, directory=str(tmp_path))
        with subprocess.Popen(
            [sys.executable, "-m", "fenwire_fast", "tail", child.event_path],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            for _child, event in hub:
                if event["type"] == "turn-complete":
                    child.close()
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    types = [line.split()[2] for line in out.splitlines()]
    assert types[0] == "ready" and types[-1] == "exit"
    assert types.count("assistant-text-delta") == 5
