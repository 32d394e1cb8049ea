"""A consumer that stops iterating a hub in the middle of a round loses nothing.

``break`` out of ``for child, event in hub`` (or its asyncio twin, or ``raw_batches``) and start
again: the rest of the read that was being handed over comes first, and the children the round had
not polled yet are polled next round with what they were due for. Before, the rest of the read was
dropped, and a child whose process end was due in that round was never looked at again: the hub
slept forever in ``epoll_wait``. Each test here stops after every single item, under a guard that
turns a hang into a failure.
"""

from __future__ import annotations

import asyncio
import signal
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child.mock_agent import config_from_mapping
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.testing import check_transcript
from live_harness import child_env

MOCK = {"steps": 2, "deltas": 30, "tools": 1}
CHILDREN = 6


@contextmanager
def _hang_guard(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` in the test (waking any ``epoll_wait``) after ``seconds``."""

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the hub still waited after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _spawn(hub: Hub) -> None:
    for i in range(CHILDREN):
        hub.spawn(f"task {i}", mock=MOCK, env=child_env()).close()  # closed once its turn ends


def _check(hub: Hub, got: dict[str, list[dict[str, Any]]]) -> None:
    assert {c.run: c.status for c in hub.children} == {c.run: "done" for c in hub.children}
    assert sorted(got) == sorted(c.run for c in hub.children)
    for run, events in got.items():
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), run
        assert check_transcript(config_from_mapping(MOCK), events) == [], run


@pytest.mark.parametrize("wakeups", ["kernel", "poll"])
def test_stopping_after_every_event_loses_nothing(wakeups: str) -> None:
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    stops = 0
    with _hang_guard(60), Hub(wakeups=wakeups) as hub:
        _spawn(hub)
        while not hub.finished:
            for child, event in hub:
                got[child.run].append(event)
                stops += 1
                break
        _check(hub, got)
    assert stops == sum(map(len, got.values()))


@pytest.mark.parametrize("wakeups", ["kernel", "poll"])
def test_stopping_an_async_iteration_after_every_event_loses_nothing(wakeups: str) -> None:
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)

    async def main(hub: Hub) -> None:
        while not hub.finished:
            stream = hub.stream()
            async for child, event in stream:
                got[child.run].append(event)
                break
            await stream.aclose()  # what ``async for`` leaves to the caller

    with _hang_guard(60), Hub(wakeups=wakeups) as hub:
        _spawn(hub)
        asyncio.run(main(hub))
        _check(hub, got)


@pytest.mark.parametrize("wakeups", ["kernel", "poll"])
def test_stopping_raw_batches_after_every_batch_loses_no_line(wakeups: str) -> None:
    lines: dict[str, bytes] = defaultdict(bytes)
    with _hang_guard(60), Hub(wakeups=wakeups) as hub:
        _spawn(hub)
        while not hub.finished:
            for child, batch in hub.raw_batches():
                lines[child.run] += batch.lines
                break
        for child in hub.children:
            assert child.status == "done", (child.run, child.error)
            assert lines[child.run] == Path(child.event_path).read_bytes(), child.run


def test_a_durable_hub_stopped_and_committed_after_every_event(tmp_path: Path) -> None:
    """Stop, commit, and now and then detach and attach again: every event comes once, in order
    (a commit after each event leaves nothing to hand over twice)."""
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    state = tmp_path / "state"
    hub = Hub(state_dir=state)
    try:
        with _hang_guard(90):
            _spawn(hub)
            while not hub.finished:
                for child, event in hub:
                    got[child.run].append(event)
                    break
                hub.commit()
                if sum(map(len, got.values())) % 25 == 0:
                    hub.detach()
                    hub = Hub.attach(state)
            hub.commit()
            assert all(c.status == "done" for c in hub.children)
    finally:
        hub.close()
    assert len(got) == CHILDREN
    for run, events in got.items():
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), run
        assert check_transcript(config_from_mapping(MOCK), events) == [], run
