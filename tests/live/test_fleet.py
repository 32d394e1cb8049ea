"""fenwire_fast.live.fleet on a real Ray cluster (a head and two nodes on this machine).

Skipped when Ray is not installed. Nothing waits for time to pass: a run is held mid-turn with the
mock's gate, and the tests move on when its announcement (an ``info`` event) comes through the fleet.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fenwire_fast
import pytest

ray = pytest.importorskip("ray")

from fenwire_fast.live.child.mock_agent import config_from_mapping, gate_label  # noqa: E402
from fenwire_fast.live.fleet import ROOT_PREFIX, ChildLost, Fleet, FleetChild  # noqa: E402
from fenwire_fast.testing import check_transcript  # noqa: E402
from live_harness import drain_fleet as drain  # noqa: E402
from live_harness import ray_cluster, release_gate, wait_gone  # noqa: E402

Events = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    roots_before = set(Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*"))
    with ray_cluster() as c:
        c.node_a, c.node_b = c.fenwire_nodes
        yield c
    # every actor's root is gone: removed on close, or swept by the fleet that lost its actor
    left = set(Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*")) - roots_before
    assert not left, f"fleet directories left behind: {sorted(left)}"


def seen(events: Events, child: FleetChild, type_: str, **fields: Any) -> Callable[[], bool]:
    return lambda: any(
        e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()) for e in events.get(child.run, [])
    )


def gated(tmp_path: Path, name: str, **mock: Any) -> dict[str, Any]:
    return {"steps": 2, "gate_path": str(tmp_path / f"gate-{name}"), "gate_steps": [1], **mock}


def test_placement_controls_and_order(cluster: Any, tmp_path: Path) -> None:
    node_a, node_b = cluster.node_a.node_id, cluster.node_b.node_id
    with Fleet(address=cluster.address) as fleet:
        mock = gated(tmp_path, "a")
        a = fleet.spawn("Do the task.", node=node_a, mock=mock)
        b = fleet.spawn("Do the task.", node=node_b, mock={"steps": 3})
        auto = [fleet.spawn("Do the task.", mock={"steps": 2}) for _ in range(2)]
        assert (a.node, b.node) == (node_a, node_b)
        alive = set(fleet.nodes())
        assert all(c.node in alive for c in auto) and a.pid > 0
        assert len({c.node for c in [a, b, *auto]}) >= 2  # automatic placement spreads the load
        events: Events = {}
        drain(fleet, events, seen(events, a, "info", summary=gate_label(1, 1)))
        steer = a.steer("look left")
        assert steer == 2  # the prompt was 1
        drain(fleet, events, seen(events, a, "control-ack", ref=steer))
        release_gate(mock["gate_path"])
        everyone = [a, b, *auto]
        drain(fleet, events, lambda: all(c.idle and seen(events, c, "turn-complete")() for c in everyone))
        seqs = [c.close() for c in everyone]
        assert all(s > 0 for s in seqs)
        drain(fleet, events, lambda: fleet.finished)
        for c in everyone:
            assert c.status == "done", (c, c.error)
            assert c.final_text is not None and c.final_text.startswith("Answer 1"), c.final_text
            got = events[c.run]
            assert [e["seq"] for e in got] == list(range(1, len(got) + 1)), "every event once, in order"
            config = config_from_mapping(mock if c is a else {"steps": 3 if c is b else 2})
            assert check_transcript(config, got) == []
        pids = [c.pid for c in everyone]
    wait_gone(pids)


def test_node_lost_mid_run(cluster: Any, tmp_path: Path) -> None:
    doomed = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    with Fleet(address=cluster.address) as fleet:
        lost = [fleet.spawn("Do the task.", node=doomed.node_id, mock=gated(tmp_path, f"l{i}")) for i in range(2)]
        keep_mock = gated(tmp_path, "keep")
        keep = fleet.spawn("Do the task.", node=cluster.node_b.node_id, mock=keep_mock)
        events: Events = {}
        for c in [*lost, keep]:
            drain(fleet, events, seen(events, c, "info", summary=gate_label(1, 1)))
        cluster.remove_node(doomed, allow_graceful=False)
        drain(fleet, events, lambda: all(c.finished for c in lost))
        for c in lost:
            assert c.status == "failed"
            assert c.error is not None and doomed.node_id in c.error
            with pytest.raises(ChildLost, match=doomed.node_id):
                c.cancel()
        wait_gone([c.pid for c in lost])  # the lifeline took them down with their actor
        actor_pid, root = fleet._where[doomed.node_id]
        wait_gone([actor_pid])
        assert os.path.isdir(root)  # the actor died without removing its children's directories
        assert not keep.finished
        release_gate(keep_mock["gate_path"])
        drain(fleet, events, lambda: keep.idle and seen(events, keep, "turn-complete")())
        keep.close()
        drain(fleet, events, lambda: fleet.finished)
        assert keep.status == "done"
        assert check_transcript(config_from_mapping(keep_mock), events[keep.run]) == []
        assert [c.status for c in lost] == ["failed", "failed"]  # failed once, not again
        kept_root = fleet._where[cluster.node_b.node_id][1]
    assert not os.path.exists(root)  # close() swept the lost actor's root (its lock was free)
    assert not os.path.exists(kept_root)  # the live actor removed its own


def test_close_leaves_no_process(cluster: Any, tmp_path: Path) -> None:
    fleet = Fleet(address=cluster.address)
    children = [fleet.spawn("Do the task.", mock=gated(tmp_path, f"c{i}")) for i in range(4)]
    events: Events = {}
    for c in children:
        drain(fleet, events, seen(events, c, "info", summary=gate_label(1, 1)))
    actors = [ray.get(actor.pid.remote()) for actor in fleet._actors.values()]
    fleet.close()
    assert all(c.finished for c in children)
    wait_gone([c.pid for c in children] + actors)
    assert ray.is_initialized() is False or len(ray.nodes()) >= 3  # the joined cluster still runs


def test_async_for(cluster: Any) -> None:
    import asyncio

    async def main() -> dict[str, list[int]]:
        seqs: dict[str, list[int]] = {}
        with Fleet(address=cluster.address) as fleet:
            for _ in range(3):
                fleet.spawn("Do the task.", mock={"steps": 1})
            async for child, event in fleet:
                seqs.setdefault(child.run, []).append(event["seq"])
                if event["type"] == "turn-complete":
                    child.close()
            assert all(c.status == "done" for c in fleet.children), fleet.children
        return seqs

    seqs = asyncio.run(main())
    assert len(seqs) == 3
    assert all(s == list(range(1, len(s) + 1)) for s in seqs.values())


def test_stopping_after_every_event_loses_nothing(cluster: Any) -> None:
    """``break`` out of ``for child, event in fleet`` after every event, and out of
    ``raw_batches()`` after every batch: the rest of an answer comes first next time, nothing is
    lost, and ``handed`` (what a commit commits) is the last event handed over, not the last of
    the batch it came in."""
    from fenwire_fast.live.parent.channel import decoded

    mock = {"steps": 2, "deltas": 30, "tools": 1}
    with Fleet(address=cluster.address) as fleet:
        children = [fleet.spawn("Do the task.", mock=mock) for _ in range(3)]
        for c in children:
            c.close()  # queued: the turn ends, then the run is closed
        events: Events = {}
        while not fleet.finished:
            for child, event in fleet:
                events.setdefault(child.run, []).append(event)
                assert child.handed == event["seq"]
                break
        raw = [fleet.spawn("Do the task.", mock=mock) for _ in range(2)]
        for c in raw:
            c.close()
        while not fleet.finished:
            for child, batch in fleet.raw_batches():
                events.setdefault(child.run, []).extend(decoded(batch))
                break
        for c in [*children, *raw]:
            assert c.status == "done", (c, c.error)
            got = events[c.run]
            assert [e["seq"] for e in got] == list(range(1, len(got) + 1)), "every event once, in order"
            assert check_transcript(config_from_mapping(mock), got) == []


def test_actor_killed_alone(cluster: Any, tmp_path: Path) -> None:
    """The actor's process dies but its node lives: its children go with it (the lifeline)."""
    with Fleet(address=cluster.address) as fleet:
        node = cluster.node_a.node_id
        doomed = [fleet.spawn("Do the task.", node=node, mock=gated(tmp_path, f"k{i}")) for i in range(2)]
        events: Events = {}
        for c in doomed:
            drain(fleet, events, seen(events, c, "info", summary=gate_label(1, 1)))
        actor_pid, root = fleet._where[node]
        ray.kill(fleet._actors[node])
        drain(fleet, events, lambda: fleet.finished)
        wait_gone([actor_pid])
        assert [c.status for c in doomed] == ["failed", "failed"]
        assert all(c.error is not None and node in c.error for c in doomed)
        wait_gone([c.pid for c in doomed])
    assert not os.path.exists(root)  # close() swept the killed actor's root


