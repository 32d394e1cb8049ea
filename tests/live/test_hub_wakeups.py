"""The hub woken by the kernel: idle children cost nothing, pidfds and timers wake it, asyncio
waits without spinning, batches, the polling fallback, and room for a thousand children.

Every test waits on conditions (the hub's own blocking waits, with generous guards), never on
sleeps: a write is seen by the kernel before ``write`` returns, so the next round finds it.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
from collections import defaultdict
from typing import Any

import pytest
from fenwire_fast.live.parent import hub_children as hub_module
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild
from fenwire_fast.live.proc import limits
from fenwire_fast.live.proc.wakeups import ENV, WakeupsUnavailable, choose, kernel_unavailable

pytestmark = pytest.mark.skipif(kernel_unavailable() is not None, reason=f"no kernel wake-ups: {kernel_unavailable()}")

SLEEPER = ["sleep", "600"]
# a child that says ready, then waits for ever (it never reads its controls)
READY_THEN_WAIT = [
    "sh",
    "-c",
    'printf \'{"v":1,"seq":1,"type":"ready","run":"%s"}\\n\' "$FEN_WIRE_RUN_ID" >> "$FEN_WIRE_EVENT_PATH"; exec sleep 600',
]


def _line(seq: int, run: str, type_: str = "assistant-text-delta", **payload: Any) -> bytes:
    if type_ == "assistant-text-delta":
        payload.setdefault("delta", "x")
    msg = {"v": 1, "seq": seq, "type": type_, "run": run, **payload}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def _append(child: LiveChild, data: bytes) -> None:
    with open(child.event_path, "ab") as f:
        f.write(data)


def _spy_on_reads(monkeypatch: pytest.MonkeyPatch, children: list[LiveChild], reads: list[str]) -> None:
    """Record the path of every read of the children's event files (all go through ``os.pread``)."""
    by_fd = {c.channel._tailer.cursor.fd: c.event_path for c in children}
    real_pread = os.pread

    def pread(fd: int, count: int, offset: int) -> bytes:
        if fd in by_fd:
            reads.append(by_fd[fd])
        return real_pread(fd, count, offset)

    monkeypatch.setattr(os, "pread", pread)


def _kernel_hub() -> Hub:
    hub = Hub(wakeups="kernel")
    assert hub.wakeups == "kernel"
    return hub


def _settle(hub: Hub) -> None:
    """Rounds until nothing is left to do (the first round after spawning looks at every child; a
    child whose read comes back empty is read once more before its watch is re-armed)."""
    for _ in range(100):
        if not hub.poll() and not hub._driver.again:
            return
    raise AssertionError("the hub never settled")


def test_an_idle_child_is_never_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    """No read, no size check, no waitpid for a child whose file did not grow."""
    with _kernel_hub() as hub:
        children = [hub.spawn(None, command=SLEEPER, run=f"c{i}") for i in range(16)]
        _settle(hub)
        reads: list[str] = []
        stats: list[int] = []
        waits: list[int] = []
        fds = {c.channel._tailer.cursor.fd for c in children}
        real_fstat, real_waitpid = os.fstat, os.waitpid
        _spy_on_reads(monkeypatch, children, reads)
        monkeypatch.setattr(os, "fstat", lambda fd: (stats.append(fd) if fd in fds else None) or real_fstat(fd))
        monkeypatch.setattr(os, "waitpid", lambda pid, opt: waits.append(pid) or real_waitpid(pid, opt))
        for _ in range(1000):
            assert hub.poll() == []
        assert (reads, stats, waits) == ([], [], [])
        _append(children[5], _line(1, "c5") + _line(2, "c5"))
        assert [(c.run, e["seq"]) for c, e in hub.poll()] == [("c5", 1), ("c5", 2)]
        assert reads == [children[5].event_path]  # the one child that wrote, read once
        assert waits == []  # its process was not asked about: no pidfd fired
        monkeypatch.undo()


def test_a_pidfd_wakes_the_hub_when_a_silent_child_dies() -> None:
    """A child killed without a word: only its pidfd can tell, and the sleeping hub wakes for it."""
    with _kernel_hub() as hub:
        quiet = hub.spawn(None, command=SLEEPER, run="quiet")
        doomed = hub.spawn(None, command=SLEEPER, run="doomed")
        _settle(hub)
        os.kill(doomed.pid, 9)
        hub.sleep(60)  # returns at the death (the guard is 60 s)
        assert hub.poll() == []
        assert doomed.finished and doomed.status == "failed"
        assert "killed by signal 9" in (doomed.error or "")
        assert not quiet.finished


