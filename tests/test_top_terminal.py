"""``fenwire top`` as a person runs it: the command in a pseudo-terminal, its output fed to a
terminal emulator (pyte). It draws, follows a resize of the terminal, changes its order on ``s``,
and quits on ``q`` with a clean screen and exit status 0."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from top_state import make_state
from top_terminal import Pty


@pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")
def test_top_in_a_terminal(tmp_path: Path) -> None:
    make_state(tmp_path, 64)
    term = Pty([str(tmp_path), "--interval", "0.2"], (80, 24))
    try:
        term.until(lambda t: "fenwire top  64 runs" in t and "RUN" in t, "the first frame")
        assert all(len(line) <= 80 for line in term.text().splitlines())
        assert " PID" not in term.text()  # cut at 80 columns
        term.resize((140, 40))
        term.until(lambda t: " PID" in t and "more runs" in t, "a frame at the new size")
        term.send(b"s")
        term.until(lambda t: "sort rate" in t, "the next order")
        term.send(b"f")
        term.until(lambda t: "filter active" in t, "the next filter")
        term.send(b"q")
        assert term.wait() == 0
        assert "Traceback" not in term.text()
        assert "RUN" not in term.text()  # the frame is erased on the way out
    finally:
        term.kill()
