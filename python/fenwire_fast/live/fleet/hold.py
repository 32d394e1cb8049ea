"""A named fleet's hold on its actors: :class:`FleetHold`, a base of
:class:`~fenwire_fast.live.fleet.Fleet` (commit, detach, attach, take the actors again after a
restart, list them). See :mod:`~fenwire_fast.live.fleet.named` and
:mod:`~fenwire_fast.live.fleet.node_durable` for the two other ends.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any

from ..parent.surface import take_status
from .actors import FleetActors
from .child import FleetChild
from .named import FleetBusy, FleetNotFound, FleetVersionMismatch, Ledger, actor_name, node_of_actor
from .ray_modules import RAY

if TYPE_CHECKING:
    from typing import Self

    from .node_durable import Listing

__all__ = ["FleetHold", "fleet_report", "RESTART_LOOK"]

#: while Ray restarts a named fleet's actor, the driver asks for it again this often (seconds)
RESTART_LOOK = 0.05


class FleetHold(FleetActors):
    """The named part of a :class:`~fenwire_fast.live.fleet.Fleet` (a base class: the fleet sets
    these attributes and starts the actors)."""

    name: str | None
    namespace: str
    state_root: str | None
    connect_timeout: float
    children: list[FleetChild]
    _runs: dict[str, FleetChild]
    _actors: dict[str, Any]
    _polls: dict[Any, str]
    _lost: dict[str, str]
    _held: deque[tuple[FleetChild, Any]]
    _token: str
    _ledger: Ledger | None
    _takeover: bool
    ray_calls: int

    def _forget_ray(self) -> None:
        raise NotImplementedError

    # -- what a driver can do with its named fleet ----------------------------------------------

    def commit(self) -> int:
        """Record, on every node, that each event the driver has handed over (through iteration,
        :meth:`batches`, :meth:`raw_batches`, :meth:`poll_batches` or :meth:`wait`) has been
        handled: a driver that attaches later gets every event after it, none before. One Ray call
        per actor with something to commit; returns how many runs moved. Needs a named fleet. (A
        fleet whose nodes forward, ``forward=``, is committed by its nodes as the stream stores
        its lines: nothing comes to the driver, and nothing moves here.)"""
        ray = RAY["ray"]
        if self._ledger is None:
            raise RuntimeError("commit() needs a named fleet: Fleet(name=...)")
        by_node: dict[str, dict[str, int]] = {}
        for child in self.children:
            if child.handed > child.committed and child.node not in self._lost:
                by_node.setdefault(child.node, {})[child.run] = child.handed
        calls = {self._actors[node].commit.remote(self._token, seqs): (node, seqs) for node, seqs in by_node.items()}
        self.ray_calls += len(calls)
        moved = 0
        for ref, (node, seqs) in calls.items():
            try:
                moved += ray.get(ref)
            except RAY["RayActorError"] as exc:  # restarted: the commit is made again at the next call
                self._retake(node, exc)
                continue
            except FleetBusy as exc:
                raise FleetBusy(str(exc)) from None
            for run, seq in seqs.items():
                child = self._runs[run]
                child.committed = seq
                if child.finished:  # a later driver learns how it ended, even if its node is lost
                    self._ledger.placed(run, node, child.status)
        return moved

    def detach(self) -> None:
        """Let go of the fleet without stopping anything: its runs go on, on their nodes, and a
        driver takes them up again with :meth:`attach` (from the last commit on)."""
        ray = RAY["ray"]
        if self._ledger is None:
            raise RuntimeError("detach() needs a named fleet: Fleet(name=...)")
        refs = [actor.release.remote(self._token) for actor in self._actors.values()]
        try:
            ray.get(refs, timeout=self.connect_timeout)
        except Exception:  # noqa: BLE001 - an actor that is gone holds nothing
            pass
        self._actors.clear()
        self._polls.clear()
        self._forget_ray()
        self._held.clear()

    @classmethod
    def attach(
        cls,
        address: str | None = None,
        *,
        name: str,
        namespace: str | None = None,
        takeover: bool = False,
        connect_timeout: float | None = None,
        **ray_init_kwargs: Any,
    ) -> Self:
        """The named fleet ``name`` taken up by this process: every run it keeps, on every node
        (``fleet.children``, each :class:`FleetChild` with its status), the events after the last
        commit coming again and none before it, controls going on with fresh seqs. A run whose
        node is lost is listed ``failed``, its node named. Raises :class:`FleetNotFound` when no
        such fleet exists, :class:`FleetBusy` when another driver holds it (``takeover=True``
        takes it from a driver that is gone: that one's calls fail from then on), and
        :class:`FleetVersionMismatch` when its actors run another ``fenwire_fast``."""
        fleet = cls(
            address, name=name, namespace=namespace, connect_timeout=connect_timeout, _attach=True, **ray_init_kwargs
        )  # type: ignore[call-arg]
        fleet._takeover = takeover
        try:
            fleet._take_all()
        except BaseException:
            fleet.detach()
            raise
        return fleet

    # -- the work behind it ---------------------------------------------------------------------

    def _check_version(self, meta: dict[str, Any] | None, where: str) -> None:
        from ... import __version__

        theirs = meta.get("version") if meta is not None else None
        if theirs != __version__:
            raise FleetVersionMismatch(
                f"the driver runs fenwire_fast {__version__}, {where} runs fenwire_fast {theirs}: "
                "install the same version on every node and the driver"
            )

    def _take_all(self) -> None:
        """Find the fleet's actors, take each, and make a :class:`FleetChild` per run they list."""
        ray = RAY["ray"]
        assert self._ledger is not None and self.name is not None
        meta = self._ledger.meta()
        if meta is None:
            raise FleetNotFound(f"no fleet named {self.name!r} in Ray namespace {self.namespace!r}")
        self._check_version(meta, f"fleet {self.name!r}")
        self.state_root = meta.get("state_root")
        forward = meta.get("forward")
        self.forward = forward if isinstance(forward, dict) else None
        placed = self._ledger.runs()
        nodes = {
            node
            for entry in ray.util.list_named_actors(all_namespaces=True)
            if entry.get("namespace") == self.namespace
            and (node := node_of_actor(self.name, entry.get("name", ""))) is not None
        }
        alive = self._alive_nodes()
        for node in sorted(nodes):
            if node not in alive:
                self._lost.setdefault(node, "the node is not alive")
                continue
            try:
                actor = ray.get_actor(actor_name(self.name, node), namespace=self.namespace)
                listing = self._take(node, actor)
            except (ValueError, RAY["RayActorError"], RAY["GetTimeoutError"]) as exc:
                self._lost.setdefault(
                    node, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                )
                continue
            self._actors[node] = actor
            self._list(node, listing)
            self._poll_actor(node, actor)
        for run, (node, status) in sorted(placed.items()):
            if run not in self._runs:  # a node without a live actor: its runs are lost with it
                child = FleetChild(self, run, node, 0)  # type: ignore[arg-type]
                self._adopt_child(child)
                if status is not None:
                    child.status, child.finished = status, True
                else:
                    self._lost.setdefault(node, "its actor is gone")
                    child._lose(self._lost[node])

    def _take(self, node: str, actor: Any, skip: dict[str, int] | None = None) -> Listing:
        """Take ``actor`` (this driver's token), after checking its version; its listing. While Ray
        restarts the actor its calls fail at once (``ActorUnavailableError``): they are made again,
        every :data:`RESTART_LOOK` seconds, for at most ``connect_timeout``."""
        ray = RAY["ray"]
        deadline = time.monotonic() + self.connect_timeout
        while True:
            self.ray_calls += 2
            try:
                meta = ray.get(actor.meta.remote(), timeout=self.connect_timeout)
                self._check_version(meta, f"the actor on node {node}")
                listing: Listing = ray.get(
                    actor.take.remote(self._token, self._takeover, skip or {}), timeout=self.connect_timeout
                )
            except FleetBusy as exc:
                raise FleetBusy(str(exc)) from None
            except RAY["ActorUnavailableError"]:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(RESTART_LOOK)
                continue
            return listing

    def _list(self, node: str, listing: Listing) -> None:
        """Make or update a :class:`FleetChild` per listed run."""
        for run, pid, committed, status, closed in listing:
            child = self._runs.get(run)
            if child is None:
                child = self._adopt_child(FleetChild(self, run, node, pid or 0))  # type: ignore[arg-type]
                child.handed = child.received = child.committed = committed
            if status is not None:
                take_status(child, status)
            elif closed is not None:
                child.status, child.finished = closed, True

    def _adopt_child(self, child: FleetChild) -> FleetChild:
        self.children.append(child)
        self._runs[child.run] = child
        return child

    def _retake(self, node: str, exc: BaseException) -> bool:
        """``node``'s actor failed a call: for a named fleet, take the restarted actor again (it
        attached its state dir: the runs go on) and return ``True``; else, or when that fails, the
        node is lost."""
        actor = self._actors.get(node)
        if self._ledger is not None and actor is not None and node in self._alive_nodes():
            skip = {c.run: c.received for c in self.children if c.node == node and not c.finished}
            try:
                listing = self._take(node, actor, skip)
            except (RAY["RayActorError"], RAY["GetTimeoutError"]) as again:
                exc = again
            else:
                self._polls = {ref: n for ref, n in self._polls.items() if n != node}
                self._list(node, listing)
                self._poll_actor(node, actor)
                return True
        self._lose(node, exc)
        return False

    def _alive_nodes(self) -> set[str]:
        return {n["NodeID"] for n in RAY["ray"].nodes() if n.get("Alive")}

    @staticmethod
    def new_token() -> str:
        """A driver's token: who holds a named fleet."""
        return uuid.uuid4().hex


def fleet_report(name: str, namespace: str, timeout: float) -> list[dict[str, Any]]:
    """Every run of the named fleet ``name``, on every node, as its node reports it (see
    ``DurableNodeHub.report``); a run of a node whose actor is gone is reported ``failed`` (or as
    it closed), its node named. Needs a connected Ray (``ray.init``). Takes nothing: the fleet's
    holder goes on undisturbed. Raises :class:`FleetNotFound`."""
    ray = RAY["ray"]
    ledger = Ledger(RAY["kv"], namespace, name)
    if ledger.meta() is None:
        raise FleetNotFound(f"no fleet named {name!r} in Ray namespace {namespace!r}")
    rows: list[dict[str, Any]] = []
    reached: set[str] = set()
    for entry in ray.util.list_named_actors(all_namespaces=True):
        node = node_of_actor(name, entry.get("name", "")) if entry.get("namespace") == namespace else None
        if node is None:
            continue
        try:
            rows.extend(ray.get(ray.get_actor(entry["name"], namespace=namespace).report.remote(), timeout=timeout))
            reached.add(node)
        except (ValueError, RAY["RayActorError"], RAY["GetTimeoutError"]):
            continue
    listed = {row["run"] for row in rows}
    for run, (node, status) in sorted(ledger.runs().items()):
        if run not in listed and node not in reached:
            rows.append(
                {
                    "node": node,
                    "run": run,
                    "pid": None,
                    "status": status or "failed",
                    "committed_seq": None,
                    "last_seq": None,
                    "error": None if status else f"node {node} lost: its actor is gone",
                }
            )
    return sorted(rows, key=lambda row: (row["node"], row["run"]))
