"""Guards on what a child does to its files that no other test reached (found by branch coverage).

- An event file that shrinks under the parent (the child truncated it) stops the channel with
  ``event file truncated``, whichever way the channel reads: ``poll``, ``poll_raw`` or the hub's
  ``poll_hot``. Nothing written after that is delivered.
- A child that ends with events still unread is drained to the end of its file, one bounded read
  per poll as while it ran, through ``poll_raw`` as through ``poll`` (a hub's raw batches, a
  fleet's actors), and finishes only once every byte is handed over.
- A final-text file that another user owns is refused at ``open``, before any byte is read.
- Wake-ups lost to an inotify queue overflow are made up: the hub looks at every child once.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.parent.channel import Channel, decoded
from fenwire_fast.live.parent.final_text import FinalTextRead, PrivateDirectory
from fenwire_fast.live.parent.spawn import spawn
from live_harness import HANG_GUARD


def _line(seq: int, type_: str = "assistant-text-delta", **fields: Any) -> bytes:
    msg: dict[str, Any] = {"v": 1, "seq": seq, "type": type_, "run": "r", **fields}
    if type_ == "assistant-text-delta":
        msg.setdefault("delta", f"piece {seq} ")
    return json.dumps(msg).encode() + b"\n"


def _poll(channel: Channel, how: str) -> tuple[list[int] | None, list[str]]:
    """One poll ``how``; the seqs handed over (``None``: ``poll_hot`` declined) and the errors."""
    if how == "poll_hot":
        got = channel.poll_hot()
        return (None if got is None else [m["seq"] for m in got]), []
    if how == "poll_raw":
        batches, errors = channel.poll_raw()
        return [m["seq"] for b in batches for m in decoded(b)], [e.error for e in errors]
    messages, errors = channel.poll()
    return [m["seq"] for m in messages], [e.error for e in errors]


@pytest.mark.parametrize("how", ["poll", "poll_raw", "poll_hot"])
def test_a_truncated_event_file_stops_the_channel(tmp_path: Path, how: str) -> None:
    events, control = tmp_path / "events.jsonl", tmp_path / "control.jsonl"
    control.touch(mode=0o600)
    events.write_bytes(b"".join(_line(seq) for seq in range(1, 4)))  # plain lines: poll_hot takes them
    with Channel("r", str(control), str(events)) as channel:
        assert _poll(channel, how) == ([1, 2, 3], [])
        os.truncate(events, 10)  # the child truncated its file: its size is now below what was read
        seqs, errors = _poll(channel, how)
        if how == "poll_hot":  # declined: poll delivers what it saw
            assert seqs is None
            seqs, errors = _poll(channel, "poll")
        assert seqs == [] and errors == ["event file truncated"], (seqs, errors)
        assert channel.stopped and channel.error == "event file truncated"
        with open(events, "ab") as handle:  # whatever comes after is not delivered
            handle.write(b"\n" + _line(4))
        follow = "poll" if how == "poll_hot" else how
        assert _poll(channel, follow) == ([], [])
        assert not channel.pending() and channel.last_seq == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="waitid(WNOWAIT) to see the end without reaping")
@pytest.mark.parametrize("raw", [False, True], ids=["dicts", "raw"])
def test_a_child_that_ended_is_drained_to_its_end_a_bounded_read_a_poll(tmp_path: Path, raw: bool) -> None:
    """The child writes a turn's worth of events and exits mid-turn (no ``exit`` line). Nothing is
    read until its process has ended (seen without reaping it); then, with reads of 256 bytes,
    each poll hands over at most one read's lines, and the child finishes only when the poll that
    hands over the file's last line has run: everything, in order, once."""
    mock = {"steps": 3, "tools": 2, "deltas": 10, "exit_step": 2, "exit_code": 3}
    max_bytes = 256
    child = spawn("go", mock=mock, max_bytes=max_bytes, directory=str(tmp_path))
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, still a zombie: not reaped
        data = Path(child.channel.event_path).read_bytes()
        assert len(data) > 4 * max_bytes, "too little left to need more than one read"
        longest = max(len(line) + 1 for line in data.splitlines())
        raw_got = b""
        dicts: list[dict[str, Any]] = []
        polls = 0
        while not child.finished:
            polls += 1
            assert polls <= len(data), "the child never finished"
            before = child.channel.offset
            if raw:
                batches, _errors = child.poll_raw()
                raw_got += b"".join(b.lines for b in batches)
            else:
                messages, _errors = child.poll()
                dicts += messages
            assert child.channel.offset - before <= max(max_bytes, longest)  # one bounded read, not the file
        assert polls > 2  # the leftovers took several reads, not one
        if raw:
            assert raw_got == data, f"{len(raw_got)} bytes handed over, the event file has {len(data)}"
        else:
            assert dicts == [json.loads(line) for line in data.splitlines()]
        assert child.poll_raw()[0] == [] if raw else child.poll()[0] == []  # nothing more after the end
        assert child.status == "failed" and child.returncode == 3
        assert child.messages == len(data.splitlines())
    finally:
        child.cleanup()
    assert child.wait(HANG_GUARD) == "failed"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away")
def test_a_final_text_file_owned_by_another_user_is_refused_unread(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    path = d / "f.txt"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, b"the whole answer")
    os.close(fd)
    os.chown(path, 65534, -1)  # nobody's
    private = PrivateDirectory(str(d))
    try:
        read = FinalTextRead.start(private, str(path), "the whole", cap=1 << 20)
        assert read.done and read.why is not None and "is not owned by this user" in read.why, read.why
        assert path.exists()
    finally:
        private.close()


def test_wake_ups_lost_to_a_queue_overflow_are_made_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's inotify queue overflowed: the records of files that grew are lost, and only
    the overflow is reported. The hub must look at every child once, so nothing written waits for
    a wake-up that will never come. (The overflow is simulated: the records the kernel queued are
    dropped as they are read, and the read says it overflowed.)"""
    from fenwire_fast.live.parent.hub import Hub
    from fenwire_fast.live.proc.wakeups import WakeupsUnavailable

    try:
        hub = Hub(wakeups="kernel")
    except WakeupsUnavailable as exc:
        pytest.skip(f"kernel wake-ups unavailable here: {exc}")
    with hub:
        children = [hub.spawn(None, command=["sleep", "600"], run=f"o{i}") for i in range(3)]
        for _ in range(100):  # settle: every child read until nothing is left to do
            if not hub.poll() and not hub._driver.again:
                break
        wakeups = hub._driver._wakeups  # type: ignore[union-attr]
        real_read = wakeups._read_inotify
        lost: list[Any] = []

        def overflowing(grown: list[Any]) -> bool:
            real_read(lost)  # the records are read (the watches fired) but lost
            return True

        monkeypatch.setattr(wakeups, "_read_inotify", overflowing)
        for child in children:
            with open(child.event_path, "ab") as handle:
                handle.write(_line(1).replace(b'"run": "r"', f'"run": "{child.run}"'.encode()))
        got: dict[str, list[int]] = {c.run: [] for c in children}
        for child, event in hub.poll():  # one round, no wait
            got[child.run].append(event["seq"])
        assert sorted(c.run for c in lost) == sorted(got), "the simulated overflow lost no record"
        assert got == {c.run: [1] for c in children}, got
        assert hub.wakeups == "kernel"
