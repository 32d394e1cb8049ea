"""A named fleet outlives its driver: a driver is killed halfway, another takes its runs up.

Run it on a machine with the ``ray`` extra (``pip install 'fenwire_fast[ray]'``)::

    python docs/examples/fleet_restart.py

It starts a local Ray cluster (a head and two nodes), then a first driver in a process of its own:
that driver names a fleet, spawns four mock runs over the two nodes, takes their events until each
run is held mid-turn (the mock's gate), commits, steers every run (those acks reach it but are
never committed), and is then killed with SIGKILL. This process then attaches the fleet
(``takeover=True``: the first driver is gone), lets the runs go on, closes each once its turn is
complete, and checks what a user of a named fleet counts on:

- every event of every run was handed over at least once: the first driver had each one up to the
  commit, the second everything after it;
- nothing committed came again, and each run's events came in order;
- the steer that the first driver sent and the one this one sends are both acknowledged, the new
  control under the next seq;
- each run's whole transcript (the first driver's part, then the second's) is the mock's;
- after ``close`` no run's process, no state folder and no named actor is left.

It prints one line per check and ``PASS`` (exit 0) or ``FAIL`` (exit 1).
"""

from __future__ import annotations

import json
import os
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAME = "fleet-restart-example"
RUNS = 4
GUARD = 120.0  # seconds: a hang guard, not a pace


def mock(gate: str) -> dict[str, Any]:
    return {"steps": 2, "deltas": 6, "tools": 1, "gate_path": gate, "gate_steps": [1]}


def first_driver(address: str, state_root: str, out: str, nodes: list[str], gates: list[str]) -> None:
    """The driver that dies: it writes each event it takes to ``out``, one JSON line each."""
    from fenwire_fast.live.child.mock_agent import gate_label
    from fenwire_fast.live.fleet import Fleet

    fleet = Fleet(address=address, name=NAME, state_root=state_root)
    children = [
        fleet.spawn("Do the task.", run=f"task-{i}", node=nodes[i % len(nodes)], mock=mock(gates[i]))
        for i in range(RUNS)
    ]
    held: set[str] = set()
    with open(out, "a", buffering=1, encoding="utf-8") as log:

        def take() -> None:
            for child, messages in fleet.poll_batches(timeout=0.5):
                for message in messages:
                    log.write(json.dumps({"run": child.run, "event": message}) + "\n")
                    if message["type"] == "info" and message.get("summary") == gate_label(1, 1):
                        held.add(child.run)

        while len(held) < len(children):
            take()
        fleet.commit()
        log.write(json.dumps({"committed": {c.run: c.committed for c in children}}) + "\n")
        log.write(json.dumps({"steers": {c.run: c.steer("look left") for c in children}}) + "\n")
        while True:  # until killed: what comes now is handed over, never committed
            take()


def main() -> int:
    import fenwire_fast
    import ray
    from fenwire_fast.live.child.mock_agent import config_from_mapping
    from fenwire_fast.live.fleet import Fleet
    from fenwire_fast.testing import check_transcript
    from ray.cluster_utils import Cluster

    # the cluster's workers and the first driver import this fenwire_fast, even from a source tree
    package = str(Path(fenwire_fast.__file__).resolve().parent.parent)
    if package not in {str(Path(p).resolve()) for p in site.getsitepackages()}:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")]))
    work = Path(tempfile.mkdtemp(prefix="fleet-restart-"))
    state_root, out = work / "state", work / "first-driver.jsonl"
    gates = [str(work / f"gate-{i}") for i in range(RUNS)]
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    checks: list[tuple[bool, str]] = []
    try:
        nodes = [cluster.add_node(num_cpus=1).node_id for _ in range(2)]
        cluster.wait_for_nodes()
        argv = [sys.executable, __file__, "--first", cluster.address, str(state_root), str(out)]
        driver = subprocess.Popen([*argv, json.dumps(nodes), json.dumps(gates)], start_new_session=True)
        records = wait_for_acks(driver, out)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        print(f"first driver: took {sum('event' in r for r in records)} events, committed, steered, killed")
        committed: dict[str, int] = next(r["committed"] for r in records if "committed" in r)
        steers: dict[str, int] = next(r["steers"] for r in records if "steers" in r)
        before = {run: [r["event"] for r in records if r.get("run") == run] for run in committed}

        fleet = Fleet.attach(cluster.address, name=NAME, takeover=True)
        events: dict[str, list[dict[str, Any]]] = {}
        fresh = {c.run: c.steer("look right") for c in fleet.children}
        for gate in gates:
            Path(gate).touch()
        for child, messages in fleet.batches():  # until every run has finished
            events.setdefault(child.run, []).extend(messages)
            if any(m["type"] == "turn-complete" for m in messages):
                child.close()
            fleet.commit()
        pids = [c.pid for c in fleet.children]
        statuses = {c.run: c.status for c in fleet.children}
        fleet.close()
        print(f"second driver: attached {len(statuses)} runs, took {sum(map(len, events.values()))} events")

        def check(ok: bool, what: str) -> None:
            checks.append((ok, what))
            print(f"  [{'ok' if ok else 'FAIL'}] {what}")

        check(all(s == "done" for s in statuses.values()), f"every run ended done: {statuses}")
        check(
            all(
                [e["seq"] for e in before[run]][: committed[run]] == list(range(1, committed[run] + 1))
                for run in committed
            ),
            "the first driver had every event up to the commit",
        )
        check(
            all(
                [e["seq"] for e in events[run]] == list(range(committed[run] + 1, events[run][-1]["seq"] + 1))
                for run in committed
            ),
            "the second had every event after it, in order, and nothing committed came again",
        )
        check(
            all(fresh[run] == steers[run] + 1 for run in committed)
            and all(
                {steers[run], fresh[run]} <= {e["ref"] for e in events[run] if e["type"] == "control-ack"}
                for run in committed
            ),
            "both drivers' steers were acknowledged, the new one under the next seq",
        )
        config = config_from_mapping(mock(gates[0]))
        check(
            all(check_transcript(config, before[run][: committed[run]] + events[run]) == [] for run in committed),
            "each run's transcript, the first driver's part then the second's, is the mock's",
        )
        ray.init(address=cluster.address)  # the fleet shut its connection down on close
        left = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(NAME)]
        check(
            not state_root.exists() and not left and not any(os.path.exists(f"/proc/{p}") for p in pids),
            "after close: no process, no state folder, no named actor",
        )
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    ok = bool(checks) and all(ok for ok, _ in checks)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def wait_for_acks(driver: subprocess.Popen[bytes], out: Path) -> list[dict[str, Any]]:
    """The first driver's records, once it took the acks of every steer it sent."""
    end = time.monotonic() + GUARD
    while True:
        if driver.poll() is not None or time.monotonic() > end:
            raise SystemExit("the first driver ended or hung before its steers were acknowledged")
        records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        steers = next((r["steers"] for r in records if "steers" in r), None)
        acked = {
            (r["run"], r["event"].get("ref")) for r in records if "event" in r and r["event"]["type"] == "control-ack"
        }
        if steers is not None and all((run, seq) in acked for run, seq in steers.items()):
            return records
        time.sleep(0.05)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first"]:
        address, state_root, out, nodes, gates = sys.argv[2:7]
        first_driver(address, state_root, out, json.loads(nodes), json.loads(gates))
    else:
        sys.exit(main())
