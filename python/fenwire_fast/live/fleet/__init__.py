"""Live children on the nodes of a Ray cluster, driven from one process (``pip install 'fenwire_fast[ray]'``).

A :class:`Fleet` holds one async actor per node it uses (``num_cpus=0``, pinned to its node with a
hard ``NodeAffinitySchedulingStrategy``). Each actor owns a :class:`~fenwire_fast.live.parent.hub.Hub`
and spawns its children on its node. An unnamed fleet's hub is not durable, so a child dies with
its actor's process (the hub's lifeline, see ``docs/live.md``, "When the parent dies"); a named
fleet's runs are durable and outlive both the driver and the actor's process (below).

**Transport.** The driver keeps one long poll outstanding per actor. The actor answers when about
4 MiB is ready (``READY_BYTES``), a bounded time after the first byte (``LINGER``, 50 ms), or at
once for an ack or a changed status, and returns everything ready: per child, the lines its hub
handed over raw since the last answer (:meth:`Hub.raw_batches`: checked, of the run only, the
child's own bytes) as one ``bytes`` blob, and the child's status when it changed (the fields of
:data:`~fenwire_fast.live.parent.surface.STATUS_FIELDS`). The driver decodes the lines with one
:class:`fenwire_fast.Receiver` per child, only when the caller asks for dicts;
:meth:`Fleet.raw_batches` hands them over as ``ScanBatch`` objects. Order within one child is kept.

**Named fleets.** ``Fleet(name=...)`` makes the fleet durable: its actors are detached named Ray
actors (restarted by Ray when their process dies), each with a durable hub on its node, and the
runs outlive the driver: :meth:`Fleet.commit`, :meth:`Fleet.detach` and :meth:`Fleet.attach` work
as a durable local hub's do (see :mod:`~fenwire_fast.live.fleet.hold` and ``docs/fleet.md``).

**Faults.** When an actor is lost (``RayActorError``: its node died, or its process), every
unfinished run of that node ends ``failed`` once, with an error naming the node; a control to such a
child raises :class:`ChildLost` at once; the other nodes' runs go on.

Events come out as a local hub's do: ``for child, event in fleet``, ``async for child, event in
fleet``, :meth:`Fleet.batches`, and :meth:`Fleet.raw_batches` for forwarders.

**One surface.** A :class:`FleetChild` is driven as a local
:class:`~fenwire_fast.live.parent.live_child.LiveChild` is (both take their verbs and status
from :mod:`~fenwire_fast.live.parent.surface`): each control verb is a ``send`` of its control
type, one Ray call to the child's actor, which sends it on the child's own handle.

In parts: :mod:`~fenwire_fast.live.fleet.driver` (:class:`Fleet`),
:mod:`~fenwire_fast.live.fleet.actors` (a node's actor started, polled, lost),
:mod:`~fenwire_fast.live.fleet.hold` (a named fleet's commit, detach, attach),
:mod:`~fenwire_fast.live.fleet.node` (the node actor and its root),
:mod:`~fenwire_fast.live.fleet.node_durable` (a named fleet's node actor),
:mod:`~fenwire_fast.live.fleet.named` (names, the cluster record, the errors),
:mod:`~fenwire_fast.live.fleet.child` (:class:`FleetChild`) and
:mod:`~fenwire_fast.live.fleet.ray_modules` (Ray, imported by name).
"""

from __future__ import annotations

from .child import Batch, ChildLost, FleetChild, Item, RawBatch
from .driver import CONNECT_TIMEOUT, LOST_ROOT_WAIT, Fleet
from .named import FleetBusy, FleetNotFound, FleetVersionMismatch
from .node import HOLD, LINGER, LOOK_AGAIN, READY_BYTES, ROOT_PREFIX, remove_if_orphaned, sweep_orphaned_roots

__all__ = [
    "Fleet",
    "FleetChild",
    "ChildLost",
    "FleetBusy",
    "FleetNotFound",
    "FleetVersionMismatch",
    "CONNECT_TIMEOUT",
    "sweep_orphaned_roots",
    "remove_if_orphaned",
    "ROOT_PREFIX",
    "LINGER",
    "READY_BYTES",
    "LOOK_AGAIN",
    "HOLD",
    "LOST_ROOT_WAIT",
    "Batch",
    "RawBatch",
    "Item",
]
