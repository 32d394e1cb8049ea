"""The live display of ``fenwire demo`` and ``fenwire check`` on real terminal sizes.

What the display writes is fed to a terminal emulator (pyte) of 80x24 and 120x40, frame by frame,
for 8, 64 and 256 children: after every frame the screen holds exactly that frame (no stale row
from an earlier one, no row wrapped onto the next line, never more than the terminal's height),
and after the run the summary stands on a clean screen.
"""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pyte
import pytest
from fenwire_fast.live import demo
from fenwire_fast.progress import Progress

STATUSES = ["starting", "ready", "running", "closing", "finalizing", "done", "cancelled", "failed", "timed-out"]


class Terminal(io.StringIO):
    """A stream that is also a screen: everything written is fed to a pyte terminal."""

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__()
        self.screen = pyte.Screen(columns, lines)
        self.feed = pyte.Stream(self.screen)

    def write(self, text: str) -> int:
        self.feed.feed(text.replace("\n", "\r\n"))  # what a tty does to output (ONLCR)
        return super().write(text)

    def isatty(self) -> bool:
        return True

    def shown(self) -> list[str]:
        """The screen's lines without trailing blanks, the blank lines at the bottom dropped."""
        lines = [line.rstrip() for line in self.screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return lines


def _tracks(n: int, tick: int) -> list[Any]:
    tracks = []
    for i in range(n):
        child = SimpleNamespace(run=f"child-{i + 1}", status=STATUSES[(i + tick) % len(STATUSES)], finished=False)
        track = demo._Track(child=child, role=demo._role(i), config=demo.default_config())
        track.events = [{}] * (i * 37 + tick * 1000)
        track.first_at, track.turns_done = 0.0, tick
        tracks.append(track)
    return tracks


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
        demo._show_progress(progress, tracks, children, force=True)
        progress.show = original  # type: ignore[method-assign]
        frames += 1
        screen = term.shown()
        drawn = rows[: lines - 1]
        assert len(screen) == len(drawn) <= lines - 1, (tick, screen)
        for want, got in zip(drawn, screen, strict=True):
            if len(want) <= columns:
                assert got == want.rstrip(), (want, got)
            else:  # cut to the width with an ellipsis, never wrapped onto the next line
                assert len(got) <= columns and got.endswith("…") and want.startswith(got[:-1]), (want, got)
        if spawned <= lines - 2:
            assert len(drawn) == 1 + spawned  # a row per child when they fit
        else:
            letters = "".join(row.strip() for row in drawn[1:] if "=" not in row)
            assert len(drawn) > 1 and set(letters) <= set("srRcFDCXT"), drawn
    progress.clear()
    assert term.shown() == []  # the live rows are gone
    term.write("fenwire demo: summary\nPASS\n")
    assert term.shown() == ["fenwire demo: summary", "PASS"]
    assert frames == 7


def test_check_progress_is_erased_before_each_rejection_line() -> None:
    from fenwire_fast.check import _show_check_progress

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
    demo._show_progress(progress, _tracks(64, 1), 64, force=True)
    text = out.getvalue()
    assert text.count("\n") == 1 and "\x1b" not in text and "64 children" in text
