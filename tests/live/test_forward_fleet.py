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


def _stream_count(url: str, stream: str) -> int:
    import nats

    async def count() -> int:
        nc = await nats.connect(url)
        try:
            return int((await nc.jsm().stream_info(stream)).state.messages)
        except nats.js.errors.NotFoundError:
            return 0
        finally:
            await nc.close()

    return asyncio.run(count())


def test_a_named_fleet_forwarded_by_a_driver_killed_and_started_again(
    cluster: Any, server: LocalServer, tmp_path: Any
) -> None:
    """``fenwire forward --fleet NAME``: a driver that forwards a named fleet's runs, SIGKILLed
    mid-stream; a second one (``--takeover``) goes on from the commit, and the stream holds each
    run's mock transcript once, in order."""
    import signal
    import subprocess
    import sys
    import time

    names = {"stream": f"NAMED{os.getpid()}", "prefix": f"named{os.getpid()}"}
    mock = {"steps": 3, "deltas": 2000, "tools": 1, "tool_result_bytes": 3000}
    node_a, node_b = (n.node_id for n in cluster.fenwire_nodes)
    fleet = Fleet(address=cluster.address, name=f"fw{os.getpid()}", state_root=str(tmp_path / "roots"))
    children = [fleet.spawn("Do the task.", node=node, mock=mock) for node in (node_a, node_b, node_a, node_b)]
    for child in children:
        child.close()
    runs = [c.run for c in children]
    fleet.detach()  # this process stays connected to the cluster; the forwarders are other drivers
    command = [
        *(sys.executable, "-m", "fenwire_fast", "forward", "--fleet", fleet.name or "", "--address", cluster.address),
        *("--nats", server.url, "--stream", names["stream"], "--prefix", names["prefix"]),
    ]
    log = tmp_path / "forward.log"
    with open(log, "ab") as err:
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    try:
        end = time.monotonic() + 120
        while _stream_count(server.url, names["stream"]) < 2000:
            assert first.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    with open(log, "ab") as err:
        second = subprocess.run([*command, "--takeover"], stdout=subprocess.PIPE, stderr=err, timeout=300)
    assert second.returncode == 0, (second.stdout, log.read_text())
    assert "Traceback" not in log.read_text()
    for run in runs:
        events, rejections = asyncio.run(read_run(server.url, run, **names))
        assert rejections == [], (run, rejections)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), run
        assert check_transcript(config_from_mapping(mock), events) == [], run
    Fleet.attach(cluster.address, name=fleet.name or "", takeover=True).close()
