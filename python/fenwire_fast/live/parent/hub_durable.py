"""A durable :class:`~fenwire_fast.live.parent.hub.Hub`'s commits and its attach: the part of the
hub that keeps runs in a state dir (:mod:`~fenwire_fast.live.parent.durable`). A base of
:class:`~fenwire_fast.live.parent.hub.Hub`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..proc import reaper
from .durable import Manifest

if TYPE_CHECKING:
    from typing import Self

    from .durable import StateDir
    from .spawn import LiveChild

__all__ = ["HubDurable"]


class HubDurable:
    """The durable part of a :class:`~fenwire_fast.live.parent.hub.Hub` (a base class: the hub
    sets these attributes and makes the children)."""

    state: StateDir | None
    stall_timeout: float | None
    attach_errors: list[str]
    _uncommitted: dict[LiveChild, None]
    _numbered: int

    def __init__(self, **kwargs: Any) -> None:
        raise NotImplementedError

    def add(self, child: LiveChild) -> LiveChild:
        raise NotImplementedError

    def detach(self) -> None:
        raise NotImplementedError

    def commit(self) -> int:
        """Record that every event handed over so far has been handled; return how many runs that
        moved. A run also closes once it finished and all its events were committed
        (:meth:`attach` leaves it alone then). Needs a ``state_dir``.

        After a restart, :meth:`attach` hands over again every event after the last commit (at
        least once), and none before it. The positions go to the state dir's commit log in one
        ``write`` (see :mod:`~fenwire_fast.live.parent.durable`), so committing after every batch is
        cheap. Raises ``OSError`` when the log cannot be written."""
        moved = self._record(list(self._uncommitted))
        for child in [c for c in self._uncommitted if c.durable is None or c.durable.settled(c)]:
            del self._uncommitted[child]
        return moved

    def commit_at(self, seqs: Mapping[LiveChild, int]) -> int:
        """Record, for each child of ``seqs``, that its events up to that ``seq`` have been handled
        (a seq past what this hub handed over counts as what it handed over, and a commit never
        goes back); return how many runs that moved. For a hub whose consumer hands the events on and learns later how far the
        last one went (a fleet's node actor, whose driver commits): nothing this hub handed over
        beyond those seqs is taken as handled, and the other children are not committed at all.
        Raises as :meth:`commit` does."""
        handed = {child: child.delivered_seq for child in seqs}
        try:
            for child, seq in seqs.items():
                run = child.durable
                floor = run.manifest.committed_seq if run is not None else 0
                child.delivered_seq = max(floor, min(seq, handed[child]))
            return self._record(list(seqs))
        finally:
            for child, seq in handed.items():
                child.delivered_seq = seq

    def _record(self, children: list[LiveChild]) -> int:
        """Record the delivered position of each of ``children`` (those that moved) in one write."""
        state = self.state
        if state is None:
            raise RuntimeError("commit() needs a durable hub: Hub(state_dir=...)")
        now = time.time()
        records: list[tuple[str, int, float, str | None, str | None]] = []
        moved = []
        for child in children:
            run = child.durable
            position = run.commit(child) if run is not None else None
            if run is not None and position is not None:
                records.append((run.manifest.name, position[0], now, position[1], position[2]))
                moved.append((run, position))
        state.record_commits(records)  # one write; raises before anything is taken as recorded
        for run, (seq, status, mark) in moved:
            run.committed(seq, status, now, mark)
        return len(records)

    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str], **kwargs: Any) -> Self:
        """A hub over every unfinished run in ``state_dir`` (left by a parent that died, or that
        called :meth:`detach`): a child still running is adopted (a pidfd, checked against its
        start time, so a reused pid is never taken for it), one that ended meanwhile is read to
        its end. Each run's status, unacknowledged controls and final text are rebuilt from its
        files, control ``seq`` goes on after the last one sent, and the events after the last
        commit are handed over again. ``kwargs`` are :class:`Hub`'s. Manifests that cannot be
        used are listed in :attr:`attach_errors`. Raises
        :class:`~fenwire_fast.live.parent.durable.StateDirBusy` when another hub holds the state dir,
        ``FileNotFoundError`` when there is no such directory."""
        from .adopt import AdoptError, adopt

        if not os.path.isdir(state_dir):  # a typo must not look like a state dir with no runs
            raise FileNotFoundError(f"no state dir at {os.fspath(state_dir)}")
        hub = cls(state_dir=state_dir, **kwargs)
        assert hub.state is not None
        try:
            for name, manifest in hub.state.manifests():
                if isinstance(manifest, str):
                    hub.attach_errors.append(f"{name}: {manifest}")
                    continue
                if not manifest.closed:
                    # a child this process detached is reaped by its new handle from now on
                    waiting = reaper.take(manifest.pid) if manifest.pid is not None else None
                    try:
                        child = adopt(hub.state, manifest, stall_timeout=hub.stall_timeout)
                    except AdoptError as exc:
                        if waiting is not None:
                            reaper.put_back(waiting)
                        hub.attach_errors.append(str(exc))
                        continue
                    if waiting is not None:
                        if getattr(child.process, "pidfd", None) is not None:
                            reaper.release(waiting)  # its new handle reaps it
                        else:  # found ended (a zombie not reaped yet): the reaper reaps it
                            reaper.put_back(waiting)
                    hub.add(child)
        except BaseException:
            hub.detach()
            raise
        return hub

    def _count(self, manifests: Iterable[Manifest]) -> None:
        """Take every ``child-N`` run id of ``manifests`` as handed out already."""
        for manifest in manifests:
            number = manifest.run.removeprefix("child-")
            if number.isdigit() and number.isascii() and len(number) < 20:
                self._numbered = max(self._numbered, int(number))
