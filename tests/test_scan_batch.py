"""Receiver.scan_batch: the drain of Receiver.scan as columns, with no Python object per line.

A batch is exactly ``scan``'s list rebuilt: its accepted lines (``lines`` cut at ``ends``), seqs and
type indices are ``scan``'s records in order, its rejections are ``scan``'s rejections with their
places; the receiver ends in the same state; both backends agree column for column.
"""

from __future__ import annotations

import array
import json
import threading
from types import ModuleType
from typing import Any

import fenwire_fast
import orjson
import pytest
from conftest import FIXTURES, assert_strict_equal
from fenwire_fast import (
    CONTROL_TYPE_ORDER,
    CONTROL_TYPES,
    EVENT_TYPE_ORDER,
    EVENT_TYPES,
    MAX_LINE_BYTES,
    Rejection,
    Scanned,
)
from hypothesis import given
from hypothesis import strategies as st
from test_properties import mutated_lines, split_points, stream_lines
from test_scan import EDGE_STREAM, event


def rebuilt(batch: Any, direction: str) -> list[Any]:
    """``scan``'s list, rebuilt from a batch's columns alone."""
    names = CONTROL_TYPE_ORDER if direction == "control" else EVENT_TYPE_ORDER
    records: list[Any] = []
    start = 0
    for end, seq, t in zip(batch.ends, batch.seqs, batch.types, strict=True):
        line = batch.lines[start:end]
        assert line.endswith(b"\n")
        records.append(Scanned(names[t], seq, line[:-1]))
        start = end
    assert start == len(batch.lines)
    out: list[Any] = []
    i = 0
    for before, rejection in batch.rejections:
        assert i <= before <= len(records)
        out.extend(records[i:before])
        out.append(rejection)
        i = before
    out.extend(records[i:])
    return out


def check_batch_shape(batch: Any) -> None:
    assert type(batch).__name__ == "ScanBatch"
    assert type(batch.lines) is bytes and type(batch.types) is bytes
    assert type(batch.ends) is array.array and batch.ends.typecode == "Q"
    assert type(batch.seqs) is array.array and batch.seqs.typecode == "Q"
    assert type(batch.rejections) is list
    assert all(type(p) is tuple and type(p[0]) is int and type(p[1]) is Rejection for p in batch.rejections)
    n = len(batch)
    assert n == len(batch.ends) == len(batch.seqs) == len(batch.types)
    for i in range(n):
        start = batch.ends[i - 1] if i else 0
        assert batch.line(i) == batch.lines[start : batch.ends[i] - 1]
        assert batch.line(i - n) == batch.line(i)


def assert_batch_is_scan(backend: ModuleType, pieces: list[bytes], direction: str = "event") -> list[Any]:
    by_scan, by_batch = backend.Receiver(direction), backend.Receiver(direction)
    everything: list[Any] = []
    for piece in pieces:
        want = by_scan.scan(piece)
        batch = by_batch.scan_batch(piece)
        check_batch_shape(batch)
        got = rebuilt(batch, direction)
        assert_strict_equal(got, want)
        everything.extend(got)
    assert (by_batch.seq, by_batch.buffered) == (by_scan.seq, by_scan.buffered)
    return everything


def batch_columns(backend: ModuleType, pieces: list[bytes], direction: str) -> tuple[list[Any], int, int]:
    rx = backend.Receiver(direction)
    out: list[Any] = []
    for piece in pieces:
        b = rx.scan_batch(piece)
        out.append((b.lines, b.ends.tolist(), b.seqs.tolist(), b.types, b.rejections, len(b), repr(b)))
    return out, rx.seq, rx.buffered


