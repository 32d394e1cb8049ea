"""Live children on the nodes of a Ray cluster, driven from one process (``pip install 'fenwire_fast[ray]'``).

A :class:`Fleet` holds one async actor per node it uses (``num_cpus=0``, pinned to its node with a
hard ``NodeAffinitySchedulingStrategy``). Each actor owns a non-durable :class:`~fenwire_fast.live.parent.hub.Hub`
and spawns its children on its node, so a child dies with its actor's process (the hub's lifeline,
see ``docs/live.md``, "When the parent dies"): children never outlive their actor.

**Transport.** The driver keeps one long poll outstanding per actor. The actor answers when about
4 MiB is ready (``READY_BYTES``), a bounded time after the first byte (``LINGER``, 50 ms), or at
once for an ack or a changed status, and returns everything ready: per child, the lines its hub handed over raw since the last answer (:meth:`Hub.raw_batches`:
checked, of the run only, the child's own bytes) as one ``bytes`` blob, and the child's status
snapshot. The driver decodes the lines with one :class:`fenwire_fast.Receiver` per child, only
when the caller asks for dicts; :meth:`Fleet.raw_batches` hands them over as ``ScanBatch`` objects.
Order within one child is kept.

**Faults.** When an actor is lost (``RayActorError``: its node died, or its process), every
unfinished run of that node ends ``failed`` once, with an error naming the node; a control to such a
child raises :class:`ChildLost` at once; the other nodes' runs go on.

Events come out as a local hub's do: ``for child, event in fleet``, ``async for child, event in
fleet``, :meth:`Fleet.batches`, and :meth:`Fleet.raw_batches` for forwarders.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .. import EVENT_TYPE_ORDER, Receiver, ScanBatch
from .parent import roots
from .parent.channel import SentControl
from .parent.tracing import resolve as resolve_trace

# Ray is an optional extra: imported by name, so the package type-checks with or without it (typed Any)
ray: Any
RayActorError: Any
NodeAffinitySchedulingStrategy: Any
try:
    ray = importlib.import_module("ray")
    RayActorError = importlib.import_module("ray.exceptions").RayActorError
    NodeAffinitySchedulingStrategy = importlib.import_module(
        "ray.util.scheduling_strategies"
    ).NodeAffinitySchedulingStrategy
except ImportError:  # pragma: no cover - the fleet needs the ray extra; nothing else imports ray
    ray = RayActorError = NodeAffinitySchedulingStrategy = None


__all__ = ["Fleet", "FleetChild", "ChildLost", "sweep_orphaned_roots"]

#: how long an actor lingers after the first ready byte before it answers a poll (seconds)
LINGER = 0.05
#: an actor answers at once when about this many bytes are ready
READY_BYTES = 4 << 20
#: while lingering, an actor looks for an ack or a new status this often (seconds)
LOOK_AGAIN = 0.004
#: the longest an actor holds a poll with nothing to say (seconds)
HOLD = 1.0
#: how long close() waits for a lost actor's last threads to let go of its root (seconds)
LOST_ROOT_WAIT = 5.0

_FINISHED = ("done", "failed", "cancelled")
#: ``ScanBatch.types`` holds this byte for a ``control-ack`` line
_ACK = EVENT_TYPE_ORDER.index("control-ack")


class ChildLost(RuntimeError):
    """A control for a child whose node (or actor) is lost."""


#: each actor keeps its children's private directories under one root of this prefix, locked
ROOT_PREFIX = "fenwire-fleet-"


def remove_if_orphaned(root: str, wait: float = 0.0) -> bool:
    """Remove an actor's root directory once no process holds its lock (the actor died without
    closing: its node was lost, or its process killed); return whether it was removed. See
    :func:`fenwire_fast.live.parent.roots.remove_if_orphaned` (every hub's roots work the same way)."""
    return roots.remove_if_orphaned(root, wait)


def sweep_orphaned_roots(parent: str | None = None) -> list[str]:
    """Remove the roots under ``parent`` (default: the temporary directory) that dead actors left
    behind; return their paths. Each new actor sweeps its host, and :meth:`Fleet.close` the roots
    of the actors it lost."""
    return roots.sweep_orphaned_roots(ROOT_PREFIX, parent)


def _locked_root() -> tuple[str, int]:
    """A new root directory and the descriptor of its held lock (see :mod:`~fenwire_fast.live.parent.roots`)."""
    return roots.locked_root(ROOT_PREFIX)


class _NodeHub:
    """The actor body: a Hub on one node, answering one long poll at a time."""

    def __init__(self, node: str) -> None:
        from .parent.hub import Hub

        self.node = node
        #: the children's private directories go under this root, removed on close (or, if the
        #: actor dies first, by the next sweep on its host)
        self.root, self._lock = _locked_root()
        self.hub = Hub()
        self.children: dict[str, Any] = {}
        self._said: dict[str, tuple[Any, ...]] = {}  # the key (``_key``) of the last snapshot sent
        self._awake = asyncio.Event()

    def pid(self) -> int:
        return os.getpid()

    def where(self) -> tuple[int, str]:
        """The actor's pid and its root directory."""
        return os.getpid(), self.root

    def implementation(self) -> str:
        """The backend the actor's package runs: ``"rust"``, or ``"python"`` without the extension."""
        from .. import IMPLEMENTATION

        return IMPLEMENTATION

    def cpu(self) -> tuple[float, float]:
        """The actor process's CPU seconds so far, and its event loop thread's (for measurements)."""
        return time.process_time(), time.thread_time()

    def spawn(self, prompt: str | None, run: str, kwargs: dict[str, Any]) -> int:
        kwargs.setdefault("directory", self.root)
        child = self.hub.spawn(prompt, run=run, **kwargs)
        self.children[run] = child
        self._awake.set()
        return int(child.pid)

    def control(self, run: str, method: str, args: list[Any]) -> int:
        child = self.children[run]
        seq: int = getattr(child, method)(*args)
        return seq

    def _key(self, child: Any) -> tuple[Any, ...]:
        """What changes whenever the child's snapshot does, cheap to make at every look: the
        controls and rejected lines are counted here (an ack takes its control out of ``unacked``)
        and listed only in the snapshot sent."""
        channel = child.channel
        return (
            child.status,
            child.error,
            child.finished,
            channel.idle,
            channel.final_text,
            child.returncode,
            len(channel.controls),
            len(channel.unacked),
            len(channel.errors) + channel.errors_dropped,
            channel.result is None,
        )

    def _snapshot(self, child: Any) -> tuple[Any, ...]:
        """What :meth:`FleetChild._update` takes: the run's state as its node's channel mirrors it."""
        channel = child.channel
        controls = tuple((c.seq, c.type, c.text, c.status, c.reason) for c in channel.controls.values())
        return (
            child.status,
            child.error,
            child.finished,
            channel.idle,
            channel.final_text,
            child.returncode,
            controls,
            tuple(e.error for e in channel.errors),
            channel.result,
        )

    async def poll(self) -> list[tuple[str, bytes, tuple[Any, ...] | None]]:
        """Everything ready: ``[(run, lines, snapshot or None)]``, after a linger or ``READY_BYTES``.

        The hub hands over raw batches (:meth:`Hub.poll_raw_batches`): the lines come checked,
        of the run only, as the child wrote them, and nothing is decoded here but the few lines
        that change a run's state."""
        hub = self.hub
        loop = asyncio.get_running_loop()
        start = loop.time()
        first: float | None = None
        lines: dict[str, list[bytes]] = {}
        size = 0
        while True:
            urgent = False
            for child, batch in hub.poll_raw_batches():
                lines.setdefault(child.run, []).append(batch.lines)
                size += len(batch.lines)
                urgent = urgent or _ACK in batch.types
            moved = [run for run, child in self.children.items() if self._said.get(run) != self._key(child)]
            now = loop.time()
            if first is None and (lines or moved):
                first = now
            if first is not None and (urgent or moved or size >= READY_BYTES or now - first >= LINGER):
                break  # an ack or a new status goes at once: the caller may be waiting for it
            if first is None:
                if now - start >= HOLD:
                    return []
                self._awake.clear()
                await self._sleep(HOLD - (now - start))
            else:
                # Bytes are ready: let more come for the rest of the linger, looking again every
                # few ms (a timer, not the files' wake-ups: a busy child would wake us at once).
                await asyncio.sleep(min(LINGER - (now - first), LOOK_AGAIN))
        out: list[tuple[str, bytes, tuple[Any, ...] | None]] = []
        for run, child in self.children.items():
            blob = b"".join(lines.get(run, ()))
            key = self._key(child)
            if key == self._said.get(run):
                if blob:
                    out.append((run, blob, None))
            else:
                self._said[run] = key
                out.append((run, blob, self._snapshot(child)))
        return out

    async def _sleep(self, timeout: float) -> None:
        """Sleep on the hub's wake-ups, or until a spawn (a new child to watch)."""
        hub_wait = asyncio.ensure_future(self.hub.sleep_async(timeout))
        spawned = asyncio.ensure_future(self._awake.wait())
        await asyncio.wait([hub_wait, spawned], timeout=timeout + 0.05, return_when=asyncio.FIRST_COMPLETED)
        for task in (hub_wait, spawned):
            task.cancel()

    def close(self) -> None:
        self.hub.close()
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._lock)


