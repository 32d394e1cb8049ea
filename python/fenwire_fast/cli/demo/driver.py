"""``fenwire demo``: one parent driving many live mock children, end to end.

It spawns ``--children`` children (default 8) running the scripted mock agent, each with its own
prompt, and drives them through a :class:`~fenwire_fast.live.parent.hub.Hub`: the first child is finalized
mid-turn, the second cancelled mid-turn, and the rest take turns at being steered, followed up or
left alone; every child that is still alive is closed once it is idle. Progress is shown live (a
per-child table on a terminal, a plain line per second otherwise), and the summary reports events
and bytes per second, rejections, every child's exit, and whether every event arrived exactly once
and in order: ``seq`` continuity per child, the mock's deterministic script received exactly
(:func:`fenwire_fast.testing.check_transcript`), every control acknowledged exactly once, and each
answer equal to the script's. The exit code is 0 only when every check passes.

With ``ray=True`` (``fenwire demo --ray``) the same children, driven and checked the same way, run on
the nodes of a Ray cluster through a :class:`~fenwire_fast.live.fleet.Fleet` (each placed on the
least-loaded node), and the summary has a line per node. Without ``address`` a local
``ray.cluster_utils.Cluster`` of ``nodes`` nodes is started (a head with no CPUs and ``nodes - 1``
more, each with a small object store) and shut down at the end; with ``address`` that cluster is
joined (within ``connect_timeout`` seconds) and left running.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import socket
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any, Protocol

from ...live.child.mock_agent import MockConfig, final_text
from ...testing import check_stream, check_transcript
from ..progress import Progress

if TYPE_CHECKING:
    from ...live.parent.channel import SentControl
    from ...live.parent.hub import Hub
    from ...live.parent.spawn import LiveChild

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

#: the summary's width: every line fits in it (a longer one is wrapped)
SUMMARY_WIDTH = 80

#: the object store of each node of the local cluster ``--ray`` starts (bytes; Ray's least is 75 MiB)
OBJECT_STORE_BYTES = 100 * 1024 * 1024

_LETTER = {
    "starting": "s",
    "ready": "r",
    "running": "R",
    "closing": "c",
    "finalizing": "F",
    "done": "D",
    "cancelled": "C",
    "failed": "X",
    "timed-out": "T",
}


#: the statuses a child ends in
_ENDED = frozenset({"done", "cancelled", "failed", "timed-out"})


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


class DemoSetupError(RuntimeError):
    """The demo could not start (no Ray, or a cluster that cannot be joined): one line, said as is."""


class _Child(Protocol):
    """A child as the demo drives and checks it: a :class:`~fenwire_fast.live.fleet.FleetChild`, or a
    hub's :class:`~fenwire_fast.live.parent.spawn.LiveChild` seen through :class:`_HubChild`."""

    @property
    def run(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def finished(self) -> bool: ...
    @property
    def idle(self) -> bool: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def controls(self) -> Mapping[int, SentControl]: ...
    @property
    def rejected(self) -> list[SentControl]: ...
    @property
    def errors(self) -> Sequence[str]: ...
    @property
    def result(self) -> dict[str, Any] | None: ...
    @property
    def final_text(self) -> str | None: ...
    @property
    def bytes(self) -> int: ...
    def steer(self, text: str) -> int: ...
    def follow_up(self, text: str) -> int: ...
    def finalize(self, note: str | None = None) -> int: ...
    def cancel(self) -> int: ...
    def close(self) -> int: ...


class _HubChild:
    """A hub's child under the names a FleetChild has (its channel's state, read as it is now)."""

    def __init__(self, child: LiveChild) -> None:
        self.child = child
        self.run = child.run
        self.steer = child.steer
        self.follow_up = child.follow_up
        self.finalize = child.finalize
        self.cancel = child.cancel
        self.close = child.close

    @property
    def status(self) -> str:
        return self.child.status

    @property
    def error(self) -> str | None:
        return self.child.error

    @property
    def finished(self) -> bool:
        return self.child.finished

    @property
    def idle(self) -> bool:
        return self.child.channel.idle

    @property
    def returncode(self) -> int | None:
        return self.child.returncode

    @property
    def controls(self) -> Mapping[int, SentControl]:
        return self.child.channel.controls

    @property
    def rejected(self) -> list[SentControl]:
        return self.child.channel.rejected

    @property
    def errors(self) -> list[str]:
        return [e.error for e in self.child.channel.errors]

    @property
    def result(self) -> dict[str, Any] | None:
        return self.child.channel.result

    @property
    def final_text(self) -> str | None:
        return self.child.channel.final_text

    @property
    def bytes(self) -> int:
        return self.child.channel.offset


Event = tuple[_Child, dict[str, Any]]


class _HubSource:
    """The demo's children on a local :class:`~fenwire_fast.live.parent.hub.Hub`."""

    #: what a control raises when the child is lost with its node (nothing, on a local hub)
    lost: tuple[type[BaseException], ...] = ()

    def __init__(self, hub: Hub, acp: Sequence[str] | None = None) -> None:
        self.hub = hub
        #: the ACP agent's command the children run (``None``: the mock agent)
        self.acp = list(acp) if acp is not None else None
        self._views: dict[int, _HubChild] = {}

    def spawn(self, prompt: str, mock: MockConfig) -> _Child:
        child = self.hub.spawn(prompt, mock=mock) if self.acp is None else self.hub.spawn(prompt, acp=self.acp)
        view = self._views[id(child)] = _HubChild(child)
        return view

    def poll(self) -> list[Event]:
        views = self._views
        return [(views[id(child)], event) for child, event in self.hub.poll()]

    def sleep(self, timeout: float) -> None:
        self.hub.sleep(timeout)

    @property
    def finished(self) -> bool:
        return self.hub.finished


class _FleetSource:
    """The demo's children on the nodes of a Ray cluster, through a :class:`~fenwire_fast.live.fleet.Fleet`."""

    def __init__(
        self,
        fleet: Any,
        *,
        head: str | None = None,
        joined: str | None = None,
        setup_seconds: float = 0.0,
        acp: Sequence[str] | None = None,
    ) -> None:
        self.fleet = fleet
        #: the ACP agent's command the children run (``None``: the mock agent)
        self.acp = list(acp) if acp is not None else None
        #: the head node's id, when the demo started the cluster
        self.head = head
        #: the address of the cluster joined (``None``: a local cluster the demo started)
        self.joined = joined
        #: how long starting or joining the cluster took
        self.setup_seconds = setup_seconds
        self._ready: list[Any] = []  # answers taken while sleeping, handed over by the next poll
        from ...live.fleet import ChildLost

        self.lost: tuple[type[BaseException], ...] = (ChildLost,)

    def spawn(self, prompt: str, mock: MockConfig) -> _Child:
        if not self.fleet.nodes():
            raise DemoSetupError("the Ray cluster has no alive node to run children on")
        child: _Child = (
            self.fleet.spawn(prompt, mock=mock) if self.acp is None else self.fleet.spawn(prompt, acp=self.acp)
        )
        return child

    def poll(self) -> list[Event]:
        batches, self._ready = self._ready, []
        batches.extend(self.fleet.poll_batches(0.0))
        return [(child, event) for child, events in batches for event in events]

    def sleep(self, timeout: float) -> None:
        """Wait until a node's answer is in (it is kept for :meth:`poll`), at most ``timeout`` seconds."""
        self._ready.extend(self.fleet.poll_batches(timeout))

    @property
    def finished(self) -> bool:
        return bool(self.fleet.finished)


@dataclass
class _Track:
    child: _Child
    role: str
    config: MockConfig
    #: false for an ACP agent's child: its answers are not scripted, so only the checks that hold
    #: for any agent apply (acks, exactly-once delivery, exits)
    scripted: bool = True
    #: the Ray node the child runs on (``None`` on a local hub)
    node: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0
    deltas_in_first_turn: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    turns_done: int = 0
    trigger_seq: int | None = None
    closed: bool = False
    acks: Counter[int] = field(default_factory=Counter)

    @property
    def expected_status(self) -> str:
        return "cancelled" if self.role == "cancel" else "done"


@dataclass
class DemoReport:
    """What a demo run found; ``ok`` is true when every check passed."""

    children: int
    seconds: float
    events: int
    bytes: int
    rejections: int
    statuses: dict[str, str]
    checks: list[tuple[str, bool, list[str]]]
    drain_seconds: float = 0.0
    parent_cpu_seconds: float = 0.0
    #: on Ray: the runs on each node, by node id (empty on a local hub)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    #: the runs still running when the timeout came (each killed on the way out)
    unfinished: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(passed for _, passed, _ in self.checks)


def _drive(track: _Track, event: dict[str, Any]) -> None:
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


def _close_idle(tracks: list[_Track]) -> None:
    for track in tracks:
        child = track.child
        if track.closed or child.finished:
            continue
        if track.role in ("finalize", "cancel"):
            continue
        if track.trigger_seq is not None and child.idle:  # never after an exit: idle is "ready"
            track.closed = True
            child.close()


#: a child's rate is shown once its events span this many seconds (before, one read of a few
#: events over a millisecond would read as thousands a second)
RATE_MIN_SECONDS = 0.5


def _rate(t: _Track, now: float) -> str:
    """A child's events per second, from its first event to its last (or to ``now`` while it runs),
    as ``1,234/s``; ``-`` until that span is :data:`RATE_MIN_SECONDS` long."""
    span = (t.last_at if t.child.finished else now) - t.first_at
    if not t.events or span < RATE_MIN_SECONDS:
        return "-"
    return f"{len(t.events) / span:,.0f}/s"


def _totals(tracks: list[_Track]) -> tuple[int, int]:
    """Events and bytes received so far, over every child."""
    return sum(len(t.events) for t in tracks), sum(t.bytes for t in tracks)


def _wrap(items: Sequence[str], width: int, indent: str = "  ", sep: str = " ") -> list[str]:
    """``items`` joined by ``sep`` on as few rows as fit in ``width``, each row after ``indent``
    (an item is never split; one wider than ``width`` is left for the display to cut)."""
    rows: list[str] = []
    row = ""
    for item in items:
        if row and len(indent + row + sep + item) > width:
            rows.append(indent + row)
            row = ""
        row = row + sep + item if row else item
    if row:
        rows.append(indent + row)
    return rows


def _show_progress(
    progress: Progress, tracks: list[_Track], total: int, force: bool = False, now: float | None = None
) -> None:
    """A head line (children, events, bytes, rate, children by status), then as much detail as the
    terminal holds: a row per child when they all fit, else a letter per child in a grid as wide as
    the terminal, with its legend when there is room, else the head alone. Nothing is ever wider or
    taller than the terminal: on a narrow one the children by status get rows of their own, by
    letter when their names do not fit. A child's row says its turns done (the one running is not
    counted) and its rate once it means something (see :func:`_rate`; ``now``: the time it is
    taken at, by default the clock's)."""
    if not progress.due(force):
        return
    now = time.monotonic() if now is None else now
    elapsed = progress.elapsed()
    events, nbytes = _totals(tracks)
    counts = Counter(t.child.status for t in tracks)
    states = [f"{k} {v}" for k, v in sorted(counts.items())]
    spawned = len(tracks)
    count = f"{spawned}/{total}" if spawned < total else f"{spawned}"
    head = f"[{elapsed:5.1f}s] {count} children | {events:,} events {nbytes / 1e6:.2f} MB {events / elapsed:,.0f}/s"
    one_line = f"{head} | {', '.join(states)}"
    if not progress.live:
        progress.show([one_line])
        return
    width = progress.size()[0]
    rows = [one_line]
    if len(one_line) > width:
        rows = [head, *_wrap([s + "," for s in states[:-1]] + states[-1:], width)]
        if len(rows) > 2:  # the names take more than a row: the letters of the legend instead
            rows = [head, *_wrap([f"{_LETTER.get(k, '?')} {v}" for k, v in sorted(counts.items())], width, sep="  ")]
    room = progress.rows_available() - len(rows)
    if len(tracks) <= room:
        for t in tracks:
            rows.append(
                f"  {t.child.run:<9} {t.role:<9} {t.child.status:<10} "
                + (f"{t.node[:8]} " if t.node else "")
                + f"turns done {t.turns_done:>2} events {len(t.events):>7,} {_rate(t, now):>9}"
            )
    else:
        letters = "".join(_LETTER.get(t.child.status, "?") for t in tracks)
        per_row = max(1, min(width - 2, 100))
        grid = ["  " + letters[i : i + per_row] for i in range(0, len(letters), per_row)]
        legend = _wrap([f"{_LETTER[k]}={k}" for k in _LETTER], width)
        if len(grid) + len(legend) <= room:
            rows.extend(grid)
            rows.extend(legend)
        elif len(grid) <= room:
            rows.extend(grid)
    progress.show(rows)


def _check_injection(t: _Track) -> list[str]:
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


def _exit_cell(child: _Child) -> str:
    """A child's exit code, or what stands for it while the child has not exited (``still
    exiting`` once it has said how it ended)."""
    if child.returncode is not None:
        return str(child.returncode)
    if child.finished:
        return "unknown"
    return "still exiting" if child.status in _ENDED else "still running"


def _exit_text(child: _Child) -> str:
    """``exit code N``, or what stands for it while the child has not exited."""
    cell = _exit_cell(child)
    return f"exit code {cell}" if child.returncode is not None or child.finished else cell


def _check(tracks: list[_Track]) -> list[tuple[str, bool, list[str]]]:
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
                f"{child.run} ({t.role}): {child.status}, {_exit_text(child)}, "
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
) -> DemoReport:
    """Run the demo and print its progress and summary to ``out``; return the report.

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
        with _fleet_source(nodes, address, connect_timeout, out) as fleet_source:
            fleet_source.acp = list(acp) if acp is not None else None
            return _run(fleet_source, children, config, paced, timeout, out, live, interval)
    from ...live.parent.hub import Hub

    with Hub() as hub:
        return _run(_HubSource(hub, acp), children, config, paced, timeout, out, live, interval)


def _run(
    source: _HubSource | _FleetSource,
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
    tracks: list[_Track] = []
    by_child: dict[int, _Track] = {}
    progress = Progress(out, live=live, plain=True, interval=interval)
    timed_out = False
    while len(tracks) < children or not source.finished:
        if len(tracks) < children:
            # one spawn per tick: the children already running keep being drained and driven
            i = len(tracks)
            role = _role(i)
            child_config = config if role == "plain" else paced
            child = source.spawn(f"Demo task {i + 1}: inspect the wire.", child_config)
            node = getattr(child, "node", None)
            track = _Track(child=child, role=role, config=child_config, node=node, scripted=source.acp is None)
            tracks.append(track)
            by_child[id(child)] = track
        batch = source.poll()
        if batch:
            last_event = time.monotonic()
            if first_event is None:
                first_event = last_event
        for child, event in batch:
            track = by_child[id(child)]
            if not track.events:
                track.first_at = last_event
            track.last_at = last_event
            track.events.append(event)
            if event["type"] == "control-ack" and "ref" in event:
                track.acks[int(event["ref"])] += 1
            try:
                _drive(track, event)
            except source.lost:  # its node is lost: the run has failed, and the checks say so
                track.trigger_seq = 0 if track.trigger_seq is None else track.trigger_seq
        for track in tracks:
            track.bytes = track.child.bytes
        _close_idle(tracks)
        _show_progress(progress, tracks, children)
        if time.monotonic() - started > timeout:
            timed_out = True
            break
        if not batch and len(tracks) >= children:
            source.sleep(interval)  # until a child writes or ends, or the display is due
    seconds = time.monotonic() - started
    cpu = time.process_time() - cpu_started
    _show_progress(progress, tracks, children, force=True)
    progress.clear()  # the summary starts on a clean screen
    checks = _check(tracks)
    rejections = len(checks[0][2])
    unfinished = [t.child.run for t in tracks if not t.child.finished]
    if timed_out:
        checks.insert(
            0, (f"finished within the timeout ({timeout:g} s)", False, _timeout_lines(unfinished, tracks, children))
        )
    events, nbytes = _totals(tracks)
    placed: dict[str, list[str]] = {}
    for t in tracks:
        if t.node is not None:
            placed.setdefault(t.node, []).append(t.child.run)
    report = DemoReport(
        children=children,
        seconds=seconds,
        events=events,
        bytes=nbytes,
        rejections=rejections,
        statuses={t.child.run: t.child.status for t in tracks},
        checks=checks,
        drain_seconds=last_event - (first_event if first_event is not None else last_event),
        parent_cpu_seconds=cpu,
        nodes=placed,
        unfinished=unfinished,
    )
    width = min(SUMMARY_WIDTH, progress.size()[0]) if live else SUMMARY_WIDTH
    _summary(out, report, tracks, IMPLEMENTATION, source if isinstance(source, _FleetSource) else None, width)
    return report


def _named(head: str, runs: list[str], width: int) -> str:
    """``head`` then as many of ``runs`` as fit in ``width`` (at least one), and how many more."""
    line = head
    for shown in range(1, len(runs) + 1):
        rest = len(runs) - shown
        candidate = head + " " + ", ".join(runs[:shown]) + (f" and {rest} more" if rest else "")
        if shown > 1 and len(candidate) > width:
            break
        line = candidate
    return line


def _timeout_lines(unfinished: list[str], tracks: list[_Track], children: int) -> list[str]:
    """What the timeout's check says: the children not finished (how many, the first few, and
    that the other checks leave them out), and how many were never started."""
    lines = []
    if unfinished:
        lines.append(_named(f"{len(unfinished)} not finished:", unfinished, _PROBLEM_WIDTH))
        lines.append("killed at the timeout; their exits, events and acks are not checked")
    if len(tracks) < children:
        lines.append(f"{children - len(tracks)} never started")
    return lines


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise DemoSetupError("--ray needs Ray: pip install 'fenwire_fast[ray]'") from None


def _worker_env() -> dict[str, str]:
    """What the local cluster's nodes need in their environment so that their workers import this
    fenwire_fast (the one running here, even from a source tree)."""
    from ...live.parent.spawn import _PACKAGE_ROOT, _on_default_path

    if _on_default_path(_PACKAGE_ROOT):
        return {}
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": _PACKAGE_ROOT + (os.pathsep + old if old else "")}


class _NoSigtermNotice(logging.Filter):
    """Ray says that it could not set its SIGTERM handler outside the main thread: the demo keeps
    its own (which unwinds, so every child is stopped), so that notice is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _reachable(address: str, timeout: float) -> None:
    """Fail at once when nothing listens at a ``host:port`` address (Ray would retry for minutes)."""
    where = address.split("://", 1)[-1]
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto", "local", or a form Ray reads itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=min(timeout, 5.0)).close()
    except OSError as exc:
        why = exc.strerror or _first_line(exc)
        raise DemoSetupError(f"cannot reach a Ray cluster at {address}: {why}") from None


