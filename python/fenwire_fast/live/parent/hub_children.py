"""A :class:`~fenwire_fast.live.parent.hub.Hub`'s children and their lifetime: adding and
spawning them, the private root their directories live under, the fall-back from kernel wake-ups to
polling, and letting them go (:meth:`HubChildren.close`, :meth:`HubChildren.detach`). A base of
:class:`~fenwire_fast.live.parent.hub.Hub`.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..proc.backoff import Backoff
from ..proc.limits import ensure_open_files
from ..proc.wakeups import WakeupsUnavailable, unwatchable
from . import roots
from .hub_drivers import KernelDriver, PollDriver
from .spawn import LiveChild, spawn

if TYPE_CHECKING:
    from typing import Self

    from .durable import StateDir
    from .otel import Telemetry

__all__ = ["HubChildren"]

#: the locks of the roots of hubs that were detached: held until this process ends
_DETACHED_ROOTS: list[int] = []


class HubChildren:
    """The children part of a :class:`~fenwire_fast.live.parent.hub.Hub` (a base class: the hub
    sets these attributes)."""

    children: list[LiveChild]
    state: StateDir | None
    telemetry: Telemetry | None
    stall_timeout: float | None
    min_sleep: float
    max_sleep: float
    wakeups_reason: str | None
    _forced: bool
    _driver: KernelDriver | PollDriver
    _unfinished: dict[LiveChild, None]
    _held: deque[tuple[LiveChild, Any]]
    _numbered: int
    _root: tuple[str, int] | None

    @property
    def wakeups(self) -> str:
        """``"kernel"`` or ``"poll"``: what wakes the hub now."""
        return self._driver.mode

    def backoff(self) -> Backoff:
        """A back-off like the polling hub's: ``min_sleep`` doubling up to ``max_sleep``."""
        return Backoff(self.min_sleep, self.max_sleep)

    def add(self, child: LiveChild) -> LiveChild:
        """Adopt a child started elsewhere."""
        ensure_open_files(len(self.children) + 1)
        self.children.append(child)
        self._unfinished[child] = None
        if isinstance(self._driver, KernelDriver):
            why = unwatchable(child.event_path)
            try:
                if why is not None:
                    raise WakeupsUnavailable(why)
                self._driver.add(child, len(self.children) - 1)
            except OSError as exc:
                if self._forced:
                    raise
                self._fall_back(f"cannot watch {child.event_path}: {exc.strerror or exc}")
        return child

    def _fall_back(self, why: str) -> None:
        """Poll from now on (the same children, the same API)."""
        self._driver.close()
        self._driver = PollDriver(self.children, self.min_sleep, self.max_sleep)
        self.wakeups_reason = why

    def spawn(self, prompt: str | None = None, *, run: str | None = None, **kwargs: Any) -> LiveChild:
        """:func:`~fenwire_fast.live.parent.spawn.spawn` a child (``run`` defaults to ``child-N``, ``N`` one
        past every ``child-N`` this hub, or the state dir it attached, has seen) and adopt it.

        Raises :class:`~fenwire_fast.live.proc.limits.OpenFileLimit` when the open-file limit cannot
        make room for one more child."""
        ensure_open_files(len(self.children) + 1)
        if run is None:
            self._numbered = max(self._numbered, len(self.children)) + 1
            run = f"child-{self._numbered}"
        if self.stall_timeout is not None:
            kwargs.setdefault("stall_timeout", self.stall_timeout)
        if self.state is not None:
            kwargs["state"] = self.state
        elif kwargs.get("directory") is None:
            kwargs["directory"] = self._private_root()
        kwargs.setdefault("trace", self.telemetry if self.telemetry is not None else False)
        return self.add(spawn(prompt, run=run, **kwargs))

    def _private_root(self) -> str:
        """This hub's root (see :mod:`~fenwire_fast.live.parent.roots`): its lock goes with the process
        however it dies, and the next hub on the host then removes what is left in it."""
        if self._root is None:
            self._root = roots.locked_root(roots.HUB_PREFIX, sweep=False)
        return self._root[0]

    @property
    def active(self) -> list[LiveChild]:
        """Children that have not finished yet."""
        return [c for c in self.children if not c.finished]

    @property
    def finished(self) -> bool:
        """Every child has finished, and every event read has been handed over."""
        return not self._held and all(c.finished for c in self._unfinished)

    def detach(self) -> None:
        """Let go of every child without stopping it (files, descriptors and the state dir's lock
        are released): the runs of a durable hub are taken up again with :meth:`attach`. What was
        not committed is handed over again then. Each child's handle is detached
        (:meth:`LiveChild.detach`: it raises :class:`~fenwire_fast.live.parent.spawn.ChildDetached` when
        used), and a child this process started is still reaped when it ends."""
        self._driver.close()
        for child in self.children:
            child.detach()
        self._unfinished.clear()
        self._held.clear()
        if self._root is not None:  # the children run on: their directories stay, locked, until this process ends
            _DETACHED_ROOTS.append(self._root[1])
            self._root = None
        self._close_state()

    def close(self) -> None:
        """Kill what still runs, reap every process, remove the private directories and close the
        kernel descriptors. A durable hub keeps its state dir (the runs are then read to their end
        by :meth:`attach`); :meth:`detach` leaves the children running instead."""
        self._driver.close()
        for child in self.children:
            child.cleanup()
        self._unfinished.clear()
        self._held.clear()
        if self._root is not None:
            roots.release_root(*self._root)
            self._root = None
        self._close_state()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _close_state(self) -> None:
        if self.state is not None:
            self.state.close()
