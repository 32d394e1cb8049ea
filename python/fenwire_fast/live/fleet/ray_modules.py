"""Ray's modules and names, imported by name (:data:`RAY`): the fleet's only way to Ray, so that
the package type-checks and imports with or without the ``ray`` extra (``RAY`` is empty then).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["RAY", "load"]


class _Never(Exception):
    """An exception nothing raises: stands for one this Ray has not."""


def load() -> dict[str, Any]:
    """Ray's modules and names the fleet uses (``{}`` without the ``ray`` extra)."""
    try:
        exceptions = importlib.import_module("ray.exceptions")
        return {
            "ray": importlib.import_module("ray"),
            "kv": importlib.import_module("ray.experimental.internal_kv"),
            "RayActorError": exceptions.RayActorError,
            # a subclass of RayActorError (Ray >= 2.35): the actor is restarting
            "ActorUnavailableError": getattr(exceptions, "ActorUnavailableError", _Never),
            "GetTimeoutError": exceptions.GetTimeoutError,
            "NodeAffinitySchedulingStrategy": importlib.import_module(
                "ray.util.scheduling_strategies"
            ).NodeAffinitySchedulingStrategy,
        }
    except ImportError:  # pragma: no cover - the fleet needs the ray extra; nothing else imports ray
        return {}


#: see the module docstring
RAY = load()
