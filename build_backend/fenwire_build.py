"""The package's build backend: maturin (the Rust extension), or a pure-Python wheel on request.

``pip install .`` builds the Rust extension with maturin, which needs a Rust toolchain.
``FENWIRE_NO_EXTENSIONS=1 pip install .`` builds a wheel of the pure-Python package with hatchling
instead: no Rust toolchain, no compiler, the same package with ``IMPLEMENTATION == "python"``. (The
same variable chooses the pure backend at run time; multidict and yarl do the same with theirs.)

Each PEP 517 hook asks for its backend's package (``get_requires_for_build_*``) and then delegates,
so a pure build never installs maturin and a Rust build never installs hatchling.

A Rust build first looks for ``cargo`` (``$CARGO``, then ``PATH``, then ``$CARGO_HOME/bin`` and
``~/.cargo/bin``, where rustup puts it). Without one it stops with a message that says what to do,
rather than letting maturin try to fetch a toolchain through a package nobody asked to install.
With one, its directory goes on ``PATH`` for maturin, and maturin's own ``get_requires_*`` hook is
asked too when maturin is already importable (a build without isolation); in an isolated build it
is not installed yet, and for this project (PyO3 bindings, cargo found) that hook adds nothing.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

MATURIN = "maturin>=1.5,<2"
HATCHLING = "hatchling>=1.18"


def pure() -> bool:
    """True when ``FENWIRE_NO_EXTENSIONS`` asks for the pure-Python package."""
    return os.environ.get("FENWIRE_NO_EXTENSIONS", "") not in ("", "0")


NO_CARGO = """\
fenwire_fast: cannot build the Rust extension: cargo (the Rust toolchain) was not found
(looked at $CARGO, on PATH, in $CARGO_HOME/bin and in ~/.cargo/bin). Any one of these works:
  - install Rust (https://rustup.rs), then run the same command again;
  - FENWIRE_NO_EXTENSIONS=1 pip install .   for the pure-Python package (same API, no Rust);
  - pip install a prebuilt fenwire_fast wheel.
"""

NO_CARGO_SDIST = """\
fenwire_fast: cannot build the source distribution: maturin needs cargo (the Rust toolchain),
which was not found (looked at $CARGO, on PATH, in $CARGO_HOME/bin and in ~/.cargo/bin).
Install Rust (https://rustup.rs), then run the same command again.
"""


def find_cargo() -> str | None:
    """The path of ``cargo``: ``$CARGO``, else on ``PATH``, else in ``$CARGO_HOME/bin`` or ``~/.cargo/bin``."""
    candidates: list[str | None] = [os.environ.get("CARGO"), shutil.which("cargo")]
    if os.environ.get("CARGO_HOME"):
        candidates.append(os.path.join(os.environ["CARGO_HOME"], "bin", "cargo"))
    candidates.append(str(Path.home() / ".cargo" / "bin" / "cargo"))
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _require_cargo(message: str = NO_CARGO) -> None:
    """Put cargo's directory on ``PATH`` (maturin looks there only), or stop with ``message``.

    It exits rather than raises: the front end shows this process's stderr, and a traceback from
    the build backend would bury the one thing to do.
    """
    cargo = find_cargo()
    if cargo is None:
        sys.stderr.write(message)
        sys.stderr.flush()
        raise SystemExit(1)
    where = os.path.dirname(os.path.abspath(cargo))
    path = os.environ.get("PATH", "")
    if where not in path.split(os.pathsep):
        os.environ["PATH"] = where + os.pathsep + path if path else where


def _backend() -> ModuleType:
    if pure():
        return importlib.import_module("hatchling.build")
    _require_cargo()
    return importlib.import_module("maturin")


def _maturin_requires(hook: str, config_settings: dict[str, Any] | None) -> list[str]:
    # maturin is importable here only in a build without isolation; an isolated build has not
    # installed it yet (it is what this hook asks for).
    try:
        maturin = importlib.import_module("maturin")
    except ImportError:
        return [MATURIN]
    return [MATURIN, *getattr(maturin, hook)(config_settings)]


def _requires(hook: str, config_settings: dict[str, Any] | None) -> list[str]:
    if pure():
        return [HATCHLING]
    _require_cargo()
    return _maturin_requires(hook, config_settings)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires("get_requires_for_build_wheel", config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires("get_requires_for_build_editable", config_settings)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    _require_cargo(NO_CARGO_SDIST)
    return _maturin_requires("get_requires_for_build_sdist", config_settings)


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
    _require_cargo(NO_CARGO_SDIST)
    maturin = importlib.import_module("maturin")
    return str(maturin.build_sdist(sdist_directory, config_settings))
