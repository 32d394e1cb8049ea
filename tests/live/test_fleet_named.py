"""A named fleet on a real Ray cluster (a head and two nodes on this machine): its runs outlive
the driver (SIGKILLed, then another driver attaches) and the actor's process (SIGKILLed, then Ray
restarts it), with every event delivered at least once, nothing committed delivered again, each
run's order kept and every control acknowledged; and after ``close`` nothing is left.

Skipped when Ray is not installed. Nothing waits for time to pass: runs are held mid-turn with the
mock's gate, the driver subprocess says where it is through a file, and the tests wait on those.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from fenwire_fast.live.child.mock_agent import config_from_mapping, gate_label  # noqa: E402
from fenwire_fast.live.fleet import Fleet, FleetBusy, FleetChild, FleetNotFound, FleetVersionMismatch  # noqa: E402
from fenwire_fast.live.fleet.named import Ledger  # noqa: E402
from fenwire_fast.testing import check_transcript  # noqa: E402
from live_harness import HANG_GUARD, package_path, process_gone, ray_cluster, release_gate, wait_gone  # noqa: E402
from live_harness import drain_fleet as drain  # noqa: E402

Events = dict[str, list[dict[str, Any]]]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with ray_cluster() as c:
        c.node_a, c.node_b = c.fenwire_nodes
        yield c


def connect(cluster: Any) -> None:
    """This process's connection to ``cluster`` (``Cluster.wait_for_nodes`` may have made it)."""
    if not ray.is_initialized():
        ray.init(address=cluster.address)


def seen(events: Events, run: str, type_: str, **fields: Any) -> Callable[[], bool]:
    return lambda: any(
        e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()) for e in events.get(run, [])
    )


def gated(tmp_path: Path, name: str) -> dict[str, Any]:
    return {"steps": 2, "gate_path": str(tmp_path / f"gate-{name}"), "gate_steps": [1]}


def nothing_left(cluster: Any, name: str, state_root: Path, pids: list[int]) -> None:
    """After ``close``: no run's process, no state folder, no named actor of the fleet."""
    connect(cluster)  # a closed fleet shut down the connection it made: a Ray call now would start a local Ray
    wait_gone(pids)
    assert not state_root.exists(), sorted(p.name for p in state_root.rglob("*"))
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(name + ":")]
    assert names == []


def finish(fleet: Fleet, events: Events, children: list[FleetChild]) -> None:
    """Let every run end its turn and close it; each ends ``done``."""
    drain(fleet, events, lambda: all(c.idle and seen(events, c.run, "turn-complete")() for c in children))
    for c in children:
        c.close()
    drain(fleet, events, lambda: all(c.finished for c in children))
    for c in children:
        assert c.status == "done", (c, c.error)


DRIVER = textwrap.dedent(
    """
    import json, sys, time
    from fenwire_fast.live.fleet import Fleet
    from fenwire_fast.live.child.mock_agent import gate_label

    address, name, state_root, out, gates, nodes = sys.argv[1:7]
    gates, nodes = json.loads(gates), json.loads(nodes)
    fleet = Fleet(address=address, name=name, state_root=state_root)
    children = [
        fleet.spawn("Do the task.", run=f"r{i}", node=nodes[i % len(nodes)],
                    mock={"steps": 2, "gate_path": gates[i], "gate_steps": [1]})
        for i in range(len(gates))
    ]
    log = open(out, "a", buffering=1)
    def take():
        for child, messages in fleet.poll_batches(timeout=0.5):
            for m in messages:
                log.write(json.dumps({"run": child.run, "seq": m["seq"], "type": m["type"], "ref": m.get("ref")}) + "\\n")
                if m["type"] == "info" and m.get("summary") == gate_label(1, 1):
                    held.add(child.run)
    held = set()
    while len(held) < len(children):
        take()
    fleet.commit()
    log.write(json.dumps({"committed": {c.run: c.committed for c in children}}) + "\\n")
    acked = set()
    steers = {c.run: c.steer("look left") for c in children}
    log.write(json.dumps({"steers": steers}) + "\\n")
    while True:  # until killed: these acks are handed over, never committed
        take()
    """
)


