"""Durable runs taken up again by ``Hub.attach`` after the parent was SIGKILLed.

1. A first parent runs in a subprocess (:data:`PARENT`): it makes ``Hub(state_dir=...)`` under
   the test's ``tmp_path``, spawns gated mock runs, logs every event it hands over (``D run seq
   type``, one ``write`` each) and every commit (``C run seq``, from the manifest it just wrote),
   sends the controls the test asks for (``S run seq type``) and then stops consuming (``HALT``).
   The test brings each run to the point it wants -- the child stopped at a gate, an ack written
   but unread or not written at all (the child is SIGSTOPped), a ``result`` with a large
   final-text file written but unread, a ``result`` read but not committed, an ``exit`` written
   but unread -- waiting on files, never on time, and SIGKILLs the parent. The test is then the
   second parent: ``Hub.attach`` over the same state dir (blocking iteration, ``batches()``,
   ``async for`` or ``batches_async()``, as the first parent did), every run finished, and every
   delivery checked against the files: each event at least once across both parents, nothing at
   or before the first parent's last commit again, each commit recording exactly what was handed
   over, in order and without duplicates within a parent, the mock's script exactly
   (``check_transcript``), the whole final text read once and its file removed, control ``seq``
   never reused, every run closed and nothing left running. ``detach`` then ``attach`` in one
   process too.
2. A manifest whose pid is now another process (another start time, another boot) is not adopted
   and that process never signalled; a pid never recorded is found by the run's event file; an
   adopted child can be waited for.
3. Durable children outlive a SIGKILLed parent, and the grandchildren of adopted children are gone
   after ``kill``, ``cancel`` or ``done``.
4. Manifests that cannot be used are skipped with a message in ``attach_errors``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.live.child.mock_agent import config_from_mapping, final_text
from fenwire_fast.live.parent import durable
from fenwire_fast.live.parent.adopt import AdoptedProcess, alive
from fenwire_fast.live.parent.durable import Manifest, StateDirBusy, read_manifests
from fenwire_fast.live.parent.final_text import FinalTextRead
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.parent.spawn import LiveChild
from fenwire_fast.testing import check_transcript
from live_harness import HANG_GUARD, child_env, process_gone, wait_gone
from live_harness import recorded_run as _ended_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")

#: the mock's script: three steps a turn, stopped at the start of the second (steering sent at
#: the gate is taken at the boundary to the third)
MOCK = {"steps": 3, "deltas": 2, "tool_result_bytes": 32, "gate_steps": [2]}
#: a final text too large for the ``result`` line: the child writes it to a file
LARGE = 100_000

PARENT = textwrap.dedent(
    """
    import asyncio, hashlib, json, os, sys, time
    from fenwire_fast.live.parent.hub import Hub

    cfg = json.load(open(sys.argv[1]))
    log_fd = os.open(cfg["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def log(*parts):
        os.write(log_fd, (" ".join(str(p) for p in parts) + "\\n").encode())

    hub = Hub(state_dir=cfg["state"])
    specs = {spec["run"]: spec for spec in cfg["runs"]}
    children = {}
    for spec in cfg["runs"]:
        kwargs = {"env": cfg["env"], "grace": 15.0, "term_grace": 0.5, "timeout": cfg["timeout"]}
        if spec.get("mock") is not None:
            kwargs["mock"] = spec["mock"]
        if spec.get("agent"):
            kwargs["agent"], kwargs["agent_config"] = spec["agent"], spec["agent_config"]
        child = children[spec["run"]] = hub.spawn("go", run=spec["run"], **kwargs)
        log("spawned", spec["run"], child.pid, child.durable.manifest.name)

    reached, results = set(), set()
    units = 0
    committing = True

    def commit():
        hub.commit()
        for child in hub.children:
            log("C", child.run, child.durable.manifest.committed_seq)

    def deliver(child, messages):
        global units
        units += 1
        spec = specs[child.run]
        hit = False
        for m in messages:
            log("D", child.run, m["seq"], m["type"])
            if m["type"] == spec["until"] and child.run not in reached:
                reached.add(child.run)
                hit = True
            if m["type"] == "result":
                text = (child.channel.final_text or "").encode("utf-8")
                log("F", child.run, len(text), hashlib.sha256(text).hexdigest())
                results.add(child.run)
        if committing and (units % cfg["every"] == 0 or hit and spec.get("commit_at_until")):
            commit()

    def phases():
        # 1: every run at its point (a gate, a tool's result), committing on the way
        global committing
        yield lambda: reached == set(specs)
        committing = False
        log("GATES")
        while not os.path.exists(cfg["go"]):  # the test's go-ahead (it may stop a child first)
            time.sleep(0.005)
        # 2: runs whose result this parent reads (its final-text file read and removed), uncommitted
        readers = [run for run, spec in specs.items() if spec.get("action") == "read-result"]
        for run in readers:
            log("S", run, children[run].close(), "close")
            open(specs[run]["gate"], "a").close()
        yield lambda: results >= set(readers)
        # 3: controls whose acks this parent never reads; then it stops consuming
        for run, spec in specs.items():
            action = spec.get("action")
            if action in ("steer", "follow-up"):
                log("S", run, children[run].send(action, {"text": action + " from the first parent"}), action)
            elif action == "close":
                log("S", run, children[run].close(), "close")
                open(spec["gate"], "a").close()
        log("HALT")

    mode = cfg["mode"]
    if mode.startswith("async"):
        async def main():
            if mode == "async-iter":
                events = hub.stream()
                async def pull():
                    child, message = await events.__anext__()
                    return child, [message]
            else:
                pull = hub.batches_async().__anext__
            for cond in phases():
                while not cond():
                    deliver(*(await pull()))
            await asyncio.sleep(3600)
        asyncio.run(main())
    else:
        if mode == "iter":
            events = iter(hub)
            def pull():
                child, message = next(events)
                return child, [message]
        else:
            pull = hub.batches().__next__
        for cond in phases():
            while not cond():
                deliver(*pull())
        time.sleep(3600)
    """
)


# -- helpers ----------------------------------------------------------------------------------------


def _until(
    what: Callable[[], Any], why: str, *, timeout: float = HANG_GUARD, parent: subprocess.Popen[bytes] | None = None
) -> Any:
    """Wait until ``what()`` is true (returning it); the timeout only guards against a hang."""
    end = time.monotonic() + timeout
    while True:
        got = what()
        if got:
            return got
        if parent is not None and parent.poll() is not None:
            raise AssertionError(f"the first parent exited ({parent.returncode}) before {why}")
        if time.monotonic() > end:
            raise TimeoutError(f"not within {timeout} s: {why}")
        time.sleep(0.005)


def _lines(path: Path) -> list[list[str]]:
    """The whole lines of a log, split into words."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [line.split() for line in data.decode().split("\n")[:-1]]


def _events(path: str | Path) -> list[dict[str, Any]]:
    """The whole lines of an event file, parsed."""
    with open(path, "rb") as handle:
        data = handle.read()
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def _has(path: str | Path, type_: str, **fields: Any) -> bool:
    return any(e["type"] == type_ and all(e.get(k) == v for k, v in fields.items()) for e in _events(path))


def _proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def _final_files(directory: str | Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("fenwire-final-"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class FirstParent:
    """The first parent, in a subprocess (:data:`PARENT`), and what its log says."""

    def __init__(self, tmp_path: Path, runs: list[dict[str, Any]], mode: str = "iter", every: int = 5) -> None:
        self.state = tmp_path / "state"
        self.log = tmp_path / "parent.log"
        self.go = tmp_path / "go"
        config = {
            "state": str(self.state),
            "log": str(self.log),
            "go": str(self.go),
            "mode": mode,
            "every": every,
            "env": child_env(),
            "timeout": HANG_GUARD,  # each run's deadline: only a guard against a hang
            "runs": runs,
        }
        path = tmp_path / "parent.json"
        path.write_text(json.dumps(config))
        self.stderr = tmp_path / "parent.stderr"
        with open(self.stderr, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-c", PARENT, str(path)],
                env={**os.environ, **child_env()},
                stdin=subprocess.DEVNULL,
                stderr=err,
            )

    def wait_for(self, marker: str) -> None:
        _until(lambda: [marker] in _lines(self.log), f"the first parent logged {marker}", parent=self.process)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        assert b"Traceback" not in self.stderr.read_bytes(), self.stderr.read_text()

    # what the log says
    def pids(self) -> dict[str, int]:
        return {w[1]: int(w[2]) for w in _lines(self.log) if w[0] == "spawned"}

    def names(self) -> dict[str, str]:
        return {w[1]: w[3] for w in _lines(self.log) if w[0] == "spawned"}

    def delivered(self) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for w in _lines(self.log):
            if w[0] == "D":
                out[w[1]].append((int(w[2]), w[3]))
        return out

    def committed(self) -> dict[str, int]:
        """Each run's last commit; each commit recorded exactly the last event handed over by then."""
        out: dict[str, int] = defaultdict(int)
        last: dict[str, int] = defaultdict(int)
        for w in _lines(self.log):
            if w[0] == "D":
                last[w[1]] = int(w[2])
            elif w[0] == "C":
                assert int(w[2]) == last[w[1]], f"commit of {w[1]} at {w[2]}, the last event handed over {last[w[1]]}"
                out[w[1]] = int(w[2])
        return out

    def sent(self) -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for w in _lines(self.log):
            if w[0] == "S":
                out[w[1]].append((int(w[2]), w[3]))
        return out

    def finals(self) -> dict[str, tuple[int, str]]:
        return {w[1]: (int(w[2]), w[3]) for w in _lines(self.log) if w[0] == "F"}


def _leftovers(state: Path) -> None:
    """After a failure: let nothing of the test run on (a stopped child is continued, then every
    child still running as recorded -- its pid with its start time -- is killed with its group)."""
    if not state.is_dir():
        return
    for _, manifest in read_manifests(str(state)):
        if isinstance(manifest, Manifest) and manifest.pid is not None and alive(manifest):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(manifest.pid, sig)
                except OSError:
                    pass


def _spec(run: str, tmp_path: Path, *, until: str = "info", **extra: Any) -> dict[str, Any]:
    gate = str(tmp_path / f"{run}.gate")
    mock = {**MOCK, "gate_path": gate, **extra.pop("mock", {})}
    return {"run": run, "mock": mock, "gate": gate, "until": until, **extra}


class SecondParent:
    """The test as the second parent: drives an attached hub to the end in one of four ways,
    recording what it hands over, sending ``close`` to each run of :attr:`closing` once it is idle
    and committing every few handovers."""

    def __init__(self, hub: Hub, closing: set[str], every: int = 3) -> None:
        self.hub = hub
        self.closing = set(closing)
        self.every = every
        self.units = 0
        self.delivered: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.finals: dict[str, str | None] = {}
        self.sent: dict[str, list[tuple[int, str]]] = defaultdict(list)
        #: what each run's manifest said when attached
        self.attached_at = {c.run: c.durable.manifest.committed_seq for c in hub.children if c.durable is not None}
        for child in hub.children:
            self._maybe_close(child)

    def commit(self) -> None:
        """Commit, and check that each manifest now says the last event handed over."""
        self.hub.commit()
        for child in self.hub.children:
            assert child.durable is not None
            done = self.delivered[child.run]
            want = done[-1][0] if done else self.attached_at[child.run]
            assert child.durable.manifest.committed_seq == want, (
                f"{child.run}: committed {child.durable.manifest.committed_seq}, handed over {want}"
            )

    def send(self, child: LiveChild, type_: str) -> None:
        self.sent[child.run].append((child.send(type_), type_))

    def _maybe_close(self, child: LiveChild) -> None:
        if child.run in self.closing and child.channel.idle and not child.finished:
            self.closing.discard(child.run)
            self.send(child, "close")

    def deliver(self, child: LiveChild, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            self.delivered[child.run].append((m["seq"], m["type"]))
            if m["type"] == "result":
                self.finals[child.run] = child.channel.final_text
        self._maybe_close(child)
        self.units += 1
        if self.units % self.every == 0:
            self.commit()

    def drive(self, mode: str) -> None:
        hub = self.hub
        if mode == "iter":
            for child, message in hub:
                self.deliver(child, [message])
        elif mode == "batches":
            for child, messages in hub.batches():
                self.deliver(child, messages)
        else:

            async def main() -> None:
                if mode == "async-iter":
                    async for child, message in hub:
                        self.deliver(child, [message])
                else:
                    async for child, messages in hub.batches_async():
                        self.deliver(child, messages)

            asyncio.run(main())
        self.commit()


def _count_final_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the path of every final-text file a channel starts to read (in this process)."""
    started: list[str] = []
    real = FinalTextRead.start.__func__  # type: ignore[attr-defined]

    def start(cls: type[FinalTextRead], directory: Any, path: object, *args: Any, **kwargs: Any) -> FinalTextRead:
        started.append(str(path))
        return real(cls, directory, path, *args, **kwargs)

    monkeypatch.setattr(FinalTextRead, "start", classmethod(start))
    return started


def _check_deliveries(
    run: str,
    events: list[dict[str, Any]],
    first: list[tuple[int, str]],
    second: list[tuple[int, str]],
    committed: int,
) -> None:
    """At least once across both parents, nothing committed again, in order and once per parent."""
    last = events[-1]["seq"]
    assert [e["seq"] for e in events] == list(range(1, last + 1)), f"{run}: the event file's seqs have gaps"
    types = {e["seq"]: e["type"] for e in events}
    seqs1, seqs2 = [s for s, _ in first], [s for s, _ in second]
    # the first parent handed over 1, 2, ... in order, once each, and committed no further
    assert seqs1 == list(range(1, len(seqs1) + 1)), f"{run}: first parent delivered {seqs1}"
    assert committed <= len(seqs1), f"{run}: committed {committed} after delivering {len(seqs1)}"
    # the second parent: exactly what follows the commit, in order, once each
    assert seqs2 == list(range(committed + 1, last + 1)), f"{run}: second parent delivered {seqs2} (commit {committed})"
    assert set(seqs1) | set(seqs2) == set(types), f"{run}: events never delivered"
    for seq, type_ in first + second:
        assert types[seq] == type_, f"{run}: seq {seq} delivered as {type_}, the file says {types[seq]}"


def _check_controls(
    run: str, control_path: str, first: list[tuple[int, str]], second: list[tuple[int, str]], cut: int = 0
) -> None:
    """Control seqs in the file run 1, 2, ... (none reused); the second parent's follow the first's;
    ``cut`` lines cut short (by a parent killed mid-write) are no controls."""
    controls = []
    with open(control_path, "rb") as handle:
        for line in handle.read().split(b"\n")[:-1]:
            try:
                controls.append(json.loads(line))
            except ValueError:
                cut -= 1
    assert cut == 0, f"{run}: lines that are not JSON in the control file"
    seqs = [c["seq"] for c in controls]
    assert seqs == list(range(1, len(seqs) + 1)), f"{run}: control seqs {seqs}"
    by_seq = {c["seq"]: c["type"] for c in controls}
    for seq, type_ in first + second:
        assert by_seq.get(seq) == type_, f"{run}: control {seq} is {by_seq.get(seq)}, sent as {type_}"
    if first and second:
        assert min(s for s, _ in second) > max(s for s, _ in first), f"{run}: control seq reused"


# -- 1. kill-and-attach ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["iter", "batches", "async-iter", "async-batches"])
def test_a_sigkilled_parent_is_taken_over_by_attach(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seven runs, each at a different point when the first parent is SIGKILLed (``mode``: how both
    parents take the events); the second parent attaches, finishes them all and every delivery is
    checked against the files."""
    runs = [
        _spec("mid", tmp_path, commit_at_until=True),  # stopped at its gate, committed there
        _spec("cancel", tmp_path, commit_at_until=True),  # stopped at its gate; the second parent cancels
        _spec("acked", tmp_path, action="steer"),  # steer sent, ack written, not read
        _spec("unacked", tmp_path, action="follow-up"),  # follow-up sent, the child stopped: no ack yet
        _spec("result", tmp_path, action="close", mock={"final_bytes": LARGE}),  # result + final file unread
        _spec("exit", tmp_path, action="close"),  # exit written, not read
        _spec("readres", tmp_path, action="read-result", mock={"final_bytes": LARGE}),  # read, not committed
    ]
    specs = {r["run"]: r for r in runs}
    configs = {r["run"]: config_from_mapping(r["mock"]) for r in runs}
    parent = FirstParent(tmp_path, runs, mode)
    try:
        parent.wait_for("GATES")
        pids, names = parent.pids(), parent.names()
        os.kill(pids["unacked"], signal.SIGSTOP)  # it reads no control until the second parent attached
        _until(lambda: _proc_state(pids["unacked"]) == "T", "the unacked run's child stopped")
        parent.go.touch()
        parent.wait_for("HALT")
        sent1 = parent.sent()
        event_path = {run: parent.state / names[run] / "events.jsonl" for run in specs}
        (acked_seq, _), (unacked_seq, _) = sent1["acked"][0], sent1["unacked"][0]
        _until(lambda: _has(event_path["acked"], "control-ack", ref=acked_seq), "the steer's ack written")
        _until(lambda: _has(event_path["result"], "result"), "the large result written")
        _until(lambda: _has(event_path["exit"], "exit"), "the exit written")
        parent.kill()

        first, committed, finals1 = parent.delivered(), parent.committed(), parent.finals()
        manifests = {m.run: m for _, m in read_manifests(str(parent.state)) if isinstance(m, Manifest)}
        assert {run: m.committed_seq for run, m in manifests.items()} == {run: committed[run] for run in specs}
        assert not any(m.closed for m in manifests.values())
        # what the first parent left: the ack, the result and the exit unread; a result read whole
        assert not _has(event_path["unacked"], "control-ack", ref=unacked_seq)
        (ack,) = [e for e in _events(event_path["acked"]) if e["type"] == "control-ack" and e.get("ref") == acked_seq]
        assert ack["seq"] > len(first["acked"])  # written, not handed over
        assert all(t not in ("result", "exit") for _, t in first["result"] + first["exit"])
        assert _final_files(parent.state / names["result"]), "the large result names no final-text file"
        whole = final_text(configs["readres"], 1)
        assert finals1["readres"] == (len(whole.encode()), _sha(whole))
        assert not _final_files(parent.state / names["readres"])  # read and removed by the first parent
        for run in ("mid", "cancel", "acked", "unacked"):  # durable: they outlived their parent
            assert alive(manifests[run]) and _proc_state(pids[run]) != "Z", run

        # as if the first parent had died writing its second control to "mid": a line cut short
        assert "mid" not in sent1
        with open(event_path["mid"].with_name("control.jsonl"), "ab") as handle:
            handle.write(b'{"v":1,"seq":2,"type":"steer","run":"mid","te')

        reads = _count_final_reads(monkeypatch)
        hub = Hub.attach(parent.state, wakeups="poll" if mode == "batches" else None)  # both drivers
        try:
            assert hub.attach_errors == []
            children = {c.run: c for c in hub.children}
            assert set(children) == set(specs)
            for run in ("mid", "cancel", "acked", "unacked"):
                assert children[run].adopted and children[run].process.returncode is None, run
            # rebuilt from the control file: the follow-up is there, unacknowledged
            assert children["unacked"].channel.unacked[unacked_seq].type == "follow-up"
            second = SecondParent(hub, closing={"mid", "acked", "unacked"})
            second.send(children["cancel"], "cancel")  # at its gate: the turn is interrupted at once
            for run in ("mid", "acked", "unacked"):
                Path(specs[run]["gate"]).touch()
            os.kill(pids["unacked"], signal.SIGCONT)
            second.drive(mode)
            statuses = {c.run: c.status for c in hub.children}
            channels = {c.run: c.channel for c in hub.children}
        finally:
            hub.close()

        want = {run: "done" for run in specs} | {"cancel": "cancelled"}
        assert statuses == want
        for run in specs:
            events = _events(event_path[run])
            _check_deliveries(run, events, first[run], second.delivered[run], committed[run])
            assert check_transcript(configs[run], events, controls=channels[run].controls) == [], run
            assert events[-1]["type"] == "exit" and events[-1]["status"] == want[run]
            cut = 1 if run == "mid" else 0
            _check_controls(run, str(event_path[run].with_name("control.jsonl")), sent1[run], second.sent[run], cut)
            assert not channels[run].unacked and {c.status for c in channels[run].controls.values()} == {"accepted"}
            assert not _final_files(event_path[run].parent), f"{run}: a final-text file left"
        # the cut line was ended by attach, and rejected by the child as a line, not as a control
        assert [e.get("reason") for e in _events(event_path["mid"]) if e.get("status") == "rejected"] == [
            "line is not valid JSON"
        ]
        # the whole final answer of the last turn, read from its file once, kept beside the run
        turns = {"unacked": 2}  # the follow-up ran a second turn
        for run in ("mid", "acked", "unacked", "result", "exit", "readres"):
            assert second.finals[run] == final_text(configs[run], turns.get(run, 1)), run
        assert [os.path.dirname(p) for p in reads] == [str(parent.state / names["result"])]
        for run in ("result", "readres"):
            kept = (parent.state / (names[run] + ".final")).read_bytes().decode()
            assert kept == f"{_events(event_path[run])[-2]['seq']}\n{final_text(configs[run], 1)}"
        # every run closed with its status; nothing left to take up, nothing left running
        for _, manifest in read_manifests(str(parent.state)):
            assert isinstance(manifest, Manifest) and manifest.closed and manifest.status == want[manifest.run]
        again = Hub.attach(parent.state)
        try:
            assert again.children == [] and again.attach_errors == []
        finally:
            again.close()
        wait_gone(pids.values())
    finally:
        parent.kill()
        _leftovers(parent.state)


def test_detach_and_attach_in_the_same_process(tmp_path: Path) -> None:
    """``detach`` lets the children run; ``attach`` in the same process (whose own children they
    are) takes them up: the events after the commit once more, each run ``done``, and each child
    reaped when it ends (no zombie left in its group, no SIGKILL needed to empty it)."""
    runs = {run: _spec(run, tmp_path) for run in ("a", "b")}
    hub = Hub(state_dir=tmp_path / "state")
    try:
        for run, spec in runs.items():
            hub.spawn("go", run=run, mock=spec["mock"], env=child_env(), grace=15.0, timeout=HANG_GUARD)
        first: dict[str, list[tuple[int, str]]] = defaultdict(list)
        at_gate: set[str] = set()
        for child, message in hub:
            first[child.run].append((message["seq"], message["type"]))
            if message["type"] == "info":
                at_gate.add(child.run)
                if child.run == "a":
                    hub.commit()  # a: committed at its gate; b: nothing committed
                if at_gate == set(runs):
                    break
        committed = {c.run: c.durable.manifest.committed_seq for c in hub.children}
        pids = {c.run: c.pid for c in hub.children}
        hub.detach()
        assert all(not process_gone(pid) for pid in pids.values())
    except BaseException:
        hub.close()
        raise
    with Hub.attach(tmp_path / "state") as again:
        assert again.attach_errors == []
        children = {c.run: c for c in again.children}
        assert all(c.adopted and c.process.returncode is None for c in children.values())
        second = SecondParent(again, closing=set(runs))
        for spec in runs.values():
            Path(spec["gate"]).touch()
        second.drive("batches")
        assert {c.run: c.status for c in again.children} == {"a": "done", "b": "done"}
        for run, child in children.items():
            assert not child.group.kill_sent, f"{run}: its group needed SIGKILL"
            assert not os.path.exists(f"/proc/{pids[run]}"), f"{run}: not reaped"
            events = _events(child.event_path)
            _check_deliveries(run, events, first[run], second.delivered[run], committed[run])
            assert check_transcript(config_from_mapping(runs[run]["mock"]), events) == []


@pytest.mark.parametrize("mode", ["iter", "async-iter"])
def test_a_commit_between_two_events_of_one_read(tmp_path: Path, mode: str) -> None:
    """Events handed over one at a time: a commit in the middle of one read records the event
    handed over last, and so does the next commit, before the run's next read."""
    other = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        fields = {"pid": other.pid, "start": durable.process_start(other.pid), "boot": durable.boot_id()}
        _ended_run(tmp_path / "state", "running", **fields)  # four events, read at once
        with Hub.attach(tmp_path / "state") as hub:
            (child,) = hub.children
            assert child.adopted and child.process.returncode is None  # running: more may come
            recorded = []

            def handle(message: dict[str, Any]) -> None:
                if message["seq"] in (2, 4):
                    hub.commit()
                    recorded.append((message["seq"], child.durable.manifest.committed_seq))  # type: ignore[union-attr]
                if message["seq"] == 4:
                    child.kill()

            if mode == "iter":
                for _, message in hub:
                    handle(message)
            else:

                async def main() -> None:
                    async for _, message in hub:
                        handle(message)

                asyncio.run(main())
            assert recorded == [(2, 2), (4, 4)]
    finally:
        if other.poll() is None:
            other.kill()
        other.wait()


# -- 2. a reused pid ------------------------------------------------------------------------------


def _gone() -> dict[str, Any]:
    """Manifest fields naming a process that has ended (a ``true`` of this test, reaped)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return {"pid": gone.pid, "start": 1, "boot": durable.boot_id()}


def _spy_on_signals(monkeypatch: pytest.MonkeyPatch, pid: int) -> list[tuple[str, int]]:
    """Record every signal (but the probe, 0) this process sends to ``pid`` or its group."""
    sent: list[tuple[str, int]] = []
    real_kill, real_killpg = os.kill, os.killpg

    def kill(target: int, sig: int) -> None:
        if target == pid and sig:
            sent.append(("kill", sig))
        real_kill(target, sig)

    def killpg(target: int, sig: int) -> None:
        if target == pid and sig:
            sent.append(("killpg", sig))
        real_killpg(target, sig)

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(os, "killpg", killpg)
    return sent


@pytest.mark.parametrize("differs", ["start", "boot"])
def test_a_reused_pid_is_not_adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, differs: str) -> None:
    """The manifest's pid is a living process of this test (leading its own group, as a child
    would) but with another start time, or recorded in another boot: the run is treated as ended
    (read to its end: ``failed``, ended without an exit line) and that process is never signalled."""
    other = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        start = durable.process_start(other.pid)
        assert start is not None
        if differs == "start":
            fields = {"pid": other.pid, "start": start + 1, "boot": durable.boot_id()}
        else:
            fields = {"pid": other.pid, "start": start, "boot": "another-boot"}
        state = tmp_path / "state"
        manifest = _ended_run(state, "reused", **fields)
        assert not alive(manifest)
        signals = _spy_on_signals(monkeypatch, other.pid)
        with Hub.attach(state) as hub:
            assert hub.attach_errors == []
            (child,) = hub.children
            assert child.process.returncode is not None  # not adopted as running
            assert hub.wait(HANG_GUARD) == {"reused": "failed"}
            assert child.error is not None and "ended" in child.error and "without an exit line" in child.error
            assert child.channel.last_seq == 4 and child.delivered_seq == 4
            assert hub.commit() == 1
        assert signals == []
        assert other.poll() is None and durable.process_start(other.pid) == start
        assert _proc_state(other.pid) in ("S", "R")  # not stopped either
        ((_, closed),) = read_manifests(str(state))
        assert isinstance(closed, Manifest) and closed.closed and closed.status == "failed"
    finally:
        other.kill()
        other.wait()


def test_a_run_whose_pid_was_never_recorded_is_found_by_its_event_file(tmp_path: Path) -> None:
    """A parent killed between starting a child and recording its pid: the process that leads its
    own group with the run's ``FEN_WIRE_EVENT_PATH`` is adopted, and can be stopped."""
    state = tmp_path / "state"
    manifest = _ended_run(state, "unrecorded")
    env = {**os.environ, "FEN_WIRE_EVENT_PATH": manifest.event_path}
    stray = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL, env=env)
    try:
        _until(lambda: durable.process_start(stray.pid) is not None and _proc_state(stray.pid) == "S", "sleep running")
        with Hub.attach(state) as hub:
            (child,) = hub.children
            assert child.adopted and child.pid == stray.pid and child.process.returncode is None
            child.kill()
            assert hub.wait(HANG_GUARD) == {"unrecorded": "failed"}
            assert child.killed
        # killed, and reaped by the hub (a child of this process): its exit code went with it
        assert not os.path.exists(f"/proc/{stray.pid}")
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_an_adopted_child_is_waited_for_without_a_timeout(tmp_path: Path) -> None:
    """``child.process.wait()`` with no timeout blocks until the adopted process ends, as
    ``Popen.wait()`` does (another thread kills it meanwhile), and says its code is unknown."""
    other = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        fields = {"pid": other.pid, "start": durable.process_start(other.pid), "boot": durable.boot_id()}
        _ended_run(tmp_path / "state", "waited", **fields)
        with Hub.attach(tmp_path / "state") as hub:
            (child,) = hub.children
            assert child.adopted and child.process.returncode is None
            # the kill only ends the wait; whenever it comes, wait() must not give up before it
            killer = threading.Timer(0.2, os.killpg, (other.pid, signal.SIGKILL))
            killer.start()
            try:
                assert child.process.wait() == AdoptedProcess.UNKNOWN
            finally:
                killer.cancel()
                killer.join()
            assert child.process.returncode == AdoptedProcess.UNKNOWN
            assert hub.wait(HANG_GUARD) == {"waited": "failed"}
    finally:
        if other.poll() is None:
            other.kill()
        other.wait()


# -- 3. durable children outlive their parent ---------------------------------------------------


def test_durable_children_outlive_the_parent_and_are_finished_by_attach(tmp_path: Path) -> None:
    """A parent SIGKILLed with a mock run at its gate and three runs whose tool started ``sleep
    600``: all still run afterwards; attach adopts them; the mock run finishes ``done``, and the
    grandchildren are gone after ``kill``, ``cancel`` and ``done`` through the attached hub."""
    runs = [_spec("live", tmp_path)]
    for how, then in (("kill", "yield"), ("cancel", "yield"), ("done", "done")):
        config = {"pid_file": str(tmp_path / f"{how}.pids"), "then": then}
        runs.append({"run": how, "agent": "live_agents:spawner", "agent_config": config, "until": "tool-result"})
    parent = FirstParent(tmp_path, runs, every=1)
    try:
        parent.wait_for("GATES")
        parent.go.touch()
        parent.wait_for("HALT")
        parent.kill()
        pids = parent.pids()
        grandchildren = {}
        for how in ("kill", "cancel", "done"):
            child_pid, grandchild = (int(p) for p in (tmp_path / f"{how}.pids").read_text().split())
            assert child_pid == pids[how]
            grandchildren[how] = grandchild
        manifests = {m.run: m for _, m in read_manifests(str(parent.state)) if isinstance(m, Manifest)}
        for run, pid in pids.items():
            assert alive(manifests[run]) and not process_gone(pid), f"{run} died with its parent"
        assert not any(process_gone(p) for p in grandchildren.values())

        with Hub.attach(parent.state, wakeups="poll") as hub:  # adopted processes asked each round
            assert hub.attach_errors == [] and hub.wakeups == "poll"
            children = {c.run: c for c in hub.children}
            assert set(children) == set(pids)
            for run, child in children.items():
                assert child.adopted and child.pid == pids[run] and child.process.returncode is None
            second = SecondParent(hub, closing={"live"})
            Path(runs[0]["gate"]).touch()
            # its turn may have ended, every event handed over and committed: nothing will be
            # handed over to show that it is idle (its status is "starting" until a first read)
            second.send(children["done"], "close")
            children["kill"].kill()
            second.send(children["cancel"], "cancel")
            second.drive("iter")
            assert {c.run: c.status for c in hub.children} == {
                "live": "done",
                "kill": "failed",
                "cancel": "cancelled",
                "done": "done",
            }
            assert children["kill"].killed
        wait_gone([*pids.values(), *grandchildren.values()])
        events = _events(parent.state / parent.names()["live"] / "events.jsonl")
        assert check_transcript(config_from_mapping(runs[0]["mock"]), events) == []
        again = Hub.attach(parent.state)
        try:
            assert again.children == [] and again.attach_errors == []
        finally:
            again.close()
    finally:
        parent.kill()
        _leftovers(parent.state)


# -- 4. manifests that cannot be used -------------------------------------------------------------


def _manifest_bytes(**fields: Any) -> bytes:
    manifest = Manifest(run="r", name="run-r-x", created=1.0)
    data = json.loads(manifest.to_json())
    data.update(fields)
    return json.dumps(data).encode()


def test_bad_manifests_are_skipped_with_a_message(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Each manifest that cannot be used is listed in ``attach_errors`` (its name and why), with no
    traceback; the good run beside them is taken up and read to its end."""
    state_path = tmp_path / "state"
    good = _ended_run(state_path, "good", **_gone())
    with open(good.event_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"v": 1, "seq": 5, "type": "exit", "run": "good", "status": "cancelled"}) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = _ended_run(state_path, "missing")
    for path in Path(missing.event_path).parent.iterdir():
        path.unlink()
    Path(missing.event_path).parent.rmdir()
    (elsewhere / "outside.json").write_bytes(Manifest(run="o", name="run-o", created=1.0).to_json())

    def paths_of(name: str) -> dict[str, str]:
        directory = state_path / name
        directory.mkdir(mode=0o700)
        return {
            k: str(directory / f)
            for k, f in (("control_path", "control.jsonl"), ("event_path", "events.jsonl"), ("log_path", "child.log"))
        }

    bad = {
        "run-notjson": (b'{"run": "r", "name": ', "not a manifest: not JSON"),
        "run-array": (b"[1, 2]", "not a manifest: not a JSON object"),
        "run-version": (_manifest_bytes(name="run-version", version=2), "not a manifest: manifest version 2, not 1"),
        "run-noversion": (_manifest_bytes(name="run-noversion", version=None), "manifest version None"),
        "run-dotdot": (_manifest_bytes(name="../elsewhere"), "name '../elsewhere' is not a run directory's name"),
        "run-absolute": (_manifest_bytes(name=str(elsewhere)), "is not a run directory's name"),
        "run-other": (_manifest_bytes(name="run-good"), "names another run directory ('run-good')"),
        "run-pid": (_manifest_bytes(name="run-pid", pid="123"), "pid is '123'"),
        "run-negative": (_manifest_bytes(name="run-negative", pid=-5), "pid is -5: negative"),
        "run-fields": (b'{"version": 1, "name": "run-fields"}', "not a manifest: "),
        "run-paths": (
            _manifest_bytes(name="run-paths", **{**paths_of("run-paths"), "event_path": str(elsewhere / "e.jsonl")}),
            "run-paths: its paths are not those of its run directory",
        ),
        "run-huge": (b" " * ((1 << 20) + 1), "larger than 1048576 bytes"),
    }
    for name, (data, _) in bad.items():
        (state_path / f"{name}.json").write_bytes(data)
    (state_path / "run-link.json").symlink_to(elsewhere / "outside.json")  # not followed
    bad["run-link"] = (b"", "run-link: cannot be read")
    bad["run-missing"] = (b"", f"{missing.name}: its run directory is missing")
    linked = _ended_run(state_path, "linked", **_gone())  # its directory moved out, a symlink left in its place
    with open(linked.control_path, "ab") as handle:
        handle.write(b'{"v":1,"seq":2,"type":"ste')  # a control cut short: resume() would end it
    os.rename(Path(linked.event_path).parent, elsewhere / "linked")
    os.symlink(elsewhere / "linked", Path(linked.event_path).parent)
    outside_before = (elsewhere / "linked" / "control.jsonl").read_bytes()
    bad["run-linked"] = (b"", f"{linked.name}: its run directory is not a directory")

    with pytest.raises(StateDirBusy):
        with Hub(state_dir=state_path):
            Hub.attach(state_path)
    with Hub.attach(state_path) as hub:
        errors = list(hub.attach_errors)
        assert [c.run for c in hub.children] == ["good"]
        assert hub.wait(HANG_GUARD) == {"good": "cancelled"}
    assert len(errors) == len(bad), "\n".join(errors)
    for name, (_, why) in bad.items():
        (found,) = [e for e in errors if e.startswith(f"{name}:") or e.startswith(f"{name} ")] or [
            e for e in errors if name in e
        ]
        assert why in found, (name, found)
        assert "Traceback" not in found and "\n" not in found
    assert (elsewhere / "linked" / "control.jsonl").read_bytes() == outside_before  # nothing written outside
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def test_a_manifest_with_values_out_of_range_is_skipped_and_the_others_taken_up(tmp_path: Path) -> None:
    """One unusable manifest does not stop ``attach``: each below (nested too deep for the JSON
    parser, a pid past the kernel's range, a read budget of 0 or -1, a negative watchdog, a commit
    past the run's last event, times that are not numbers) is skipped with its reason in
    ``attach_errors``, and the healthy run beside them is taken up and read to its end.
    ``fenwire runs`` lists them with their reasons, no traceback."""
    from conftest import run_cli

    state_path = tmp_path / "state"
    good = _ended_run(state_path, "good", **_gone())
    with open(good.event_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"v": 1, "seq": 5, "type": "exit", "run": "good", "status": "cancelled"}) + "\n")
    bad: dict[str, str] = {}

    def broken(run: str, why: str, **fields: Any) -> None:
        manifest = _ended_run(state_path, run, **_gone())
        data = json.loads(manifest.to_json())
        data.update(fields)
        (state_path / f"{manifest.name}.json").write_text(json.dumps(data))
        bad[manifest.name] = why

    broken("bigpid", "pid is 1099511627776: not between 1 and", pid=2**40)
    broken("nobudget", "max_bytes is 0: not between 1 and", max_bytes=0)
    broken("minusbudget", "max_bytes is -1: negative", max_bytes=-1)
    broken("stall", "stall_timeout is -1: negative", stall_timeout=-1)
    broken("nostall", "stall_timeout is 0: not above 0", stall_timeout=0)
    broken("nan", "deadline is nan", deadline=float("nan"))
    broken("inf", "grace is inf", grace=float("inf"))
    broken("seq", "committed_seq 99 is past the last event of its file (seq 4)", committed_seq=99)
    broken("status", "status is '\\x1b[2J': not a run's status", status="\x1b[2J", closed=True)
    (state_path / "run-deep.json").write_bytes(b"[" * 100_000)
    bad["run-deep"] = "not a manifest: not JSON: nested too deep"

    with Hub.attach(state_path) as hub:
        errors = list(hub.attach_errors)
        assert [c.run for c in hub.children] == ["good"]
        assert hub.wait(HANG_GUARD) == {"good": "cancelled"}
    assert len(errors) == len(bad), "\n".join(errors)
    for name, why in bad.items():
        (found,) = [e for e in errors if e.startswith(f"{name}:")]
        assert why in found, (name, found)

    proc = run_cli("runs", str(state_path))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    for name in bad:
        assert f"  {name}: " in proc.stdout, (name, proc.stdout)
    assert "committed_seq 99 is past the last event" in proc.stdout


#: ``Hub.attach(argv[1])`` in a subprocess (a guard: a hang fails the test instead of hanging it),
#: printing the runs taken up and ``attach_errors``, then what ``fenwire runs`` says of each run
#: (``inspect``). With ``argv[2] == "drop"`` it first gives up root for ``nobody`` (everything it
#: needs imported before, as the interpreter's own files are not readable by ``nobody`` here), so
#: that a file of mode 000 cannot be opened even when the tests run as root.
ATTACH = textwrap.dedent(
    """
    import json, os, sys
    # every module attach and inspect import, now: once this process is nobody, a package
    # installed under /root (mode 700) can no longer be read
    import encodings.ascii, fenwire_fast.lines, fenwire_fast.live.parent.adopt, fenwire_fast.live.parent.channel, fenwire_fast.live.parent.spawn
    from fenwire_fast.live.parent.durable import boot_id
    from fenwire_fast.live.parent.hub import Hub
    from fenwire_fast.cli.runs import inspect
    boot_id()  # read once, while /proc and the encodings can be read
    if sys.argv[2:] == ["drop"] and os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    try:
        hub = Hub.attach(sys.argv[1], wakeups="poll")
    except OSError as exc:
        out = {"refused": str(exc)}
    else:
        out = {"runs": [c.run for c in hub.children], "errors": hub.attach_errors}
        hub.detach()
    out["inspect"] = {r.run or r.name: r.problem for r in inspect(sys.argv[1])}
    print(json.dumps(out))
    """
)
#: how long the guard lets the subprocess run (it takes about a second)
GUARD = 60.0


def _attach_in_subprocess(state_path: Path, *extra: str) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", ATTACH, str(state_path), *extra],
            capture_output=True,
            text=True,
            timeout=GUARD,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"attach or inspect hung on {state_path} (killed after {GUARD} s)")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.mark.parametrize("where", ["events", "control", "manifest", "commits"])
def test_a_fifo_where_a_file_is_expected_is_refused_not_waited_on(tmp_path: Path, where: str) -> None:
    """A FIFO (``os.mkfifo``) as a run's ``events.jsonl`` or ``control.jsonl`` (which the child
    can plant: it owns its run directory), as a ``run-*.json`` manifest or as ``commits.log`` is
    never opened in a way that blocks: the run or manifest is skipped with the reason in
    ``attach_errors`` (and ``fenwire runs`` says it); a FIFO commit log makes the hub refuse the
    state dir in words. The healthy run beside them is taken up."""
    state_path = tmp_path / "state"
    good = _ended_run(state_path, "good", **_gone())
    fifo = _ended_run(state_path, "fifo", **_gone())
    directory = Path(fifo.event_path).parent
    planted = {
        "events": directory / "events.jsonl",
        "control": directory / "control.jsonl",
        "manifest": state_path / "run-pipe.json",
        "commits": state_path / "commits.log",
    }[where]
    if planted.exists():
        planted.unlink()
    os.mkfifo(planted, 0o600)
    out = _attach_in_subprocess(state_path)
    if where == "commits":
        assert out["refused"] == "[Errno 22] commits.log is a FIFO or a device, not a regular file"
        assert out["inspect"][good.run] is None  # fenwire runs reads the manifests without the log
        assert out["inspect"]["commits.log"].startswith("cannot be read: commits.log is a FIFO, not a regular file")
        return
    assert sorted(out["runs"]) == (["fifo", "good"] if where == "manifest" else ["good"]), out
    name = "run-pipe" if where == "manifest" else fifo.name
    (error,) = out["errors"]
    assert error.startswith(f"{name}: ") and f"{planted.name} is a FIFO, not a regular file" in error, error
    assert (
        f"{planted.name} is a FIFO, not a regular file" in out["inspect"]["run-pipe" if where == "manifest" else "fifo"]
    )
    assert out["inspect"][good.run] is None


def test_a_run_whose_event_file_cannot_be_opened_is_skipped_with_why() -> None:
    """A run whose ``events.jsonl`` cannot be opened (mode 000) is not adopted silently (it would
    stay ``starting``, hand nothing over and be waited for until its deadline): it is skipped with
    the reason in ``attach_errors``, as every run ``attach`` cannot read, and ``fenwire runs`` says
    why. Root opens a file of mode 000 anyway, so as root the attach runs in a subprocess that
    first becomes ``nobody`` (the state dir is then ``nobody``'s, in a directory all can enter)."""
    import shutil
    import tempfile

    top = tempfile.mkdtemp(prefix="fenwire-mode000-")
    try:
        os.chmod(top, 0o755)
        state_path = Path(top) / "state"
        good = _ended_run(state_path, "good", **_gone())
        with open(good.event_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"v": 1, "seq": 5, "type": "exit", "run": "good", "status": "cancelled"}) + "\n")
        shut = _ended_run(state_path, "shut", deadline=time.time() + 3600, **_gone())
        if os.geteuid() == 0:
            for path in [state_path, *state_path.rglob("*")]:
                os.chown(path, 65534, 65534, follow_symlinks=False)
        os.chmod(shut.event_path, 0)
        out = _attach_in_subprocess(state_path, "drop")
    finally:
        shutil.rmtree(top)
    assert out["runs"] == ["good"], out
    (error,) = out["errors"]
    assert error == f"{shut.name}: cannot read its files: Permission denied", error
    assert out["inspect"]["shut"] == "cannot read its files: Permission denied"


def test_a_control_file_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    """A child replaces its control file with a symlink to another file of the user's (one whose
    last line is cut short, so that ``resume`` would end it with a newline): ``attach`` refuses the
    run with why and writes nothing through the link, and a live channel's ``send`` refuses too."""
    from fenwire_fast.live.parent.channel import Channel

    state_path = tmp_path / "state"
    good = _ended_run(state_path, "good", **_gone())
    linked = _ended_run(state_path, "linked", **_gone())
    outside = tmp_path / "bashrc"
    outside.write_bytes(b"export A=1")
    os.unlink(linked.control_path)
    os.symlink(outside, linked.control_path)
    with Hub.attach(state_path) as hub:
        errors = list(hub.attach_errors)
        assert [c.run for c in hub.children] == ["good"]
    assert errors == [f"{linked.name}: cannot read its files: control.jsonl is a symbolic link, not a regular file"]
    assert outside.read_bytes() == b"export A=1"
    channel = Channel("r", str(tmp_path / "control.jsonl"), good.event_path)
    os.symlink(outside, tmp_path / "control.jsonl")
    with pytest.raises(OSError, match="control.jsonl is a symbolic link"):
        channel.send("prompt", {"text": "go"})
    channel.close()
    assert outside.read_bytes() == b"export A=1"


@pytest.mark.parametrize("target", ["outside", "dangling"])
def test_an_event_file_that_is_a_symlink_is_refused(tmp_path: Path, target: str) -> None:
    """A child replaces its event file with a symlink, to another file of the user's or to
    nothing: ``attach`` skips the run with why (it was read through the link, or adopted to wait,
    ``starting``, for a file that never comes), and ``fenwire runs`` says the same."""
    state_path = tmp_path / "state"
    _ended_run(state_path, "good", **_gone())
    linked = _ended_run(state_path, "linked", **_gone())
    outside = tmp_path / "elsewhere.jsonl"
    if target == "outside":
        os.rename(linked.event_path, outside)
    else:
        os.unlink(linked.event_path)
    os.symlink(outside, linked.event_path)
    out = _attach_in_subprocess(state_path)
    why = "cannot read its files: events.jsonl is a symbolic link, not a regular file"
    assert out["runs"] == ["good"] and out["errors"] == [f"{linked.name}: {why}"], out
    assert out["inspect"]["linked"] == why