def _connect(ray_module: Any, address: str, timeout: float) -> None:
    """``ray.init(address)``, given up after ``timeout`` seconds (Ray itself retries for minutes).

    It runs in a thread so that the wait is bounded; a connection that did not come in time is
    left to that thread (a daemon: it does not hold the process)."""
    if ray_module.is_initialized():
        raise DemoSetupError("Ray is already initialized in this process; the demo connects by itself")
    _reachable(address, timeout)
    failure: list[BaseException] = []
    done = threading.Event()

    def connect() -> None:
        try:
            ray_module.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except BaseException as exc:  # noqa: BLE001 - said on the way out, as one line
            failure.append(exc)
        finally:
            done.set()

    notice = _NoSigtermNotice()
    ray_logger = logging.getLogger("ray._private.worker")
    ray_logger.addFilter(notice)
    try:
        threading.Thread(target=connect, name="fenwire-demo-ray-init", daemon=True).start()
        if not done.wait(timeout):
            raise DemoSetupError(f"no Ray cluster answered at {address} within {timeout:g} s")
    finally:
        ray_logger.removeFilter(notice)
    if failure:
        raise DemoSetupError(f"cannot join the Ray cluster at {address}: {_first_line(failure[0])}")


@contextmanager
def _sigterm_kept() -> Iterator[Callable[[], None]]:
    """Ray puts in its own SIGTERM handlers: a head node started in this process one that drains
    the node (30 s) and exits, the core one that aborts the process where it stands; either way no
    actor closes its hub, so children are killed without their files removed. The handler this
    process had (the command's unwinds, so the fleet is closed and the cluster shut down) is put
    back each time the yielded function is called, and on the way out."""
    handler = signal.getsignal(signal.SIGTERM)

    def keep() -> None:
        if handler is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)

    try:
        yield keep
    finally:
        keep()


@contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's own notices (a cluster starting, an address file overwritten) below WARNING are not shown."""
    logger = logging.getLogger("ray")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextmanager
def _address_file_kept() -> Iterator[None]:
    """A local cluster writes its address where ``ray.init()`` looks for one, and its shutdown
    removes that file: the address of a cluster that was there before is put back."""
    try:
        path: str | None = importlib.import_module("ray._common.utils").get_ray_address_file(None)
    except Exception:  # noqa: BLE001 - a Ray without that file: nothing to keep
        path = None
    saved: str | None = None
    if path is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                saved = handle.read()
        except OSError:
            saved = None
    try:
        yield
    finally:
        if path is not None and saved is not None and not os.path.exists(path):
            try:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(saved)
            except OSError:
                pass


@contextmanager
def _fleet_source(nodes: int, address: str | None, connect_timeout: float, out: IO[str]) -> Iterator[_FleetSource]:
    """A fleet on a local cluster of ``nodes`` nodes (started here, shut down on the way out), or on
    the cluster at ``address`` (joined, left running)."""
    ray_module = _import_ray()
    from ...live.fleet import Fleet

    with _quiet_ray(), _sigterm_kept() as keep:
        started = time.monotonic()
        if address is not None:
            _connect(ray_module, address, connect_timeout)
            keep()
            with _joined(ray_module, Fleet) as fleet:
                yield _FleetSource(fleet, joined=address, setup_seconds=time.monotonic() - started)
            return
        out.write(f"fenwire demo: starting a local Ray cluster of {nodes} node{'s' if nodes != 1 else ''}\n")
        out.flush()
        with _address_file_kept():
            # no node yet: whatever is started below is shut down on the way out
            cluster: Any = importlib.import_module("ray.cluster_utils").Cluster()
            try:
                common = {"object_store_memory": OBJECT_STORE_BYTES, "env_vars": _worker_env()}
                cluster.add_node(num_cpus=0, include_dashboard=False, **common)  # the head
                keep()
                for _ in range(nodes - 1):
                    cluster.add_node(num_cpus=1, **common)
                    keep()
                cluster.wait_for_nodes()
                _connect(ray_module, cluster.address, connect_timeout)
                keep()
                with _joined(ray_module, Fleet) as fleet:
                    head = cluster.head_node.node_id
                    yield _FleetSource(fleet, head=head, setup_seconds=time.monotonic() - started)
            finally:
                cluster.shutdown()


