"""``fenwire top`` on state dirs made the way children write them, drawn into a terminal emulator
(pyte) at 80x24 and 200x50, with 8, 64 and 1,000 runs: every frame fits (no line wider than the
terminal, never more lines than it has rows, nothing stale left from an earlier frame), stalled
runs stand out and come first, a run that ends while shown shows its end, a resize mid-run is
followed, and ``--once --json`` agrees with ``fenwire runs --json``. Bad input (a missing or
unreadable dir, a damaged manifest, a run's file that is not a file) gives a clear line or a row
that says what is wrong, never a traceback; and top writes nothing and takes no lock."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from fenwire_fast.cli.top.screen import TopScreen
from fenwire_fast.cli.top.state_source import StateSource
from fenwire_fast.live.parent.durable import StateDir
from pyte_terminal import Terminal
from top_state import KINDS, append_events, event_path, make_old, make_state


def _draw(screen: TopScreen, term: Terminal) -> list[str]:
    """One frame: it is what the terminal shows, line for line."""
    frame = screen.frame()
    screen.display.show(frame)
    columns, lines = term.screen.columns, term.screen.lines
    shown = term.shown()
    assert len(frame) <= lines - 1 and all(len(line) <= columns for line in frame), frame
    assert shown == [line.rstrip() for line in frame], (shown, frame)
    return frame


def _rows(frame: list[str]) -> list[str]:
    """The run lines of a frame (after the head and the titles)."""
    at = next(i for i, line in enumerate(frame) if line.lstrip().startswith("RUN"))
    return [line for line in frame[at + 1 :] if not line.strip().startswith("…")]


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
@pytest.mark.parametrize("runs", [8, 64, 1000])
def test_every_frame_fits(tmp_path: Path, size: tuple[int, int], runs: int) -> None:
    make_state(tmp_path, runs, deltas=5 if runs > 100 else 20)
    term = Terminal(*size)
    source = StateSource(tmp_path)
    screen = TopScreen(source, term, size=size)
    try:
        first = _draw(screen, term)
        assert first[0].startswith(f"fenwire top  {runs} runs")
        counts = dict(part.rsplit(" ", 1) for part in first[1].split("  "))
        assert sum(int(n) for n in counts.values()) == runs
        rows = _rows(first)
        assert len(rows) == min(runs, size[1] - 1 - 4 - (runs > size[1] - 5))
        if runs > len(rows):
            assert first[-1].strip() == f"… {runs - len(rows)} more runs"
        titles = first[3].split()
        assert titles[:2] == ["RUN", "STATUS"] and ("PID" in titles) == (size[0] >= 100)
        for key in "sfsf":  # other orders and filters: each frame fits as well
            screen.key(key)
            _draw(screen, term)
    finally:
        screen.display.clear()
        source.close()
    assert term.shown() == []


def test_a_stalled_run_stands_out_and_comes_first(tmp_path: Path) -> None:
    runs = make_state(tmp_path, 10)
    stalled = runs[KINDS.index("running") + 5]
    make_old(tmp_path, stalled, 120)
    term = Terminal(120, 30)
    source = StateSource(tmp_path, stall=60)
    screen = TopScreen(source, term, size=(120, 30), sort="run")
    try:
        rows = _rows(_draw(screen, term))
        assert rows[0].startswith(f"! {stalled} ") and "2m" in rows[0]
        assert sum(row.startswith("!") for row in rows) == 1
        assert "stalled 1" in term.shown()[0]
        screen.statuses = ("stalled",)
        assert [row.split()[1] for row in _rows(_draw(screen, term))] == [stalled]
    finally:
        screen.display.clear()
        source.close()


def test_a_run_that_ends_while_shown(tmp_path: Path) -> None:
    runs = make_state(tmp_path, 5)
    running = runs[KINDS.index("running")]
    term = Terminal(120, 20)
    source = StateSource(tmp_path)
    screen = TopScreen(source, term, size=(120, 20), sort="run")

    def row_of(frame: list[str]) -> list[str]:
        return next(row.split() for row in _rows(frame) if row.split()[0] == running)

    try:
        assert row_of(_draw(screen, term))[1] == "running"
        append_events(tmp_path, running, [("assistant-text-delta", {"delta": "é"})] * 40)
        row = row_of(_draw(screen, term))
        assert row[1] == "running" and float(row[3]) > 0  # EV/S: 40 events since the last frame
        append_events(
            tmp_path,
            running,
            [("turn-complete", {"turn": 1, "stop-reason": "stop"}), ("exit", {"status": "cancelled"})],
        )
        row = row_of(_draw(screen, term))
        assert row[1] == "cancelled" and row[3] == "0"
    finally:
        screen.display.clear()
        source.close()


def test_a_resize_mid_run_is_followed(tmp_path: Path) -> None:
    make_state(tmp_path, 64)
    term = Terminal(200, 50)
    source = StateSource(tmp_path)
    screen = TopScreen(source, term, size=(200, 50))
    try:
        _draw(screen, term)
        for columns, lines in [(80, 24), (40, 10), (20, 3), (132, 43), (200, 50)]:
            term.screen.resize(lines, columns)
            screen.resize((columns, lines))
            _draw(screen, term)
    finally:
        screen.display.clear()
        source.close()


def _common(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["run"], row["pid"], row["status"], row["events"], row["bytes"], row["last_seq"], row["error"])


def test_once_json_agrees_with_runs_json(tmp_path: Path) -> None:
    make_state(tmp_path, 25)
    top = run_cli("top", str(tmp_path), "--once", "--json", "--sort", "run")
    runs = run_cli("runs", str(tmp_path), "--json")
    assert top.returncode == 0 and runs.returncode == 0, top.stderr
    got = [json.loads(line) for line in top.stdout.splitlines()]
    want = [json.loads(line) for line in runs.stdout.splitlines()]
    assert [_common(r) for r in got] == [_common(r) for r in want]
    assert len(got) == 25 and {r["turn"] for r in got} == {1}
    assert sum(r["waiting"] for r in got) == 5  # the steer of each "waiting" run, not acked


def test_once_prints_a_frame_without_a_terminal(tmp_path: Path) -> None:
    make_state(tmp_path, 8)
    done = run_cli("top", str(tmp_path), "--once", "--size", "80x24", "--status", "failed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines) and lines[0].startswith("fenwire top  8 runs")
    assert all(" failed " in row for row in _rows(lines)) and len(_rows(lines)) >= 1
    assert "\x1b" not in done.stdout  # a child's escape codes are shown escaped


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p / "missing", "No such file or directory"),
        (lambda p: (p / "file").write_text("") or p / "file", "Not a directory"),
    ],
    ids=["missing", "not-a-dir"],
)
def test_a_dir_that_cannot_be_read_is_one_line(tmp_path: Path, make: Any, said: str) -> None:
    done = run_cli("top", str(make(tmp_path)), "--once")
    assert done.returncode == 1 and said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a dir of mode 000")
def test_an_unreadable_dir_is_one_line(tmp_path: Path) -> None:
    make_state(tmp_path / "s", 3)
    os.chmod(tmp_path / "s", 0)
    try:
        done = run_cli("top", str(tmp_path / "s"), "--once")
    finally:
        os.chmod(tmp_path / "s", 0o700)
    assert done.returncode == 1 and "Permission denied" in done.stderr and "Traceback" not in done.stderr


def test_damaged_runs_are_rows_that_say_so(tmp_path: Path) -> None:
    runs = make_state(tmp_path, 6)
    (tmp_path / "run-zzz-broken.json").write_bytes(b'{"run": "x", "na')  # a manifest cut short
    os.mkfifo(tmp_path / "run-zzz-fifo.json")  # one that is not a file (no reader may block on it)
    (tmp_path / "run-zzz-dir.json").mkdir()  # and one that is a directory
    fifo_run = runs[0]
    events = event_path(tmp_path, fifo_run)
    events.unlink()
    os.mkfifo(events)  # a run's event file that is not a file
    done = run_cli("top", str(tmp_path), "--once", "--json", "--sort", "run")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    rows = {r["run"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert "not a manifest" in rows["run-zzz-broken"]["problem"]
    assert "cannot be read" in rows["run-zzz-fifo"]["problem"]
    assert "cannot be read" in rows["run-zzz-dir"]["problem"]
    assert "cannot read its files" in rows[fifo_run]["problem"]
    assert len(rows) == 9


def test_top_writes_nothing_and_takes_no_lock(tmp_path: Path) -> None:
    make_state(tmp_path, 12)

    def tree() -> dict[str, tuple[int, float]]:
        return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in sorted(tmp_path.rglob("*")) if p.is_file()}

    before = tree()
    source = StateSource(tmp_path)
    try:
        source.look()
        source.look()
        assert tree() == before  # nothing written, not even a time
        StateDir(tmp_path).close()  # and the lock is free while top has the runs open
    finally:
        source.close()


def test_bad_options_are_one_line() -> None:
    for args in (["top"], ["top", "x", "--json"], ["top", "x", "--stall", "0"], ["top", "--fleet", "f"]):
        done = run_cli(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)


def test_a_manifest_or_commit_written_between_frames_is_seen(tmp_path: Path) -> None:
    runs = make_state(tmp_path, 5)
    dead = runs[KINDS.index("failed")]
    source = StateSource(tmp_path)
    try:
        rows = {r.run: r for r in source.look()}
        assert rows[runs[0]].pid == os.getpid() and rows[dead].status == "failed"
        state = StateDir(tmp_path)
        try:
            manifests = {m.run: m for _, m in state.manifests() if not isinstance(m, str)}
            manifests[runs[0]].pid = 4242  # a manifest replaced whole (a child started again)
            state.save(manifests[runs[0]])
            state.record_commits([(manifests[runs[1]].name, 3, 1.0, None, None)])  # the log grows
        finally:
            state.close()
        rows = {r.run: r for r in source.look()}
        assert rows[runs[0]].pid == 4242
        assert source._manifests.manifests()[1][1].committed_seq == 3  # type: ignore[union-attr]
    finally:
        source.close()


def test_a_run_read_from_its_start_has_no_rate_until_caught_up(tmp_path: Path, monkeypatch: Any) -> None:
    from fenwire_fast.cli.top import state_source

    monkeypatch.setattr(state_source, "READ_BUDGET", 2000)  # a few lines a look
    monkeypatch.setattr(state_source, "READ_STEP", 1000)
    runs = make_state(tmp_path, 1, deltas=200)
    source = StateSource(tmp_path)
    try:
        looks = 0
        while True:
            (row,) = source.look()
            looks += 1
            if row.events == row.last_seq and row.rate is not None:
                break
            assert row.rate is None, row  # the old events it is catching up on are not a rate
            assert looks < 1000
        assert looks > 5 and row.rate == 0.0  # nothing written between the last two looks
        append_events(tmp_path, runs[0], [("assistant-text-delta", {"delta": "x"})] * 10)
        (row,) = source.look()
        assert row.rate is not None and row.rate > 0 and row.events == row.last_seq
    finally:
        source.close()