def test_raw_batches_are_the_childrens_lines(cluster: Any) -> None:
    """``fleet.raw_batches()``: each child's lines as it wrote them, every one once and in order,
    with no dict made on the driver (the batches decode to the mock's exact transcript)."""
    from fenwire_fast.live.parent.channel import decoded

    mock = {"steps": 2, "tool_result_bytes": 3000}
    with Fleet(address=cluster.address) as fleet:
        children = [fleet.spawn("Do the task.", mock=mock) for _ in range(3)]
        lines: dict[str, list[bytes]] = {c.run: [] for c in children}
        for child, batch in fleet.raw_batches():
            assert type(batch).__name__ == "ScanBatch" and len(batch)
            lines[child.run].append(batch.lines)
            if any(m["type"] == "turn-complete" for m in decoded(batch)):
                child.close()
        for c in children:
            assert c.status == "done", (c, c.error)
            events = decoded(fenwire_fast.Receiver("event").scan_batch(b"".join(lines[c.run])))
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            assert check_transcript(config_from_mapping(mock), events) == []
            assert c.messages == len(events)
            assert c.bytes == sum(len(b) for b in lines[c.run])  # every byte of its lines, counted once


def test_child_state_from_its_node(cluster: Any, tmp_path: Path) -> None:
    """A FleetChild carries what its node's channel knows: the controls sent with their acks
    (a rejected one with its reason), the rejected lines, the result, the exit code, the bytes."""
    mock = gated(tmp_path, "s")
    with Fleet(address=cluster.address) as fleet:
        child = fleet.spawn("Do the task.", mock=mock)
        events: Events = {}
        drain(fleet, events, seen(events, child, "info", summary=gate_label(1, 1)))
        assert child.returncode is None and child.result is None
        again = child.prompt("Do it again.")  # a turn runs: rejected
        drain(fleet, events, seen(events, child, "control-ack", ref=again))
        assert sorted(child.controls) == [1, again]
        first = child.controls[1]
        assert (first.type, first.text, first.status) == ("prompt", "Do the task.", "accepted")
        sent = child.controls[again]
        assert (sent.type, sent.text, sent.status) == ("prompt", "Do it again.", "rejected")
        assert sent.reason == "a turn is running; send steer or follow-up"
        assert child.rejected == [sent]
        release_gate(mock["gate_path"])
        drain(fleet, events, lambda: child.idle and seen(events, child, "turn-complete")())
        closed = child.close()
        drain(fleet, events, lambda: fleet.finished)
        assert child.status == "done" and child.returncode == 0, (child, child.error)
        assert child.controls[closed].type == "close" and child.controls[closed].status == "accepted"
        assert child.errors == []
        results = [e for e in events[child.run] if e["type"] == "result"]
        assert child.result == results[0]
        assert child.bytes > 0 and child.messages == len(events[child.run])


def test_a_traced_spawn_joins_the_drivers_trace(cluster: Any) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from fenwire_fast.live.child.mock_agent import reported_traceparent
    from fenwire_fast.live.parent.otel import Telemetry
    from fenwire_fast.live.parent.tracing import resolve
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    telemetry = Telemetry(TracerProvider())
    assert resolve(telemetry) is telemetry
    events: Events = {}
    with Fleet(address=cluster.address) as fleet:
        with telemetry.tracer.start_as_current_span("driver") as span:
            child = fleet.spawn("Do the task.", mock={"steps": 1}, trace=telemetry)
        plain = fleet.spawn("Do the task.", mock={"steps": 1})
        drain(fleet, events, lambda: all(seen(events, c, "turn-complete")() for c in (child, plain)))
        for c in (child, plain):
            c.close()
        drain(fleet, events, lambda: fleet.finished)
    ctx = span.get_span_context()
    want = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert reported_traceparent(events[child.run]) == want
    assert reported_traceparent(events[plain.run]) is None
    assert trace.get_current_span() is not span
