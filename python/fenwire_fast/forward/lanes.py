"""A forwarder's runs on their way (:class:`Lane`), and what it tells: :class:`Refusal` and
:class:`ForwardUnavailable`. See :mod:`~fenwire_fast.forward.forwarder`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .names import subject

if TYPE_CHECKING:
    from ..live.parent.spawn import LiveChild

__all__ = [
    "TRIES",
    "ForwardUnavailable",
    "Lane",
    "LaneViews",
    "NoStream",
    "Refusal",
    "StoreError",
    "for_good",
    "stored",
]

#: a line the server answered with an error this many times (a connection made again between each
#: try) is refused, whatever the error: an error code not known here must not loop forever
TRIES = 3
#: JetStream error codes that will not change by sending the same line again
_FOR_GOOD = {10054: "larger than the stream's maximum message size", 10059: "the stream is gone"}


class StoreError(Exception):
    """The server's answer to a publish was an error (``err_code``: JetStream's code, 0 if none)."""

    def __init__(self, err_code: int, description: str) -> None:
        super().__init__(f"{description} (err_code {err_code})")
        self.err_code = err_code
        self.description = description


class NoStream(Exception):
    """No stream took the subject (the server answered with no responders)."""

    def __init__(self) -> None:
        super().__init__("no stream takes the run's subject (no responders: was the stream deleted?)")


def for_good(exc: BaseException) -> str | None:
    """Why the server will never store this line (``None``: sending it again may work)."""
    if isinstance(exc, StoreError) and exc.err_code in _FOR_GOOD:
        return f"{_FOR_GOOD[exc.err_code]} ({exc.description})"
    return None


#: an entry's state once the stream acknowledged the line: stored, or stored before (a duplicate)
OK, DUP = 1, 2

#: one line sent and waiting for its ack: ``[seq, line, state, sent at]``, ``state`` ``None`` until
#: the ack comes, then :data:`OK`, :data:`DUP` or the error the server answered with
Entry = list[Any]


def stored(entry: Entry) -> bool:
    """The stream acknowledged the line of ``entry``."""
    return entry[2] is OK or entry[2] is DUP


class ForwardUnavailable(RuntimeError):
    """The forwarder could not start: no server at the URL, no JetStream there, or a stream that
    does not take the forwarder's subjects. The message says which, in one line."""


@dataclass(frozen=True)
class Refusal:
    """A line the stream refused for good: its run's commits stop before it."""

    run: str
    seq: int
    reason: str

    def __str__(self) -> str:
        return f"run {self.run!r} seq {self.seq}: {self.reason}"


class Lane:
    """One run's lines on their way: waiting to be sent, and sent waiting for their ack."""

    __slots__ = (
        "child",
        "run",
        "subject",
        "waiting",
        "sent",
        "stored",
        "asked",
        "failed",
        "refused",
        "committed",
        "closed",
        "errors",
    )

    def __init__(self, child: LiveChild, prefix: str) -> None:
        self.child = child
        self.run = child.run
        self.subject = subject(prefix, child.run)
        self.waiting: deque[tuple[int, bytes]] = deque()
        self.sent: deque[Entry] = deque()
        self.stored = 0  # every line of the run up to this seq is in the stream
        self.asked = False  # the stream was asked what it holds of the run, on this connection
        self.failed: int | None = None  # a line the server answered with an error (not stored)
        self.refused: Refusal | None = None
        self.committed = 0
        self.closed = False  # the run finished and its commit to the end closed it
        self.errors: tuple[int, int] = (0, 0)  # (seq, times) the server answered that line with an error

    def drop_stored(self, seq: int) -> None:
        """The stream holds every line up to ``seq``: do not send those."""
        waiting = self.waiting
        while waiting and waiting[0][0] <= seq:
            waiting.popleft()
        self.stored = max(self.stored, seq)

    def was_committed(self) -> None:
        """The run was committed up to :attr:`stored` (which closes a finished run committed to its
        end: a fleet's child, without a durable run here, counts as closed once it finished)."""
        self.committed = self.stored
        durable = getattr(self.child, "durable", None)
        self.closed = bool(durable.manifest.closed) if durable is not None else bool(self.child.finished)

    @property
    def to_close(self) -> bool:
        """The run finished, each of its lines is stored, and no commit has closed it yet: its
        last line may have been committed before the child's end was known."""
        return not self.closed and self.refused is None and not self.busy and bool(self.child.finished)

    @property
    def busy(self) -> bool:
        """Lines of the run are still on their way."""
        return bool(self.sent) or (bool(self.waiting) and self.refused is None)


class LaneViews:
    """What a forwarder's lanes say (a base of :class:`~fenwire_fast.forward.forwarder.Forwarder`)."""

    _lanes: dict[LiveChild, Lane]

    def settled(self, child: LiveChild) -> bool:
        """Every line taken of ``child`` is stored or refused (none is on its way)."""
        lane = self._lanes.get(child)
        return lane is None or not lane.busy

    def stored_seq(self, child: LiveChild) -> int:
        """The seq up to which each line of ``child`` is stored (0: none yet)."""
        lane = self._lanes.get(child)
        return 0 if lane is None else lane.stored

    def committed(self) -> dict[str, int]:
        """``{run: seq}``: how far each run was committed (or stored, for a hub that is not durable)."""
        return {lane.run: lane.stored for lane in self._lanes.values()}

    def lanes(self) -> Iterable[str]:
        """The runs the forwarder has seen."""
        return (lane.run for lane in self._lanes.values())
