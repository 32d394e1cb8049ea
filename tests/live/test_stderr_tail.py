"""StderrTail: a subprocess's stderr passed on whole, its last line kept, bounded and readable."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
from fenwire_fast.live.proc.stderr_tail import KEEP, LAST_LINE_CHARS, PASS_ON_CAP, StderrTail


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def out() -> Iterator[tuple[int, int]]:
    """A pipe standing in for our stderr: (read end, write end)."""
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def _tail_of(data: bytes, out_fd: int, cap: int = PASS_ON_CAP) -> StderrTail:
    r, w = os.pipe()
    tail = StderrTail(os.fdopen(r, "rb", buffering=0), out_fd=out_fd, cap=cap)
    with os.fdopen(w, "wb") as writer:
        writer.write(data)
    assert tail.join(5.0), "the copy did not end at the pipe's end"
    return tail


def test_everything_is_passed_on_and_the_last_non_blank_line_kept(out: tuple[int, int]) -> None:
    data = b"starting\nno API key configured\n \n\n"
    tail = _tail_of(data, out[1])
    os.close(out[1])
    assert _read_all(out[0]) == data
    assert tail.last_line() == "no API key configured"


def test_a_long_stream_is_passed_on_whole_and_only_its_end_kept(out: tuple[int, int]) -> None:
    # more than a pipe holds, so the copy waits on `out` while this test drains it
    data = b"".join(b"line %d\n" % i for i in range(40000)) + b"x" * (KEEP * 3)
    r, w = os.pipe()
    tail = StderrTail(os.fdopen(r, "rb", buffering=0), out_fd=out[1])

    def write() -> None:
        with os.fdopen(w, "wb") as writer:
            writer.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    got = bytearray()
    while len(got) < len(data):
        got += os.read(out[0], 65536)
    writer.join()
    assert tail.join(5.0)
    assert bytes(got) == data
    last = tail.last_line()
    assert last == "x" * (LAST_LINE_CHARS - 3) + "..."


def test_bad_utf8_and_control_characters_read_as_text(out: tuple[int, int]) -> None:
    tail = _tail_of(b"first\ncaf\xc3\xa9 \xff\x1b[31mred\x07 \xe2\x80\x94 done\r\n", out[1])
    assert tail.last_line() == "caf\u00e9 \ufffd [31mred  \u2014 done"


def test_only_the_last_bytes_are_kept(out: tuple[int, int]) -> None:
    tail = _tail_of(b"early words\n" + b"y" * KEEP, out[1])
    assert tail.last_line(wait=0) == "y" * (LAST_LINE_CHARS - 3) + "..."
    assert "early" not in tail._tail.decode()


def test_nothing_but_blanks_is_no_line(out: tuple[int, int]) -> None:
    assert _tail_of(b"", out[1]).last_line() == ""
    assert _tail_of(b"\n \t\n\x00\n", out[1]).last_line() == ""


def test_a_closed_stderr_loses_the_copy_but_not_the_tail(out: tuple[int, int]) -> None:
    os.close(out[0])  # writes to out[1] now fail (EPIPE; Python ignores SIGPIPE)
    tail = _tail_of(b"first\nlast words\n", out[1])
    assert tail.last_line() == "last words"


def cut_note(cap: int) -> bytes:
    return b"\n[fenwire: this stderr is cut here, after %d bytes; the rest is dropped]\n" % cap


def test_only_the_first_cap_bytes_are_passed_on_the_cut_and_the_rest_noted(out: tuple[int, int]) -> None:
    data = b"x" * 5000 + b"\nlast words\n"
    tail = _tail_of(data, out[1], cap=1000)
    os.close(out[1])
    dropped = len(data) - 1000
    assert (
        _read_all(out[0])
        == data[:1000] + cut_note(1000) + b"[fenwire: %d more bytes of this stderr dropped]\n" % dropped
    )
    assert tail.dropped == dropped
    assert tail.last_line() == "last words"  # the tail is kept from everything, dropped or not


def test_the_cut_is_noted_at_the_first_byte_dropped(out: tuple[int, int]) -> None:
    tail = _tail_of(b"", out[1], cap=4)
    for chunk in (b"ab", b"cd", b"e", b"fg"):  # the cap is reached exactly, then passed
        tail._pass_some(chunk)
    os.close(out[1])
    assert _read_all(out[0]) == b"abcd" + cut_note(4)
    assert tail.dropped == 3


def test_a_stream_within_the_cap_has_no_note(out: tuple[int, int]) -> None:
    data = b"y" * 999 + b"\n"
    tail = _tail_of(data, out[1], cap=1000)
    os.close(out[1])
    assert _read_all(out[0]) == data and tail.dropped == 0
    assert PASS_ON_CAP == 4 * 1024 * 1024  # the cap docs/acp.md gives
