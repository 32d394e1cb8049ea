"""The live display of ``fenwire demo`` and ``fenwire check`` on real terminal sizes.

What the display writes is fed to a terminal emulator (pyte) of 80x24 and 120x40, frame by frame,
for 8, 64 and 256 children: after every frame the screen holds exactly that frame (no stale row
from an earlier one, no row wrapped onto the next line, never more than the terminal's height),
and after the run the summary stands on a clean screen.
"""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import pytest
from fenwire_fast.cli.demo import driver, report
from fenwire_fast.cli.progress import Progress
from pyte_terminal import Terminal

STATUSES = ["starting", "ready", "running", "closing", "finalizing", "done", "cancelled", "failed", "timed-out"]


def _tracks(n: int, tick: int) -> list[Any]:
    tracks = []
    for i in range(n):
        child = SimpleNamespace(run=f"child-{i + 1}", status=STATUSES[(i + tick) % len(STATUSES)], finished=False)
        track = report.Track(child=child, role=driver._role(i), config=driver.default_config())
        track.events = [{}] * (i * 37 + tick * 1000)
        track.first_at, track.turns_done = 0.0, tick
        tracks.append(track)
    return tracks


def _head_rows(rows: list[str]) -> int:
    """How many rows the head takes: its first, then the children by status when they have rows
    of their own (``done 3, running 2`` or ``D 3  R 2``)."""
    head = 1
    while head < len(rows) and STATE_ROW.fullmatch(rows[head]):
        head += 1
    return head


