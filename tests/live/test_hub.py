"""The Hub: fair draining, cheap idle children, blocking and asyncio interfaces.

Every test runs over both drivers: woken by the kernel and polling. A driver that drains unfairly,
rereads idle children or never rotates its first child fails here whichever it is.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import defaultdict
from typing import Any

import pytest
from fenwire_fast.live.child.mock_agent import config_from_mapping
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild
from fenwire_fast.live.proc.wakeups import WakeupsUnavailable
from fenwire_fast.testing import check_transcript
from live_harness import child_env

MOCK = {"steps": 2, "deltas": 20, "tools": 1}


@pytest.fixture(params=["kernel", "poll"])
def wakeups(request: pytest.FixtureRequest) -> str:
    """The hub's driver under test; the kernel one is skipped only where the kernel refuses it."""
    try:
        Hub(wakeups=request.param).close()
    except WakeupsUnavailable as exc:
        pytest.skip(f"kernel wake-ups unavailable here: {exc}")
    return str(request.param)


def _event(seq: int, run: str, pad: int = 0) -> bytes:
    msg = {"v": 1, "seq": seq, "type": "assistant-text-delta", "run": run, "delta": "x" * pad}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def _spy_on_files(monkeypatch: pytest.MonkeyPatch, hub: Hub) -> tuple[list[str], list[str], list[int]]:
    """Record every read of an event file, every open of one and every size check (``fstat``) of one."""
    paths = {c.event_path for c in hub.children}
    by_fd = {c.channel._tailer.cursor.fd: c.event_path for c in hub.children}
    fds = set(by_fd)
    reads: list[str] = []
    opens: list[str] = []
    sizes: list[int] = []
    real_pread, real_open, real_fstat = os.pread, os.open, os.fstat

    def pread(fd: int, count: int, offset: int) -> bytes:  # every read of a file goes through it
        if fd in by_fd:
            reads.append(by_fd[fd])
        return real_pread(fd, count, offset)

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) in paths:
            opens.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    def fstat(fd: int) -> os.stat_result:
        if fd in fds:
            sizes.append(fd)
        return real_fstat(fd)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "fstat", fstat)
    return reads, opens, sizes


def test_asyncio_interface_drives_many_children(wakeups: str) -> None:
    async def main() -> dict[str, list[dict[str, Any]]]:
        got: dict[str, list[dict[str, Any]]] = defaultdict(list)
        with Hub(wakeups=wakeups) as hub:
            for i in range(4):
                hub.spawn(f"task {i}", mock=MOCK, env=child_env())
            async for child, event in hub:
                got[child.run].append(event)
                if event["type"] == "turn-complete" and child.channel.idle:
                    child.close()
            assert hub.finished
            assert {c.run: c.status for c in hub.children} == {f"child-{i}": "done" for i in range(1, 5)}
            assert all(c.returncode == 0 for c in hub.children)
        return got

    got = asyncio.run(asyncio.wait_for(main(), 60))
    assert len(got) == 4
    for run, events in got.items():
        assert check_transcript(config_from_mapping(MOCK), events) == [], run


def test_blocking_iterator_and_wait(wakeups: str) -> None:
    with Hub(wakeups=wakeups) as hub:
        a = hub.spawn("a", mock=MOCK, env=child_env())
        b = hub.spawn(None, mock=MOCK, env=child_env())
        b.close()  # close while ready
        seen: dict[str, int] = defaultdict(int)
        for child, event in hub:
            seen[child.run] += 1
            if child is a and event["type"] == "turn-complete":
                a.finalize()
        assert a.status == "done" and b.status == "done"
        assert seen["child-2"] == 4  # ready, ack, result, exit
        assert hub.wait(timeout=1) == {"child-1": "done", "child-2": "done"}


def test_wait_async_and_timeout(wakeups: str) -> None:
    with Hub(wakeups=wakeups) as hub:
        c = hub.spawn(None, env=child_env())
        try:
            hub.wait(timeout=0.2)
        except TimeoutError as exc:
            assert "1 children still running" in str(exc)
        else:
            raise AssertionError("no timeout")
        c.cancel()
        statuses = asyncio.run(hub.wait_async(timeout=30))
        assert statuses == {"child-1": "cancelled"}