def test_a_killed_driver_is_replaced_and_every_run_ends(cluster: Any, tmp_path: Path) -> None:
    name, state_root = "killed-driver", tmp_path / "state"
    gates = [str(tmp_path / f"gate-{i}") for i in range(4)]
    out = tmp_path / "driver.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*package_path(), str(HERE), os.environ.get("PYTHONPATH", "")]))
    driver = subprocess.Popen(
        [
            *(sys.executable, "-c", DRIVER, cluster.address, name, str(state_root), str(out)),
            *(json.dumps(gates), json.dumps([cluster.node_a.node_id, cluster.node_b.node_id])),
        ],
        env=env,
        start_new_session=True,
    )
    try:
        # wait (on the driver's own words) until it sent its steers and took their acks
        end = time.monotonic() + HANG_GUARD
        first: list[dict[str, Any]] = []
        while True:
            assert driver.poll() is None, "the driver died by itself"
            assert time.monotonic() < end, "the driver hung"
            first = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
            steers = next((r["steers"] for r in first if "steers" in r), None)
            if steers is not None and all(
                any(r.get("run") == run and r.get("type") == "control-ack" and r.get("ref") == seq for r in first)
                for run, seq in steers.items()
            ):
                break
            time.sleep(0.05)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    committed = next(r["committed"] for r in first if "committed" in r)
    handed_before = {run: [r["seq"] for r in first if r.get("run") == run] for run in committed}

    with pytest.raises(FleetBusy, match="takeover=True"):
        Fleet.attach(cluster.address, name=name)
    fleet = Fleet.attach(cluster.address, name=name, takeover=True)
    try:
        assert sorted(c.run for c in fleet.children) == sorted(committed)
        for c in fleet.children:
            assert c.committed == committed[c.run] and not c.finished, c
        events: Events = {}
        for gate in gates:
            release_gate(gate)
        # a control from the new driver goes on after the last seq sent (the prompt, the steer)
        fresh = {c.run: c.steer("look right") for c in fleet.children}
        assert all(seq == steers[run] + 1 for run, seq in fresh.items()), (fresh, steers)
        children = list(fleet.children)
        finish(fleet, events, children)
        for c in children:
            got = [e["seq"] for e in events[c.run]]
            assert got == list(range(committed[c.run] + 1, got[-1] + 1)), "from the commit on, in order, once"
            before = [s for s in handed_before[c.run] if s <= committed[c.run]]
            assert before == list(range(1, committed[c.run] + 1)), "the first driver had every committed event"
            acks = {e["ref"] for e in events[c.run] if e["type"] == "control-ack"}
            assert {steers[c.run], fresh[c.run]} <= acks, "every control is acknowledged"
        pids = [c.pid for c in children]
    finally:
        fleet.close()
    nothing_left(cluster, name, state_root, pids)


@pytest.mark.parametrize("how", ["SIGKILL", "ray.kill"])
def test_a_killed_actor_is_restarted_and_its_runs_go_on(cluster: Any, tmp_path: Path, how: str) -> None:
    """The actor's process dies (SIGKILL: no clean-up of its own; ``ray.kill``: Ray ends the worker,
    which would take its children with it but for the fleet's runtime environment)."""
    name, state_root = f"killed-actor-{how.replace('.', '-').lower()}", tmp_path / "state"
    node = cluster.node_a.node_id
    fleet = Fleet(address=cluster.address, name=name, state_root=str(state_root))
    try:
        mocks = [gated(tmp_path, f"a{i}") for i in range(3)]
        children = [fleet.spawn("Do the task.", node=node, mock=m) for m in mocks]
        other = fleet.spawn("Do the task.", node=cluster.node_b.node_id, mock={"steps": 2})
        events: Events = {}
        for c in children:
            drain(fleet, events, seen(events, c.run, "info", summary=gate_label(1, 1)))
        fleet.commit()
        actor = fleet.actors()[node]
        actor_pid, _root = ray.get(actor.where.remote())
        if how == "SIGKILL":
            os.kill(actor_pid, signal.SIGKILL)
        else:
            ray.kill(actor, no_restart=False)
        wait_gone([actor_pid])
        assert all(not process_gone(c.pid) for c in children), "the runs outlive their actor"
        steers = {c.run: c.steer("go on") for c in children}  # sent to the restarted actor
        for m in mocks:
            release_gate(m["gate_path"])
        finish(fleet, events, [*children, other])
        for c in [*children, other]:
            got = [e["seq"] for e in events[c.run]]
            assert got == list(range(1, len(got) + 1)), f"{c.run}: every event once, in order"
            assert (
                check_transcript(config_from_mapping(mocks[0] if c is not other else {"steps": 2}), events[c.run]) == []
            )
        for c in children:
            assert any(e["type"] == "control-ack" and e["ref"] == steers[c.run] for e in events[c.run])
        assert ray.get(actor.where.remote())[0] != actor_pid  # Ray restarted it
        pids = [c.pid for c in [*children, other]]
    finally:
        fleet.close()
    nothing_left(cluster, name, state_root, pids)


