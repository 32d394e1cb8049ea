"""A named fleet that loses a node: its runs are reported ``failed``, the node named, to a driver
that attaches after the loss (from the runs recorded in the cluster). A cluster of its own (a head
and three nodes on this machine), since the test takes a node away. Skipped without Ray."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from fenwire_fast.live.child.mock_agent import gate_label  # noqa: E402
from fenwire_fast.live.fleet import Fleet  # noqa: E402
from live_harness import HANG_GUARD, ray_cluster, wait_gone  # noqa: E402
from test_fleet_named import Events, connect, drain, finish, gated, seen  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with ray_cluster(nodes=3) as c:
        c.node_a, c.node_b, c.doomed = c.fenwire_nodes
        yield c


def test_a_lost_node_is_reported_to_a_later_driver(cluster: Any, tmp_path: Path) -> None:
    name, state_root = "lost-node", tmp_path / "state"
    doomed = cluster.doomed
    connect(cluster)  # the test watches the node go
    pids: list[int] = []
    fleet = Fleet(name=name, state_root=str(state_root))
    try:
        lost = fleet.spawn("Do the task.", node=doomed.node_id, mock=gated(tmp_path, "l"))
        kept = fleet.spawn("Do the task.", node=cluster.node_b.node_id, mock={"steps": 1})
        pids = [lost.pid, kept.pid]
        events: Events = {}
        drain(fleet, events, seen(events, lost.run, "info", summary=gate_label(1, 1)))
    finally:
        fleet.detach()
    cluster.remove_node(doomed, allow_graceful=False)
    end = time.monotonic() + HANG_GUARD
    while any(n["NodeID"] == doomed.node_id and n["Alive"] for n in ray.nodes()):
        assert time.monotonic() < end, "Ray never noticed the node's loss"
        time.sleep(0.1)
    fleet = Fleet.attach(name=name)
    try:
        runs = {c.run: c for c in fleet.children}
        assert sorted(runs) == sorted([lost.run, kept.run])
        child = runs[lost.run]
        assert child.status == "failed" and child.finished
        assert child.error is not None and doomed.node_id in child.error
        finish(fleet, {}, [runs[kept.run]])  # the other node's run goes on
    finally:
        os.kill(lost.pid, signal.SIGKILL)  # its node is gone (this machine is every node): end it
        fleet.close()
    wait_gone(pids)