STATE_ROW = re.compile(r"  (([a-z-]+|[srRcFDCXT]) \d+(, |  )?)+")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("children", [8, 64, 256])
def test_every_frame_fits_and_nothing_stale_remains(size: tuple[int, int], children: int) -> None:
    columns, lines = size
    term = Terminal(columns, lines)
    progress = Progress(term, live=True, interval=0.0, size=size)
    frames = 0
    # children arrive one spawn per tick, as in the demo, and change state as they go
    for tick, spawned in enumerate([1, 2, 5, children // 2, children, children, children]):
        tracks = _tracks(spawned, tick)
        rows: list[str] = []
        original = progress.show

        def capture(r: Any, original: Any = original, rows: list[str] = rows) -> None:
            rows[:] = list(r)
            original(r)

        progress.show = capture  # type: ignore[method-assign]
        report.show_progress(progress, tracks, children, force=True)
        progress.show = original  # type: ignore[method-assign]
        frames += 1
        screen = term.shown()
        drawn = rows[: lines - 1]
        assert len(screen) == len(drawn) <= lines - 1, (tick, screen)
        for want, got in zip(drawn, screen, strict=True):
            assert len(want) <= columns and got == want.rstrip(), (want, got)  # nothing to cut
        head = _head_rows(drawn)
        if spawned <= lines - 1 - head:
            assert len(drawn) == head + spawned  # a row per child when they fit
        else:
            letters = "".join(row.strip() for row in drawn[head:] if "=" not in row)
            assert len(drawn) > 1 and set(letters) <= set("srRcFDCXT"), drawn
    progress.clear()
    assert term.shown() == []  # the live rows are gone
    term.write("fenwire demo: summary\nPASS\n")
    assert term.shown() == ["fenwire demo: summary", "PASS"]
    assert frames == 7


def test_check_progress_is_erased_before_each_rejection_line() -> None:
    from fenwire_fast.cli.check import _show_check_progress

    term = Terminal(80, 24)
    meter = Progress(term, live=True, interval=0.0, size=(80, 24))
    for i in range(5):
        _show_check_progress(meter, i * 10_000_000, 50_000_000, i * 1000, force=True)
        screen = term.shown()
        assert len(screen) == i + 1 and "MB" in screen[-1]  # the rejections so far, then the meter
        meter.clear()
        assert len(term.shown()) == i
        term.write(f"events.jsonl:{i}: malformed: line is not valid JSON\n")
    lines = term.shown()
    assert lines == [f"events.jsonl:{i}: malformed: line is not valid JSON" for i in range(5)]


def test_plain_progress_writes_lines_and_nothing_else() -> None:
    out = io.StringIO()
    progress = Progress(out, live=False, plain=True, interval=0.0)
    report.show_progress(progress, _tracks(64, 1), 64, force=True)
    text = out.getvalue()
    assert text.count("\n") == 1 and "\x1b" not in text and "64 children" in text


NODES = ["fe61fb93a7c24d1e8b0f", "bcc9b9f5e1d04c2a9f3b"]


def _busy_tracks(n: int, node: bool) -> list[Any]:
    """Children in every status, with long runs, many events and a node each (as on Ray)."""
    tracks = _tracks(n, 3)
    for i, t in enumerate(tracks):
        t.child.run = f"child-{i + 1:<3}".rstrip() if n < 1000 else f"child-{i + 1}"
        t.events = [{"type": "turn-complete", "stop-reason": "aborted"}] * (123_456 + i)
        t.turns_done = 12
        t.node = NODES[i % 2] if node else None
    return tracks


@pytest.mark.parametrize("node", [False, True], ids=["hub", "ray"])
@pytest.mark.parametrize(("children", "lines"), [(8, 24), (16, 24), (256, 24), (256, 12)])
def test_the_live_display_fits_80_columns(children: int, lines: int, node: bool) -> None:
    """At 80 columns every row of the head, the per-child table, the grid and the legend fits: the
    children by status get rows of their own, and the legend is wrapped, not cut."""
    term = Terminal(80, lines)
    progress = Progress(term, live=True, interval=0.0, size=(80, lines))
    rows: list[str] = []
    progress.show = rows.extend  # type: ignore[method-assign]
    tracks = _busy_tracks(children, node)
    report.show_progress(progress, tracks, children + 1, force=True)
    assert rows and all(len(row) <= 80 for row in rows), [row for row in rows if len(row) > 80]
    head = _head_rows(rows)
    said = " ".join(rows[1:head]).replace(",", "").split()
    present = {t.child.status for t in tracks}
    # every status there is, by name, or by letter when the names take more than a row
    assert set(said[::2]) in (present, {report._LETTER[s] for s in present}), rows
    if children <= lines - 1 - head:
        assert len(rows) == head + children and all(row.startswith("  child-") for row in rows[head:])
    elif lines == 24:
        legend = " ".join(rows[-2:])
        assert all(f"{report._LETTER[s]}={s}" in legend for s in STATUSES), rows  # the whole legend


@pytest.mark.parametrize("node", [False, True], ids=["hub", "ray"])
@pytest.mark.parametrize("children", [8, 256])
def test_the_summary_fits_80_columns(children: int, node: bool) -> None:
    """Every line of the summary fits in 80 columns: the table of children (a role with its note,
    a node's id, a child still running), the statuses, the nodes, and every check with its
    problems, long ones wrapped."""
    tracks = _busy_tracks(children, node)
    for i, t in enumerate(tracks):
        t.child.finished = i % 3 != 0
        t.child.returncode = -15 if t.child.finished else None
        t.child.controls = {1: None, 2: None}
    problem = "child-1: " + "turn 1: expected assistant-text-delta seq 12, got tool-call seq 13; " * 3
    summed = report.DemoReport(
        children=children,
        seconds=123.45,
        events=sum(len(t.events) for t in tracks),
        bytes=123_456_789_012,
        rejections=0,
        statuses={t.child.run: t.child.status for t in tracks},
        checks=[
            (
                "finished within the timeout (158 s)",
                False,
                report.timeout_lines([t.child.run for t in tracks], tracks, 999),
            ),
            ("no rejections", True, []),
            ("every child exited as expected, done runs with the right answer", False, [problem] * 12),
            ("every event arrived exactly once and in order (seq, mock script)", True, []),
            ("every control acknowledged once; each steer / follow-up took effect", True, []),
        ],
        drain_seconds=99.99,
        parent_cpu_seconds=12.34,
    )
    cluster = report.Cluster(nodes=len(NODES), head=NODES[0], joined=None, setup_seconds=4.5)
    out = io.StringIO()
    report.summary(out, summed, tracks, "python", cluster if node else None)
    text = out.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines()), [line for line in text.splitlines() if len(line) > 80]
    assert re.search(
        r"^    child-1 +finalize, mid-turn +closing +still running +12 +123,456( fe61fb93)?$", text, re.M
    ), text
    assert ("still exiting" in text) and ("None" not in text), text
    assert text.count("  [ok] ") == 3 and text.count("  [FAIL] ") == 2, text
    assert " ".join(text.split()).count(" ".join(problem.split())) == 10, text  # wrapped, never cut
    if node:
        assert re.search(r"^    node fe61fb93 \(head\) +children", text, re.M), text
        assert re.search(r"^    child-2 .* bcc9b9f5$", text, re.M), text


def test_a_rate_is_shown_once_it_means_something() -> None:
    """A child's row gives no rate (``-``) until its events span half a second, running or
    finished, and counts its turns as ``turns done``: a child in its first turn has done none."""
    rows: list[str] = []
    progress = Progress(io.StringIO(), live=True, interval=0.0, size=(80, 24))
    progress.show = rows.extend  # type: ignore[method-assign]
    now = 1000.0
    tracks = _tracks(5, 0)
    # (events, seconds from the first to now or to the last, finished)
    spans = [(1, 0.001, False), (40, 0.49, False), (1_000, 2.0, False), (3_033, 0.2, True), (90, 0.6, True)]
    for t, (events, span, finished) in zip(tracks, spans, strict=True):
        t.child.status, t.child.finished = ("done" if finished else "running"), finished
        t.events = [{}] * events
        t.first_at = now - span if not finished else 900.0
        t.last_at = now if not finished else 900.0 + span
        t.turns_done = 1 if finished else 0
    report.show_progress(progress, tracks, 5, force=True, now=now)
    table = rows[_head_rows(rows) :]
    assert [row.split()[-1] for row in table] == ["-", "-", "500/s", "-", "150/s"], table
    assert all(re.search(r" turns done +[01] events ", row) for row in table), table
    assert "running    turns done  0 events       1         -" in table[0], table
