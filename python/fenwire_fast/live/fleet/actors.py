"""A fleet's actors, one per node it uses: :class:`FleetActors`, a base of
:class:`~fenwire_fast.live.fleet.Fleet` (start a node's actor, keep one long poll outstanding at
it, tell the alive nodes, lose a node). See :mod:`fenwire_fast.live.fleet`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .child import ChildLost, FleetChild
from .named import actor_name
from .ray_modules import RAY

if TYPE_CHECKING:
    from .node_durable import Listing

__all__ = ["FleetActors", "KEEP_CHILDREN"]

#: a named fleet's actors run with Ray's clean-up of a dead worker's children off: their children
#: are durable runs, taken up again by the restarted actor (see docs/fleet.md)
KEEP_CHILDREN = {"env_vars": {"RAY_kill_child_processes_on_worker_exit": "false"}}


class FleetActors:
    """The actors of a :class:`~fenwire_fast.live.fleet.Fleet` (a base class: the fleet sets these
    attributes; a named fleet's actors are taken with ``_take`` and listed with ``_list``)."""

    name: str | None
    namespace: str
    state_root: str | None
    connect_timeout: float
    forward: dict[str, Any] | None
    children: list[FleetChild]
    ray_calls: int
    _actors: dict[str, Any]
    _where: dict[str, tuple[int, str]]
    _polls: dict[Any, str]
    _lost: dict[str, str]
    _remote: Any
    _token: str

    def _take(self, node: str, actor: Any, skip: dict[str, int] | None = None) -> Listing:
        raise NotImplementedError

    def _list(self, node: str, listing: Listing) -> None:
        raise NotImplementedError

    def actors(self) -> dict[str, Any]:
        """``{node id: actor handle}`` of the fleet's actors this driver holds."""
        return dict(self._actors)

    def nodes(self) -> list[str]:
        """The ids of the alive nodes not lost to this fleet."""
        return [n["NodeID"] for n in RAY["ray"].nodes() if n.get("Alive") and n["NodeID"] not in self._lost]

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
            strategy = RAY["NodeAffinitySchedulingStrategy"](node_id=node, soft=False)
            try:
                if self.name is None:
                    actor = self._remote.options(scheduling_strategy=strategy).remote(node, self.forward)
                else:
                    actor = self._remote.options(
                        name=actor_name(self.name, node),
                        namespace=self.namespace,
                        lifetime="detached",
                        get_if_exists=True,
                        scheduling_strategy=strategy,
                        runtime_env=KEEP_CHILDREN,
                    ).remote(node, self.name, self.state_root, self.forward)
                self._where[node] = RAY["ray"].get(actor.where.remote(), timeout=self.connect_timeout)
                self.ray_calls += 1
                if self.name is not None:
                    self._list(node, self._take(node, actor))
            except (RAY["RayActorError"], RAY["GetTimeoutError"]) as exc:
                self._lose(node, exc)
                raise self._gone(node) from None
            self._actors[node] = actor
            self._poll_actor(node, actor)
        return actor

    def _poll_actor(self, node: str, actor: Any) -> None:
        """Keep one long poll outstanding at ``node``'s actor."""
        ref = actor.poll.remote() if self.name is None else actor.poll_held.remote(self._token)
        self._polls[ref] = node
        self.ray_calls += 1

    def implementations(self) -> dict[str, str]:
        """The backend (``"rust"`` or ``"python"``) of ``fenwire_fast`` on each node the fleet has
        an actor on: a node whose package lacks the Rust extension drains its children slower."""
        return {node: RAY["ray"].get(actor.implementation.remote()) for node, actor in self._actors.items()}

    def forwarded(self) -> dict[str, dict[str, Any]]:
        """With ``forward=``: what each node's forwarder did (lines taken, acked, duplicates among
        them, reconnects, refusals as ``"run 'R' seq N: why"``, and the lines it said)."""
        return {node: RAY["ray"].get(actor.forwarded.remote()) for node, actor in self._actors.items()}

    def _least_loaded(self) -> str:
        load = {n: 0 for n in self.nodes()}
        if not load:
            raise RuntimeError("no alive node in the cluster")
        for c in self.children:
            if not c.finished and c.node in load:
                load[c.node] += 1
        return min(load, key=lambda n: load[n])

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
