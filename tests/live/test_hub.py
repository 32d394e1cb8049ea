"""The Hub: fair draining, cheap idle children, blocking and asyncio interfaces."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import defaultdict
from typing import Any

from fenwire_fast.live.hub import Hub
from fenwire_fast.live.mock_agent import check_transcript, config_from_mapping
from live_harness import child_env

MOCK = {"steps": 2, "deltas": 20, "tools": 1}


def _event(seq: int, run: str, pad: int = 0) -> bytes:
    msg = {"v": 1, "seq": seq, "type": "assistant-text-delta", "run": run, "delta": "x" * pad}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def test_asyncio_interface_drives_many_children() -> None:
    async def main() -> dict[str, list[dict[str, Any]]]:
        got: dict[str, list[dict[str, Any]]] = defaultdict(list)
        with Hub() as hub:
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


def test_blocking_iterator_and_wait() -> None:
    with Hub() as hub:
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


def test_wait_async_and_timeout() -> None:
    with Hub() as hub:
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


def test_fair_draining_and_cheap_idle_children() -> None:
    """A chatty child gets one bounded read per tick; a quiet one is drained in the same tick."""
    with Hub() as hub:
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
        # idle children: a size check per tick, never a read
        start = time.perf_counter()
        for _ in range(1000):
            assert hub.poll() == []
        elapsed = time.perf_counter() - start
        assert all(c.channel.offset == 0 for c in idle)
        assert elapsed < 2.0, f"1000 idle ticks over 10 children took {elapsed:.2f} s"
        for c in hub.children:
            c.kill()
        hub.wait(timeout=10)
        assert all(c.status == "failed" for c in hub.children)
        dirs = [c.directory for c in hub.children]
    assert not any(os.path.exists(d) for d in dirs)  # close() removed the private directories
