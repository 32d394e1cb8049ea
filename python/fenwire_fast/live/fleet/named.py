"""What makes a fleet findable by name: its actors' names, its ledger in the cluster, its errors.

A named fleet (``Fleet(name=...)``) keeps, per node, a detached named actor
(:func:`actor_name`) in a Ray namespace, and one small record in the cluster's key-value store
(the GCS, which outlives every driver and every worker): the fleet's version and, per run, the node
it was placed on. A driver that attaches later reads the runs of a node it can no longer reach
from there, and reports them ``failed`` with the node named.

Nothing here imports Ray at module level: the functions that need it take it as an argument.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any

__all__ = [
    "FleetBusy",
    "FleetNotFound",
    "FleetVersionMismatch",
    "DEFAULT_NAMESPACE",
    "check_name",
    "actor_name",
    "node_of_actor",
    "default_state_root",
    "Ledger",
    "STATE_PREFIX",
]

#: the Ray namespace a named fleet's actors go to unless told
DEFAULT_NAMESPACE = "fenwire"
#: a named fleet's state root, by default, is ``<tmp>/<STATE_PREFIX><name>`` on each node (not the
#: prefix of a non-durable fleet's roots: those are swept once no actor holds them)
STATE_PREFIX = "fenwire-named-fleet-"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SEPARATOR = ":"


class FleetBusy(RuntimeError):
    """Another driver holds the named fleet (attach with ``takeover=True`` once it is gone), or this
    driver's hold was taken over by another one."""


class FleetNotFound(LookupError):
    """No named fleet of that name in that namespace."""


class FleetVersionMismatch(RuntimeError):
    """The driver's ``fenwire_fast`` and an actor's are not the same version."""


def check_name(name: str) -> str:
    """``name`` when it can name a fleet (1 to 64 of ``A-Z a-z 0-9 _ . -``, not starting with a dot,
    dash or underscore: it goes into actor names and a folder name); else ``ValueError``."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(
            f"a fleet's name is 1 to 64 letters, digits, '_', '.' or '-' (a letter or digit first), not {name!r}"
        )
    return name


def actor_name(fleet: str, node: str) -> str:
    """The Ray actor name of ``fleet``'s actor on ``node``."""
    return f"{fleet}{_SEPARATOR}{node}"


def node_of_actor(fleet: str, name: str) -> str | None:
    """The node of one of ``fleet``'s actor names (``None``: not one of its actors)."""
    prefix = fleet + _SEPARATOR
    if not name.startswith(prefix):
        return None
    node = name[len(prefix) :]
    return node if node and _SEPARATOR not in node else None


def default_state_root(fleet: str) -> str:
    """Where a node keeps ``fleet``'s durable runs unless told: in its temporary directory."""
    return os.path.join(tempfile.gettempdir(), STATE_PREFIX + fleet)


class Ledger:
    """The fleet's record in the cluster's key-value store (Ray's internal KV, kept by the GCS).

    Keys live in a namespace of their own (``fenwire-<ray namespace>``), under the fleet's name:
    ``meta`` (``{"version": ..., "state_root": ...}``) and ``run/<run>`` (the node id). Values are
    small; a spawn writes one key, a close deletes the fleet's keys. Ray's own libraries keep their
    cluster-wide state the same way; it is reached through ``ray.experimental.internal_kv``."""

    def __init__(self, kv: Any, namespace: str, fleet: str) -> None:
        self._kv = kv
        self._namespace = f"fenwire-{namespace}"  # no colon: Ray's KV listing splits keys at one
        self._prefix = f"{fleet}/"

    def _key(self, tail: str) -> bytes:
        return (self._prefix + tail).encode()

    def meta(self) -> dict[str, Any] | None:
        """The fleet's ``meta`` record, ``None`` when there is none."""
        raw = self._kv._internal_kv_get(self._key("meta"), namespace=self._namespace)
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def put_meta(self, meta: dict[str, Any]) -> None:
        self._kv._internal_kv_put(self._key("meta"), json.dumps(meta).encode(), True, namespace=self._namespace)

    def placed(self, run: str, node: str, status: str | None = None) -> None:
        """``run`` was placed on ``node`` (and, with ``status``, it finished so, every event committed)."""
        value = json.dumps({"node": node, "status": status}).encode()
        self._kv._internal_kv_put(self._key("run/" + run), value, True, namespace=self._namespace)

    def runs(self) -> dict[str, tuple[str, str | None]]:
        """Every run the fleet placed: run -> (node, closing status or ``None`` while it runs)."""
        out: dict[str, tuple[str, str | None]] = {}
        prefix = self._key("run/")
        for key in self._kv._internal_kv_list(prefix, namespace=self._namespace):
            at = key.find(prefix)
            if at < 0:
                continue
            key = key[at:]
            raw = self._kv._internal_kv_get(key, namespace=self._namespace)
            try:
                value = json.loads(raw) if raw is not None else None
            except ValueError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("node"), str):
                status = value.get("status")
                out[key[len(prefix) :].decode(errors="replace")] = (
                    value["node"],
                    status if isinstance(status, str) else None,
                )
        return out

    def clear(self) -> None:
        """Forget the fleet (its meta and every run)."""
        self._kv._internal_kv_del(self._prefix.encode(), del_by_prefix=True, namespace=self._namespace)
