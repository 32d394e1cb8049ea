"""One surface for every kind of child handle: the control verbs, and the status under one set of names.

A local child (:class:`~fenwire_fast.live.parent.live_child.LiveChild`, spawned or adopted) and a
child on a node of a fleet (:class:`~fenwire_fast.live.fleet.FleetChild`) are driven the same way.
:class:`ControlVerbs` writes the six named controls once, each as a :meth:`~ControlVerbs.send` of its
type, so a handle only says how a control travels. The status every handle shows is named in
:data:`STATUS_FIELDS`; :func:`status_of` reads them from any handle as one tuple (what a fleet's node
sends its driver), :func:`status_key` tells cheaply when that tuple may have changed (the node looks
at every child every few milliseconds), and :func:`take_status` sets them on a handle that mirrors
a child elsewhere.
:class:`ChannelStatus` gives a handle that owns a channel the fields the channel keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .channel import SentControl

if TYPE_CHECKING:
    from .channel import Channel

__all__ = ["ControlVerbs", "ChannelStatus", "STATUS_FIELDS", "status_of", "status_key", "take_status"]

#: the status fields that are plain values, taken as they are
_PLAIN_FIELDS = ("status", "error", "finished", "idle", "final_text", "returncode")
#: the status every child handle shows, in the order :func:`status_of` gives it: the plain fields,
#: then the controls sent (with their acks), the problems found in the run's lines, and the ``result``
STATUS_FIELDS = (*_PLAIN_FIELDS, "controls", "errors", "result")
_plain = attrgetter(*_PLAIN_FIELDS)


class ControlVerbs:
    """The control verbs of a child handle, each a :meth:`send` of its control type.

    A subclass defines :meth:`send`: how a control reaches the child (its channel, or its node)."""

    def send(self, type_: str, payload: dict[str, Any] | None = None) -> int:
        """Send a control of ``type_`` with ``payload``'s fields; returns its ``seq``."""
        raise NotImplementedError

    def prompt(self, text: str) -> int:
        """Send ``prompt`` (the first turn's text); returns its ``seq``."""
        return self.send("prompt", {"text": text})

    def steer(self, text: str) -> int:
        """Send ``steer`` (a correction to the turn in flight); returns its ``seq``."""
        return self.send("steer", {"text": text})

    def follow_up(self, text: str) -> int:
        """Send ``follow-up`` (the next turn's text); returns its ``seq``."""
        return self.send("follow-up", {"text": text})

    def finalize(self, note: str | None = None) -> int:
        """Send ``finalize`` (end with a result, with an optional note); returns its ``seq``."""
        return self.send("finalize", {"note": note} if note is not None else {})

    def cancel(self) -> int:
        """Send ``cancel`` (stop the turn); returns its ``seq``."""
        return self.send("cancel")

    def close(self) -> int:
        """Send ``close`` (end the run once idle); returns its ``seq``."""
        return self.send("close")


class ChannelStatus:
    """The status fields a channel keeps, read from the handle's own :class:`Channel`."""

    channel: Channel

    @property
    def idle(self) -> bool:
        """Whether the run is between turns (its last turn ended, no control waits)."""
        return self.channel.idle

    @property
    def controls(self) -> Mapping[int, SentControl]:
        """The controls sent to the run, by ``seq``, each with its ack's status once acknowledged."""
        return self.channel.controls

    @property
    def rejected(self) -> list[SentControl]:
        """The controls the child answered with ``rejected``."""
        return self.channel.rejected

    @property
    def errors(self) -> list[str]:
        """The problems found in the run's event lines (rejected or foreign lines), in words."""
        return [e.error for e in self.channel.errors]

    @property
    def result(self) -> dict[str, Any] | None:
        """The run's ``result`` event, once it arrived."""
        return self.channel.result

    @property
    def final_text(self) -> str | None:
        """The run's final text, once the run has it."""
        return self.channel.final_text

    @property
    def bytes(self) -> int:
        """Bytes of the run's event file read so far."""
        return self.channel.offset


def status_of(child: Any) -> tuple[Any, ...]:
    """The :data:`STATUS_FIELDS` of ``child`` as one tuple of plain values (controls as tuples)."""
    controls = tuple((c.seq, c.type, c.text, c.status, c.reason) for c in child.controls.values())
    return (*_plain(child), controls, tuple(child.errors), child.result)


def status_key(child: Any) -> tuple[Any, ...]:
    """What changes whenever :func:`status_of` of ``child`` does, cheap enough to make at every look.

    For a handle that owns a channel (:class:`ChannelStatus`). The plain fields are taken as they
    are; the controls, the errors and the ``result`` are only counted: a control is added to
    ``controls`` when sent and leaves ``unacked`` when its ack arrives, the channel's errors only
    add up (those past what it keeps are counted in ``errors_dropped``), and the ``result`` comes
    once."""
    channel = child.channel
    return (
        _plain(child),
        len(channel.controls),
        len(channel.unacked),
        len(channel.errors) + channel.errors_dropped,
        channel.result is None,
    )


def take_status(child: Any, status: tuple[Any, ...]) -> None:
    """Set the :data:`STATUS_FIELDS` of ``child`` from a tuple :func:`status_of` made."""
    values = dict(zip(STATUS_FIELDS, status, strict=True))
    values["controls"] = {seq: SentControl(seq, *rest) for seq, *rest in values["controls"]}
    values["errors"] = list(values["errors"])
    for name, value in values.items():
        setattr(child, name, value)
