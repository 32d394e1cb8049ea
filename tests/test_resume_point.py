"""Attach reads a run's event file from its mark (the place its last commit recorded), not from
its start: the state mirrored from there equals the one a read from the start gives, at any
point of a transcript, and a mark that does not hold up is ignored (the file is read from its
start, no event lost). Both backends, as every test."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast import Sender
from fenwire_fast.cli.runs import inspect
from fenwire_fast.live.parent.channel import Channel, ResumePoint
from fenwire_fast.live.parent.durable import (
    Manifest,
    StateDir,
    boot_id,
    decode_mark,
    encode_mark,
    new_manifest,
    process_start,
    read_manifests,
)
from fenwire_fast.live.parent.hub import Hub
from hypothesis import given
from hypothesis import strategies as st

CONTROLS = [("prompt", {"text": "go"}), ("steer", {"text": "left"}), ("follow-up", {"text": "more"}), ("close", {})]


def encode(direction: str, run: str, messages: list[tuple[str, dict[str, Any]]]) -> bytes:
    sender = Sender(direction, run)
    out = b""
    for type_, payload in messages:
        line, rejection = sender.next(type_, payload)
        assert rejection is None, rejection
        out += line + b"\n"
    return out


def transcript(deltas: list[int], rejected: bool, ended: bool) -> list[tuple[str, dict[str, Any]]]:
    """Two turns with acks (one maybe a rejection, with its reason) between text deltas."""
    events: list[tuple[str, dict[str, Any]]] = [("ready", {}), ("control-ack", {"ref": 1, "status": "accepted"})]
    events.append(("turn-started", {"turn": 1}))
    events += [("assistant-text-delta", {"delta": f"a{i} «é»\n" * (i % 4 + 1)}) for i in range(deltas[0])]
    if rejected:
        events.append(("control-ack", {"ref": 2, "status": "rejected", "reason": "no steering here"}))
    else:
        events.append(("control-ack", {"ref": 2, "status": "accepted"}))
    events += [("assistant-text-delta", {"delta": f"b{i}"}) for i in range(deltas[1])]
    events.append(("turn-complete", {"turn": 1, "stop-reason": "stop"}))
    events.append(("control-ack", {"ref": 3, "status": "accepted"}))
    events.append(("turn-started", {"turn": 2}))
    events += [("assistant-text-delta", {"delta": f"c{i}"}) for i in range(deltas[2])]
    if ended:
        events.append(("turn-complete", {"turn": 2, "stop-reason": "stop"}))
        events.append(("control-ack", {"ref": 4, "status": "accepted"}))
        events.append(("result", {"final-text": "the end", "stop-reason": "stop"}))
        events.append(("exit", {"status": "done"}))
    return events


def channel_over(directory: str, **kwargs: Any) -> Channel:
    return Channel("r", os.path.join(directory, "control.jsonl"), os.path.join(directory, "events.jsonl"), **kwargs)


def drain(channel: Channel) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        messages, _errors = channel.poll()
        got += messages
        if not messages and not channel.pending():
            return got


def mirrored(channel: Channel, delivered: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "delivered": delivered,
        "status": channel.status,
        # (last_seq: compared where something was handed over; a read from the start that hands
        # over nothing leaves it behind, as a raw poll sets it from what it delivers)
        "events": channel.earlier_events + channel.events,
        "controls": {seq: (c.type, c.status, c.reason) for seq, c in channel.controls.items()},
        "unacked": sorted(channel.unacked),
        "result": channel.result,
        "exit": channel.exit,
        "final_text": channel.final_text,
        "error": channel.error,
    }


def points_of(directory: str, max_bytes: int, raw: bool) -> list[ResumePoint]:
    """Every resume point a first parent's channel passes through, reading ``max_bytes`` at a time."""
    first = channel_over(directory, max_bytes=max_bytes)
    first.resume(repair=False)  # the controls it sent (a first parent's channel knows them)
    points = []
    try:
        while True:
            got = first.poll_raw()[0] if raw else first.poll()[0]
            point = first.resume_point()
            if point is not None:
                points.append(point)
            if not got and not first.pending():
                return points
    finally:
        first.close()