@contextmanager
def _joined(ray_module: Any, fleet_class: Any) -> Iterator[Any]:
    """A fleet on the cluster this process is connected to; closed, then disconnected, on the way out."""
    try:
        fleet = fleet_class()  # Ray is initialized: the fleet joins and leaves the shutdown to the demo
        try:
            yield fleet
        finally:
            fleet.close()
    finally:
        ray_module.shutdown()


#: a check's problem line starts 9 columns in; it fits in 80
_PROBLEM_WIDTH = 80 - 9


def _fitted(line: str, width: int, indent: int) -> list[str]:
    """``line`` as it is when it fits in ``width`` columns, else wrapped at spaces with the rows
    after the first ``indent`` columns in (a word wider than a row is split)."""
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False)


def _counted(prefix: str, counts: Counter[str], width: int, indent: int) -> list[str]:
    """``prefix`` then ``status n, ...``, on as many rows as fit in ``width``; a ``status n`` is
    never split, and the rows after the first are ``indent`` columns in."""
    items = [f"{k} {v}" for k, v in sorted(counts.items())]
    items = [item + "," for item in items[:-1]] + items[-1:]
    rows = [prefix]
    for item in items:
        if len(rows) == 1 and rows[0] == prefix:
            rows[0] += item
        elif len(rows[-1]) + 1 + len(item) > width:
            rows.append(" " * indent + item)
        else:
            rows[-1] += " " + item
    return rows