class FleetChild:
    """The driver's view of one child on some node; controls are routed to its node's actor."""

    def __init__(self, fleet: Fleet, run: str, node: str, pid: int) -> None:
        self.fleet = fleet
        self.run = run
        #: the Ray node id the child runs on
        self.node = node
        self.pid = pid
        self.status = "starting"
        self.error: str | None = None
        self.finished = False
        self.idle = False
        #: the run's final text, once the run has it
        self.final_text: str | None = None
        #: the child process's exit code once it ended (negative: the signal), else ``None``
        self.returncode: int | None = None
        #: the controls sent to the run, by ``seq``, each with its ack's status and reason once
        #: acknowledged (as its node's channel has them; the first prompt is ``seq`` 1)
        self.controls: dict[int, SentControl] = {}
        #: the problems its node's channel found in the run's event lines (rejected or foreign
        #: lines, in words)
        self.errors: list[str] = []
        #: the run's ``result`` event, once it arrived
        self.result: dict[str, Any] | None = None
        self.messages = 0
        #: bytes of the run's lines received by the driver
        self.bytes = 0
        self._receiver = Receiver("event", run=run)

    @property
    def rejected(self) -> list[SentControl]:
        """The controls the child answered with ``rejected``."""
        return [c for c in self.controls.values() if c.status == "rejected"]

    def _update(self, snap: tuple[Any, ...]) -> None:
        """Take a snapshot made by the node's actor (``_NodeHub._snapshot``)."""
        (
            self.status,
            self.error,
            self.finished,
            self.idle,
            self.final_text,
            self.returncode,
            controls,
            errors,
            self.result,
        ) = snap
        self.controls = {
            seq: SentControl(seq, type_, text, status, reason) for seq, type_, text, status, reason in controls
        }
        self.errors = list(errors)

    def _control(self, method: str, *args: Any) -> int:
        return self.fleet._control(self, method, list(args))

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        return self._control("send", type_, payload)

    def prompt(self, text: str) -> int:
        return self._control("prompt", text)

    def steer(self, text: str) -> int:
        return self._control("steer", text)

    def follow_up(self, text: str) -> int:
        return self._control("follow_up", text)

    def finalize(self, note: str | None = None) -> int:
        return self._control("finalize", note)

    def cancel(self) -> int:
        return self._control("cancel")

    def close(self) -> int:
        return self._control("close")

    def _decode(self, blob: bytes) -> list[dict[str, Any]]:
        # the node's hub checked the lines and kept only this run's: they all decode
        out: list[dict[str, Any]] = self._receiver.feed(blob)
        self.messages += len(out)
        return out

    def __repr__(self) -> str:
        return f"<FleetChild {self.run} on {self.node[:8]} pid {self.pid} {self.status}>"


