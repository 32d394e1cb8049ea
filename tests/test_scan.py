"""Receiver.scan (validate and forward): the drain of Receiver.feed without dicts.

Parity is the product: on every input ``scan`` accepts and rejects exactly what ``feed`` does, in
the same order, with the same rejections and seq, and hands back each accepted line's exact bytes
with the dict's ``type`` and ``seq``; both backends agree record for record.
"""

from __future__ import annotations

import pickle
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import fenwire_fast
import pytest
from conftest import FIXTURES, assert_strict_equal
from fenwire_fast import MAX_LINE_BYTES, Rejection, Scanned
from hypothesis import given
from hypothesis import strategies as st
from test_properties import mutated_lines, split_points, stream_lines


def event(seq: object, type: str = "ready", run: str = "r", extra: str = "") -> bytes:
    return b'{"v":1,"seq":%s,"type":"%s","run":"%s"%s}' % (
        str(seq).encode(),
        type.encode(),
        run.encode(),
        extra.encode(),
    )


def expected_from_feed(
    backend: ModuleType, pieces: list[bytes], direction: str = "event"
) -> tuple[list[Any], int, int]:
    """What ``scan`` must return over ``pieces``: ``feed``'s results with each dict turned into
    ``Scanned(dict["type"], int(dict["seq"]), line)``, the line taken from a Framer."""
    rx = backend.Receiver(direction)
    framer = backend.Framer()
    out: list[Any] = []
    for piece in pieces:
        results = rx.feed(piece)
        lines = [line for line in framer.feed(piece) if line]
        assert len(lines) == len(results)
        for line, r in zip(lines, results, strict=True):
            if isinstance(r, Rejection):
                out.append(r)
            else:
                assert type(r) is dict
                out.append(Scanned(r["type"], int(r["seq"]), line))
    return out, rx.seq, rx.buffered


def scan_all(backend: ModuleType, pieces: list[bytes], direction: str = "event") -> tuple[list[Any], int, int]:
    rx = backend.Receiver(direction)
    out = [x for piece in pieces for x in rx.scan(piece)]
    return out, rx.seq, rx.buffered


def assert_scan_is_feed(backend: ModuleType, pieces: list[bytes], direction: str = "event") -> list[Any]:
    got = scan_all(backend, pieces, direction)
    want = expected_from_feed(backend, pieces, direction)
    assert_strict_equal(got, want)
    return got[0]


EDGE_STREAM = b"\n".join(
    [
        event(1),
        b"",
        event(2, "info", extra=',"summary":"s\\n\\u00e9\xc3\xa9"'),
        event(2),  # out of order
        b"\r",
        event("3.0"),  # an integral float seq: the record's seq is the int 3
        event(4) + b"\r",  # a trailing \r is whitespace to JSON: accepted, kept in the line
        b"\xff\xfe",
        b'{"v":1,"seq":5,"type":"ready","run":"\xc3"}',
        b"[1,2]",
        b"nope",
        event(6, "nope"),
        event(7, "prompt"),  # a control type in an event stream
        event(8, "info", extra=',"summary":5'),
        b'{"v":2,"seq":9,"type":"ready","run":"r"}',  # fatal: consumes nothing
        b'{"v":1,"seq":3,"type":"ready","run":"r"}',
        b"x" * (MAX_LINE_BYTES + 5),
        b"{" + b'"a":' * 0 + b'"v":1,"seq":10,"type":"ready","run":"r","deep":' + b"[" * 1100 + b"]" * 1100 + b"}",
        event(11, extra=',"nested":{"k":["\\ud83d\\ude00",{"a":null}],"e":{}}'),
        event(12, extra=',"x":"\\ud800"'),
        event(13),
        b"   ",
    ]
)