def _summary(
    out: IO[str],
    report: DemoReport,
    tracks: list[_Track],
    implementation: str,
    fleet: _FleetSource | None = None,
    width: int = SUMMARY_WIDTH,
) -> None:
    """The summary, every line at most ``width`` columns wide (a longer one is wrapped)."""
    secs = max(report.seconds, 1e-9)

    def w(line: str, indent: int = 15) -> None:
        for row in _fitted(line, width, indent):
            out.write(row + "\n")

    where = ""
    if fleet is not None:
        count = len(fleet.fleet.nodes())
        where = f" on {count} Ray node{'s' if count != 1 else ''}"
    out.write("\n")
    w(f"fenwire demo: {report.children} children{where}, {implementation} backend, {report.seconds:.2f} s", 2)
    if fleet is not None:
        how = f"joined {fleet.joined}" if fleet.joined is not None else "a local cluster, shut down at the end"
        w(f"  ray          {how}; ready in {fleet.setup_seconds:.1f} s")
    drain = max(report.drain_seconds, 1e-9)
    w(
        f"  events       {report.events:,}: {report.events / secs:,.0f}/s overall, "
        f"{report.events / drain:,.0f}/s first to last ({report.drain_seconds:.2f} s)"
    )
    w(
        f"  bytes        {report.bytes:,}: {report.bytes / secs / 1e6:,.2f} MB/s overall, "
        f"{report.bytes / drain / 1e6:,.2f} MB/s first to last"
    )
    if report.events:
        w(
            f"  parent CPU   {report.parent_cpu_seconds:.2f} s, "
            f"{report.parent_cpu_seconds / report.events * 1e6:.1f} us per event (spawning included)"
        )
    sent = sum(len(t.child.controls) for t in tracks)
    w(f"  controls     {sent} sent; rejections {report.rejections}")
    for line in _counted("  exits        ", Counter(report.statuses.values()), width, 15):
        w(line)
    # every child when they are few; else the first eight and any that finished but not as expected
    # (the ones still running at a timeout are named by its check)
    listed = [
        t
        for i, t in enumerate(tracks)
        if len(tracks) <= 16 or i < 8 or (t.child.finished and t.child.status != t.expected_status)
    ]
    # a table: the widest cells (a role with its note, a node's id) still fit in 80 columns
    row = "    {:<9} {:<18} {:<10} {:<13} {:>5} {:>7}"
    w(row.format("run", "role", "status", "exit code", "turns", "events") + (" node" if fleet else ""), 6)
    for t in listed:
        child = t.child
        aborted = any(e["type"] == "turn-complete" and e.get("stop-reason") == "aborted" for e in t.events)
        role = f"{t.role}, mid-turn" if t.role in ("finalize", "cancel") and aborted else t.role
        cells = row.format(child.run, role, child.status, _exit_cell(child), t.turns_done, f"{len(t.events):,}")
        w(cells + (f" {t.node[:8]}" if t.node else ""), 6)
    if len(listed) < len(tracks):
        shown = {id(t) for t in listed}
        running = sum(1 for t in tracks if id(t) not in shown and not t.child.finished)
        more = f"    ... and {len(tracks) - len(listed)} more"
        if running == len(tracks) - len(listed):
            more += ", not finished"
        elif running:
            more += f": {len(tracks) - len(listed) - running} ended as expected, {running} not finished"
        else:
            more += ", each ended as expected"
        w(more, 6)
    if fleet is not None:
        _node_lines(w, tracks, fleet.head, width)
    for name, passed, problems in report.checks:
        w(f"  [{'ok' if passed else 'FAIL'}] {name}", 9)
        for problem in problems[:10]:
            w(f"         {problem}", 11)
        if len(problems) > 10:
            w(f"         ... and {len(problems) - 10} more", 11)
    w("PASS" if report.ok else "FAIL")
    out.flush()


def _node_lines(w: Callable[[str, int], None], tracks: list[_Track], head: str | None, width: int) -> None:
    """One line per node that ran children: how many, their events, how they ended."""
    by_node: dict[str, list[_Track]] = {}
    for t in tracks:
        by_node.setdefault(t.node or "?", []).append(t)
    w(f"  nodes        {len(by_node)} ran children", 15)
    for node, on_node in by_node.items():
        label = node[:8] + (" (head)" if node == head else "")
        statuses = Counter(t.child.status for t in on_node)
        events = sum(len(t.events) for t in on_node)
        prefix = f"    node {label:<15} children {len(on_node):<3} events {events:>8,}  "
        for line in _counted(prefix, statuses, width, 8):
            w(line, 8)