def test_the_exit_line_and_the_death_are_delivered() -> None:
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=READY_THEN_WAIT, run="r", grace=0.1)
        events = []
        for c, event in hub:
            events.append(event["type"])
            if event["type"] == "ready":
                _append(c, _line(2, "r", "exit", status="done"))
        assert events == ["ready", "exit"]
        assert child.status == "done"  # the kill backstop ended the sleeping process after the grace


def _count_rounds(hub: Hub) -> list[int]:
    """Count the hub's rounds from now on: ``[n]``, updated in place."""
    rounds = [0]
    real = hub._round

    def counted(raw: bool) -> Any:
        rounds[0] += 1
        return real(raw)

    hub._round = counted  # type: ignore[method-assign]
    return rounds


def test_timers_fire_on_time_with_nothing_written() -> None:
    """Deadline, then SIGTERM after the grace: woken by timers, in a handful of rounds, not ticks."""
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="late", timeout=0.2, grace=0.1)
        rounds = _count_rounds(hub)
        assert hub.wait(timeout=30) == {"late": "timed-out"}
        assert child.killed
        assert rounds[0] <= 12, rounds  # a polling hub would have made hundreds


def test_batches_hand_over_one_list_per_read() -> None:
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="b")
        _settle(hub)
        _append(child, b"".join(_line(i, "b") for i in range(1, 101)))
        batches = hub.poll_batches()
        assert len(batches) == 1 and batches[0][0] is child
        assert [m["seq"] for m in batches[0][1]] == list(range(1, 101))


def test_the_status_is_the_status_after_the_whole_read() -> None:
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="s")
        _settle(hub)
        _append(child, _line(1, "s", "ready") + _line(2, "s") + _line(3, "s", "exit", status="done"))
        seen = [(e["type"], c.status) for c, e in hub.poll()]
        assert seen == [("ready", "done"), ("assistant-text-delta", "done"), ("exit", "done")]


def test_foreign_lines_and_rejections_in_a_batch_are_still_handled() -> None:
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="f")
        _settle(hub)
        _append(child, _line(1, "f") + _line(2, "other") + b"not json\n" + _line(3, "f"))
        assert [e["seq"] for _, e in hub.poll()] == [1, 3]
        assert child.channel.error == "event for foreign run other"
        assert [e.error for e in child.channel.errors][0] == "event for foreign run other"
        assert len(child.channel.errors) == 2 and child.cancel_sent


def _scenario(wakeups: str) -> tuple[dict[str, list[tuple[int, str]]], dict[str, str], list[int]]:
    """Three children with lines before and after adoption, then death; what the hub hands over."""
    got: dict[str, list[tuple[int, str]]] = defaultdict(list)
    sizes: list[int] = []
    with Hub(wakeups=wakeups) as hub:
        assert hub.wakeups == wakeups
        kids = [hub.spawn(None, command=SLEEPER, run=f"k{i}", max_bytes=300) for i in range(3)]
        for i, kid in enumerate(kids):
            _append(kid, b"".join(_line(s, kid.run) for s in range(1, 6 + i)))
        for kid, batch in hub.poll_batches():
            sizes.append(len(batch))
            got[kid.run].extend((m["seq"], m["type"]) for m in batch)
        for kid in kids:
            _append(kid, _line(10, kid.run, "exit", status="done"))
            kid.kill()
        for kid, event in hub:
            got[kid.run].append((event["seq"], event["type"]))
        return dict(got), {c.run: c.status for c in hub.children}, sizes


def test_the_polling_fallback_hands_over_the_same() -> None:
    kernel = _scenario("kernel")
    poll = _scenario("poll")
    assert kernel == poll
    assert kernel[1] == {"k0": "done", "k1": "done", "k2": "done"}
    assert kernel[0]["k2"] == [*((s, "assistant-text-delta") for s in range(1, 8)), (10, "exit")]


def test_choosing_the_wakeups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "poll")
    assert choose() == ("poll", f"polling was asked for ({ENV}=poll)")
    with Hub() as hub:
        assert hub.wakeups == "poll"
    with Hub(wakeups="kernel") as hub:
        assert hub.wakeups == "kernel"  # the argument wins over the environment
    monkeypatch.delenv(ENV)
    assert choose() == ("kernel", "")
    with pytest.raises(ValueError, match="wakeups must be"):
        Hub(wakeups="sometimes")
    monkeypatch.setattr(hub_module, "unwatchable", lambda path: f"{path} is on a nfs file system")
    with Hub() as hub:
        child = hub.spawn(None, command=SLEEPER)
        assert hub.wakeups == "poll" and "nfs" in hub.wakeups_reason
        child.kill()
        assert hub.wait(timeout=30) == {"child-1": "failed"}
    with Hub(wakeups="kernel") as hub, pytest.raises(WakeupsUnavailable):
        hub.spawn(None, command=SLEEPER)