class TestScanBatch:
    def test_columns(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event")
        second = event("2.0", "info", extra=',"summary":"s"')
        batch = rx.scan_batch(event(1) + b"\nnope\n" + second + b"\npartial")
        assert batch.lines == event(1) + b"\n" + second + b"\n"
        assert batch.ends.tolist() == [len(event(1)) + 1, len(batch.lines)]
        assert batch.seqs.tolist() == [1, 2]
        assert batch.types == bytes([EVENT_TYPE_ORDER.index("ready"), EVENT_TYPE_ORDER.index("info")])
        assert [(i, r.code) for i, r in batch.rejections] == [(1, "malformed")]
        assert len(batch) == 2 and batch.line(1) == second and batch.line(-2) == event(1)
        assert repr(batch) == f"ScanBatch(2 lines, {len(batch.lines)} bytes, 1 rejections)"
        assert rx.seq == 2 and rx.buffered == len(b"partial")
        rest = rx.scan_batch(b"\n" + event(3) + b"\n")
        assert [(i, r.code) for i, r in rest.rejections] == [(0, "malformed")]
        assert rest.lines == event(3) + b"\n"

    def test_control_types_are_indices_in_control_types(self, backend: ModuleType) -> None:
        for path in sorted((FIXTURES / "wire").glob("*.jsonl")):
            out = assert_batch_is_scan(backend, [path.read_bytes()], "control")
            assert all(r.type in CONTROL_TYPES for r in out if type(r) is Scanned)

    def test_empty(self, backend: ModuleType) -> None:
        batch = backend.Receiver("event").scan_batch(b"")
        assert (batch.lines, batch.ends.tolist(), batch.seqs.tolist(), batch.types, batch.rejections) == (
            b"",
            [],
            [],
            b"",
            [],
        )
        assert len(batch) == 0 and repr(batch) == "ScanBatch(0 lines, 0 bytes, 0 rejections)"
        with pytest.raises(IndexError, match="line index out of range"):
            batch.line(0)

    def test_whole_chunk_is_the_input(self, native: ModuleType) -> None:
        data = b"".join(event(i) + b"\n" for i in range(1, 2001))
        assert native.Receiver("event").scan_batch(data).lines is data
        rx = native.Receiver("event")
        rx.scan_batch(data[:10])
        assert rx.scan_batch(data[10:]).lines == data

    def test_edge_stream_whole_and_split_everywhere(self, backend: ModuleType) -> None:
        data = EDGE_STREAM + b"\n"
        out = assert_batch_is_scan(backend, [data])
        assert [r.seq for r in out if type(r) is Scanned] == [1, 2, 3, 4, 11, 13]
        step = max(1, len(data) // 300)
        for cut in range(0, len(data) + 1, step):
            assert_batch_is_scan(backend, [data[:cut], data[cut:]])

    def test_every_fixture(self, backend: ModuleType) -> None:
        for path in sorted((FIXTURES / "wire").glob("*.jsonl")):
            data = path.read_bytes()
            for direction in ("event", "control"):
                assert_batch_is_scan(backend, [data], direction)
                assert_batch_is_scan(backend, [data[i : i + 997] for i in range(0, len(data), 997)], direction)

    def test_fatal_rejection_consumes_nothing(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event")
        batch = rx.scan_batch(event(1) + b'\n{"v":2,"seq":9,"type":"ready","run":"r"}\n' + event(2) + b"\n")
        assert [(i, r.code, r.fatal) for i, r in batch.rejections] == [(1, "version-mismatch", True)]
        assert batch.seqs.tolist() == [1, 2] and rx.seq == 2

    def test_shares_the_receiver_with_feed_and_scan(self, backend: ModuleType) -> None:
        data = EDGE_STREAM + b"\n" + event(50) + b"\n" + event(51)
        pieces = [data[i : i + 61] for i in range(0, len(data), 61)]
        ref = backend.Receiver("event")
        want = [x for piece in pieces for x in ref.scan(piece)]
        rx = backend.Receiver("event")
        got: list[Any] = []
        for i, piece in enumerate(pieces):
            if i % 3 == 0:
                got.extend(rebuilt(rx.scan_batch(piece), "event"))
            elif i % 3 == 1:
                got.extend(rx.scan(piece))
            else:
                got.extend(rx.feed(piece))
        # feed's dicts stand where scan has records: compare the kinds and seqs.
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if type(w) is Rejection:
                assert g == w
            else:
                assert (g["seq"] if type(g) is dict else g.seq) == w.seq
        assert (rx.seq, rx.buffered) == (ref.seq, ref.buffered)

    def test_mutable_and_bad_arguments(self, backend: ModuleType) -> None:
        line = event(1) + b"\n"
        for arg in (bytearray(line), memoryview(line), memoryview(b"xx" + line)[2:]):
            batch = backend.Receiver("event").scan_batch(arg)
            assert type(batch.lines) is bytes and batch.lines == line
        for bad in ("text\n", None, 5, [b"x"]):
            with pytest.raises(TypeError, match="data must be bytes"):
                backend.Receiver("event").scan_batch(bad)
        batch = backend.Receiver("event").scan_batch(line)
        for bad_index in ("0", 0.0, None, True):
            with pytest.raises(TypeError, match="line index must be an int"):
                batch.line(bad_index)
        for out_of_range in (1, -2, 2**70, -(2**70)):
            with pytest.raises(IndexError, match="line index out of range"):
                batch.line(out_of_range)
        with pytest.raises(AttributeError):
            batch.lines = b""  # type: ignore[misc]
        ends = batch.ends
        ends[0] = 0  # the batch's own offsets are not the array's
        assert batch.line(0) == event(1)

    def test_bad_direction_set_later_rejects_every_line(self, backend: ModuleType) -> None:
        rx = backend.Receiver("event")
        rx.direction = "sideways"
        batch = rx.scan_batch(event(1) + b"\n" + b"nope\n")
        assert len(batch) == 0 and batch.lines == b""
        assert [(i, r.reason) for i, r in batch.rejections] == [
            (0, 'direction must be "event" or "control"'),
            (0, "line is not valid JSON"),
        ]

    def test_big_chunk(self, backend: ModuleType) -> None:
        lines = [event(i, "info", extra=',"summary":"%s"' % ("é" * (i % 50))) for i in range(1, 3001)]
        lines[1500] = b"x" * (MAX_LINE_BYTES + 5)
        data = b"\n".join(lines) + b"\n"
        assert_batch_is_scan(backend, [data[:100], data[100:-7], data[-7:]])
        assert_batch_is_scan(backend, [data])

    def test_type_orders(self, native: ModuleType) -> None:
        tables = native._tables()
        assert (EVENT_TYPE_ORDER, CONTROL_TYPE_ORDER) == (tables["event_types"], tables["control_types"])
        assert (set(EVENT_TYPE_ORDER), set(CONTROL_TYPE_ORDER)) == (EVENT_TYPES, CONTROL_TYPES)

    def test_exported(self, backend: ModuleType) -> None:
        assert "ScanBatch" in backend.__all__
        assert isinstance(backend.Receiver("event").scan_batch(b""), backend.ScanBatch)
        assert fenwire_fast.ScanBatch is fenwire_fast.Receiver("event").scan_batch(b"").__class__


@given(stream_lines, st.lists(st.integers(0, 10**6), max_size=12), st.sampled_from(["event", "control"]))
def test_scan_batch_is_scan_on_any_stream(
    backend: ModuleType, lines: list[bytes], cuts: list[int], direction: str
) -> None:
    data = b"\n".join(lines) + b"\n"
    assert_batch_is_scan(backend, split_points(data, cuts), direction)


@given(
    st.lists(st.one_of(mutated_lines().map(lambda c: c[0]), st.binary(max_size=80)), max_size=8),
    st.lists(st.integers(0, 10**6), max_size=6),
    st.sampled_from(["event", "control"]),
)
def test_backends_scan_batch_alike(
    pure: ModuleType, native: ModuleType, lines: list[bytes], cuts: list[int], direction: str
) -> None:
    data = b"\n".join(lines)
    pieces = split_points(data, cuts)
    assert_strict_equal(batch_columns(native, pieces, direction), batch_columns(pure, pieces, direction))
    assert_batch_is_scan(native, pieces, direction)


def test_threads_scan_batch_their_own_receivers(backend: ModuleType) -> None:
    data = b"".join(event(i) + b"\n" for i in range(1, 5001))
    outs: list[list[int]] = [[], [], []]

    def work(i: int) -> None:
        rx = backend.Receiver("event")
        for j in range(0, len(data), 8192):
            outs[i].extend(rx.scan_batch(data[j : j + 8192]).seqs)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outs[0] == outs[1] == outs[2] == list(range(1, 5001))


# ---------------------------------------------------------------------------------------------
# foreign lines and slices

RUNS = ["r", "x", "r-é", 'a"b', "r\\", "rr"]


@st.composite
def run_lines(draw: st.DrawFn) -> bytes:
    """An event line of one of :data:`RUNS`, in the shapes a writer or a hostile child may use: the
    writer's key order, the run first, spaces, an escaped run, a nested ``run`` key, a duplicate
    ``run`` key (the last wins), and now and then a line that is not valid at all."""
    seq = draw(st.integers(1, 40))
    run = draw(st.sampled_from(RUNS))
    shape = draw(st.sampled_from(["writer", "run-first", "spaces", "escaped", "nested", "duplicate", "bad"]))
    if shape == "nested":
        inner = draw(st.sampled_from(RUNS))
        msg: dict[str, Any] = {"v": 1, "seq": seq, "type": "tool-call", "run": run, "name": "t", "id": "c"}
        msg["arguments"] = {"run": inner}
        return orjson.dumps(msg)
    msg = {"v": 1, "seq": seq, "type": "info", "run": run, "summary": draw(st.sampled_from(["s", '"run"', "é"]))}
    line = orjson.dumps(msg)
    if shape == "run-first":
        line = orjson.dumps({"run": run, **{k: v for k, v in msg.items() if k != "run"}})
    elif shape == "spaces":
        line = json.dumps(msg, ensure_ascii=False).encode()
    elif shape == "escaped":
        line = json.dumps(msg, ensure_ascii=True).encode().replace(b'"run": "r', b'"run": "\\u0072')
    elif shape == "duplicate":
        line = line[:-1] + b',"run":' + orjson.dumps(draw(st.sampled_from(RUNS))) + b"}"
    elif shape == "bad":
        line = line[: draw(st.integers(0, len(line)))]
    return line


def own_run_indices(backend: ModuleType, batch: Any, run: str) -> list[int]:
    """The indices of the batch's lines whose decoded run is not ``run``."""
    out = []
    for i in range(len(batch)):
        msg, rejection = backend.decode(batch.line(i), "event")
        assert rejection is None
        if msg["run"] != run:
            out.append(i)
    return out


@given(st.lists(run_lines(), max_size=16), st.lists(st.integers(0, 10**6), max_size=5), st.sampled_from(RUNS))
def test_foreign_lines_are_those_of_another_run(
    backend: ModuleType, lines: list[bytes], cuts: list[int], run: str
) -> None:
    rx = backend.Receiver("event", run=run)
    for piece in split_points(b"\n".join(lines) + b"\n", cuts):
        batch = rx.scan_batch(piece)
        assert batch.foreign == own_run_indices(backend, batch, run)


def test_foreign_is_empty_without_a_run(backend: ModuleType) -> None:
    data = (
        event(1, "info", extra=',"summary":"s"')
        + b"\n"
        + event(2, "info", extra=',"summary":"s"').replace(b'"r"', b'"other"')
        + b"\n"
    )
    assert backend.Receiver("event").scan_batch(data).foreign == []
    assert backend.Receiver("event", run="r").scan_batch(data).foreign == [1]
    assert backend.Receiver("event", run="\ud800").scan_batch(data).foreign == [0, 1]


#: Every spelling of the key ``run``: each letter as it is or as a ``\\u`` escape (either hex case).
RUN_SPELLINGS = [r + u + n for r in ("r", "\\u0072") for u in ("u", "\\u0075") for n in ("n", "\\u006e", "\\u006E")]
#: Keys that only look like ``run``: a later one of these leaves the line its writer's.
NOT_RUN_KEYS = ["runx", "\\u0072unx", "xrun", "ru", "Run", "\\u0052un", "ru\\u006e\\u0020", "\\\\u0072un"]


@pytest.mark.parametrize("key", RUN_SPELLINGS + NOT_RUN_KEYS)
@pytest.mark.parametrize("type_", ["info", "turn-started", "exit"])
def test_a_later_run_key_in_any_spelling_decides_the_run(backend: ModuleType, key: str, type_: str) -> None:
    """A writer's line with a later duplicate ``run`` key, written with escapes: the last key wins
    (as in ``feed``'s dict), so the line is the other run's; a key that only looks like ``run``
    changes nothing."""
    payload = {"info": ',"summary":"s"', "turn-started": ',"turn":1', "exit": ',"status":"done"'}[type_]
    line = b'{"v":1,"seq":1,"type":"%s","run":"r1"%s,"%s":"other"}' % (type_.encode(), payload.encode(), key.encode())
    (msg,) = backend.Receiver("event").feed(line + b"\n")
    want = "other" if key in RUN_SPELLINGS else "r1"
    assert type(msg) is dict and msg["run"] == want
    for run in ("r1", "other"):
        batch = backend.Receiver("event", run=run).scan_batch(line + b"\n")
        assert len(batch) == 1 and batch.foreign == ([] if run == want else [0]), (run, line)
        rx = backend.Receiver("event", run=run)
        rx.feed(line + b"\n")
        assert rx.plain is (run == want and type_ == "info")


def test_backends_agree_on_later_run_keys(pure: ModuleType, native: ModuleType) -> None:
    """One stream of every spelling, each line's run read back from ``feed``: both backends' batches
    list exactly the lines whose decoded run is another."""
    lines = [
        b'{"v":1,"seq":%d,"type":"info","run":"r1","summary":"s","%s":"%s"}' % (i + 1, key.encode(), value)
        for i, (key, value) in enumerate((k, v) for k in RUN_SPELLINGS + NOT_RUN_KEYS for v in (b"r1", b"other"))
    ]
    data = b"\n".join(lines) + b"\n"
    runs = [m["run"] for m in pure.Receiver("event").feed(data)]
    assert runs == [m["run"] for m in native.Receiver("event").feed(data)]
    assert "other" in runs and "r1" in runs
    for run in ("r1", "other"):
        want = [i for i, r in enumerate(runs) if r != run]
        for backend in (pure, native):
            assert backend.Receiver("event", run=run).scan_batch(data).foreign == want


def batch_fields(batch: Any) -> tuple[Any, ...]:
    return (
        batch.lines,
        batch.ends.tolist(),
        batch.seqs.tolist(),
        batch.types,
        batch.rejections,
        batch.foreign,
        len(batch),
    )


@given(
    st.lists(st.one_of(run_lines(), mutated_lines().map(lambda c: c[0])), max_size=12),
    st.lists(st.integers(0, 13), min_size=1, max_size=4),
)
def test_slices_put_back_together_are_the_batch(backend: ModuleType, lines: list[bytes], cuts: list[int]) -> None:
    batch = backend.Receiver("event", run="r").scan_batch(b"\n".join(lines) + b"\n")
    n = len(batch)
    points = sorted({0, n, *(c % (n + 1) for c in cuts)})
    bounds = list(zip(points, points[1:], strict=False)) or [(0, 0)]
    parts = [batch.slice(a, b) for a, b in bounds]
    for part in parts:
        check_batch_shape(part)
    assert b"".join(p.lines for p in parts) == batch.lines
    assert [s for p in parts for s in p.seqs] == batch.seqs.tolist()
    assert b"".join(p.types for p in parts) == batch.types
    starts = [a for a, _ in bounds]
    assert [(a + i, r) for a, p in zip(starts, parts, strict=True) for i, r in p.rejections] == batch.rejections
    assert [a + i for a, p in zip(starts, parts, strict=True) for i in p.foreign] == batch.foreign
    assert batch_fields(batch.slice(0, n)) == batch_fields(batch)


def test_slice_bounds(backend: ModuleType) -> None:
    batch = backend.Receiver("event").scan_batch(event(1, "info", extra=',"summary":"s"') + b"\n")
    assert len(batch.slice(1, 1)) == 0 and batch.slice(1, 1).lines == b""
    for bad in [(0, 2), (-1, 1), (1, 0), (2, 2)]:
        with pytest.raises(IndexError, match="slice bounds out of range"):
            batch.slice(*bad)
    # not a Python slice: no negative bound, no None; the types of both bounds are checked first
    for bad in [(True, 1), (0, 1.0), ("0", 1), (None, 1), (-1, None), (None, -1), (2, True), (5, None), (-(2**70), "")]:
        with pytest.raises(TypeError, match="slice bounds must be ints"):
            batch.slice(*bad)
    for bad in [(-1, 0), (0, -1), (-(2**70), 1), (0, 2**70)]:
        with pytest.raises(IndexError, match="slice bounds out of range"):
            batch.slice(*bad)


def test_backends_slice_and_foreign_alike(pure: ModuleType, native: ModuleType) -> None:
    lines = [event(i, "info", extra=',"summary":"s"') for i in range(1, 9)]
    lines[2] = lines[2].replace(b'"r"', b'"x"')
    lines[5] = b"not json"
    data = b"\n".join(lines) + b"\n"
    a, b = pure.Receiver("event", run="r").scan_batch(data), native.Receiver("event", run="r").scan_batch(data)
    for start in range(len(a) + 1):
        for stop in range(start, len(a) + 1):
            assert_strict_equal(batch_fields(a.slice(start, stop)), batch_fields(b.slice(start, stop)))
