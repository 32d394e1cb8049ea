"""ACP agents behind the child presenter: an Agent Client Protocol agent speaks Fen through a bridge.

- :mod:`~fenwire_fast.live.acp.agent`: :func:`bridge` and :class:`AcpBridge`, the agent side the
  presenter runs (needs the ``acp`` extra);
- :mod:`~fenwire_fast.live.acp.process`: the agent's process, the loop the SDK runs on, and
  ``close()``, which :class:`AcpBridge` is built on;
- :mod:`~fenwire_fast.live.acp.client`: the ACP client the bridge answers requests with;
- :mod:`~fenwire_fast.live.acp.mapping`: ACP session updates mapped onto Fen events.

The names of :mod:`~fenwire_fast.live.acp.agent` are also found here, loaded on first use, so
importing this package does not import the ACP SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

#: the names of :mod:`~fenwire_fast.live.acp.agent` found here
_AGENT_NAMES = frozenset({"bridge", "AcpBridge", "FINALIZE_PREFIX", "DEFAULT_GRACE", "DEFAULT_INIT_TIMEOUT"})


def __getattr__(name: str) -> Any:
    if name not in _AGENT_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(".agent", __name__), name)
