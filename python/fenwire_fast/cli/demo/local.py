"""The demo's children on a local :class:`~fenwire_fast.live.parent.hub.Hub`, driven as they are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...live.child.mock_agent import MockConfig
    from ...live.parent.hub import Hub
    from ...live.parent.live_child import LiveChild
    from .report import Cluster

__all__ = ["HubSource"]


class HubSource:
    """The demo's children on a local :class:`~fenwire_fast.live.parent.hub.Hub`."""

    #: what a control raises when the child is lost with its node (nothing, on a local hub)
    lost: tuple[type[BaseException], ...] = ()

    def __init__(self, hub: Hub, acp: Sequence[str] | None = None) -> None:
        self.hub = hub
        #: the ACP agent's command the children run (``None``: the mock agent)
        self.acp = list(acp) if acp is not None else None

    def spawn(self, prompt: str, mock: MockConfig) -> LiveChild:
        """Spawn a child with ``prompt``, on the mock with ``mock`` or on the ACP agent."""
        if self.acp is None:
            return self.hub.spawn(prompt, mock=mock)
        return self.hub.spawn(prompt, acp=self.acp)

    def poll(self) -> list[tuple[LiveChild, dict[str, Any]]]:
        """One fair round of the hub: ``(child, event)`` pairs."""
        return self.hub.poll()

    def sleep(self, timeout: float) -> None:
        """Until a child writes or ends, at most ``timeout`` seconds."""
        self.hub.sleep(timeout)

    def cluster(self) -> Cluster | None:
        """No cluster: the children run here."""
        return None

    @property
    def finished(self) -> bool:
        """Whether every child has finished."""
        return self.hub.finished
