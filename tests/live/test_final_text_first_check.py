"""A final-text file that is refused at ``open`` is refused before a byte of it is read.

The checks at the end of a read and around the ``unlink`` repeat some of the checks made when the
file is opened (another hard link, above all), with the same words. These tests tell the two
apart: they count every read of the file itself (any ``read`` family call on a descriptor of that
inode), so a file refused only after it was read whole fails them, whatever the message says.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.parent.channel import Channel
from fenwire_fast.live.parent.final_text import FinalTextRead, PrivateDirectory

#: a text large enough to take many read steps (the refusal must come before the first)
BIG = 4 << 20
PREFIX = "x" * 100


def _file(path: Path, size: int = BIG, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    try:
        os.write(fd, b"x" * size)
    finally:
        os.close(fd)
    os.chmod(path, mode)
    return path


@pytest.fixture
def reads_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], list[int]]]:
    """``reads_of(path)``: the byte counts of every read of ``path``'s inode made from now on
    (through ``os.read``, ``readv``, ``pread``, ``preadv`` or ``readinto`` of a file object)."""
    watched: dict[tuple[int, int], list[int]] = {}

    def note(fd: int, got: int) -> None:
        try:
            st = os.fstat(fd)
        except OSError:
            return
        seen = watched.get((st.st_dev, st.st_ino))
        if seen is not None:
            seen.append(got)

    def wrap(name: str) -> None:
        real = getattr(os, name, None)
        if real is None:
            return

        def counted(fd: int, *args: Any) -> Any:
            out = real(fd, *args)
            note(fd, out if isinstance(out, int) else len(out))
            return out

        monkeypatch.setattr(os, name, counted)

    for name in ("read", "readv", "pread", "preadv"):
        wrap(name)

    def reads(path: Path) -> list[int]:
        st = os.stat(path)
        return watched.setdefault((st.st_dev, st.st_ino), [])

    yield reads


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    events, control = d / "events.jsonl", d / "control.jsonl"
    for p in (events, control):
        p.touch(mode=0o600)
    return d, events, control


def _refusals(d: Path, tmp_path: Path, case: str) -> tuple[Path, str]:
    """A file in ``d`` that the checks at ``open`` refuse, and the words of the refusal."""
    if case == "hardlink":
        path = _file(d / "f.txt")
        os.link(path, tmp_path / "outside-name")  # a hostile child links an outside file in
        return path, "has other hard links"
    if case == "mode":
        return _file(d / "f.txt", mode=0o644), "accessible to others"
    if case == "too-large":
        return _file(d / "f.txt", size=BIG + 1), "is larger than"
    return d / "events.jsonl", "one of the channel's own files"


CASES = ["hardlink", "mode", "too-large", "event-file"]


@pytest.mark.parametrize("case", CASES)
def test_the_read_is_refused_at_start(tmp_path: Path, case: str, reads_of: Callable[[Path], list[int]]) -> None:
    """:meth:`FinalTextRead.start` refuses the file at once: the read is over before any step."""
    d, events, _ = _setup(tmp_path)
    if case == "event-file":
        events.write_bytes(b"x" * BIG)
    path, why = _refusals(d, tmp_path, case)
    reads = reads_of(path)
    private = PrivateDirectory(str(d), [str(events)])
    try:
        read = FinalTextRead.start(private, str(path), PREFIX, cap=BIG)
        assert read.done, "a refused file was opened for reading"
        assert read.text is None and read.why is not None and why in read.why, read.why
        assert read.step(BIG)  # a step of a refused read reads nothing either
        assert reads == [], f"{sum(reads)} bytes of a refused file were read"
        assert path.exists()
    finally:
        private.close()


@pytest.mark.parametrize("case", ["hardlink", "mode", "too-large"])
def test_a_channel_reads_no_byte_of_a_refused_file(
    tmp_path: Path, case: str, reads_of: Callable[[Path], list[int]]
) -> None:
    """Through a channel (the ``result`` line names the file): the note gives the reason, the cut
    text is kept, and not a byte of the file was read, however many polls it takes."""
    d, events, control = _setup(tmp_path)
    path, why = _refusals(d, tmp_path, case)
    reads = reads_of(path)
    lines = [
        {"v": 1, "seq": 1, "type": "ready", "run": "r"},
        {
            "v": 1,
            "seq": 2,
            "type": "result",
            "run": "r",
            "stop-reason": "stop",
            "final-text": PREFIX,
            "truncated?": True,
            "final-text-path": str(path),
        },
        {"v": 1, "seq": 3, "type": "exit", "run": "r", "status": "done"},
    ]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with Channel("r", str(control), str(events), final_text_cap=BIG, final_text_step=64 << 10) as ch:
        for _ in range(10_000):  # each poll reads one step at most: bounded, not timed
            ch.poll()
            if ch.exit is not None and not ch.reading_final_text:
                break
        assert ch.exit is not None and ch.final_text == PREFIX
        assert ch.final_text_note is not None and why in ch.final_text_note, ch.final_text_note
    assert reads == [], f"{sum(reads)} bytes of a refused file were read"
    assert path.exists()


def test_the_counter_sees_the_reads_of_an_accepted_file(tmp_path: Path, reads_of: Callable[[Path], list[int]]) -> None:
    """The counter itself works: a file that is accepted is read whole, and every byte counted."""
    d, _, _ = _setup(tmp_path)
    path = _file(d / "f.txt")
    reads = reads_of(path)
    private = PrivateDirectory(str(d))
    try:
        read = FinalTextRead.start(private, str(path), PREFIX, cap=BIG)
        while not read.step(1 << 20):
            pass
        assert read.text is not None and len(read.text) == BIG, read.why
        assert sum(reads) == BIG
    finally:
        private.close()


def test_a_channel_file_replaced_after_the_start_is_still_refused(
    tmp_path: Path, reads_of: Callable[[Path], list[int]]
) -> None:
    """The channel's own files are known by inode from the start, and by name at each check: a
    child that replaces its control file with a new one (a rename over it) and names that as its
    final text is refused, and the new file keeps its name."""
    d, events, control = _setup(tmp_path)
    private = PrivateDirectory(str(d), [str(control), str(events)])
    try:
        new = _file(d / "new.txt")
        os.replace(new, control)  # a new inode under the protected name
        reads = reads_of(control)
        read = FinalTextRead.start(private, str(control), PREFIX, cap=BIG)
        assert read.done and read.why is not None and "one of the channel's own files" in read.why, read.why
        assert reads == [] and control.exists()
    finally:
        private.close()
