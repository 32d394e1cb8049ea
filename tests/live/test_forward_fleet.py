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
from fenwire_fast.live.fleet.named import actor_name  # noqa: E402
from fenwire_fast.live.parent.durable import read_manifests  # noqa: E402
from fenwire_fast.testing import check_transcript  # noqa: E402
from live_harness import HANG_GUARD, nats_server, ray_cluster, release_gate, wait_gone  # noqa: E402

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


def _until(check: Any, what: str, timeout: float = HANG_GUARD) -> None:
    import time

    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, what
        time.sleep(0.02)


def _event_files(state_root: Any, nodes: dict[str, str]) -> dict[str, Any]:
    """run -> its manifest, read from its node's state dir (the nodes are on this machine)."""
    out = {}
    for node in set(nodes.values()):
        for _name, manifest in read_manifests(str(state_root / node)):
            if not isinstance(manifest, str) and manifest.run in nodes:
                out[manifest.run] = manifest
    return out


def _lines(manifests: dict[str, Any]) -> dict[str, list[bytes]]:
    from pathlib import Path

    return {run: Path(m.event_path).read_bytes().splitlines() for run, m in manifests.items()}


def test_a_named_fleets_nodes_publish_without_a_driver_and_through_a_killed_actor(
    cluster: Any, server: LocalServer, tmp_path: Any
) -> None:
    """``Fleet(name=..., forward=...)``: the nodes publish from the start, whether a driver holds
    the fleet or not, and commit what the stream stored; an actor SIGKILLed mid-stream is restarted
    by Ray and its forwarder goes on from the stream's last line of each run. The stream holds each
    run's event file once, in order, byte for byte; the runs close; a later driver gets statuses."""
    import signal

    names = {"stream": f"NODES{os.getpid()}", "prefix": f"nodes{os.getpid()}"}
    name, state_root = f"fwnodes{os.getpid()}", tmp_path / "state"
    node_a, node_b = (n.node_id for n in cluster.fenwire_nodes)
    gates = [str(tmp_path / f"gate{i}") for i in range(4)]
    mock = {"steps": 3, "deltas": 1500, "tools": 1, "tool_result_bytes": 3000, "gate_steps": [2]}
    fleet = Fleet(address=cluster.address, name=name, state_root=str(state_root), forward={"url": server.url, **names})
    try:
        nodes: dict[str, str] = {}
        for i, gate in enumerate(gates):
            child = fleet.spawn("Do the task.", node=(node_a, node_b)[i % 2], mock={**mock, "gate_path": gate})
            child.close()
            nodes[child.run] = child.node
        fleet.detach()  # no driver from here on: the nodes forward by themselves
        for gate in gates:
            _until(lambda gate=gate: os.path.exists(gate + ".blocked"), "every run reaches its gate")
        manifests = _event_files(state_root, nodes)
        assert set(manifests) == set(nodes)
        held = sum(len(lines) for lines in _lines(manifests).values())
        _until(lambda: _stream_count(server.url, names["stream"]) == held, "the lines before the gates, stored")

        actor = ray.get_actor(actor_name(name, node_a), namespace="fenwire")
        actor_pid, _root = ray.get(actor.where.remote())
        for i, gate in enumerate(gates):
            if i % 2 == 0:
                release_gate(gate)
        _until(lambda: _stream_count(server.url, names["stream"]) > held + 500, "node a's runs forwarding again")
        os.kill(actor_pid, signal.SIGKILL)  # mid-stream: its runs go on writing
        wait_gone([actor_pid])

        def restarted() -> bool:
            try:
                return bool(ray.get(actor.where.remote())[0] != actor_pid)
            except ray.exceptions.ActorUnavailableError:  # restarting
                return False

        _until(restarted, "Ray restarts the actor: it attaches its state dir and forwards")
        for i, gate in enumerate(gates):
            if i % 2 == 1:
                release_gate(gate)

        def all_closed() -> bool:
            found = _event_files(state_root, nodes)
            return len(found) == len(nodes) and all(m.closed for m in found.values())

        _until(all_closed, "every run ended, each line stored and the run committed to its end")
        files = _lines(_event_files(state_root, nodes))
        for run, lines in files.items():
            stored = asyncio.run(_stored(server.url, names, run))
            assert len(stored) == len(lines), (run, len(stored), len(lines))
            assert stored == lines, run
            events, rejections = asyncio.run(read_run(server.url, run, **names))
            checked = {**mock, "gate_path": gates[0]}
            assert rejections == [] and check_transcript(config_from_mapping(checked), events) == [], run
        assert _stream_count(server.url, names["stream"]) == sum(len(lines) for lines in files.values())

        again = Fleet.attach(cluster.address, name=name)
        try:
            assert again.forward is not None and again.forward["stream"] == names["stream"]
            assert again.wait(timeout=120) == dict.fromkeys(nodes, "done")
            assert all(c.bytes == 0 for c in again.children)  # statuses only
            assert again.commit() == 0  # the nodes committed what the stream stored
        finally:
            again.close()
    finally:
        _close_named(cluster.address, name)
    assert not state_root.exists()


def _close_named(address: str, name: str) -> None:
    """Close the named fleet ``name`` if it is still there (a failed test leaves no run behind)."""
    from fenwire_fast.live.fleet import FleetNotFound

    try:
        Fleet.attach(address, name=name, takeover=True).close()
    except FleetNotFound:
        pass


async def _stored(url: str, names: dict[str, str], run: str) -> list[bytes]:
    """Every message of ``run``'s subject in the stream, in stream order, as stored."""
    import nats
    from fenwire_fast.forward import subject

    nc = await nats.connect(url)
    try:
        jsm, out, seq = nc.jsm(), [], 1
        while True:
            try:
                msg = await jsm.get_msg(names["stream"], seq, subject=subject(names["prefix"], run), next=True)
            except nats.js.errors.NotFoundError:
                return out
            out.append(msg.data)
            seq = msg.seq + 1
    finally:
        await nc.close()


def test_the_cli_refuses_to_forward_a_fleet_whose_nodes_do(cluster: Any, server: LocalServer, tmp_path: Any) -> None:
    import subprocess
    import sys

    name = f"fwself{os.getpid()}"
    fleet = Fleet(address=cluster.address, name=name, state_root=str(tmp_path / "s"), forward={"url": server.url})
    try:
        fleet.spawn("Do the task.", mock={"steps": 1})
        fleet.detach()
        command = [sys.executable, "-m", "fenwire_fast", "forward", "--fleet", name, "--address", cluster.address]
        done = subprocess.run([*command, "--nats", server.url], capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "forward its lines themselves" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    finally:
        Fleet.attach(cluster.address, name=name).close()
