"""The fleet on a local Ray cluster against a local Hub: events/s, CPU per event, Ray calls, and
the round trip of a control.

Run ``python benches/fleet.py [--nodes 2] [--children 16] [--steps 5] [--deltas 400] [--named]``. Nothing
here is a test. A ``ray.cluster_utils.Cluster`` (a head with no CPUs and ``--nodes`` nodes, all on
this machine) runs ``--children`` busy mock children per node (no delay between deltas, a 2 KB
tool result per step); the driver drains them through ``Fleet.batches`` (dicts) until every turn
is complete. The same children (nodes x children) are then run by one local
:class:`~fenwire_fast.live.parent.hub.Hub`, drained through ``Hub.batches``.

Reported, from one run:

- events, wall seconds, events/s into the driver;
- the driver's CPU per event (``time.process_time``: its Ray threads included; and its main
  thread's alone, ``time.thread_time``), and the busiest actor's
  (its process's CPU over the events of its own children), beside the local hub's parent;
- Ray calls made by the driver per 1,000 events;
- the control round trip to a running child: a child held mid-turn by the mock's gate is steered
  ``--trips`` times, each time from the ``steer`` call until its ``control-ack`` comes out of
  ``Fleet.poll_batches`` on the driver (median and p99);
- a node lost without grace (``Cluster.remove_node(..., allow_graceful=False)``) while half of
  ``--children`` runs are held mid-turn on it and as many busy ones go on another node: the time
  until the fleet reports the lost runs failed, their processes left (a sleep of 1 s is allowed
  for the kernel to end them), and the survivors' transcripts (each event once and in order).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def busy_mock(args: argparse.Namespace) -> dict[str, Any]:
    return {"steps": args.steps, "deltas": args.deltas, "tool_result_bytes": 2048}


def round_trips(fleet: Any, node: str, trips: int) -> list[float]:
    """Steer a child held mid-turn ``trips`` times; each time until the ack reaches the driver."""
    gate = os.path.join(tempfile.mkdtemp(prefix="fleet-bench-"), "gate")
    child = fleet.spawn("Do the task.", node=node, mock={"steps": 1, "gate_path": gate, "gate_steps": [1]})
    while not any(
        m["type"] == "info" and m.get("summary", "").startswith("mock gate")
        for c, ms in fleet.poll_batches(timeout=1.0)
        if c is child
        for m in ms
    ):
        pass
    out = []
    for _ in range(trips):
        t = time.perf_counter()
        seq = child.steer("x")
        while not any(
            m["type"] == "control-ack" and m.get("ref") == seq
            for c, ms in fleet.poll_batches(timeout=1.0)
            if c is child
            for m in ms
        ):
            pass
        out.append(time.perf_counter() - t)
    open(gate, "a").close()
    child.close()
    return sorted(out)


def node_loss(cluster: Any, fleet: Any, survivor: str, children: int) -> dict[str, float]:
    """Lose a node without grace while ``children`` busy runs go on it and on ``survivor``: how long
    until the fleet reports the lost runs, whether any of their processes is left, and whether the
    survivors' events are each child's whole transcript, once and in order."""
    from fenwire_fast.live.child.mock_agent import config_from_mapping
    from fenwire_fast.testing import check_transcript

    doomed = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    gate = os.path.join(tempfile.mkdtemp(prefix="fleet-bench-"), "gate")
    held = {"steps": 2, "gate_path": gate, "gate_steps": [1]}
    mock = {"steps": 3, "deltas": 200}
    lost = [fleet.spawn("Do the task.", node=doomed.node_id, mock=held) for _ in range(children)]
    kept = [fleet.spawn("Do the task.", node=survivor, mock=mock) for _ in range(children)]
    events: dict[str, list[dict[str, Any]]] = {}
    gated = set()
    while len(gated) < len(lost):
        for child, messages in fleet.poll_batches(timeout=1.0):
            events.setdefault(child.run, []).extend(messages)
            if any(m["type"] == "info" and m.get("summary", "").startswith("mock gate") for m in messages):
                gated.add(child.run)
    t = time.perf_counter()
    cluster.remove_node(doomed, allow_graceful=False)
    while not all(c.finished for c in lost):
        for child, messages in fleet.poll_batches(timeout=0.1):
            events.setdefault(child.run, []).extend(messages)
    reported = time.perf_counter() - t
    while not all(c.idle for c in kept):
        for child, messages in fleet.poll_batches(timeout=1.0):
            events.setdefault(child.run, []).extend(messages)
    for c in kept:
        c.close()
    while not all(c.finished for c in kept):
        for child, messages in fleet.poll_batches(timeout=1.0):
            events.setdefault(child.run, []).extend(messages)
    time.sleep(1.0)  # the lifeline's end reaches the orphans at once; give the kernel a moment
    orphans = sum(os.path.exists(f"/proc/{c.pid}") for c in lost)
    bad = sum(
        1
        for c in kept
        if check_transcript(config_from_mapping(mock), events.get(c.run, []))
        or [e["seq"] for e in events.get(c.run, [])] != list(range(1, len(events.get(c.run, [])) + 1))
    )
    return {
        "reported_s": reported,
        "orphans": orphans,
        "survivors_bad": bad,
        "survivors": len(kept),
        "failed": sum(c.status == "failed" for c in lost),
    }


def run_fleet(args: argparse.Namespace) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(args.nodes)]
    cluster.wait_for_nodes()
    try:
        out = busy_fleet(args, cluster, nodes, None, lose_a_node=True)
        if args.named:
            # the same busy children by a named fleet (durable actors, a commit every
            # --commit-every s), then by an unnamed one again: an unnamed run on either side
            out["named"] = busy_fleet(args, cluster, nodes, "bench-named")
            out["unnamed_again"] = busy_fleet(args, cluster, nodes, None)
            out["attach"] = attach_runs(args, cluster, nodes)
        return out
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


def attach_runs(args: argparse.Namespace, cluster: Any, nodes: list[Any]) -> dict[str, float]:
    """``Fleet.attach`` of a named fleet of ``--attach-runs`` runs over the nodes (each a ``sleep``,
    its manifest and files in its node's state dir), after the first driver detached."""
    from fenwire_fast.live.fleet import Fleet

    state_root = tempfile.mkdtemp(prefix="fleet-bench-")
    fleet = Fleet(address=cluster.address, name="bench-attach", state_root=state_root)
    t = time.perf_counter()
    for i in range(args.attach_runs):
        fleet.spawn(None, node=nodes[i % len(nodes)].node_id, command=["sleep", "3600"])
    spawned = time.perf_counter() - t
    fleet.detach()
    t = time.perf_counter()
    fleet = Fleet.attach(cluster.address, name="bench-attach")
    attached = time.perf_counter() - t
    runs = len(fleet.children)
    t = time.perf_counter()
    fleet.close()
    closed = time.perf_counter() - t
    return {"runs": runs, "spawn_s": spawned, "attach_s": attached, "close_s": closed}


def busy_fleet(
    args: argparse.Namespace, cluster: Any, nodes: list[Any], name: str | None, lose_a_node: bool = False
) -> dict[str, Any]:
    """The busy measurement on one fleet (``name``: a named one, its driver committing every
    ``--commit-every`` seconds); with ``lose_a_node``, the round trips and the loss of a node after it."""
    import ray
    from fenwire_fast.live.fleet import Fleet

    named: dict[str, Any] = (
        {} if name is None else {"name": name, "state_root": tempfile.mkdtemp(prefix="fleet-bench-")}
    )
    commits: list[float] = []
    with Fleet(address=cluster.address, **named) as fleet:
        warm = [fleet.spawn(None, node=n.node_id, mock={"steps": 1}) for n in nodes]  # the actors start
        while not all(c.idle for c in warm):
            fleet.poll_batches(timeout=1.0)
        actors = [fleet._actors[n.node_id] for n in nodes]
        backends = sorted(set(fleet.implementations().values()))
        # what the driver and the actors spend with nothing to do (Ray's own threads, the
        # outstanding long polls), over a quiet second
        idle0, idle_actor0, idle_t0 = time.process_time(), ray.get([a.cpu.remote() for a in actors]), time.time()
        fleet.poll_batches(timeout=1.0)
        while time.time() - idle_t0 < 1.0:
            fleet.poll_batches(timeout=max(0.0, 1.0 - (time.time() - idle_t0)))
        idle_s = time.time() - idle_t0
        idle_actor = [b[0] - a[0] for a, b in zip(idle_actor0, ray.get([a.cpu.remote() for a in actors]), strict=True)]
        idle_driver = time.process_time() - idle0
        actor_cpu0 = ray.get([a.cpu.remote() for a in actors])
        children = []
        events = 0
        cpu0, t0, main0 = time.process_time(), time.perf_counter(), time.thread_time()
        last_commit = t0
        calls0 = fleet.ray_calls
        for n in nodes:
            children += [
                fleet.spawn("Do the task.", node=n.node_id, mock=busy_mock(args)) for _ in range(args.children)
            ]
        while not all(c.idle and c.messages and c.status != "starting" for c in children):
            got = fleet.poll_batches(timeout=1.0)
            for _child, messages in got:
                events += len(messages)
            if name is not None and got and time.perf_counter() - last_commit >= args.commit_every:
                last_commit = time.perf_counter()
                fleet.commit()
                commits.append(time.perf_counter() - last_commit)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        main = time.thread_time() - main0
        calls = fleet.ray_calls - calls0
        actor_after = ray.get([a.cpu.remote() for a in actors])
        actor_cpu = [b[0] - a[0] for a, b in zip(actor_cpu0, actor_after, strict=True)]
        actor_loop = [b[1] - a[1] for a, b in zip(actor_cpu0, actor_after, strict=True)]
        per_node = {n.node_id: sum(c.messages for c in children if c.node == n.node_id) for n in nodes}
        trips = round_trips(fleet, nodes[0].node_id, args.trips if lose_a_node else 5)
        loss = node_loss(cluster, fleet, nodes[1].node_id, args.children // 2) if lose_a_node else {}
    return {
        **loss,
        "commits": len(commits),
        "commit_median_ms": statistics.median(commits) * 1e3 if commits else 0.0,
        "backends": ", ".join(backends),
        "events": events,
        "wall": wall,
        "cpu_us": cpu / events * 1e6,
        "main_us": main / events * 1e6,
        "actor_us": max(c / per_node[n.node_id] * 1e6 for c, n in zip(actor_cpu, nodes, strict=True)),
        "actor_loop_us": max(c / per_node[n.node_id] * 1e6 for c, n in zip(actor_loop, nodes, strict=True)),
        "idle_driver_ms": idle_driver / idle_s * 1e3,
        "idle_actor_ms": max(idle_actor) / idle_s * 1e3,
        "calls_per_1000": calls / events * 1000,
        "trip_median_ms": statistics.median(trips) * 1e3,
        "trip_p99_ms": trips[max(int(len(trips) * 0.99) - 1, 0)] * 1e3,
    }


def run_hub(args: argparse.Namespace) -> dict[str, float]:
    from fenwire_fast.live.parent.hub import Hub

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
    parser.add_argument("--deltas", type=int, default=400)
    parser.add_argument("--trips", type=int, default=100)
    parser.add_argument(
        "--named",
        action="store_true",
        help="also: the same busy children by a named fleet committing every --commit-every s (between "
        "two unnamed runs), and Fleet.attach of --attach-runs runs",
    )
    parser.add_argument("--attach-runs", type=int, default=1000)
    parser.add_argument(
        "--commit-every",
        type=float,
        default=0.5,
        help="the named fleet's driver commits when this many seconds passed since its last commit (0: after every answer)",
    )
    args = parser.parse_args()
    # the actors and children import the driver's own copy of the package (with its extension)
    import fenwire_fast

    here = str(Path(fenwire_fast.__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    fleet = run_fleet(args)
    hub = run_hub(args)
    print(f"{args.nodes} nodes x {args.children} busy mock children (steps {args.steps}, deltas {args.deltas})")
    print(f"backend: driver {fenwire_fast.IMPLEMENTATION}, actors {fleet['backends']} (package in {here})")
    print(
        f"fleet: {fleet['events']:.0f} events in {fleet['wall']:.2f} s = {fleet['events'] / fleet['wall']:,.0f}/s, "
        f"driver CPU {fleet['cpu_us']:.1f} us/event ({fleet['cpu_us'] / hub['cpu_us']:.2f}x the local hub; "
        f"its main thread {fleet['main_us']:.1f}), "
        f"busiest actor {fleet['actor_us']:.1f} us/event ({fleet['actor_us'] / hub['cpu_us']:.2f}x; "
        f"its event loop thread {fleet['actor_loop_us']:.1f}), "
        f"{fleet['calls_per_1000']:.2f} Ray calls per 1,000 events"
    )
    print(
        f"with nothing to do: driver {fleet['idle_driver_ms']:.1f} ms CPU per second, "
        f"busiest actor {fleet['idle_actor_ms']:.1f} ms per second"
    )
    print(
        f"control round trip (steer to its ack on the driver): median {fleet['trip_median_ms']:.1f} ms, "
        f"p99 {fleet['trip_p99_ms']:.1f} ms"
    )
    print(
        f"node lost without grace: {fleet['failed']:.0f} runs reported failed {fleet['reported_s']:.2f} s later, "
        f"{fleet['orphans']:.0f} of their processes left; survivors with a wrong transcript: "
        f"{fleet['survivors_bad']:.0f} of {fleet['survivors']:.0f}"
    )
    if args.named:
        named, again, attach = fleet["named"], fleet["unnamed_again"], fleet["attach"]
        unnamed = (fleet["cpu_us"] + again["cpu_us"]) / 2
        unnamed_actor = (fleet["actor_us"] + again["actor_us"]) / 2
        print(
            f"named fleet: {named['events']:.0f} events in {named['wall']:.2f} s, driver CPU "
            f"{named['cpu_us']:.1f} us/event ({named['cpu_us'] / unnamed:.2f}x the unnamed runs' mean "
            f"{unnamed:.1f}: {fleet['cpu_us']:.1f} before, {again['cpu_us']:.1f} after), busiest actor "
            f"{named['actor_us']:.1f} us/event ({named['actor_us'] / unnamed_actor:.2f}x their mean "
            f"{unnamed_actor:.1f}), {named['commits']} commits (one per {args.commit_every:g} s at most), median {named['commit_median_ms']:.2f} ms each"
        )
        print(
            f"attach: {attach['runs']:.0f} runs over {args.nodes} nodes taken up by Fleet.attach in "
            f"{attach['attach_s']:.2f} s (spawned in {attach['spawn_s']:.1f} s, closed in {attach['close_s']:.1f} s)"
        )
    print(
        f"local hub: {hub['events']:.0f} events in {hub['wall']:.2f} s = {hub['events'] / hub['wall']:,.0f}/s, "
        f"CPU {hub['cpu_us']:.1f} us/event"
    )


if __name__ == "__main__":
    sys.exit(main())
