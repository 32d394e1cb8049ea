"""The fleet on a local Ray cluster against a local Hub: events/s, driver CPU per event, Ray calls.

Run ``python benches/fleet.py [--nodes 2] [--children 16] [--steps 5] [--deltas 40]``. Nothing here
is a test. A ``ray.cluster_utils.Cluster`` (a head with no CPUs and ``--nodes`` nodes, all on this
machine) runs ``--children`` busy mock children per node (no delay between deltas); the driver
drains them through ``Fleet.batches`` until every turn is complete. The same children (nodes x
children) are then run by one local :class:`~fenwire_fast.live.hub.Hub`. Reported: events, wall
seconds, events/s, the driver's CPU per event (``time.process_time``: the Ray driver's own
threads included), Ray calls per 1,000 events, and the round trip of a control (``steer`` on an
idle child: from the call to its seq back, i.e. written to the control file on the node).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def busy_mock(args: argparse.Namespace) -> dict[str, Any]:
    return {"steps": args.steps, "deltas": args.deltas}


def run_fleet(args: argparse.Namespace) -> dict[str, float]:
    import ray
    from fenwire_fast.fleet import Fleet
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(args.nodes)]
    cluster.wait_for_nodes()
    try:
        with Fleet(address=cluster.address) as fleet:
            warm = [fleet.spawn(None, node=n.node_id, mock={"steps": 1}) for n in nodes]  # the actors start
            children = []
            events = 0
            cpu0, t0 = time.process_time(), time.perf_counter()
            calls0 = fleet.ray_calls
            for n in nodes:
                children += [
                    fleet.spawn("Do the task.", node=n.node_id, mock=busy_mock(args)) for _ in range(args.children)
                ]
            while not all(c.idle and c.messages and c.status != "starting" for c in children):
                for _child, messages in fleet.poll_batches(timeout=1.0):
                    events += len(messages)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            calls = fleet.ray_calls - calls0
            trips = []
            for _ in range(args.trips):
                t = time.perf_counter()
                warm[0].steer("x")
                trips.append(time.perf_counter() - t)
                fleet.poll_batches(timeout=0)
            trips.sort()
        return {
            "events": events,
            "wall": wall,
            "cpu_us": cpu / events * 1e6,
            "calls_per_1000": calls / events * 1000,
            "trip_median_ms": statistics.median(trips) * 1e3,
            "trip_p99_ms": trips[int(len(trips) * 0.99) - 1] * 1e3,
        }
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


def run_hub(args: argparse.Namespace) -> dict[str, float]:
    from fenwire_fast.live.hub import Hub

    events = 0
    with Hub() as hub:
        cpu0, t0 = time.process_time(), time.perf_counter()
        children = [hub.spawn("Do the task.", mock=busy_mock(args)) for _ in range(args.nodes * args.children)]
        while not all(c.channel.idle and c.messages for c in children):
            got = hub.poll_batches()
            events += sum(len(m) for _, m in got)
            if not got:
                hub.sleep(0.05)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"events": events, "wall": wall, "cpu_us": cpu / events * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--children", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=40)
    parser.add_argument("--trips", type=int, default=200)
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), *filter(None, [os.environ.get("PYTHONPATH")])])
    fleet = run_fleet(args)
    hub = run_hub(args)
    print(f"{args.nodes} nodes x {args.children} busy mock children (steps {args.steps}, deltas {args.deltas})")
    print(
        f"fleet: {fleet['events']:.0f} events in {fleet['wall']:.2f} s = {fleet['events'] / fleet['wall']:,.0f}/s, "
        f"driver CPU {fleet['cpu_us']:.1f} us/event, {fleet['calls_per_1000']:.2f} Ray calls per 1,000 events, "
        f"control round trip median {fleet['trip_median_ms']:.2f} ms, p99 {fleet['trip_p99_ms']:.2f} ms"
    )
    print(
        f"local hub: {hub['events']:.0f} events in {hub['wall']:.2f} s = {hub['events'] / hub['wall']:,.0f}/s, "
        f"CPU {hub['cpu_us']:.1f} us/event"
    )


if __name__ == "__main__":
    sys.exit(main())
