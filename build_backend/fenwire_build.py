"""The package's build backend: maturin (the Rust extension), or a pure-Python wheel on request.

``pip install .`` builds the Rust extension with maturin, which needs a Rust toolchain.
``FENWIRE_NO_EXTENSIONS=1 pip install .`` builds a wheel of the pure-Python package with hatchling
instead: no Rust toolchain, no compiler, the same package with ``IMPLEMENTATION == "python"``. (The
same variable chooses the pure backend at run time; multidict and yarl do the same with theirs.)

Each PEP 517 hook asks for its backend's package (``get_requires_for_build_*``) and then delegates,
so a pure build never installs maturin and a Rust build never installs hatchling.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

MATURIN = "maturin>=1.5,<2"
HATCHLING = "hatchling>=1.18"


def pure() -> bool:
    """True when ``FENWIRE_NO_EXTENSIONS`` asks for the pure-Python package."""
    return os.environ.get("FENWIRE_NO_EXTENSIONS", "") not in ("", "0")


def _backend() -> ModuleType:
    return importlib.import_module("hatchling.build" if pure() else "maturin")


def _requires() -> list[str]:
    return [HATCHLING] if pure() else [MATURIN]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires()


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [MATURIN]


def __getattr__(name: str) -> Any:
    # The optional hooks (prepare_metadata_for_build_*) exist only where the chosen backend has
    # them: hatchling has none, and the build front end then takes the metadata from the wheel.
    if name.startswith("prepare_metadata_for_build_"):
        hook = getattr(_backend(), name, None)
        if hook is not None:
            return hook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    return str(_backend().build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    return str(_backend().build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    maturin = importlib.import_module("maturin")
    return str(maturin.build_sdist(sdist_directory, config_settings))
