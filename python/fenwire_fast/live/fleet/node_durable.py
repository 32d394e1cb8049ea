"""The node actor of a named fleet: :class:`DurableNodeHub`, a durable hub on one node that one
driver at a time holds, and that a new actor process takes up again after the last one died.

Its runs live in a state dir on the node (``<state_root>/<node id>``, see
:mod:`~fenwire_fast.live.parent.durable`), so they outlive the driver and the actor's own process:

- a driver :meth:`~DurableNodeHub.take`\\ s the actor (a token of its own; another driver's
  token is refused unless it takes over), and from then on every call it makes carries that
  token: a driver that was taken over gets :class:`~fenwire_fast.live.fleet.named.FleetBusy`;
- taking the actor rewinds it: its hub lets go of every run and attaches the state dir again,
  so the events after the last commit come again, and none before it;
- a new actor process (Ray restarts a named fleet's actor) attaches the state dir the same way;
- :meth:`~DurableNodeHub.commit` commits, per run, the seq the driver has handed over;
- with ``forward`` (``Fleet(name=..., forward=...)``) the actor publishes its runs' lines to
  JetStream itself, from the moment it starts, whether a driver holds it or not: its forwarder
  commits what the stream stored, a new actor process asks the stream where each run stands, and
  a driver that takes the node gets statuses only (nothing is rewound: no line goes to a driver).

Nothing here imports Ray (see :mod:`~fenwire_fast.live.fleet.node`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any

from ..parent.hub import Hub
from ..parent.surface import status_key, status_of
from .named import FleetBusy, default_state_root
from .node import Answer, NodeHub

__all__ = ["DurableNodeHub", "Listing", "HOLDER_FILE"]

#: the holding driver's token, in the node's state dir (a restarted actor keeps refusing the others)
HOLDER_FILE = "fleet-holder"
_HOLDER_CAP = 256

#: one run as a node lists it: ``(run, pid, committed seq, status or None, closing status or None)``:
#: the status as :func:`~fenwire_fast.live.parent.surface.status_of` gives it for a run the actor
#: holds, the closing status for one that finished with all its events committed
Listing = list[tuple[str, int | None, int, tuple[Any, ...] | None, str | None]]


class DurableNodeHub(NodeHub):
    """A named fleet's actor body on one node (see the module docstring)."""

    def __init__(
        self, node: str, fleet: str, state_root: str | None = None, forward: dict[str, Any] | None = None
    ) -> None:
        self.node = node
        self.fleet = fleet
        root = state_root if state_root is not None else default_state_root(fleet)
        os.makedirs(root, mode=0o700, exist_ok=True)
        #: this node's state dir
        self.root = os.path.join(root, node)
        self.state_root = root
        self._lock = -1  # no roots lock: the state dir is the hub's, and it is locked by the hub
        self.hub = self._attach()
        self.children = {child.run: child for child in self.hub.children}
        self._said: dict[str, tuple[Any, ...]] = {}
        self._awake = asyncio.Event()
        self.left = 0
        self._holder = self._read_holder()
        #: run -> the seq the holding driver has already: lines up to it are not sent again
        self._skip: dict[str, int] = {}
        self._forward = forward
        self._forward_early()

    def _forward_early(self) -> None:
        """Start forwarding now, when the actor's event loop runs its constructor (an async Ray
        actor's does): the runs' lines go out while no driver holds the node. Otherwise the
        first poll starts it."""
        if self._forward is None:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._start_forwarding()

    def _attach(self) -> Hub:
        """The hub over this node's state dir: every run it keeps taken up again (a new one at first)."""
        if os.path.isdir(self.root):
            return Hub.attach(self.root)
        return Hub(state_dir=self.root)

    # -- the holder -----------------------------------------------------------------------------

    def _read_holder(self) -> str | None:
        try:
            with open(os.path.join(self.root, HOLDER_FILE), "rb") as handle:
                token = handle.read(_HOLDER_CAP).decode("ascii", "replace").strip()
        except OSError:
            return None
        return token or None

    def _write_holder(self, token: str | None) -> None:
        path = os.path.join(self.root, HOLDER_FILE)
        if token is None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            return
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="ascii") as handle:
            handle.write(token)
        os.replace(temporary, path)
        self._holder = token

    def _check(self, token: str) -> None:
        if token != self._holder:
            raise FleetBusy(f"fleet {self.fleet!r} on node {self.node}: another driver holds it now")

    def holder(self) -> str | None:
        """The token of the driver that holds this node (``None``: free)."""
        return self._holder

    def take(self, token: str, takeover: bool = False, skip: dict[str, int] | None = None) -> Listing:
        """Let the driver of ``token`` hold this node and list its runs; rewind so that every
        event after the last commit comes again (past ``skip[run]``, the seq that driver already
        has of ``run``). Raises :class:`FleetBusy` when another driver holds it and ``takeover``
        is false."""
        if self._holder not in (None, token) and not takeover:
            raise FleetBusy(
                f"fleet {self.fleet!r} on node {self.node} is held by another driver; "
                "attach with takeover=True once that driver is gone"
            )
        self._write_holder(token)
        if self.hub.children and self._forward is None:
            self.hub.detach()
            self.hub = self._attach()
            self.children = {child.run: child for child in self.hub.children}
        self._said = {}
        self._skip = {run: seq for run, seq in (skip or {}).items() if run in self.children}
        self._awake.set()  # a poll under way looks at the new hub
        return self.listing()

    def release(self, token: str) -> None:
        """The driver of ``token`` lets go (nothing stops); another may take the node without taking over."""
        if self._holder == token:
            self._write_holder(None)
            self._holder = None

    def listing(self) -> Listing:
        """Every run this node keeps: the ones its hub holds, and the ones closed (finished with
        every event committed), from their manifests."""
        out: Listing = []
        state = self.hub.state
        manifests = state.manifests() if state is not None else []
        for _name, manifest in manifests:
            if isinstance(manifest, str):
                continue
            child = self.children.get(manifest.run)
            if child is not None:
                out.append((manifest.run, manifest.pid, manifest.committed_seq, status_of(child), None))
            elif manifest.closed:
                out.append((manifest.run, manifest.pid, manifest.committed_seq, None, manifest.status or "done"))
        return out

    def report(self) -> list[dict[str, Any]]:
        """:meth:`listing` for people (``fenwire fleet``): per run its id, pid, status, committed
        seq and the last seq read, as plain values. Reads only: the holder is not asked."""
        rows = []
        for run, pid, committed, status, closed in self.listing():
            child = self.children.get(run)
            rows.append(
                {
                    "node": self.node,
                    "run": run,
                    "pid": pid,
                    "status": status[0] if status is not None else closed,
                    "committed_seq": committed,
                    "last_seq": child.channel.last_seq if child is not None else committed,
                    "error": status[1] if status is not None else None,
                }
            )
        return rows

    # -- the driver's calls ---------------------------------------------------------------------

    def spawn_held(self, token: str, prompt: str | None, run: str, kwargs: dict[str, Any]) -> int:
        """:meth:`NodeHub.spawn` for the holding driver (the run is durable: in the state dir)."""
        self._check(token)
        kwargs.pop("directory", None)
        child = self.hub.spawn(prompt, run=run, **kwargs)
        self.children[run] = child
        self._awake.set()
        return int(child.pid)

    def send_held(self, token: str, run: str, type_: str, payload: dict[str, Any] | None) -> int:
        """:meth:`NodeHub.send` for the holding driver."""
        self._check(token)
        return self.send(run, type_, payload)

    def commit(self, token: str, seqs: dict[str, int]) -> int:
        """Commit each run of ``seqs`` at that seq (what the driver has handed over); return how
        many runs moved. A run that finished and is committed to its end is closed, and leaves.
        A forwarding node commits what the stream stored by itself: the driver's commit moves nothing."""
        self._check(token)
        if self._forward is not None:
            return 0
        children = {self.children[run]: seq for run, seq in seqs.items() if run in self.children}
        moved = self.hub.commit_at(children) if children else 0
        for child in children:
            if self._said.get(child.run) == status_key(child):
                self._finished_said(child.run)
        return moved

    async def poll_held(self, token: str) -> Answer:
        """:meth:`NodeHub.poll` for the holding driver; :class:`FleetBusy` once another holds it."""
        self._check(token)
        self._leave_closed()
        answer = await self.poll()
        if self._holder is None:  # the driver let go meanwhile: nothing for it, and no error
            return []
        self._check(token)
        return answer

    def _batches(self) -> list[tuple[Any, Any]]:
        """The hub's raw batches, less what the holding driver has already (after a rewind); none
        when the node forwards (its forwarder reads the hub)."""
        if self.forwarder is not None:
            return []
        batches = self.hub.poll_raw_batches()
        if not self._skip:
            return batches
        out = []
        for child, batch in batches:
            skip = self._skip.get(child.run)
            if skip is not None:
                seqs = batch.seqs
                first = next((i for i, seq in enumerate(seqs) if seq > skip), len(seqs))
                if first == len(seqs):
                    continue
                del self._skip[child.run]
                batch = batch.slice(first, len(seqs))
            out.append((child, batch))
        return out

    def _finished_said(self, run: str) -> None:
        """A durable run leaves once its last status was sent and the driver committed it to its
        end (it is closed then): until then, a driver that takes the node again gets it back."""
        child = self.children.get(run)
        if child is not None and child.finished and child.durable is not None and child.durable.manifest.closed:
            self._leave(run)

    def _leave_closed(self) -> None:
        """A forwarding node's finished runs whose last status went out leave once the forwarder
        committed them to their end (the commit closes them)."""
        if self.forwarder is None:
            return
        for run, child in list(self.children.items()):
            if child.finished and self._said.get(run) == status_key(child):
                self._finished_said(run)

    # -- closing --------------------------------------------------------------------------------

    def close_held(self, token: str) -> None:
        """:meth:`close` for the holding driver."""
        self._check(token)
        self.close()

    def close(self) -> None:
        """End every run, and remove the state dir (and the state root, once no node uses it)."""
        if self._forwarding is not None:
            self._forwarding.cancel()
        self.hub.close()
        shutil.rmtree(self.root, ignore_errors=True)
        try:
            os.rmdir(self.state_root)
        except OSError:
            pass
