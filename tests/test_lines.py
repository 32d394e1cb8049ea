"""LineReader (the reference's line reader, budgets and all) and Tailer (docs/design-decisions.md,
"Framing and the line cap")."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest
from conftest import assert_strict_equal
from fenwire_fast import Rejection, Scanned
from fenwire_fast.lines import MISSING, OK, TRUNCATED, LineReader, Tailer

R_TOO_LARGE = "line is 65536 bytes or more; the limit is 65535"


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def ev(seq: int, delta: str = "d") -> bytes:
    return b'{"v":1,"seq":%d,"type":"assistant-text-delta","run":"r","delta":"%s"}' % (seq, delta.encode())


class TestLineReader:
    def test_statuses_are_strings(self) -> None:
        assert (OK, MISSING, TRUNCATED) == ("ok", "missing", "truncated")

    def test_missing_then_created(self, tmp_path: Path) -> None:
        path = tmp_path / "f.jsonl"
        r = LineReader(path)
        assert r.read() == ([], "missing")
        assert r.read() == ([], "missing")
        path.write_bytes(b"")
        assert r.read() == ([], "ok")
        append(path, b"a\n")
        assert r.read() == ([b"a"], "ok")
        assert r.offset == 2
        assert r.path == os.fspath(path)

    def test_partial_line_waits(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"one\ntw")
        r = LineReader(path)
        assert r.read() == ([b"one"], "ok")
        assert r.offset == 4
        assert r.read() == ([], "ok")
        assert r.offset == 4
        append(path, b"o\r\n\n\r\nthree")
        assert r.read() == ([b"two\r", b"", b"\r"], "ok")
        assert r.offset == len(b"one\ntwo\r\n\n\r\n")
        append(path, b"\n")
        assert r.read() == ([b"three"], "ok")
        assert r.read() == ([], "ok")

    def test_at_most_64_lines_per_call(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"".join(b"%d\n" % i for i in range(150)))
        r = LineReader(path)
        got = []
        sizes = []
        while True:
            lines, status = r.read()
            assert status == "ok"
            if not lines:
                break
            sizes.append(len(lines))
            got += lines
        assert sizes == [64, 64, 22]
        assert got == [b"%d" % i for i in range(150)]

    def test_empty_lines_count_against_the_budget(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"\n" * 70)
        r = LineReader(path)
        assert r.read() == ([b""] * 64, "ok")
        assert r.read() == ([b""] * 6, "ok")

    def test_at_most_64_kib_per_call(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        line = b"x" * 1999
        path.write_bytes((line + b"\n") * 50)  # 100000 bytes
        r = LineReader(path)
        lines, _ = r.read()
        assert len(lines) == 65536 // 2000 == 32
        assert r.offset == 32 * 2000
        lines, _ = r.read()
        assert len(lines) == 18
        assert r.offset == 100000

    def test_exactly_65535_byte_line(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        line = b"a" * 65535
        path.write_bytes(line + b"\nnext\n")
        r = LineReader(path)
        assert r.read() == ([line], "ok")
        assert r.read() == ([b"next"], "ok")

    def test_65536_byte_line_reported_once(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        line = b"b" * 65536
        path.write_bytes(line + b"\nnext\n")
        r = LineReader(path)
        assert r.read() == ([line], "ok")
        assert r.skipping is True
        assert r.read() == ([b"next"], "ok")  # its newline skipped, then the next line
        assert r.skipping is False
        assert r.offset == 65536 + 1 + 5

    def test_oversized_line_skipped_in_one_call(self, tmp_path: Path) -> None:
        # reported once, then the whole rest of it skipped by the next call, which goes on to the
        # lines after it (not one 64 KiB read per call)
        path = tmp_path / "f"
        big = bytes(range(32, 127)) * 30000  # 2,850,000 bytes: several skip steps
        path.write_bytes(big + b"\nafter\n")
        r = LineReader(path)
        assert r.read() == ([big[:65536]], "ok")
        assert r.skipping is True
        assert r.read() == ([b"after"], "ok")
        assert r.skipping is False
        assert r.offset == len(big) + 7
        assert r.read() == ([], "ok")

    def test_skip_is_bounded_per_call(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        big = b"g" * 300_000
        path.write_bytes(big + b"\nafter\n")
        r = LineReader(path, skip_budget=100_000)
        assert r.read() == ([big[:65536]], "ok")
        assert r.read() == ([], "ok")
        assert r.offset == 65536 + 100_000
        assert r.read() == ([], "ok")
        assert r.offset == 65536 + 200_000
        assert r.read() == ([b"after"], "ok")
        assert r.offset == len(big) + 7

    def test_oversized_line_still_being_written(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"c" * 70000)
        r = LineReader(path)
        assert r.read() == ([b"c" * 65536], "ok")
        assert r.read() == ([], "ok")  # rest of the line consumed while skipping
        assert r.offset == 70000
        append(path, b"ccc\nok\n")
        assert r.read() == ([b"ok"], "ok")

    def test_full_chunk_after_a_skip_is_not_reported(self, tmp_path: Path) -> None:
        # mid-skip reads never report an oversized line; the next line is judged on its own read
        path = tmp_path / "f"
        path.write_bytes(b"d" * 65536 + b"\n" + b"e" * 70000 + b"\n")
        r = LineReader(path)
        assert r.read() == ([b"d" * 65536], "ok")
        assert r.read() == ([], "ok")  # newline found at 0, no other newline; not a fresh chunk
        assert r.offset == 65537
        assert r.read() == ([b"e" * 65536], "ok")
        assert r.read() == ([], "ok")
        assert r.offset == 65537 + 70001

    def test_lines_before_an_oversized_one(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"short\n" + b"f" * 70000 + b"\n")
        r = LineReader(path)
        assert r.read() == ([b"short"], "ok")  # the long line waits for a read of its own
        assert r.read() == ([b"f" * 65536], "ok")
        assert r.read() == ([], "ok")
        assert r.offset == 6 + 70001

    def test_truncated(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"one\ntwo\n")
        r = LineReader(path)
        assert r.read() == ([b"one", b"two"], "ok")
        with open(path, "r+b") as fh:
            fh.truncate(3)
        assert r.read() == ([], "truncated")
        assert r.read() == ([], "truncated")
        assert r.offset == 8
        append(path, b"xxxx\nnew\n")  # grows back past the offset: not detected (reference)
        assert r.read() == ([b"new"], "ok")

    def test_same_size_is_ok(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"a\n")
        r = LineReader(path)
        r.read()
        assert r.read() == ([], "ok")

    def test_keeps_its_handle(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"one\n")
        r = LineReader(path)
        assert r.read() == ([b"one"], "ok")
        os.unlink(path)
        assert r.read() == ([], "ok")  # still reading the old file, not "missing"
        r.close()
        assert r.read() == ([], "missing")

    def test_budgets_are_parameters(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"aaaa\nbb\ncccccccc\nd\n")
        r = LineReader(path, max_bytes=8, max_lines=2)
        assert r.read() == ([b"aaaa", b"bb"], "ok")
        assert r.read() == ([b"cccccccc"], "ok")  # full 8-byte chunk, no newline: reported
        assert r.read() == ([b"d"], "ok")
        with pytest.raises(ValueError):
            LineReader(path, max_bytes=0)
        with pytest.raises(ValueError):
            LineReader(path, max_lines=0)

    def test_context_manager(self, tmp_path: Path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"x\n")
        with LineReader(path) as r:
            assert r.read() == ([b"x"], "ok")

    def test_lines_feed_decode(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "f"
        path.write_bytes(ev(1) + b"\n" + b"g" * 65536 + b"\n" + ev(2) + b"\n")
        r = LineReader(path)
        rx = backend.Receiver("event")
        out = []
        for _ in range(4):
            lines, _ = r.read()
            out += [rx.receive(line) for line in lines]
        assert [m["seq"] if m else rej.code for m, rej in out] == [1, "too-large", 2]


class TestTailer:
    def test_statuses(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "events.jsonl"
        t = Tailer(path, receiver=backend.Receiver("event"))
        assert t.poll() == ([], "missing")
        assert t.pending() is False
        path.write_bytes(ev(1) + b"\n" + ev(2)[:10])
        assert t.pending() is True
        out, status = t.poll()
        assert status == "ok" and [m["seq"] for m in out] == [1]
        assert t.offset == path.stat().st_size  # the unterminated tail is held by the receiver
        assert t.receiver.buffered == 10
        assert t.poll() == ([], "ok")
        append(path, ev(2)[10:] + b"\n")
        out, status = t.poll()
        assert [m["seq"] for m in out] == [2]
        with open(path, "r+b") as fh:
            fh.truncate(5)
        assert t.poll() == ([], "truncated")
        t.close()

    def test_reads_everything_in_order(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "events.jsonl"
        lines = [ev(i, "x" * (i % 300)) for i in range(1, 2001)]
        path.write_bytes(b"\n".join(lines) + b"\n")
        t = Tailer(path, "event", receiver=backend.Receiver("event"))
        got = []
        polls = 0
        while True:
            out, status = t.poll()
            assert status == "ok"
            if not out and not t.pending():
                break
            got += out
            polls += 1
        assert [m["seq"] for m in got] == list(range(1, 2001))
        assert polls == -(-path.stat().st_size // 65536)

    def test_max_bytes(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "events.jsonl"
        path.write_bytes(ev(1) + b"\n" + ev(2) + b"\n")
        t = Tailer(path, receiver=backend.Receiver("event"), max_bytes=len(ev(1)) + 5)
        out, _ = t.poll()
        assert [m["seq"] for m in out] == [1]
        out, _ = t.poll()
        assert [m["seq"] for m in out] == [2]
        with pytest.raises(ValueError):
            Tailer(path, max_bytes=0)

    def test_over_long_line(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "events.jsonl"
        path.write_bytes(ev(1) + b"\n" + b"h" * 150000 + b"\n" + ev(2) + b"\n")
        t = Tailer(path, receiver=backend.Receiver("event"))
        got = []
        for _ in range(5):
            got += t.poll()[0]
        assert_strict_equal(
            [x if isinstance(x, Rejection) else x["seq"] for x in got], [1, Rejection("too-large", R_TOO_LARGE), 2]
        )

    def test_default_receiver_is_the_package_backend(self, tmp_path: Path) -> None:
        import fenwire_fast

        t = Tailer(tmp_path / "x", "control")
        assert type(t.receiver) is fenwire_fast.Receiver
        assert t.receiver.direction == "control"

    def test_scan_mode_forwards_exact_lines(self, tmp_path: Path, backend: ModuleType) -> None:
        path = tmp_path / "events.jsonl"
        lines = [ev(i, "x" * (i % 300)) for i in range(1, 801)]
        bad = b"h" * 150000
        path.write_bytes(b"\n".join(lines[:400] + [bad, b"", b"nope"] + lines[400:]) + b"\n" + ev(9999)[:20])
        t = Tailer(path, "event", receiver=backend.Receiver("event"), scan=True)
        got = []
        for _ in range(50):
            got += t.poll()[0]
        assert [x.line for x in got if isinstance(x, Scanned)] == lines
        assert [x.seq for x in got if isinstance(x, Scanned)] == list(range(1, 801))
        assert {x.type for x in got if isinstance(x, Scanned)} == {"assistant-text-delta"}
        assert [x.code for x in got if isinstance(x, Rejection)] == ["too-large", "malformed"]
        assert t.receiver.buffered == 20
        feed = Tailer(path, "event", receiver=backend.Receiver("event"))
        fed = []
        for _ in range(50):
            fed += feed.poll()[0]
        assert [x["seq"] if type(x) is dict else x for x in fed] == [
            x.seq if isinstance(x, Scanned) else x for x in got
        ]