@given(
    deltas=st.lists(st.integers(0, 12), min_size=3, max_size=3),
    rejected=st.booleans(),
    ended=st.booleans(),
    max_bytes=st.integers(8, 400),
    raw=st.booleans(),
    pick=st.integers(0, 1 << 16),
    ahead=st.integers(0, 1 << 16),
)
def test_a_read_from_a_mark_mirrors_what_a_read_from_the_start_does(
    deltas: list[int], rejected: bool, ended: bool, max_bytes: int, raw: bool, pick: int, ahead: int
) -> None:
    events = transcript(deltas, rejected, ended)
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "control.jsonl").write_bytes(encode("control", "r", CONTROLS))
        data = encode("event", "r", events)
        Path(directory, "events.jsonl").write_bytes(data)
        points = points_of(directory, max_bytes, raw)
        assert points  # the start of the file at least
        point = points[pick % len(points)]
        assert data[: point.offset].count(b"\n") == point.seq  # just after the line of its seq
        assert decode_mark(encode_mark(point) or "") == point  # as the log keeps it
        committed = point.seq + ahead % (len(events) - point.seq + 1)  # a commit at or after the mark
        marked, whole = channel_over(directory), channel_over(directory)
        try:
            assert marked.resume(committed, start=point) is True and marked.resumed_at == point.offset
            assert whole.resume(committed) is False and whole.resumed_at == 0
            from_mark, from_start = drain(marked), drain(whole)
            assert [m["seq"] for m in from_mark] == list(range(committed + 1, len(events) + 1))
            assert mirrored(marked, from_mark) == mirrored(whole, from_start)
            if from_mark:
                assert marked.last_seq == whole.last_seq == len(events)
        finally:
            marked.close()
            whole.close()


def written_run(tmp_path: Path, events: list[tuple[str, dict[str, Any]]]) -> tuple[str, bytes]:
    Path(tmp_path, "control.jsonl").write_bytes(encode("control", "r", CONTROLS))
    data = encode("event", "r", events)
    Path(tmp_path, "events.jsonl").write_bytes(data)
    return str(tmp_path), data


def point_after(directory: str, seq: int) -> ResumePoint:
    [point] = {p for p in points_of(directory, 1, False) if p.seq == seq}  # one place, met at each poll
    return point


@pytest.mark.parametrize(
    "spoil",
    ["mid-line", "past the end", "bytes changed", "unknown control", "ahead of the commit", "no status"],
)
def test_a_mark_that_does_not_hold_up_is_ignored_and_nothing_is_lost(tmp_path: Path, spoil: str) -> None:
    events = transcript([3, 2, 4], rejected=True, ended=False)
    directory, data = written_run(tmp_path, events)
    point = point_after(directory, 8)
    committed = 8
    if spoil == "mid-line":
        point = ResumePoint(point.offset - 5, point.seq, point.tail, point.status, point.events, point.acks)
    elif spoil == "past the end":
        point = ResumePoint(len(data) + 100, point.seq, point.tail, point.status, point.events, point.acks)
    elif spoil == "bytes changed":  # the file is not the one the mark was taken of
        assert data[: point.offset].endswith(b'"delta":"b0"}\n')
        at = point.offset - 4
        Path(directory, "events.jsonl").write_bytes(data[:at] + b"9" + data[at + 1 :])
    elif spoil == "unknown control":
        point = ResumePoint(point.offset, point.seq, point.tail, point.status, point.events, ((9, "accepted", None),))
    elif spoil == "ahead of the commit":
        committed = 5
    else:
        point = ResumePoint(point.offset, point.seq, point.tail, "dreaming", point.events, point.acks)
    channel = channel_over(directory)
    try:
        assert channel.resume(committed, start=point) is False and channel.resumed_at == 0
        assert [m["seq"] for m in drain(channel)] == list(range(committed + 1, len(events) + 1))
        assert channel.status == "running" and channel.earlier_events + channel.events == len(events)
    finally:
        channel.close()


def acks_part(raw: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).rstrip(b"=").decode()


GOOD = ResumePoint(10, 2, 3, "ready", 2, ((1, "accepted", None), (2, "rejected", "no \ud800 «here»")))


@pytest.mark.parametrize(
    "mark",
    [
        "",
        "!!",
        "1.2.3.ready.4." + "A" * 5000,
        "1.2.3.ready.4.WzEsMiwzXQ",  # [1,2,3]: not a list of ranges
        "1.2.3.ready.4.%%%",
        "1.2.3.Ready.4.",
        "1.2.3.ready.4",
        "9" * 5000 + ".2.3.ready.4.",
        str(2**63) + ".2.3.ready.4.",
        "1." + str(2**53) + ".3.ready.4.",
        "1.2." + str(2**32) + ".ready.4.",
        "1.2.3.ready.-4.",
        "1.2.3.ready.4." + acks_part([[1, 2**52, "accepted"]]),  # a range too long to expand
        "1.2.3.ready.4." + acks_part([[3, 2, "accepted"]]),
        "1.2.3.ready.4." + acks_part([[0, 0, "accepted"]]),
        "1.2.3.ready.4." + acks_part([[1, 1, "fine"]]),
        "1.2.3.ready.4." + acks_part([[1, 2, "rejected", "one reason for two"]]),
        "1.2.3.ready.4." + acks_part([[1, int("9" * 1000), "accepted"]]),
        "1.2.3.ready.4." + acks_part([[True, 1, "accepted"]]),
    ],
)
def test_a_mark_that_is_not_one_is_refused_without_raising(mark: str) -> None:
    assert decode_mark(mark) is None