def test_fair_draining_and_cheap_idle_children(monkeypatch: pytest.MonkeyPatch, wakeups: str) -> None:
    """A chatty child gets one bounded read per tick; a quiet one is drained in the same tick."""
    with Hub(wakeups=wakeups) as hub:
        chatty = hub.spawn(None, command=["sleep", "60"], run="chatty")
        quiet = hub.spawn(None, command=["sleep", "60"], run="quiet")
        idle = [hub.spawn(None, command=["sleep", "60"], run=f"idle-{i}") for i in range(8)]
        big = b"".join(_event(i, "chatty", 900) for i in range(1, 2001))  # ~1.9 MB
        with open(chatty.event_path, "ab") as f:
            f.write(big)
        with open(quiet.event_path, "ab") as f:
            f.write(b"".join(_event(i, "quiet") for i in range(1, 4)))
        batch = hub.poll()
        per: dict[str, list[int]] = defaultdict(list)
        for child, event in batch:
            per[child.run].append(event["seq"])
        assert per["quiet"] == [1, 2, 3]
        assert 0 < len(per["chatty"]) <= 65536 // 900 + 1
        assert chatty.channel.offset <= 65536
        # the rest drains in order, exactly once
        ticks = 1
        while len(per["chatty"]) < 2000:
            for child, event in hub.poll():
                per[child.run].append(event["seq"])
            ticks += 1
            assert ticks < 100
        assert per["chatty"] == list(range(1, 2001))
        assert ticks >= len(big) // 65536
        # idle children: a size check per tick, never a read (counted, not timed)
        # two empty rounds: a child whose read comes back empty is read once more before its
        # watch is re-armed
        assert hub.poll() == [] and hub.poll() == [] and all(not c.channel.pending() for c in hub.children)
        reads, opens, sizes = _spy_on_files(monkeypatch, hub)
        for _ in range(1000):
            assert hub.poll() == []
        assert reads == [], f"idle children were read: {reads[:5]}"
        assert opens == [], f"event files were reopened: {opens[:5]}"
        assert len(sizes) <= 1000 * len(hub.children)
        assert all(c.channel.offset == 0 for c in idle)
        # the spy sees a read when there is something to read: one child, once, in the next tick
        with open(idle[3].event_path, "ab") as f:
            f.write(_event(1, "idle-3"))
        assert [(c.run, e["seq"]) for c, e in hub.poll()] == [("idle-3", 1)]
        assert reads == [idle[3].event_path]
        for c in hub.children:
            c.kill()
        hub.wait(timeout=10)
        assert all(c.status == "failed" for c in hub.children)
        dirs = [c.directory for c in hub.children]
    assert not any(os.path.exists(d) for d in dirs)  # close() removed the private directories


def test_the_starting_child_rotates_from_tick_to_tick(wakeups: str) -> None:
    """Three children with more to read than one tick drains: each tick starts one child further."""
    with Hub(wakeups=wakeups) as hub:
        size = len(_event(1, "a", 40))  # every line below is this long: one line per read
        children = [hub.spawn(None, command=["sleep", "60"], run=name, max_bytes=size) for name in "abc"]
        for child in children:
            with open(child.event_path, "ab") as f:
                f.write(b"".join(_event(i, child.run, 40) for i in range(1, 7)))
        orders = []
        for _ in range(6):
            orders.append("".join(c.run for c, _event in hub.poll()))
        assert orders == ["abc", "bca", "cab", "abc", "bca", "cab"]
        for child in children:
            child.kill()
        hub.wait(timeout=30)


def test_idle_children_with_history_are_not_read_again(monkeypatch: pytest.MonkeyPatch, wakeups: str) -> None:
    """Children that spoke once and went quiet: their files have bytes, none of them read again."""
    with Hub(wakeups=wakeups) as hub:
        children = [hub.spawn(None, command=["sleep", "60"], run=f"c{i}") for i in range(6)]
        for child in children:
            with open(child.event_path, "ab") as f:
                f.write(_event(1, child.run, 100))
        assert sorted(c.run for c, _ in hub.poll()) == [c.run for c in children]
        offsets = [c.channel.offset for c in children]
        assert all(o > 100 for o in offsets)
        # woken by the kernel, each child that spoke is read twice more, empty (the second re-arms)
        assert hub.poll() == [] and hub.poll() == []
        reads, opens, _sizes = _spy_on_files(monkeypatch, hub)
        for _ in range(500):
            assert hub.poll() == []
        assert (reads, opens) == ([], [])
        assert [c.channel.offset for c in children] == offsets
        for child in children:
            child.kill()
        hub.wait(timeout=30)


async def _tick_until(hub: Hub, child: LiveChild, ticks: int, counter: list[int]) -> None:
    """A second task: counts every few ms; after ``ticks`` counts, closes the idle child."""
    closed = False
    while not hub.finished:
        counter[0] += 1
        if counter[0] >= ticks and not closed and child.channel.idle:
            child.close()
            closed = True
        await asyncio.sleep(0.002)


@pytest.mark.parametrize("how", ["wait_async", "async-for"])
def test_the_hub_leaves_the_event_loop_free(how: str, wakeups: str) -> None:
    """Only a second task that keeps running while the hub waits can end the run (it closes the
    child after 50 counts); a hub that blocked the loop would wait for the child's deadline (the
    guard) and see it time out."""

    async def main() -> tuple[dict[str, str], int, int]:
        counter = [0]
        events = 0
        with Hub(wakeups=wakeups) as hub:
            child = hub.spawn(None, env=child_env(), timeout=30)
            ticker = asyncio.create_task(_tick_until(hub, child, 50, counter))
            if how == "wait_async":
                statuses = await hub.wait_async(timeout=60)
            else:
                async for _child, _event in hub:
                    events += 1
                statuses = {c.run: c.status for c in hub.children}
            await ticker
        return statuses, counter[0], events

    statuses, count, events = asyncio.run(main())
    assert statuses == {"child-1": "done"}
    assert count >= 50
    if how == "async-for":
        assert events == 4  # ready, the close's ack, result, exit