class TestScan:
    def test_records(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event")
        out = rx.scan(event(1) + b"\n" + event("2.0", "info", extra=',"summary":"s"') + b"\npartial")
        assert out == [Scanned("ready", 1, event(1)), Scanned("info", 2, event("2.0", "info", extra=',"summary":"s"'))]
        assert all(type(r) is Scanned for r in out)
        assert type(out[1].seq) is int and type(out[1].type) is str and type(out[1].line) is bytes
        assert rx.seq == 2 and rx.buffered == len(b"partial")

    def test_record_type(self) -> None:
        s = Scanned("ready", 1, b"{}")
        assert (s.type, s.seq, s.line) == ("ready", 1, b"{}")
        assert s == Scanned("ready", 1, b"{}") and s != Scanned("ready", 2, b"{}")
        assert hash(s) == hash(Scanned("ready", 1, b"{}"))
        assert repr(s) == "Scanned(type='ready', seq=1, line=b'{}')"
        assert pickle.loads(pickle.dumps(s)) == s
        with pytest.raises(AttributeError):
            s.seq = 2  # type: ignore[misc]
        assert not hasattr(s, "__dict__")
        assert fenwire_fast.Scanned is Scanned

    def test_edge_stream_whole_and_split_everywhere(self, backend: ModuleType) -> None:
        data = EDGE_STREAM + b"\n"
        out = assert_scan_is_feed(backend, [data])
        assert [r.seq for r in out if type(r) is Scanned] == [1, 2, 3, 4, 11, 13]
        assert [r.code for r in out if type(r) is Rejection] == [
            "out-of-order",
            "malformed",
            "malformed",
            "malformed",
            "malformed",
            "malformed",
            "unknown-type",
            "unknown-type",
            "invalid-payload",
            "version-mismatch",
            "out-of-order",
            "too-large",
            "malformed",
            "malformed",
            "malformed",
        ]
        step = max(1, len(data) // 300)
        for cut in range(0, len(data) + 1, step):
            assert_scan_is_feed(backend, [data[:cut], data[cut:]])

    def test_every_fixture(self, backend: ModuleType) -> None:
        for path in sorted((FIXTURES / "wire").glob("*.jsonl")):
            data = path.read_bytes()
            for direction in ("event", "control"):
                assert_scan_is_feed(backend, [data], direction)
                assert_scan_is_feed(backend, [data[i : i + 997] for i in range(0, len(data), 997)], direction)

    def test_alternating_feed_and_scan_share_the_receiver(self, backend: ModuleType) -> None:
        data = EDGE_STREAM + b"\n" + event(50) + b"\n" + event(51)
        pieces = [data[i : i + 61] for i in range(0, len(data), 61)]
        want, want_seq, want_buffered = expected_from_feed(backend, pieces)
        for first in (0, 1):
            rx = backend.Receiver("event")
            framer = backend.Framer()
            got: list[Any] = []
            for i, piece in enumerate(pieces):
                lines = [line for line in framer.feed(piece) if line]
                if i % 2 == first:
                    got.extend(rx.scan(piece))
                else:
                    for line, r in zip(lines, rx.feed(piece), strict=True):
                        got.append(r if isinstance(r, Rejection) else Scanned(r["type"], int(r["seq"]), line))
            assert_strict_equal(got, want)
            assert (rx.seq, rx.buffered) == (want_seq, want_buffered)

    def test_mutable_and_bad_arguments(self, backend: ModuleType) -> None:
        line = event(1) + b"\n"
        for arg in (bytearray(line), memoryview(line), memoryview(b"xx" + line)[2:]):
            rx = backend.Receiver("event")
            assert rx.scan(arg) == [Scanned("ready", 1, event(1))]
        for bad in ("text\n", None, 5, [b"x"]):
            rx = backend.Receiver("event")
            with pytest.raises(TypeError, match="data must be bytes"):
                rx.scan(bad)
            with pytest.raises(TypeError, match="data must be bytes"):
                rx.feed(bad)

    def test_bad_direction_set_later_rejects_every_line(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event")
        rx.direction = "sideways"
        out = rx.scan(event(1) + b"\n" + b"nope\n")
        assert [r.reason for r in out] == ['direction must be "event" or "control"', "line is not valid JSON"]

    def test_big_chunk(self, backend: ModuleType) -> None:
        """A chunk large enough to be checked with the GIL released, with a held line around it."""
        lines = [event(i, "info", extra=',"summary":"%s"' % ("é" * (i % 50))) for i in range(1, 3001)]
        data = b"\n".join(lines) + b"\n"
        out = assert_scan_is_feed(backend, [data[:100], data[100:-7], data[-7:]])
        assert [r.line for r in out] == lines


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12), st.sampled_from(["event", "control"]))
def test_scan_is_feed_on_any_stream(backend: ModuleType, lines: list[bytes], cuts: list[int], direction: str) -> None:
    data = b"\n".join(lines) + b"\n"
    assert_scan_is_feed(backend, split_points(data, cuts), direction)


@given(
    st.lists(st.one_of(mutated_lines().map(lambda c: c[0]), st.binary(max_size=80)), max_size=8),
    st.lists(st.integers(0, 10**6), max_size=6),
    st.sampled_from(["event", "control"]),
)
def test_backends_scan_alike(
    pure: ModuleType, native: ModuleType, lines: list[bytes], cuts: list[int], direction: str
) -> None:
    data = b"\n".join(lines)
    pieces = split_points(data, cuts)
    assert_strict_equal(scan_all(native, pieces, direction), scan_all(pure, pieces, direction))
    assert_scan_is_feed(native, pieces, direction)


@given(
    st.lists(st.one_of(mutated_lines().map(lambda c: c[0]), st.binary(max_size=80)), max_size=8),
    st.lists(st.integers(0, 10**6), max_size=6),
    st.sampled_from(["event", "control"]),
)
def test_scan_rejections_are_the_rejections_of_scan(
    backend: ModuleType, lines: list[bytes], cuts: list[int], direction: str
) -> None:
    """``scan_rejections`` is ``scan`` with the accepted lines left out, each rejection with its
    place in ``scan``'s list; the receiver ends in the same state."""
    data = b"\n".join(lines)
    pieces = split_points(data, cuts)
    by_scan, by_rejections = backend.Receiver(direction), backend.Receiver(direction)
    for piece in pieces:
        want = [(i, r) for i, r in enumerate(by_scan.scan(piece)) if type(r) is Rejection]
        assert_strict_equal(by_rejections.scan_rejections(piece), want)
    assert (by_rejections.seq, by_rejections.buffered) == (by_scan.seq, by_scan.buffered)


def test_scan_rejections_of_a_big_chunk(backend: ModuleType) -> None:
    lines = [event(i) if i % 500 else b"nope" for i in range(1, 3001)]
    out = backend.Receiver("event").scan_rejections(b"\n".join(lines) + b"\n")
    assert [(i, r.code) for i, r in out] == [(i - 1, "malformed") for i in range(500, 3001, 500)]


def test_scan_releases_the_gil(native: ModuleType) -> None:
    """While one thread scans a big chunk, another runs Python code.

    With a switch interval far longer than the test, a thread holding the GIL keeps it until it
    blocks or releases it. The main thread waits for the scanning thread to start; it can only get
    the GIL back before the scan has finished if the scan released it: then it sees ``finished``
    not yet set (the scanning thread needs the GIL back to set it). Without the release this can
    never happen. With it, the operating system must also schedule the main thread while the scan
    runs, which a loaded machine may delay: so the trial is repeated, and one success decides.
    No timing is measured.
    """
    data = b"".join(event(i, "info", extra=',"summary":"some text"') + b"\n" for i in range(1, 50001))

    def trial() -> bool:
        rx = native.Receiver("event")
        entered, finished = threading.Event(), threading.Event()
        results: list[Any] = []

        def work() -> None:
            entered.set()
            results.extend(rx.scan(data))
            finished.set()

        thread = threading.Thread(target=work)
        thread.start()
        entered.wait()
        ran_during_scan = not finished.is_set()
        thread.join()
        assert len(results) == 50000 and results[-1].seq == 50000
        return ran_during_scan

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        assert any(trial() for _ in range(20))
    finally:
        sys.setswitchinterval(old)


def test_threads_scan_their_own_receivers(backend: ModuleType) -> None:
    data = b"".join(event(i) + b"\n" for i in range(1, 5001))
    outs: list[list[Any]] = [[], [], []]

    def work(i: int) -> None:
        rx = backend.Receiver("event")
        for j in range(0, len(data), 8192):
            outs[i].extend(rx.scan(data[j : j + 8192]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) == 5000
    assert [r.seq for r in outs[0]] == list(range(1, 5001))


def test_fixture_dir_exists() -> None:
    assert Path(FIXTURES / "wire").is_dir()
