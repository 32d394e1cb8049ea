"""The driver of a fleet: :class:`Fleet`, the one process that places children on the nodes of a
Ray cluster, sends them controls and takes their events from the nodes' actors
(:class:`~fenwire_fast.live.fleet.node.NodeHub`). See :mod:`fenwire_fast.live.fleet`.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from ..parent.tracing import resolve as resolve_trace
from .child import ChildLost, FleetChild
from .events import FleetEvents
from .node import NodeHub, remove_if_orphaned

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


__all__ = ["Fleet", "LOST_ROOT_WAIT"]

#: how long close() waits for a lost actor's last threads to let go of its root (seconds)
LOST_ROOT_WAIT = 5.0


class Fleet(FleetEvents):
    """Live children on the nodes of a Ray cluster; see :mod:`fenwire_fast.live.fleet`.

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
        #: Ray calls made by the driver (spawns, controls, polls): for measurements
        self.ray_calls = 0
        self._remote = ray.remote(num_cpus=0, max_restarts=0, max_concurrency=1000)(NodeHub)

    # -- nodes ----------------------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """The ids of the alive nodes not lost to this fleet."""
        return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["NodeID"] not in self._lost]

    def _gone(self, node: str, run: str | None = None) -> ChildLost:
        """The error for a control or spawn on a lost node (naming the run, when there is one)."""
        where = f"{run}: node {node}" if run is not None else f"node {node}"
        return ChildLost(f"{where} is lost: {self._lost[node]}")

    def _actor(self, node: str) -> Any:
        """The node's actor, started (and polled) the first time; raises :class:`ChildLost` for a lost node."""
        if node in self._lost:
            raise self._gone(node)
        actor = self._actors.get(node)
        if actor is None:
            strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
            actor = self._remote.options(scheduling_strategy=strategy).remote(node)
            try:
                self._where[node] = ray.get(actor.where.remote())
            except RayActorError as exc:
                self._lose(node, exc)
                raise self._gone(node) from None
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
        options = _traced(dict(kwargs, mock=mock, agent=agent, agent_config=agent_config, deadline=deadline), trace)
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
                    raise self._gone(node) from None
        child = FleetChild(self, run, node, pid)
        self.children.append(child)
        self._runs[run] = child
        return child

    def _send(self, child: FleetChild, type_: str, payload: dict[str, Any] | None) -> int:
        """Send ``child`` a control through its node's actor (one Ray call); returns its ``seq``."""
        if child.node in self._lost:
            raise self._gone(child.node, child.run)
        self.ray_calls += 1
        try:
            seq: int = ray.get(self._actor(child.node).send.remote(child.run, type_, payload))
        except RayActorError as exc:
            self._lose(child.node, exc)
            raise self._gone(child.node, child.run) from None
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
            if child.node == node:
                child._lose(why)

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
        for run, blob, status in answer:
            out.extend(self._runs[run]._take(blob, status, raw))
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
            child._close()
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


def _traced(options: dict[str, Any], trace: Any) -> dict[str, Any]:
    """``options`` with, when ``trace`` resolves on, the driver's current span as the child's
    ``TRACEPARENT`` (in its ``env``; nothing when no span is current)."""
    if resolve_trace(trace) is not None:
        from ..parent.otel import current_traceparent

        context = current_traceparent()
        if context:
            options["env"] = {**(options.get("env") or {}), **context}
    return options
