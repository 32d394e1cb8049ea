"""The demo itself: one parent driving many live mock children, end to end (:func:`run_demo`).

It spawns ``children`` children (default 8) running the scripted mock agent, each with its own
prompt, and drives them through a :class:`~fenwire_fast.live.parent.hub.Hub`
(:mod:`~fenwire_fast.cli.demo.local`): the first child is finalized mid-turn, the second cancelled
mid-turn, and the rest take turns at being steered, followed up or left alone; every child that is
still alive is closed once it is idle. Each child is driven as it is, a hub's
:class:`~fenwire_fast.live.parent.live_child.LiveChild` or a fleet's
:class:`~fenwire_fast.live.fleet.FleetChild` (both show the names of :class:`~.report.Child`).
Progress is shown live and the summary ends the run (:mod:`~fenwire_fast.cli.demo.report`): events
and bytes per second, rejections, every child's exit, and whether every event arrived exactly once
and in order: ``seq`` continuity per child, the mock's deterministic script received exactly
(:func:`fenwire_fast.testing.check_transcript`), every control acknowledged exactly once, and each
answer equal to the script's. The exit code is 0 only when every check passes.

With ``ray=True`` (``fenwire demo --ray``) the same children, driven and checked the same way, run on
the nodes of a Ray cluster (:mod:`~fenwire_fast.cli.demo.ray`), and the summary has a line per node.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import IO, Any, Protocol

from ...live.child.mock_agent import MockConfig, final_text
from ...testing import check_stream, check_transcript
from ..progress import Progress
from .local import HubSource
from .ray import DemoSetupError, fleet_source
from .report import (
    SUMMARY_WIDTH,
    Child,
    Cluster,
    DemoReport,
    Track,
    exit_text,
    show_progress,
    summary,
    timeout_lines,
    totals,
)

__all__ = [
    "run_demo",
    "DemoReport",
    "DemoSetupError",
    "check_stream",
    "default_config",
    "default_timeout",
    "paced_config",
]

#: the default ``timeout`` is this many seconds, plus :data:`TIMEOUT_PER_CHILD` per child
TIMEOUT_BASE = 30.0
#: what each child adds to the default ``timeout``: a 2-core machine started and drained 64
#: children of the default scripts in 5.4-6.2 s (about 0.1 s a child), a busier one starts about 5
#: a second (0.2 s a child); 0.5 s leaves room for both
TIMEOUT_PER_CHILD = 0.5


def default_config(steps: int = 3, deltas: int = 1000, delta_bytes: int = 24, final_bytes: int = 200) -> MockConfig:
    """The demo's full-speed mock script: ``steps`` steps of ``deltas`` deltas, two thinking
    deltas and one tool call per step, no delay."""
    return MockConfig(
        steps=steps,
        deltas=deltas,
        delta_bytes=delta_bytes,
        delay=0.0,
        thinking=2,
        tools=1,
        tool_result_bytes=256,
        final_bytes=final_bytes,
    )


def paced_config(config: MockConfig, deltas: int = 20, delay: float = 0.005) -> MockConfig:
    """The script of the children that get a control mid-turn (steered, followed up, finalized,
    cancelled): fewer deltas, each after ``delay`` seconds, so the control lands inside the turn."""
    return replace(config, deltas=deltas, delay=delay)


def default_timeout(children: int) -> float:
    """The seconds the demo waits for ``children`` children by default: :data:`TIMEOUT_BASE` plus
    :data:`TIMEOUT_PER_CHILD` per child (34 s for 8 children, 158 s for 256)."""
    return TIMEOUT_BASE + TIMEOUT_PER_CHILD * children


def _role(index: int) -> str:
    if index == 0:
        return "finalize"
    if index == 1:
        return "cancel"
    return ("steer", "follow-up", "plain")[(index - 2) % 3]


#: one event of one child
Event = tuple[Child, dict[str, Any]]


class Source(Protocol):
    """Where the demo's children run: a local hub (:class:`~fenwire_fast.cli.demo.local.HubSource`)
    or the nodes of a Ray cluster (:class:`~fenwire_fast.cli.demo.ray.FleetSource`)."""

    #: what a control raises when the child is lost with its node
    lost: tuple[type[BaseException], ...]
    #: the ACP agent's command the children run (``None``: the mock agent)
    acp: list[str] | None

    def spawn(self, prompt: str, mock: MockConfig) -> Child: ...
    def poll(self) -> Sequence[Event]: ...
    def sleep(self, timeout: float) -> None: ...
    def cluster(self) -> Cluster | None: ...
    @property
    def finished(self) -> bool: ...


def _drive(track: Track, event: dict[str, Any]) -> None:
    """React to one event of one child, according to its role."""
    child = track.child
    etype = event["type"]
    if etype == "turn-complete":
        track.turns_done += 1
    # An ACP agent may answer with fewer than two deltas: its control then comes after its turn.
    late = not track.scripted and etype == "turn-complete" and track.turns_done == 1
    if not late:
        if track.trigger_seq is not None or etype != "assistant-text-delta" or track.turns_done:
            return
        track.deltas_in_first_turn += 1
        if track.deltas_in_first_turn != 2:
            return
    elif track.trigger_seq is not None:
        return
    role = track.role
    if role == "finalize":
        track.trigger_seq = child.finalize("Demo: wrap up now.")
    elif role == "cancel":
        track.trigger_seq = child.cancel()
    elif role == "steer":
        track.trigger_seq = child.steer("Demo: mind the edge cases.")
    elif role == "follow-up":
        track.trigger_seq = child.follow_up("Demo: now summarize.")
    else:
        track.trigger_seq = 0


def _close_idle(tracks: list[Track]) -> None:
    for track in tracks:
        child = track.child
        if track.closed or child.finished:
            continue
        if track.role in ("finalize", "cancel"):
            continue
        if track.trigger_seq is None or not child.idle:  # never after an exit: idle is "ready"
            continue
        # a steer or follow-up is closed after a turn ended past its ack: a child seen idle in the
        # same read as the control was sent (a slow parent reads a whole turn at once) would get
        # the close right behind it, ahead of the turn the follow-up starts
        if track.trigger_seq and track.role in ("steer", "follow-up") and not track.settled:
            continue
        track.closed = True
        child.close()


def _check_injection(t: Track) -> list[str]:
    """A steer or follow-up is injected with its ``ref``, or (when it arrived after the turn had
    ended, in ``ready``) starts a turn of its own with its text."""
    kind = "steering-injected" if t.role == "steer" else "follow-up-injected"
    refs = [e.get("ref") for e in t.events if e["type"] == kind]
    if refs == [t.trigger_seq]:
        return []
    if refs:
        return [f"{t.child.run}: {kind} refs {refs}, expected [{t.trigger_seq}]"]
    acks = [i for i, e in enumerate(t.events) if e["type"] == "control-ack" and e.get("ref") == t.trigger_seq]
    sent = t.child.controls.get(t.trigger_seq) if t.trigger_seq is not None else None
    if len(acks) == 1 and sent is not None:
        after = t.events[acks[0] + 1 : acks[0] + 3]
        if [e["type"] for e in after] == ["turn-started", "user"] and after[1].get("text") == sent.text:
            return []
    return [f"{t.child.run}: the {t.role} (seq {t.trigger_seq}) was neither injected nor started a turn"]


def _check(tracks: list[Track]) -> list[tuple[str, bool, list[str]]]:
    """The four checks: rejections over every child, the rest over the children that finished (one
    still running at a timeout is said once, by the timeout's check)."""
    checks: list[tuple[str, bool, list[str]]] = []

    rejections: list[str] = []
    for t in tracks:
        for sent in t.child.rejected:
            rejections.append(f"{t.child.run}: {sent.type} (seq {sent.seq}) rejected: {sent.reason}")
        for err in t.child.errors:
            rejections.append(f"{t.child.run}: event rejected: {err}")
    checks.append(("no rejections", not rejections, rejections))
    tracks = [t for t in tracks if t.child.finished]

    exits: list[str] = []
    for t in tracks:
        child = t.child
        want_code = 0 if t.expected_status == "done" else 1
        if child.status != t.expected_status or child.returncode != want_code:
            exits.append(
                f"{child.run} ({t.role}): {child.status}, {exit_text(child)}, "
                f"expected {t.expected_status} / {want_code}" + (f"; {child.error}" if child.error else "")
            )
        result = child.result
        if t.expected_status == "done":
            turns = [e["turn"] for e in t.events if e["type"] == "turn-complete"]
            want = final_text(t.config, turns[-1]) if turns else None
            if result is None:
                exits.append(f"{child.run}: no result")
            elif t.scripted and child.final_text != want:
                exits.append(f"{child.run}: the answer is not the script's")
        elif result is not None:
            exits.append(f"{child.run}: a {child.status} run sent a result")
    checks.append(("every child exited as expected, done runs with the right answer", not exits, exits))

    order: list[str] = []
    for t in tracks:
        problems = (
            check_transcript(t.config, t.events, controls=t.child.controls) if t.scripted else check_stream(t.events)
        )
        order.extend(f"{t.child.run}: {p}" for p in problems)
    what = "seq, mock script" if all(t.scripted for t in tracks) else "seq, turns, exit"
    checks.append((f"every event arrived exactly once and in order ({what})", not order, order))

    acks: list[str] = []
    for t in tracks:
        seqs = set(t.child.controls)
        for ref, count in t.acks.items():
            if ref not in seqs:
                acks.append(f"{t.child.run}: ack for unknown control {ref}")
            elif count != 1:
                acks.append(f"{t.child.run}: control {ref} acknowledged {count} times")
        for seq in seqs - set(t.acks):
            acks.append(f"{t.child.run}: control {seq} never acknowledged")
        if t.role in ("steer", "follow-up") and t.trigger_seq:
            acks.extend(_check_injection(t))
    checks.append(("every control acknowledged once; each steer / follow-up took effect", not acks, acks))
    return checks


def run_demo(
    children: int = 8,
    *,
    config: MockConfig | None = None,
    paced: MockConfig | None = None,
    timeout: float | None = None,
    out: IO[str] | None = None,
    live: bool | None = None,
    interval: float | None = None,
    ray: bool = False,
    nodes: int = 2,
    address: str | None = None,
    connect_timeout: float = 30.0,
    acp: Sequence[str] | None = None,
    nats: str | None = None,
) -> DemoReport:
    """Run the demo and print its progress and summary to ``out``; return the report.

    ``nats``: take every event through NATS JetStream (see :mod:`~fenwire_fast.cli.demo.jetstream`):
    the server at that URL, or ``"local"`` for one started for the demo.

    ``acp``: run every child on this ACP agent (``[command, *args]``, through the bridge of
    :mod:`fenwire_fast.live.acp.agent`) instead of the mock agent; the checks are then those that hold
    for an agent whose answers are not scripted: acks, exactly-once delivery (:func:`~fenwire_fast.testing.check_stream`),
    exits.

    ``config`` is the script of the children left alone (default :func:`default_config`), ``paced``
    that of the children that get controls mid-turn (default :func:`paced_config` of ``config``).
    ``ray``: run the children on a Ray cluster (see the module docstring): a local one of ``nodes``
    nodes, or the one at ``address``. Raises :class:`DemoSetupError` when that cannot be had.
    ``timeout``: give up after this many seconds (default :func:`default_timeout` of ``children``;
    the time a Ray cluster takes to start or join is not counted)."""
    out = out if out is not None else sys.stdout
    timeout = default_timeout(children) if timeout is None else timeout
    if ray:
        with fleet_source(nodes, address, connect_timeout, out) as source:
            source.acp = list(acp) if acp is not None else None
            return _run(source, children, config, paced, timeout, out, live, interval)
    from ...live.parent.hub import Hub

    if nats is not None:
        from .jetstream import stream_source

        with Hub() as hub, stream_source(hub, nats, acp, out) as source:
            return _run(source, children, config, paced, timeout, out, live, interval)
    with Hub() as hub:
        return _run(HubSource(hub, acp), children, config, paced, timeout, out, live, interval)


def _run(
    source: Source,
    children: int,
    config: MockConfig | None,
    paced: MockConfig | None,
    timeout: float,
    out: IO[str],
    live: bool | None,
    interval: float | None,
) -> DemoReport:
    """The demo's loop, checks and summary, on a local hub or a fleet alike."""
    from ... import IMPLEMENTATION

    config = config or default_config()
    paced = paced or paced_config(config)
    live = out.isatty() if live is None else live
    interval = interval if interval is not None else (0.1 if live else 1.0)
    started = time.monotonic()
    cpu_started = time.process_time()
    first_event: float | None = None
    last_event = started
    tracks: list[Track] = []
    by_child: dict[int, Track] = {}
    progress = Progress(out, live=live, plain=True, interval=interval)
    timed_out = False
    while len(tracks) < children or not source.finished:
        if len(tracks) < children:  # one spawn per tick: the children running keep being drained and driven
            tracks.append(_spawn(source, len(tracks), config, paced))
            by_child[id(tracks[-1].child)] = tracks[-1]
        batch = source.poll()
        if batch:
            last_event = time.monotonic()
            first_event = last_event if first_event is None else first_event
            _take(batch, by_child, last_event, source.lost)
        for track in tracks:
            track.bytes = track.child.bytes
        _close_idle(tracks)
        show_progress(progress, tracks, children)
        if time.monotonic() - started > timeout:
            timed_out = True
            break
        if not batch and len(tracks) >= children:
            source.sleep(interval)  # until a child writes or ends, or the display is due
    seconds = time.monotonic() - started
    cpu = time.process_time() - cpu_started
    show_progress(progress, tracks, children, force=True)
    progress.clear()  # the summary starts on a clean screen
    drain = last_event - (first_event if first_event is not None else last_event)
    report = _report(tracks, children, seconds, drain, cpu, timeout if timed_out else None)
    width = min(SUMMARY_WIDTH, progress.size()[0]) if live else SUMMARY_WIDTH
    summary(out, report, tracks, IMPLEMENTATION, source.cluster(), width)
    return report


def _spawn(source: Source, index: int, config: MockConfig, paced: MockConfig) -> Track:
    """Spawn the child ``index`` (from 0) with its role's script; what the demo will see of it."""
    role = _role(index)
    child_config = config if role == "plain" else paced
    child = source.spawn(f"Demo task {index + 1}: inspect the wire.", child_config)
    node = getattr(child, "node", None)
    return Track(child=child, role=role, config=child_config, node=node, scripted=source.acp is None)


def _take(
    batch: Sequence[Event], by_child: dict[int, Track], now: float, lost: tuple[type[BaseException], ...]
) -> None:
    """Record each event of ``batch`` (read at ``now``) on its child's track, and drive the child."""
    for child, event in batch:
        track = by_child[id(child)]
        if not track.events:
            track.first_at = now
        track.last_at = now
        track.events.append(event)
        if event["type"] == "control-ack" and "ref" in event:
            track.acks[int(event["ref"])] += 1
            if event["ref"] == track.trigger_seq and event.get("status") == "rejected":
                track.settled = True  # nothing follows a rejected control
        elif event["type"] == "turn-complete" and track.trigger_seq and track.acks[track.trigger_seq]:
            track.settled = True
        try:
            _drive(track, event)
        except lost:  # its node is lost: the run has failed, and the checks say so
            track.trigger_seq = 0 if track.trigger_seq is None else track.trigger_seq


def _report(
    tracks: list[Track], children: int, seconds: float, drain: float, cpu: float, timed_out: float | None
) -> DemoReport:
    """The checks and the totals; ``timed_out``: the timeout, when it came (its check goes first)."""
    checks = _check(tracks)
    rejections = len(checks[0][2])
    unfinished = [t.child.run for t in tracks if not t.child.finished]
    if timed_out is not None:
        lines = timeout_lines(unfinished, tracks, children)
        checks.insert(0, (f"finished within the timeout ({timed_out:g} s)", False, lines))
    events, nbytes = totals(tracks)
    placed: dict[str, list[str]] = {}
    for t in tracks:
        if t.node is not None:
            placed.setdefault(t.node, []).append(t.child.run)
    return DemoReport(
        children=children,
        seconds=seconds,
        events=events,
        bytes=nbytes,
        rejections=rejections,
        statuses={t.child.run: t.child.status for t in tracks},
        checks=checks,
        drain_seconds=drain,
        parent_cpu_seconds=cpu,
        nodes=placed,
        unfinished=unfinished,
    )
