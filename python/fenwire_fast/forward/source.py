"""What a forwarder drains: :class:`Source`, which a :class:`~fenwire_fast.live.parent.hub.Hub` is
as it is, and a named fleet's driver is through
:class:`~fenwire_fast.forward.fleet_source.FleetSource`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Source"]


class Source(Protocol):
    """What a forwarder drains (a :class:`~fenwire_fast.live.parent.hub.Hub` is one)."""

    @property
    def finished(self) -> bool: ...

    @property
    def state(self) -> object | None: ...

    def poll_raw_batches(self) -> list[tuple[Any, Any]]: ...

    def commit_at(self, seqs: Mapping[Any, int]) -> int: ...

    async def sleep_async(self, timeout: float | None = None) -> None: ...