def test_a_mark_round_trips() -> None:
    mark = encode_mark(GOOD)
    assert mark is not None and " " not in mark and mark.isascii()
    assert decode_mark(mark) == GOOD
    assert decode_mark(encode_mark(ResumePoint(0, 0, 0, "starting", 0)) or "") == ResumePoint(0, 0, 0, "starting", 0)
    many = tuple((seq, "rejected", "why " * 20) for seq in range(1, 200))
    assert encode_mark(ResumePoint(10, 2, 3, "ready", 2, many)) is None  # too long: no mark


# -- through a hub and a state dir ----------------------------------------------------------------


def test_attach_reads_from_the_committed_offset_and_fenwire_runs_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = transcript([5, 3, 6], rejected=True, ended=False)
    data = encode("event", "r", events)
    first = data[: data.index(b'"seq":12,')]
    first = first[: first.rindex(b"\n") + 1]  # events 1..11
    rest = data[len(first) :]
    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True)  # the run's living child
    try:
        state = StateDir(tmp_path)
        try:
            name, directory = state.new_run_directory("r")
            Path(directory, "control.jsonl").write_bytes(encode("control", "r", CONTROLS))
            Path(directory, "events.jsonl").write_bytes(first)
            Path(directory, "child.log").write_bytes(b"")
            manifest = new_manifest("r", name, directory)
            manifest.pid, manifest.start, manifest.boot = sleeper.pid, process_start(sleeper.pid), boot_id()
            state.save(manifest)
        finally:
            state.close()
        hub = Hub.attach(tmp_path)  # no mark yet: read from the start
        try:
            [child] = hub.children
            assert child.channel.resumed_at == 0
            got: list[int] = []
            while len(got) < 11:
                for _child, messages in hub.poll_batches():
                    got += [m["seq"] for m in messages]
            assert hub.commit() == 1
        finally:
            hub.detach()
        [(_, kept)] = read_manifests(str(tmp_path))
        assert isinstance(kept, Manifest) and kept.committed_seq == 11 and kept.mark is not None
        with open(os.path.join(directory, "events.jsonl"), "ab") as handle:
            handle.write(rest)  # the child wrote on while no parent watched
        full = [r for r in inspect(tmp_path)]  # fenwire runs reads from the mark too
        started: list[int] = []
        real_resume = Channel.resume

        def spy(self: Channel, *args: Any, **kwargs: Any) -> bool:
            used = real_resume(self, *args, **kwargs)
            started.append(self.resumed_at)
            return used

        monkeypatch.setattr(Channel, "resume", spy)
        [report] = inspect(tmp_path)
        assert report == full[0] and started == [len(first)]
        assert (report.events, report.last_seq, report.committed_seq) == (len(events), len(events), 11)
        hub = Hub.attach(tmp_path)
        try:
            [child] = hub.children
            assert child.channel.resumed_at == len(first) and started[-1] == len(first)
            assert sorted(child.channel.unacked) == [4] and child.channel.controls[2].status == "rejected"
            got = []
            while len(got) < len(events) - 11:
                for _child, messages in hub.poll_batches():
                    got += [m["seq"] for m in messages]
            assert got == list(range(12, len(events) + 1)) and child.status == "running"
        finally:
            hub.detach()
        # the mark spoilt (the file's bytes before it changed): read from the start, nothing lost
        path = os.path.join(directory, "events.jsonl")
        whole = Path(path).read_bytes()
        assert whole[: len(first)].endswith(b'"delta":"b1"}\n')
        Path(path).write_bytes(whole[: len(first) - 4] + b'7"}\n' + whole[len(first) :])
        hub = Hub.attach(tmp_path)
        try:
            [child] = hub.children
            assert child.channel.resumed_at == 0
            got = []
            while len(got) < len(events) - 11:
                for _child, messages in hub.poll_batches():
                    got += [m["seq"] for m in messages]
            assert got == list(range(12, len(events) + 1))
        finally:
            hub.detach()
        # the event file swapped for a symlink to its own bytes, which the mark holds up against:
        # a mark is read through the channel's descriptor, never through a link, so the run is refused
        outside = tmp_path / "outside.jsonl"
        outside.write_bytes(whole)
        os.unlink(path)
        os.symlink(outside, path)
        hub = Hub.attach(tmp_path)
        try:
            assert not hub.children
            [error] = hub.attach_errors
            assert error.endswith("cannot read its files: events.jsonl is a symbolic link, not a regular file"), error
        finally:
            hub.detach()
        [report] = inspect(tmp_path)
        assert report.problem == "cannot read its files: events.jsonl is a symbolic link, not a regular file"
    finally:
        os.killpg(sleeper.pid, signal.SIGKILL)
        sleeper.wait()
