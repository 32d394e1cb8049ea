"""``Channel.resume``: a read that spans the committed position hands over only what follows it.

``resume(committed)`` mirrors the committed events without handing them over. Usually the read
that reaches the commit is made inside ``resume`` itself, but a read there that brings nothing to
hand over except a rejected line (a line among the committed ones that the child got wrong) ends
that loop: the next poll then reads on from inside the committed events, and its read spans the
commit. Every read size is tried, so some read starts at each line before the commit and ends at
each line after it, whatever the read sizes of the channel are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.parent.channel import Channel, decoded

COMMITTED = 3
LAST = 9


def _events(with_rejection: bool) -> bytes:
    """``ready``, then (with ``with_rejection``) a line of an unknown type that is rejected, then
    text deltas up to ``LAST``; every line of the run ``r``."""
    out = [json.dumps({"v": 1, "seq": 1, "type": "ready", "run": "r"}).encode()]
    if with_rejection:  # it takes seq 2: the next line is 3
        out.append(b'{"v":1,"seq":2,"type":"nope","run":"r"}')
    for seq in range(3 if with_rejection else 2, LAST + 1):
        msg = {"v": 1, "seq": seq, "type": "assistant-text-delta", "run": "r", "delta": f"piece {seq} "}
        out.append(json.dumps(msg).encode())
    return b"".join(line + b"\n" for line in out)


def _drain(channel: Channel, raw: bool) -> tuple[list[int], list[str]]:
    """Poll ``channel`` (dicts or raw batches) until nothing is left; the seqs handed over and the
    errors' words."""
    seqs: list[int] = []
    errors: list[str] = []
    for _ in range(10_000):  # bounded: every poll moves at least one line, or the file is read
        if raw:
            batches, errs = channel.poll_raw()
            got: list[dict[str, Any]] = [m for b in batches for m in decoded(b)]
        else:
            got, errs = channel.poll()
        seqs += [m["seq"] for m in got]
        errors += [e.error for e in errs]
        if not got and not errs and not channel.pending():
            return seqs, errors
    raise AssertionError(f"the channel never ran dry: {seqs}")


@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "raw"])
@pytest.mark.parametrize("with_rejection", [True, False], ids=["rejected-line", "clean"])
def test_every_read_size_hands_over_exactly_the_events_after_the_commit(
    tmp_path: Path, raw: bool, with_rejection: bool
) -> None:
    data = _events(with_rejection)
    events, control = tmp_path / "events.jsonl", tmp_path / "control.jsonl"
    events.write_bytes(data)
    control.write_bytes(b"")
    sizes = [len(line) for line in data.splitlines(keepends=True)]
    # every read that takes whole lines from one line to another, and one byte more
    spans = {
        sum(sizes[i:j]) + extra for i in range(len(sizes)) for j in range(i + 1, len(sizes) + 1) for extra in (0, 1)
    }
    for max_bytes in sorted(spans):
        channel = Channel("r", str(control), str(events), max_bytes=max_bytes)
        try:
            channel.resume(COMMITTED)
            seqs, errors = _drain(channel, raw)
        finally:
            channel.close()
        assert seqs == list(range(COMMITTED + 1, LAST + 1)), f"max_bytes={max_bytes}: {seqs}"
        assert channel.status == "ready" and channel.last_seq == LAST
        if with_rejection:  # a rejected line is reported even among the committed events, once
            assert len(errors) == 1 and "nope" in errors[0], errors
        else:
            assert errors == []


@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "raw"])
def test_a_read_from_inside_the_commit_after_a_rejection(tmp_path: Path, raw: bool) -> None:
    """The case spelled out: reads of two lines, so ``resume`` reads ``ready`` and the rejected
    line, stops there (an error to report), and the first poll's read goes from inside the
    committed events (seq 3) to past the commit."""
    data = _events(True)
    events, control = tmp_path / "events.jsonl", tmp_path / "control.jsonl"
    events.write_bytes(data)
    control.write_bytes(b"")
    lines = data.splitlines(keepends=True)
    channel = Channel("r", str(control), str(events), max_bytes=len(lines[0]) + len(lines[1]))
    try:
        channel.resume(COMMITTED)
        seqs, _errors = _drain(channel, raw)
    finally:
        channel.close()
    assert seqs == list(range(COMMITTED + 1, LAST + 1)), seqs