Batch = tuple[FleetChild, list[dict[str, Any]]]
RawBatch = tuple[FleetChild, ScanBatch]
Item = tuple[FleetChild, dict[str, Any]]


class Fleet:
    """Live children on the nodes of a Ray cluster; see the module docstring.

    ``address``: the cluster to join (``ray.init(address=...)``); ``None`` starts a local one (or
    uses the one this process is already connected to). ``ray_init_kwargs`` go to ``ray.init``.
    :meth:`close` stops every child and actor; it shuts down only a cluster it started."""

    def __init__(self, address: str | None = None, **ray_init_kwargs: Any) -> None:
        if ray is None:
            raise ImportError("fenwire_fast.live.fleet needs Ray: pip install 'fenwire_fast[ray]'")
        self._own = False
        if not ray.is_initialized():
            ray.init(address=address, **ray_init_kwargs)
            self._own = True
        self.children: list[FleetChild] = []
        self._runs: dict[str, FleetChild] = {}
        self._actors: dict[str, Any] = {}
        #: node -> (actor pid, actor root), learnt when the actor starts
        self._where: dict[str, tuple[int, str]] = {}
        self._polls: dict[Any, str] = {}  # outstanding poll ref -> node
        self._lost: dict[str, str] = {}  # node -> why
        self._numbered = 0
        self._pending: list[Batch] = []
        #: Ray calls made by the driver (spawns, controls, polls): for measurements
        self.ray_calls = 0
        self._remote = ray.remote(num_cpus=0, max_restarts=0, max_concurrency=1000)(_NodeHub)

    # -- nodes ----------------------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """The ids of the alive nodes not lost to this fleet."""
        return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["NodeID"] not in self._lost]

    def _actor(self, node: str) -> Any:
        if node in self._lost:
            raise ChildLost(f"node {node} is lost: {self._lost[node]}")
        actor = self._actors.get(node)
        if actor is None:
            strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
            actor = self._remote.options(scheduling_strategy=strategy).remote(node)
            try:
                self._where[node] = ray.get(actor.where.remote())
            except RayActorError as exc:
                self._lose(node, exc)
                raise ChildLost(f"node {node} is lost: {self._lost[node]}") from None
            self._actors[node] = actor
            self._polls[actor.poll.remote()] = node
            self.ray_calls += 2
        return actor

    def implementations(self) -> dict[str, str]:
        """The backend (``"rust"`` or ``"python"``) of ``fenwire_fast`` on each node the fleet has
        an actor on: a node whose package lacks the Rust extension drains its children slower."""
        return {node: ray.get(actor.implementation.remote()) for node, actor in self._actors.items()}

    def _least_loaded(self) -> str:
        load = {n: 0 for n in self.nodes()}
        if not load:
            raise RuntimeError("no alive node in the cluster")
        for c in self.children:
            if not c.finished and c.node in load:
                load[c.node] += 1
        return min(load, key=lambda n: load[n])

    # -- children -------------------------------------------------------------------------------

    def spawn(
        self,
        prompt: str | None = None,
        *,
        run: str | None = None,
        node: str | None = None,
        mock: Any = None,
        agent: str | None = None,
        agent_config: dict[str, Any] | None = None,
        timeout: float | None = None,
        deadline: float | None = None,
        trace: Any = None,
        **kwargs: Any,
    ) -> FleetChild:
        """Start a child on ``node`` (default: the least-loaded alive node) and return its handle.
        ``kwargs`` go to :func:`~fenwire_fast.live.parent.spawn.spawn` on the node.

        ``trace`` (``True``, ``False``, or ``None``: on when ``FENWIRE_OTEL=1``; the ``otel``
        extra): the child joins the driver's trace, its ``TRACEPARENT`` being the driver's current
        span (nothing when no span is current). The spans of the run itself are made where its
        hub runs, on the node, when tracing is on there."""
        if run is None:
            self._numbered += 1
            run = f"child-{self._numbered}"
        if run in self._runs:
            raise ValueError(f"run {run!r} is already in this fleet")
        if deadline is None and timeout is not None:
            deadline = time.time() + timeout
        options = dict(kwargs, mock=mock, agent=agent, agent_config=agent_config, deadline=deadline)
        if resolve_trace(trace) is not None:
            from .parent.otel import current_traceparent

            context = current_traceparent()
            if context:
                options["env"] = {**(options.get("env") or {}), **context}
        chosen = node
        while True:
            node = chosen if chosen is not None else self._least_loaded()
            try:
                actor = self._actor(node)
                self.ray_calls += 1
                pid = ray.get(actor.spawn.remote(prompt, run, options))
                break
            except (RayActorError, ChildLost) as exc:
                self._lose(node, exc)
                if chosen is not None:  # automatic placement tries the next node
                    raise ChildLost(f"node {node} is lost: {self._lost[node]}") from None
        child = FleetChild(self, run, node, pid)
        self.children.append(child)
        self._runs[run] = child
        return child

    def _control(self, child: FleetChild, method: str, args: list[Any]) -> int:
        if child.node in self._lost:
            raise ChildLost(f"{child.run}: node {child.node} is lost: {self._lost[child.node]}")
        self.ray_calls += 1
        try:
            seq: int = ray.get(self._actor(child.node).control.remote(child.run, method, args))
        except RayActorError as exc:
            self._lose(child.node, exc)
            raise ChildLost(f"{child.run}: node {child.node} is lost: {self._lost[child.node]}") from None
        return seq

    def _lose(self, node: str, exc: BaseException) -> None:
        """End the node's unfinished runs as failed, once each."""
        if node in self._lost:
            return
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        self._lost[node] = why
        self._actors.pop(node, None)
        self._polls = {ref: n for ref, n in self._polls.items() if n != node}
        for child in self.children:
            if child.node == node and not child.finished:
                child.status = "failed"
                child.finished = True
                child.error = f"node {node} lost: {why}"

    @property
    def finished(self) -> bool:
        return all(c.finished for c in self.children)

    @property
    def active(self) -> list[FleetChild]:
        return [c for c in self.children if not c.finished]

    # -- events ---------------------------------------------------------------------------------

    def _answer(self, ref: Any, node: str, raw: bool) -> list[Any]:
        """Take one actor's answer and poll it again: ``(child, messages)`` pairs, or with
        ``raw`` ``(child, ScanBatch)`` pairs."""
        del self._polls[ref]
        try:
            answer = ray.get(ref)
        except RayActorError as exc:
            self._lose(node, exc)
            return []
        actor = self._actors[node]
        self._polls[actor.poll.remote()] = node
        self.ray_calls += 1
        out: list[Any] = []
        for run, blob, snap in answer:
            child = self._runs[run]
            if blob:
                child.bytes += len(blob)
                if raw:
                    batch = child._receiver.scan_batch(blob)
                    child.messages += len(batch)
                    out.append((child, batch))
                else:
                    out.append((child, child._decode(blob)))
            if snap is not None:
                child._update(snap)
        return out

    def _poll(self, timeout: float | None, raw: bool) -> list[Any]:
        refs = list(self._polls)
        if not refs:
            return []
        # one answer at a time: another one already in is taken by the next call, at no wait
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        out: list[Any] = []
        for ref in ready:
            out.extend(self._answer(ref, self._polls[ref], raw))
        return out

    def poll_batches(self, timeout: float | None = 0.0) -> list[Batch]:
        """The answers ready within ``timeout`` seconds (``None``: wait for one), as
        ``(child, messages)`` pairs."""
        return self._poll(timeout, False)

    def poll_raw_batches(self, timeout: float | None = 0.0) -> list[RawBatch]:
        """:meth:`poll_batches` for a forwarder: ``(child, ScanBatch)`` pairs, the child's lines
        as it wrote them (checked on its node, and again here with no dict made)."""
        return self._poll(timeout, True)

    def raw_batches(self) -> Iterator[RawBatch]:
        """Yield ``(child, ScanBatch)`` until every child has finished."""
        while not self.finished:
            yield from self._poll(HOLD, True)

    def batches(self) -> Iterator[Batch]:
        """Yield ``(child, messages)`` until every child has finished."""
        while not self.finished:
            yield from self.poll_batches(timeout=HOLD)

    def __iter__(self) -> Iterator[Item]:
        for child, messages in self.batches():
            for message in messages:
                yield child, message

    async def batches_async(self) -> AsyncIterator[Batch]:
        """:meth:`batches` for asyncio (the wait runs in a thread; the loop goes on)."""
        while not self.finished:
            for batch in await asyncio.to_thread(self.poll_batches, HOLD):
                yield batch

    async def stream(self) -> AsyncIterator[Item]:
        async for child, messages in self.batches_async():
            for message in messages:
                yield child, message

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.stream()

    def wait(self, timeout: float | None = None) -> dict[str, str]:
        """Drain until every child has finished; return ``{run: status}``. Raises ``TimeoutError``."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.finished:
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"{len(self.active)} children still running after {timeout} s")
            self._poll(HOLD, True)  # nothing is decoded for a caller that only waits
        return {c.run: c.status for c in self.children}

    # -- closing --------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every child and actor; shut Ray down only when this fleet started it."""
        for node, actor in self._actors.items():
            if node in self._lost:
                continue
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a lost actor took its children with it
                pass
            ray.kill(actor)
        for child in self.children:
            if not child.finished:
                child.finished = True
                child.status = "cancelled" if child.status not in _FINISHED else child.status
        self._actors.clear()
        self._polls.clear()
        # the roots of lost actors, where they are on this host (a local cluster); a root on
        # another host goes with the next fleet actor's sweep there
        for node in self._lost:
            if node in self._where:
                remove_if_orphaned(self._where[node][1], wait=LOST_ROOT_WAIT)
        if self._own:
            ray.shutdown()
            self._own = False

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
