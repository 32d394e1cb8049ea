"""A fleet whose nodes publish their children's lines to JetStream themselves.

A Ray ``Cluster`` (a head and two nodes) and a real ``nats-server -js`` on a free loopback port:
``Fleet(forward={"url": ...})`` starts on each node an actor whose forwarder reads its hub and
publishes, so the lines never reach the driver (it counts no byte); the driver places the children,
sends controls, and learns each child finished once its lines are stored. The stream is checked run
by run: each line once, in order, the mock's transcript exactly.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("nats")

from fenwire_fast.forward import LocalServer, read_run  # noqa: E402
from fenwire_fast.live.child.mock_agent import config_from_mapping  # noqa: E402
from fenwire_fast.live.fleet import Fleet  # noqa: E402
from fenwire_fast.testing import check_transcript  # noqa: E402
from live_harness import nats_server, ray_cluster  # noqa: E402

MOCK = {"steps": 2, "deltas": 300, "tools": 1, "tool_result_bytes": 3000}


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with nats_server() as local:
        yield local


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with ray_cluster() as c:
        yield c


def test_the_nodes_publish_and_the_driver_stays_out_of_the_data_path(cluster: Any, server: LocalServer) -> None:
    names = {"stream": f"FLEET{os.getpid()}", "prefix": f"fleet{os.getpid()}"}
    node_a, node_b = (n.node_id for n in cluster.fenwire_nodes)
    with Fleet(address=cluster.address, forward={"url": server.url, **names}) as fleet:
        children = [fleet.spawn("Do the task.", node=node, mock=MOCK) for node in (node_a, node_b, node_a, node_b)]
        for child in children:
            child.close()  # queued: the turn ends, then the run is closed
        assert fleet.wait(timeout=120) == {c.run: "done" for c in children}
        assert all(c.bytes == 0 and c.messages == 0 for c in children)  # no line came to the driver
        forwarded = fleet.forwarded()
        assert set(forwarded) == {node_a, node_b}
        assert all(f["refused"] == [] and f["lines"] == f["acked"] for f in forwarded.values()), forwarded
        runs = [c.run for c in children]
    total = 0
    for run in runs:
        events, rejections = asyncio.run(read_run(server.url, run, **names))
        assert rejections == [], (run, rejections)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), run
        assert check_transcript(config_from_mapping(MOCK), events) == [], run
        total += len(events)
    assert total == sum(f["lines"] for f in forwarded.values())


def test_forward_options_are_checked(cluster: Any) -> None:
    with pytest.raises(ValueError, match="needs 'url'"):
        Fleet(address=cluster.address, forward={"stream": "X"})
    with pytest.raises(ValueError, match="no option 'speed'"):
        Fleet(address=cluster.address, forward={"url": "nats://127.0.0.1:1", "speed": 3})
    with pytest.raises(TypeError, match="max_in_flight"):
        Fleet(address=cluster.address, forward={"url": "nats://127.0.0.1:1", "max_in_flight": "many"})
    with pytest.raises(ValueError, match="without a name"):
        Fleet(address=cluster.address, name="named", forward={"url": "nats://127.0.0.1:1"})