def test_one_driver_at_a_time(cluster: Any, tmp_path: Path) -> None:
    name, state_root = "one-driver", tmp_path / "state"
    first = Fleet(address=cluster.address, name=name, state_root=str(state_root))
    try:
        mock = gated(tmp_path, "b")
        child = first.spawn("Do the task.", mock=mock)
        events: Events = {}
        drain(first, events, seen(events, child.run, "info", summary=gate_label(1, 1)))
        with pytest.raises(ValueError, match="already exists"):
            Fleet(address=cluster.address, name=name)
        with pytest.raises(FleetBusy):
            Fleet.attach(cluster.address, name=name)
        second = Fleet.attach(cluster.address, name=name, takeover=True)
        with pytest.raises(FleetBusy):
            child.steer("mine")  # the first driver was taken over: it drains nothing more
        with pytest.raises(FleetBusy):
            drain(first, {}, lambda: False)
        release_gate(mock["gate_path"])
        again: Events = {}
        finish(second, again, list(second.children))
        got = [e["seq"] for e in again[child.run]]
        assert got == list(range(1, got[-1] + 1)), "nothing was committed: every event comes again"
        second.close()
    finally:
        first._actors.clear()  # taken over: its actors are the second driver's (and closed)
        first.close()
    nothing_left(cluster, name, state_root, [child.pid])


def test_detach_then_attach_from_the_commit(cluster: Any, tmp_path: Path) -> None:
    name, state_root = "detached", tmp_path / "state"
    fleet = Fleet(address=cluster.address, name=name, state_root=str(state_root))
    mock = gated(tmp_path, "d")
    child = fleet.spawn("Do the task.", mock=mock)
    events: Events = {}
    drain(fleet, events, seen(events, child.run, "info", summary=gate_label(1, 1)))
    assert fleet.commit() == 1
    committed = child.committed
    assert committed == events[child.run][-1]["seq"]
    fleet.detach()
    assert not process_gone(child.pid)
    listed = subprocess.run(
        [sys.executable, "-m", "fenwire_fast", "fleet", name, "--address", cluster.address, "--json"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([*package_path(), os.environ.get("PYTHONPATH", "")])),
    )
    assert listed.returncode == 0, listed.stderr
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["run"], row["pid"], row["status"], row["committed_seq"]) == (child.run, child.pid, "running", committed)
    fleet = Fleet.attach(cluster.address, name=name)  # no takeover: the first let go
    try:
        (again,) = fleet.children
        assert (again.run, again.committed, again.status) == (child.run, committed, "running")
        release_gate(mock["gate_path"])
        events = {}
        finish(fleet, events, [again])
        assert events[child.run][0]["seq"] == committed + 1
        assert fleet.commit() == 1
    finally:
        fleet.close()
    nothing_left(cluster, name, state_root, [child.pid])


def test_the_versions_must_agree(cluster: Any, tmp_path: Path) -> None:
    name = "versions"
    connect(cluster)  # one connection for the fleets and the ledger below
    fleet = Fleet(name=name, state_root=str(tmp_path / "state"))
    try:
        fleet.detach()
        Ledger(ray.experimental.internal_kv, "fenwire", name).put_meta({"version": "0.0.1", "state_root": None})
        with pytest.raises(FleetVersionMismatch, match=r"fenwire_fast .* 0\.0\.1"):
            Fleet.attach(cluster.address, name=name)
        with pytest.raises(FleetNotFound):
            Fleet.attach(cluster.address, name="no-such-fleet")
    finally:
        Ledger(ray.experimental.internal_kv, "fenwire", name).clear()


def test_a_finished_child_leaves_the_actor(cluster: Any) -> None:
    with Fleet(address=cluster.address) as fleet:
        node = cluster.node_a.node_id
        children = [fleet.spawn("Do the task.", node=node, mock={"steps": 1}) for _ in range(3)]
        events: Events = {}
        finish(fleet, events, children)
        actor = fleet.actors()[node]
        assert ray.get(actor.counts.remote()) == (0, 3)  # none held, three left
        with pytest.raises(Exception, match="finished"):
            children[0].steer("too late")
