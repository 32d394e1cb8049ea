"""Old import paths of modules that moved, kept working with a :class:`DeprecationWarning`.

The live layer and the command line were laid out in rooms (``live/parent``, ``live/proc``,
``live/acp``, ``cli/``). A program that imports a module by its old path (``fenwire_fast.fleet``,
``fenwire_fast.live.hub``...) gets the very module at its new path, the same object under both
names, so patching one patches the other, and a warning that names the new path. A finder on
``sys.meta_path`` answers only for the names in :data:`MOVED`; every other import passes it by
with one dict lookup.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "MOVED_NAMES", "install", "moved_name"]

_P = "fenwire_fast."
#: old module path -> new module path
MOVED: dict[str, str] = {
    _P + old: _P + new
    for old, new in {
        "fleet": "live.fleet",
        "check": "cli.check",
        "tail": "cli.tail",
        "progress": "cli.progress",
        "live.runs": "cli.runs",
        "live.demo": "cli.demo.driver",
        "live.channel": "live.parent.channel",
        "live.spawn": "live.parent.spawn",
        "live.hub": "live.parent.hub",
        "live.hub_drivers": "live.parent.hub_drivers",
        "live.watchdog": "live.parent.watchdog",
        "live.final_text": "live.parent.final_text",
        "live.durable": "live.parent.durable",
        "live.adopt": "live.parent.adopt",
        "live.roots": "live.parent.roots",
        "live.telemetry": "live.parent.tracing",
        "live.tracing": "live.parent.otel",
        "live.group": "live.proc.group",
        "live.orphans": "live.proc.orphans",
        "live.wakeups": "live.proc.wakeups",
        "live.limits": "live.proc.limits",
        "live.backoff": "live.proc.backoff",
        "live.stderr_tail": "live.proc.stderr_tail",
        "live.reaper": "live.proc.reaper",
        "live.acp_client": "live.acp.client",
        "live.acp_map": "live.acp.mapping",
        "live.agent": "live.child.agent",
        "live.mock_agent": "live.child.mock_agent",
    }.items()
}


#: module -> {name that left it: the module it lives in now}; the module's ``__getattr__`` calls
#: :func:`moved_name`, so the name keeps working there (a module may not import a higher floor)
MOVED_NAMES: dict[str, dict[str, str]] = {
    _P + "live.child.mock_agent": {"check_transcript": _P + "testing.transcript"},
}


def moved_name(module: str, name: str) -> object:
    """``name`` of ``module``, which moved out of it (:data:`MOVED_NAMES`), with a warning;
    ``AttributeError`` for any other name, as a module without it gives."""
    new = MOVED_NAMES.get(module, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} has moved to {new}.{name}; import it from there (the old path will go)",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(new), name)


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new path (imported if it is not yet)."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} has moved to {self.new}; import it from there (the old path will go)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module at the new path has run): only its own spec is put back,
        which the import system replaced with the old name's."""
        module.__spec__ = self.spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names in :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