def test_the_asyncio_hub_lets_other_tasks_run_and_never_spins() -> None:
    """While the hub waits, a second task runs 2,000 times; the hub makes a handful of rounds."""

    async def main() -> tuple[list[str], int]:
        async with Hub(wakeups="kernel") as hub:
            child = hub.spawn(None, command=SLEEPER, run="a")
            rounds = _count_rounds(hub)

            async def other() -> None:
                for _ in range(2000):
                    await asyncio.sleep(0)
                _append(child, _line(1, "a", "exit", status="done"))
                child.kill()

            task = asyncio.create_task(other())
            seen = [event["type"] async for _child, event in hub]
            await task
            assert await hub.wait_async(timeout=5) == {"a": "done"}
        return seen, rounds[0]

    seen, rounds = asyncio.run(asyncio.wait_for(main(), 60))
    assert seen == ["exit"]
    assert rounds <= 8, rounds


def test_async_wait_times_out() -> None:
    async def main() -> None:
        async with Hub(wakeups="kernel") as hub:
            hub.spawn(None, command=SLEEPER)
            with pytest.raises(TimeoutError, match="1 children still running"):
                await hub.wait_async(timeout=0.05)

    asyncio.run(main())


def test_the_open_file_limit_is_raised_or_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1024, 8192))
    monkeypatch.setattr(resource, "setrlimit", lambda which, value: calls.append(value))
    assert limits.ensure_open_files(100) == 1024 and calls == []
    assert limits.ensure_open_files(1024) == 8192 and calls == [(8192, 8192)]
    with pytest.raises(limits.OpenFileLimit, match=r"5000 children need about 20064 open files.*ulimit"):
        limits.ensure_open_files(5000)


def test_a_thousand_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,024 children say ready and never answer a control: each is cancelled, and the kill
    backstop ends them all, woken by its timers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < limits.FILES_PER_CHILD * 1024 + limits.SPARE_FILES:
        pytest.skip(f"the hard open-file limit ({hard}) is too low for 1,024 children")
    with _kernel_hub() as hub:
        for i in range(1024):
            hub.spawn(None, command=READY_THEN_WAIT, run=f"t{i}", grace=0.2)
        ready = 0
        for child, event in hub:
            if event["type"] == "ready":
                ready += 1
                child.cancel()
        assert ready == 1024
        statuses = {c.status for c in hub.children}
        assert statuses == {"cancelled"}
        assert all(c.killed for c in hub.children)


def test_a_removed_event_file_still_wakes_the_hub() -> None:
    """The watch is on the file the channel reads (its descriptor), not on its name."""
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="gone")
        _settle(hub)
        fd = os.open(child.event_path, os.O_WRONLY | os.O_APPEND)
        try:
            os.unlink(child.event_path)
            os.write(fd, _line(1, "gone"))
            assert [e["seq"] for _, e in hub.poll()] == [1]
            assert hub.poll() == [] and hub.poll() == []  # two empty reads in a row re-arm its watch
            os.write(fd, _line(2, "gone"))  # the one-shot watch was re-armed on the same file
            assert [e["seq"] for _, e in hub.poll()] == [2]
        finally:
            os.close(fd)
        assert hub.wakeups == "kernel"


