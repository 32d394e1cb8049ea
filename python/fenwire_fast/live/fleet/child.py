"""The driver's handle on one child of a fleet: :class:`FleetChild`, and :class:`ChildLost`.

A :class:`FleetChild` is driven as a local child is: its control verbs are
:class:`~fenwire_fast.live.parent.surface.ControlVerbs`, each a :meth:`FleetChild.send` that goes
to the child's node as one Ray call, and its status is the node's
(:func:`~fenwire_fast.live.parent.surface.status_of` there,
:func:`~fenwire_fast.live.parent.surface.take_status` here).
"""

from __future__ import annotations

from typing import Any, Protocol

from ... import Receiver, ScanBatch
from ..parent.channel import SentControl
from ..parent.surface import ControlVerbs, take_status

__all__ = ["FleetChild", "ChildLost"]

_FINISHED = ("done", "failed", "cancelled")


class ChildLost(RuntimeError):
    """A control for a child whose node (or actor) is lost."""


class _Driver(Protocol):
    """What a :class:`FleetChild` needs of its fleet: a way to send its node a control."""

    def _send(self, child: FleetChild, type_: str, payload: dict[str, Any] | None) -> int: ...


class FleetChild(ControlVerbs):
    """The driver's view of one child on some node; controls are routed to its node's actor."""

    def __init__(self, fleet: _Driver, run: str, node: str, pid: int) -> None:
        #: the :class:`~fenwire_fast.live.fleet.Fleet` that drives the child
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
        #: the last seq of the run that reached this driver, that was handed over to the caller,
        #: and that was committed on its node (a named fleet: see ``Fleet.commit``)
        self.received = self.handed = self.committed = 0
        self._receiver = Receiver("event", run=run)

    @property
    def rejected(self) -> list[SentControl]:
        """The controls the child answered with ``rejected``."""
        return [c for c in self.controls.values() if c.status == "rejected"]

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        """Send a control of ``type_`` with ``payload``'s fields through the child's node; returns
        its ``seq`` once it is written. Raises :class:`ChildLost` when the node is lost."""
        return self.fleet._send(self, type_, payload)

    def _take(self, blob: bytes, status: tuple[Any, ...] | None, raw: bool) -> list[Any]:
        """Take one piece of its node's answer: the run's lines (decoded, or with ``raw`` as a
        ``ScanBatch``; returned as ``[(self, them)]``, or ``[]`` when none came) and its new status."""
        out: list[Any] = []
        if blob:
            self.bytes += len(blob)
            if raw:
                batch = self._receiver.scan_batch(blob)
                self.messages += len(batch)
                if len(batch):
                    self.received = batch.seqs[-1]
                out.append((self, batch))
            else:
                messages = self._decode(blob)
                if messages:
                    self.received = messages[-1]["seq"]
                out.append((self, messages))
        if status is not None:
            take_status(self, status)
        return out

    def _decode(self, blob: bytes) -> list[dict[str, Any]]:
        # the node's hub checked the lines and kept only this run's: they all decode
        out: list[dict[str, Any]] = self._receiver.feed(blob)
        self.messages += len(out)
        return out

    def _lose(self, why: str) -> None:
        """Its node is lost: an unfinished run ends ``failed``, with ``why``."""
        if not self.finished:
            self.status = "failed"
            self.finished = True
            self.error = f"node {self.node} lost: {why}"

    def _close(self) -> None:
        """The fleet closed: an unfinished run ends ``cancelled``."""
        if not self.finished:
            self.finished = True
            self.status = "cancelled" if self.status not in _FINISHED else self.status

    def __repr__(self) -> str:
        return f"<FleetChild {self.run} on {self.node[:8]} pid {self.pid} {self.status}>"


#: one answer's lines of one child, decoded: ``(child, messages)``
Batch = tuple[FleetChild, list[dict[str, Any]]]
#: one answer's lines of one child, raw: ``(child, batch)``
RawBatch = tuple[FleetChild, ScanBatch]
#: one event: ``(child, message)``
Item = tuple[FleetChild, dict[str, Any]]
