"""The node actor of a fleet: a :class:`~fenwire_fast.live.parent.hub.Hub` on one node, answering one
long poll at a time, and the locked root its children's directories live under.

Nothing here imports Ray: the driver (:mod:`~fenwire_fast.live.fleet.driver`) makes
:class:`NodeHub` a Ray actor. Each answer holds, per child, the lines its hub handed over raw since
the last answer and, when it changed, the child's status as
:func:`~fenwire_fast.live.parent.surface.status_of` gives it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from typing import Any

from ... import EVENT_TYPE_ORDER
from ..parent import roots
from ..parent.surface import status_key, status_of

__all__ = [
    "NodeHub",
    "Answer",
    "LINGER",
    "READY_BYTES",
    "LOOK_AGAIN",
    "HOLD",
    "ROOT_PREFIX",
    "remove_if_orphaned",
    "sweep_orphaned_roots",
]

#: how long an actor lingers after the first ready byte before it answers a poll (seconds)
LINGER = 0.05
#: an actor answers at once when about this many bytes are ready
READY_BYTES = 4 << 20
#: while lingering, an actor looks for an ack or a new status this often (seconds)
LOOK_AGAIN = 0.004
#: the longest an actor holds a poll with nothing to say (seconds)
HOLD = 1.0

#: ``ScanBatch.types`` holds this byte for a ``control-ack`` line
_ACK = EVENT_TYPE_ORDER.index("control-ack")

#: each actor keeps its children's private directories under one root of this prefix, locked
ROOT_PREFIX = "fenwire-fleet-"

#: one answer to a poll: ``[(run, lines, status or None)]``, the status as ``status_of`` gives it
Answer = list[tuple[str, bytes, tuple[Any, ...] | None]]


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


class NodeHub:
    """The actor body: a Hub on one node, answering one long poll at a time."""

    #: with ``forward`` (``Fleet(forward=...)``), the node publishes its children's lines to
    #: JetStream itself: a Forwarder reads the hub, and the polls carry statuses only (class-level
    #: defaults: a named fleet's actor does not forward)
    _forward: dict[str, Any] | None = None
    forwarder: Any = None
    _forwarding: asyncio.Future[None] | None = None
    _forward_said: list[str]

    def __init__(self, node: str, forward: dict[str, Any] | None = None) -> None:
        from ..parent.hub import Hub

        self.node = node
        #: the children's private directories go under this root, removed on close (or, if the
        #: actor dies first, by the next sweep on its host)
        self.root, self._lock = _locked_root()
        self.hub = Hub()
        self.children: dict[str, Any] = {}
        self._said: dict[str, tuple[Any, ...]] = {}  # the status_key of the last status sent
        self._awake = asyncio.Event()
        #: runs that finished and left the bookkeeping (their last status was sent)
        self.left = 0
        self._forward = forward

    def pid(self) -> int:
        """The actor's pid."""
        return os.getpid()

    def where(self) -> tuple[int, str]:
        """The actor's pid and its root directory."""
        return os.getpid(), self.root

    def meta(self) -> dict[str, str]:
        """What the driver checks before it uses the actor: its ``fenwire_fast`` version."""
        from ... import __version__

        return {"version": __version__}

    def counts(self) -> tuple[int, int]:
        """How many runs the actor holds, and how many finished and left (for tests and operators)."""
        return len(self.children), self.left

    def implementation(self) -> str:
        """The backend the actor's package runs: ``"rust"``, or ``"python"`` without the extension."""
        from ... import IMPLEMENTATION

        return IMPLEMENTATION

    def cpu(self) -> tuple[float, float]:
        """The actor process's CPU seconds so far, and its event loop thread's (for measurements)."""
        return time.process_time(), time.thread_time()

    def spawn(self, prompt: str | None, run: str, kwargs: dict[str, Any]) -> int:
        """Spawn ``run`` on the hub (under the actor's root unless told); returns its pid."""
        kwargs.setdefault("directory", self.root)
        child = self.hub.spawn(prompt, run=run, **kwargs)
        self.children[run] = child
        self._awake.set()
        return int(child.pid)

    def send(self, run: str, type_: str, payload: dict[str, Any] | None) -> int:
        """Send ``run`` a control of ``type_`` with ``payload``'s fields; returns its ``seq``.
        Raises ``LookupError`` for a run this node does not hold (it finished and left)."""
        child = self.children.get(run)
        if child is None:
            raise LookupError(f"run {run!r} is not running on node {self.node}: it finished")
        return int(child.send(type_, payload))

    async def poll(self) -> Answer:
        """Everything ready: ``[(run, lines, status or None)]``, after a linger or ``READY_BYTES``.

        The hub hands over raw batches (:meth:`Hub.poll_raw_batches`): the lines come checked,
        of the run only, as the child wrote them, and nothing is decoded here but the few lines
        that change a run's state."""
        hub = self.hub
        self._start_forwarding()
        loop = asyncio.get_running_loop()
        start = loop.time()
        first: float | None = None
        lines: dict[str, list[bytes]] = {}
        size = 0
        while True:
            urgent = False
            if hub is not self.hub:  # the node was taken again meanwhile: that poll answers
                return []
            for child, batch in self._batches():
                lines.setdefault(child.run, []).append(batch.lines)
                size += len(batch.lines)
                urgent = urgent or _ACK in batch.types
            moved = [run for run, child in self.children.items() if self._said.get(run) != self._key(run, child)]
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
        return self._answer(lines)

    def _batches(self) -> list[tuple[Any, Any]]:
        """One round of the hub's raw batches: ``(child, ScanBatch)`` (none when the node forwards:
        the forwarder reads the hub)."""
        if self.forwarder is not None:
            return []
        return self.hub.poll_raw_batches()

    def _key(self, run: str, child: Any) -> tuple[Any, ...] | None:
        """The child's status key as the driver may see it: a forwarding node says a child has
        finished only once each of its lines is stored or refused."""
        if self.forwarder is not None and child.finished and not self.forwarder.settled(child):
            return self._said.get(run)
        return status_key(child)

    def _start_forwarding(self) -> None:
        """Start the node's forwarder (in the actor's event loop), once; raise what ended it."""
        if self._forward is None:
            return
        if self._forwarding is None:
            from ...forward.forwarder import Forwarder  # the nats extra, on the nodes of a forwarding fleet

            self._forward_said = []
            self.forwarder = Forwarder(
                self.hub, say=self._forward_said.append, on_progress=self._awake.set, **self._forward
            )
            self._forwarding = asyncio.ensure_future(self.forwarder.run(until_finished=False))
        elif self._forwarding.done() and self._forwarding.exception() is not None:
            raise RuntimeError(f"node {self.node}: forwarding stopped: {self._forwarding.exception()}")

    def forwarded(self) -> dict[str, Any]:
        """What the node's forwarder did: lines taken, acked (duplicates among them), reconnects,
        refusals and what it said (empty when the node does not forward)."""
        f = self.forwarder
        if f is None:
            return {}
        return {
            "lines": f.lines,
            "acked": f.acked,
            "duplicates": f.duplicates,
            "reconnects": f.reconnects,
            "refused": [str(r) for r in f.refused.values()],
            "said": list(self._forward_said),
        }

    def _answer(self, lines: dict[str, list[bytes]]) -> Answer:
        """Per child: its lines as one blob, and its status when it changed since the last answer.
        A child whose last status went out leaves (:meth:`_finished_said`)."""
        out: Answer = []
        done = []
        for run, child in self.children.items():
            blob = b"".join(lines.get(run, ()))
            key = self._key(run, child)
            if key == self._said.get(run):
                if blob:
                    out.append((run, blob, None))
            else:
                assert key is not None  # held back only when a status was said before
                self._said[run] = key
                out.append((run, blob, status_of(child)))
                if child.finished:
                    done.append(run)
        for run in done:
            self._finished_said(run)
        return out

    def _finished_said(self, run: str) -> None:
        """``run`` finished and its last status is in this answer: it leaves, so that a look costs
        what the running children cost, not what every child the node ever had does."""
        self._leave(run)

    def _leave(self, run: str) -> None:
        if self.children.pop(run, None) is not None:
            self._said.pop(run, None)
            self.left += 1

    async def _sleep(self, timeout: float) -> None:
        """Sleep on the hub's wake-ups, or until a spawn (a new child to watch); a forwarding node
        sleeps until its forwarder took or settled lines (it owns the hub's wake-ups)."""
        if self.forwarder is not None:
            try:
                await asyncio.wait_for(self._awake.wait(), timeout)
            except TimeoutError:
                pass
            return
        hub_wait = asyncio.ensure_future(self.hub.sleep_async(timeout))
        spawned = asyncio.ensure_future(self._awake.wait())
        await asyncio.wait([hub_wait, spawned], timeout=timeout + 0.05, return_when=asyncio.FIRST_COMPLETED)
        for task in (hub_wait, spawned):
            task.cancel()

    def close(self) -> None:
        """Close the hub (its children are killed and reaped) and remove the actor's root."""
        if self._forwarding is not None:
            self._forwarding.cancel()
        self.hub.close()
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._lock)
