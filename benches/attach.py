"""``Hub.attach`` after a restart: a state dir of 1,000 durable runs, half of them finished.

Run ``python benches/attach.py [--runs 1000] [--rounds 5] [--backends rust,pure] [--drains
poll_batches,batches]``. Nothing here is a test: the figures go to BENCHMARKS.md.

The state dir is made through the real API, by a first parent in a process of its own:

1. ``Hub(state_dir=...)`` spawns every run with a prompt (``hub.spawn(prompt, command=["sleep",
   ...])``: real children with real pids, which a later hub adopts by pidfd and start time);
2. each run's events are appended by the child's own writer (``live.child.event_writer``), made
   the way the child presenter makes them: ``ready``, the ack of the prompt, ``turn-started``,
   ``user``, then 2 to 10 steps of ``llm-start``, thinking deltas (sometimes) and an
   ``assistant-thinking``, 5 to 60 text deltas (``benches/realistic.py``: Markdown prose with
   code, escapes and non-ASCII), ``assistant-text``, ``assistant-stream-end``, ``llm-end`` and,
   between steps, one or two ``tool-call`` / ``tool-result`` pairs (0.2-6 KB results);
3. the first parent drains what was written so far (``hub.poll_batches``), sends ``close`` to
   the runs that will finish, calls ``hub.commit()`` and goes (``hub.detach()``, process exit);
4. with no parent, the children write the rest: a finished run acknowledges the ``close`` and
   ends its turn (``turn-complete``, ``result``, ``exit``), then its process ends; a living run
   writes a few more events of its turn and goes on running.

Half the runs are finished, half living; across both, half were committed partway (30-70 % of
their events) and half near their end (everything but the last 1-20 events, or the ending of a
finished run). Every run so has a backlog after its commit.

Each measurement is a fresh process: ``Hub.attach(PATH)`` itself, then a drain until every run's
events after its commit have been handed over (checked by ``seq``: each run exactly from its
committed position + 1 to its last event) and every finished run is finished; then
``hub.detach()``, which leaves the state dir as it was, so every variant is measured on the same
state dir, in interleaved rounds (the order reversed every other round). Two drains:
``poll_batches`` (``hub.poll_batches()`` in a loop: each fair round comes as one list, up to one
read of every run at once) and ``batches`` (``for child, messages in hub.batches()``: each read
handled before the next is made). Memory: growth of the peak RSS (``VmHWM``) over the RSS before
the attach, in the timed processes; ``tracemalloc``'s peak in one more process per variant (not
timed: tracing slows everything down). Last, a hub attaches and ``close()``-s, which kills the
living children; whatever still runs then is killed by its pid and start time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SLEEPER = ["sleep", "7200"]
PROMPTS = [
    "Fix the failing test in `tests/test_parser.py` and explain the cause.",
    "Refactor the cache module: keep the public API, add type hints — then run the suite.",
    "Résumé the open issues about the tailer and propose a plan.",
    "Why does `fenwire check` reject this file? Look at the lines around seq 4120.",
]


# -- the state dir ------------------------------------------------------------------------------


def run_script(rng: random.Random, prompt: str, finished: bool) -> list[tuple[str, dict[str, Any]]]:
    """One run's events, as the child presenter writes them: ``(type, payload)`` pairs; a living
    run's stop mid-turn, a finished run's end with ``turn-complete``, ``result`` and ``exit``."""
    from fenwire_fast.normalize import normalize
    from realistic import RunMaker

    maker = RunMaker(rng.randrange(1 << 30))
    clock = [1_796_000_000.0 + rng.randrange(86_400)]

    def raw(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        clock[0] += rng.random() * 0.08  # a few dozen events a second
        out = normalize(event, now=clock[0])
        return out.pop("type"), out

    events: list[tuple[str, dict[str, Any]]] = [
        ("ready", {}),
        ("control-ack", {"ref": 1, "status": "accepted"}),
        ("turn-started", {"turn": 1}),
        raw({"type": "user", "text": prompt}),
    ]
    steps = rng.randint(2, 10)
    usage = {"input": 0, "output": 0}
    final = ""
    for step in range(1, steps + 1):
        last = step == steps
        events.append(raw(maker.event("llm-start")))
        thinking = [maker.delta() for _ in range(rng.choice((0, 0, 3, 8, 15)))]
        for piece in thinking:
            events.append(raw({"type": "assistant-thinking-delta", "content-index": 0, "delta": piece}))
        if thinking:
            events.append(raw({"type": "assistant-thinking", "content-index": 0, "text": "".join(thinking)}))
        deltas = [maker.delta() for _ in range(rng.randint(5, 60))]
        for piece in deltas:
            events.append(raw({"type": "assistant-text-delta", "content-index": 0, "delta": piece}))
        final = "".join(deltas)
        events.append(raw({"type": "assistant-text", "final?": last, "content-index": 0, "text": final}))
        events.append(raw({"type": "assistant-stream-end", "final?": last}))
        step_usage = {"input": rng.randint(1000, 90000), "output": rng.randint(50, 4000)}
        usage = {k: usage[k] + step_usage[k] for k in usage}
        end = {"type": "llm-end", "stop-reason": "end-turn" if last else "tool-use", "usage": step_usage}
        events.append(raw(end))
        if not last:
            for _ in range(rng.randint(1, 2)):
                events.append(raw(maker.event("tool-call")))
                events.append(raw(maker.event("tool-result")))
    if not finished:
        return events[: rng.randint(len(events) * 6 // 10, len(events))]
    events.append(("turn-complete", {"turn": 1, "stop-reason": "end-turn", "usage": usage}))
    events.append(("result", {"final-text": final, "stop-reason": "end-turn", "usage": usage}))
    events.append(("exit", {"status": "done"}))
    return events


def history(seed: int, size: int) -> tuple[bytes, int]:
    """A long first stretch of a turn, for runs with a large history (``--history-mb``): the
    event lines of run ``agent-XXXX`` (``ready``, the prompt's ack, ``turn-started``, ``user``,
    then step after step of the script's kinds of events) up to ``size`` bytes, and their count."""
    from fenwire_fast import Sender

    rng = random.Random(seed)
    sender = Sender("event", "agent-XXXX")
    out: list[bytes] = []
    total = 0
    while total < size:
        script = run_script(random.Random(rng.randrange(1 << 62)), PROMPTS[0], False)
        for etype, payload in script if not out else script[4:]:
            if etype in ("turn-complete", "result", "exit"):
                continue
            line, rejection = sender.next(etype, payload)
            assert line is not None, rejection
            out.append(line + b"\n")
            total += len(line) + 1
    return b"".join(out), sender.seq


def build(path: str, runs: int, seed: int, history_mb: float = 0.0) -> dict[str, dict[str, Any]]:
    """The first parent: make the state dir at ``path`` (see the module docstring); return what
    each run must hand over after an attach (``{run: {total, committed, finished}}``)."""
    from fenwire_fast.live.child.event_writer import EventWriter
    from fenwire_fast.live.parent.durable import read_manifests
    from fenwire_fast.live.parent.hub import Hub

    rng = random.Random(seed)
    hub = Hub(state_dir=path)
    plan: dict[str, dict[str, Any]] = {}
    tails: dict[str, tuple[EventWriter, list[tuple[str, dict[str, Any]]]]] = {}
    children = []
    t0 = time.monotonic()
    past, held = history(seed, int(history_mb * 1e6)) if history_mb else (b"", 0)
    for i in range(runs):
        finished, partway = i % 2 == 0, (i // 2) % 2 == 0
        run = f"agent-{i:04d}"
        prompt = PROMPTS[i % len(PROMPTS)]
        child = hub.spawn(prompt, command=SLEEPER, run=run)
        children.append(child)
        events = run_script(random.Random(rng.randrange(1 << 62)), prompt, finished)
        n = len(events)
        if partway:
            cut = rng.randint(n * 3 // 10, n * 7 // 10)
        elif finished:
            cut = n - 3 - rng.randint(0, 5)  # the turn's last events and its ending come after
        else:
            cut = n - rng.randint(1, min(20, n - 5))
        if finished:  # the close sent by the first parent is acknowledged soon after it was sent
            events.insert(min(cut + rng.randint(0, 3), n - 3), ("control-ack", {"ref": 2, "status": "accepted"}))
        writer = EventWriter(child.event_path, run, print)
        if held:  # the long history first; the script goes on after it, in the same turn
            with open(child.event_path, "ab") as handle:
                handle.write(past.replace(b'"run":"agent-XXXX"', f'"run":"{run}"'.encode()))
            writer._sender.seq = held
            events, n, cut = events[4:], n - 4, cut - 4
        for etype, payload in events[:cut]:
            writer.emit(etype, payload)
        writer.flush()
        tails[run] = (writer, events[cut:])
        plan[run] = {"total": held + len(events), "committed": held + cut, "finished": finished}
    spawned = time.monotonic() - t0
    # the first parent drains what is there, closes the runs that will finish, and commits
    delivered = dict.fromkeys(plan, 0)
    want = sum(p["committed"] for p in plan.values())
    got = 0
    deadline = time.monotonic() + 600
    while got < want:
        batches = hub.poll_batches()
        for child, messages in batches:
            delivered[child.run] += len(messages)
            got += len(messages)
        if not batches:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the first parent got {got} of {want} events")
            hub.sleep(0.5)
    for child in children:
        if plan[child.run]["finished"]:
            child.close()
    written = hub.commit()
    hub.detach()
    # no parent now: the children write the rest, and the finished ones end
    for writer, rest in tails.values():
        for etype, payload in rest:
            writer.emit(etype, payload)
        writer.flush()
        writer.close()
    for child in children:
        if plan[child.run]["finished"]:
            os.killpg(child.pid, signal.SIGTERM)
            child.process.wait()
    for name, manifest in read_manifests(path):
        if isinstance(manifest, str) or manifest.committed_seq != plan[manifest.run]["committed"]:
            raise RuntimeError(f"{name}: not the manifest expected: {manifest}")
    size = sum(os.path.getsize(os.path.join(path, n, "events.jsonl")) for n, _ in read_manifests(path))
    events = sum(p["total"] for p in plan.values())
    print(
        f"built {runs} runs in {time.monotonic() - t0:.1f} s (spawns and writing {spawned:.1f} s), "
        f"{written} manifests committed; {events:,} events, {size / 1e6:.1f} MB of event files, "
        f"{sum(p['total'] - p['committed'] for p in plan.values()):,} after the commits",
        flush=True,
    )
    return plan


# -- one measurement (a fresh process) ----------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def measure(path: str, plan: dict[str, dict[str, Any]], drain: str, trace: bool) -> dict[str, Any]:
    """Attach, drain every backlog, detach; the times, the memory and what was handed over."""
    import gc
    import tracemalloc

    from fenwire_fast import IMPLEMENTATION
    from fenwire_fast.live.parent.hub import Hub

    gc.collect()
    rss0 = _status_kb("VmRSS")
    if trace:
        tracemalloc.start()
    clock, cpu = time.perf_counter, time.process_time
    t0, c0 = clock(), cpu()
    hub = Hub.attach(path)
    t1, c1 = clock(), cpu()
    last = {c: plan[c.run]["committed"] for c in hub.children}
    pending = set(hub.children)
    handed = reads = 0
    deadline = time.monotonic() + 600

    def caught_up(child: Any) -> bool:
        return last[child] == plan[child.run]["total"] and (child.finished or not plan[child.run]["finished"])

    def take(child: Any, messages: list[dict[str, Any]]) -> None:
        nonlocal handed, reads
        n = len(messages)
        if messages[0]["seq"] != last[child] + 1 or messages[-1]["seq"] != last[child] + n:
            raise AssertionError(f"{child.run}: seq {messages[0]['seq']}..{messages[-1]['seq']} after {last[child]}")
        last[child] += n
        handed += n
        reads += 1
        if caught_up(child):
            pending.discard(child)

    if drain == "batches":
        # one read at a time, each handled before the next is made; the hub would sleep once
        # nothing is left to read, so the loop stops as soon as every run has caught up
        signal.alarm(600)
        for child, messages in hub.batches():
            take(child, messages)
            if not pending:
                break
        signal.alarm(0)
    while pending:  # drain == "poll_batches": one fair round at a time, as a list
        batches = hub.poll_batches()
        brought = bool(batches)
        for child, messages in batches:
            take(child, messages)
        del batches
        if not pending:
            break
        for child in [c for c in pending if caught_up(c)]:
            pending.discard(child)
        if pending and not brought:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(pending)} runs not caught up")
            hub.sleep(0.5)
    t2, c2 = clock(), cpu()
    traced = tracemalloc.get_traced_memory()[1] if trace else 0
    tracemalloc.stop()
    hwm = _status_kb("VmHWM")
    statuses: dict[str, int] = {}
    for child in hub.children:
        statuses[child.status] = statuses.get(child.status, 0) + 1
    errors = list(hub.attach_errors)
    adopted = len(hub.children)
    hub.detach()
    expected = sum(p["total"] - p["committed"] for p in plan.values())
    if errors or adopted != len(plan) or handed != expected:
        raise AssertionError(f"attach errors {errors[:3]}, {adopted} runs, {handed} of {expected} events")
    return {
        "backend": IMPLEMENTATION,
        "drain": drain,
        "attach_s": t1 - t0,
        "attach_cpu_s": c1 - c0,
        "drain_s": t2 - t1,
        "drain_cpu_s": c2 - c1,
        "total_s": t2 - t0,
        "total_cpu_s": c2 - c0,
        "events": handed,
        "reads": reads,
        "rss_growth_mb": (hwm - rss0) / 1024,
        "tracemalloc_peak_mb": traced / 2**20,
        "statuses": statuses,
    }


# -- the driver ---------------------------------------------------------------------------------


def _child(args: list[str], pure: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("FENWIRE_NO_EXTENSIONS", None)
    if pure:
        env["FENWIRE_NO_EXTENSIONS"] = "1"
    out = subprocess.run(
        [sys.executable, __file__, *args], env=env, check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _runs_time(path: str, pure: bool) -> float:
    """Seconds ``fenwire runs PATH --json`` takes, in a process of its own (its start included)."""
    env = dict(os.environ)
    env.pop("FENWIRE_NO_EXTENSIONS", None)
    if pure:
        env["FENWIRE_NO_EXTENSIONS"] = "1"
    command = [sys.executable, "-m", "fenwire_fast", "runs", path, "--json"]
    t0 = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _running(pid: int) -> bool:
    """``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def _kill_leftovers(path: str) -> int:
    """SIGKILL every run's process still running (checked by pid and start time); how many."""
    from fenwire_fast.live.parent.adopt import alive
    from fenwire_fast.live.parent.durable import read_manifests

    killed = 0
    try:
        found = read_manifests(path)
    except OSError:
        return 0
    for _name, manifest in found:
        if not isinstance(manifest, str) and manifest.pid is not None and alive(manifest) and _running(manifest.pid):
            try:
                os.killpg(manifest.pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def finish(path: str) -> dict[str, Any]:
    """Attach and close: the living children are killed, every process reaped or waited for."""
    from fenwire_fast.live.parent.hub import Hub

    hub = Hub.attach(path)
    n = len(hub.children)
    hub.close()
    return {"closed": n}


def _fmt(rows: list[dict[str, Any]], key: str, scale: float = 1e3) -> str:
    values = sorted(r[key] * scale for r in rows)
    return f"{statistics.median(values):.0f} ({values[0]:.0f}-{values[-1]:.0f})"


DRAINS = ("poll_batches", "batches")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all", choices=["all", "build", "measure", "finish"])
    parser.add_argument("--dir", help="the state dir (default: a new temporary directory, removed at the end)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5, help="timed attaches of each variant (default 5)")
    parser.add_argument("--backends", default="rust,pure", help="rust, pure or both (default rust,pure)")
    parser.add_argument(
        "--drains",
        default=",".join(DRAINS),
        help="how the backlog is taken: poll_batches (a fair round as a list), batches (one read at a "
        "time), or both (default)",
    )
    parser.add_argument("--drain", default="poll_batches", choices=DRAINS, help="measure: the drain")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--tracemalloc", action="store_true", help="measure: trace allocations (not timed)")
    parser.add_argument("--keep", action="store_true", help="all: leave the state dir (its children killed)")
    parser.add_argument("--no-tracemalloc", action="store_true", help="all: skip the tracemalloc processes")
    parser.add_argument(
        "--history-mb", type=float, default=0.0, help="MB of earlier events before each run's script (default 0)"
    )
    args = parser.parse_args()
    if args.what == "build":
        plan = build(args.dir, args.runs, args.seed, args.history_mb)
        Path(args.dir + ".plan.json").write_text(json.dumps(plan))
        return
    if args.what == "measure":
        plan = json.loads(Path(args.dir + ".plan.json").read_text())
        print(json.dumps(measure(args.dir, plan, args.drain, args.tracemalloc)))
        return
    if args.what == "finish":
        print(json.dumps(finish(args.dir)))
        return

    from fenwire_fast import IMPLEMENTATION

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"python {sys.version.split()[0]}, default backend {IMPLEMENTATION}, load average {load}", flush=True)
    base = tempfile.mkdtemp(prefix="fenwire-attach-") if args.dir is None else None
    path = os.path.join(base, "state") if base is not None else os.path.abspath(args.dir)
    variants = [
        (backend.strip(), drain.strip())
        for backend in args.backends.split(",")
        if backend.strip()
        for drain in args.drains.split(",")
        if drain.strip()
    ]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {v: [] for v in variants}
    traced: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        subprocess.run(
            [sys.executable, __file__, "build", "--dir", path, "--runs", str(args.runs), "--seed", str(args.seed)]
            + ["--history-mb", str(args.history_mb)],
            check=True,
        )
        for r in range(args.rounds):
            for backend, drain in variants if r % 2 == 0 else variants[::-1]:  # interleaved, alternating order
                row = _child(["measure", "--dir", path, "--drain", drain], backend == "pure")
                rows[backend, drain].append(row)
                print(
                    f"round {r + 1} {row['backend']:<6} {drain:<12}: attach {row['attach_s'] * 1e3:.0f} ms "
                    f"(CPU {row['attach_cpu_s'] * 1e3:.0f}), caught up after {row['total_s'] * 1e3:.0f} ms "
                    f"(CPU {row['total_cpu_s'] * 1e3:.0f}); {row['events']:,} events in {row['reads']:,} reads; "
                    f"peak RSS +{row['rss_growth_mb']:.1f} MB; {row['statuses']}",
                    flush=True,
                )
        for backend in dict.fromkeys(v[0] for v in variants):
            print(f"{backend:<6} fenwire runs --json: {_runs_time(path, backend == 'pure') * 1e3:.0f} ms", flush=True)
        for backend, drain in variants:
            if args.no_tracemalloc:
                traced[backend, drain] = {"tracemalloc_peak_mb": float("nan")}
                continue
            traced[backend, drain] = _child(
                ["measure", "--dir", path, "--drain", drain, "--tracemalloc"], backend == "pure"
            )
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"\nmedians of {args.rounds} rounds (min-max), load average now {load}:")
        for variant in variants:
            got = rows[variant]
            if not got:
                continue
            print(
                f"  {got[0]['backend']:<6} {variant[1]:<12}: Hub.attach {_fmt(got, 'attach_s')} ms, "
                f"CPU {_fmt(got, 'attach_cpu_s')} ms; every backlog handed over after {_fmt(got, 'total_s')} ms, "
                f"CPU {_fmt(got, 'total_cpu_s')} ms (the drain alone {_fmt(got, 'drain_s')} ms); "
                f"peak RSS +{_fmt(got, 'rss_growth_mb', 1)} MB; "
                f"tracemalloc peak {traced[variant]['tracemalloc_peak_mb']:.1f} MB"
            )
    finally:
        try:
            closed = _child(["finish", "--dir", path], False)["closed"]
        except (subprocess.CalledProcessError, ValueError):
            closed = -1
        killed = _kill_leftovers(path)
        print(f"cleanup: a hub attached {closed} runs and closed them; {killed} processes left over, killed")
        if base is not None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