def test_a_watch_that_cannot_be_re_armed_falls_back_to_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="p")
        _settle(hub)
        wakeups = hub._driver._wakeups  # type: ignore[union-attr]

        def refuse(key: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(wakeups, "_arm", refuse)
        _append(child, _line(1, "p"))
        assert [e["seq"] for _, e in hub.poll()] == [1]
        assert hub.poll() == [] and hub.poll() == []  # the second empty read: the re-arm is refused
        _append(child, _line(2, "p"))  # no watch any more: the next round polls every child
        assert [e["seq"] for _, e in hub.poll()] == [2]
        assert hub.wakeups == "poll" and "No space left on device" in hub.wakeups_reason


def test_a_hot_child_is_read_without_a_watch_until_two_reads_come_back_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child whose read brought bytes is read again next round with no watch, and once more after
    a first empty read; two empty reads in a row re-arm the watch, and from then on the child is
    not touched until it writes."""
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="h")
        _settle(hub)
        wakeups = hub._driver._wakeups  # type: ignore[union-attr]
        reads: list[str] = []
        arms: list[LiveChild] = []
        real_arm = wakeups._arm
        _spy_on_reads(monkeypatch, [child], reads)
        monkeypatch.setattr(wakeups, "_arm", lambda key: arms.append(key) or real_arm(key))
        for seq in (1, 2, 3):
            _append(child, _line(seq, "h"))
            assert [e["seq"] for _, e in hub.poll()] == [seq]
        assert len(reads) == 3 and arms == []  # one watch fired; the next two reads needed none
        assert not wakeups.armed(child)
        assert hub.poll() == []  # the first empty read: read once more next round, still no watch
        assert len(reads) == 4 and arms == [] and not wakeups.armed(child)
        _append(child, _line(4, "h"))  # written again by then: read without any watch
        assert [e["seq"] for _, e in hub.poll()] == [4]
        assert len(reads) == 5 and arms == []
        assert hub.poll() == [] and hub.poll() == []  # two empty reads in a row: the watch is re-armed
        assert len(reads) == 7 and arms == [child] and wakeups.armed(child)
        for _ in range(100):
            assert hub.poll() == []
        assert len(reads) == 7  # cold: not read again until it writes
        _append(child, _line(5, "h"))
        assert [e["seq"] for _, e in hub.poll()] == [5]


def test_a_write_between_the_empty_read_and_the_re_arm_is_delivered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the hot scheme must close: the hot child's read comes back empty, the child writes,
    then the watch is re-armed (so that write fires nothing). The line still comes out, with no
    further write, and the hub does not go to sleep on it."""
    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="r")
        _settle(hub)
        _append(child, _line(1, "r"))
        assert [e["seq"] for _, e in hub.poll()] == [1]  # the child is hot now
        wakeups = hub._driver._wakeups  # type: ignore[union-attr]
        real_arm = wakeups._arm
        landed: list[int] = []

        def write_then_arm(key: Any) -> None:
            if not landed:
                landed.append(2)
                _append(child, _line(2, "r"))  # after the empty read, before the watch exists
            real_arm(key)

        monkeypatch.setattr(wakeups, "_arm", write_then_arm)
        assert hub.poll() == [] and landed == []  # the first empty read: no re-arm yet
        assert hub.poll() == []  # the second empty read; the write lands inside the re-arm
        assert landed == [2]
        hub.sleep(60)  # returns at once: the hub knows there is more (the guard is 60 s)
        assert [e["seq"] for _, e in hub.poll()] == [2]


def test_a_plain_batch_is_not_walked_and_any_other_is_mirrored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hot child's read of only its own messages of no mirrored type (``Receiver.plain``) is
    handed over as it is, with no Python per event; a read with a mirrored type, another run's
    line or a rejection is walked event by event as before, with nothing lost or read twice."""
    from fenwire_fast.live.parent.channel import Channel

    with _kernel_hub() as hub:
        child = hub.spawn(None, command=SLEEPER, run="m")
        _settle(hub)
        walked: list[int] = []
        real_take = Channel._take

        def take(channel: Channel, items: list[Any], messages: list[Any], errors: list[Any]) -> None:
            walked.append(len(items))
            real_take(channel, items, messages, errors)

        monkeypatch.setattr(Channel, "_take", take)
        _append(child, _line(1, "m"))
        assert [e["seq"] for _, e in hub.poll()] == [1]  # woken by the kernel
        _append(child, _line(2, "m") + _line(3, "m"))
        assert [e["seq"] for _, e in hub.poll()] == [2, 3]  # hot: read again without a watch
        assert walked == [] and child.channel.status == "starting"
        _append(child, _line(4, "m", "ready") + _line(5, "other") + b"junk\n" + _line(6, "m"))
        assert [e["seq"] for _, e in hub.poll()] == [4, 6]
        assert walked == [4]
        channel = child.channel
        assert channel.status == "ready" and channel.error == "event for foreign run other"
        assert len(channel.errors) == 2 and channel.events == 5 and channel.last_seq == 6 and child.messages == 5
        assert child.cancel_sent  # the foreign line is an error: the child is cancelled
        _append(child, _line(7, "m"))
        assert [e["seq"] for _, e in hub.poll()] == [7]  # after an error: the general poll
        assert walked == [4] and channel.events == 6  # whose plain batch is not walked either
