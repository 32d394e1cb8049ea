"""Shared fixtures: every codec test runs against both backends through ``backend``.

- ``backend`` is parametrised over ``"python"`` (``fenwire_fast._pure``) and ``"rust"``
  (``fenwire_fast._native``). With ``FENWIRE_NO_EXTENSIONS=1`` the rust parameter is skipped;
  otherwise a missing or incomplete extension is a test *failure*, never a skip.
- ``pure`` / ``native`` give one backend each, for differential tests (``native`` skips only when
  ``FENWIRE_NO_EXTENSIONS=1``).

Hypothesis profiles: ``dev`` (default) and ``ci`` (derandomized, 200 examples per property), chosen
with the ``HYPOTHESIS_PROFILE`` environment variable.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"

#: The backend boundary (docs/backend-boundary.md): both backends expose exactly these names.
BOUNDARY_NAMES = (
    "decode",
    "validate",
    "encode",
    "message",
    "rejection_ack",
    "Sender",
    "Receiver",
    "Framer",
    "utf8_prefix",
    "truncate_line",
    "scrub",
)


def no_extensions() -> bool:
    return os.environ.get("FENWIRE_NO_EXTENSIONS", "") not in ("", "0")


def _load(which: str) -> ModuleType:
    if which == "python":
        return importlib.import_module("fenwire_fast._pure")
    if no_extensions():
        pytest.skip("FENWIRE_NO_EXTENSIONS=1: the rust backend is not tested")
    try:
        module = importlib.import_module("fenwire_fast._native")
    except ImportError as exc:  # a failure, not a skip: the product ships the extension
        pytest.fail(f"fenwire_fast._native does not import: {exc!r}", pytrace=False)
    missing = [name for name in BOUNDARY_NAMES if not hasattr(module, name)]
    if missing:
        pytest.fail(f"fenwire_fast._native lacks boundary names: {missing}", pytrace=False)
    return module


@pytest.fixture(scope="session", params=["python", "rust"])
def backend(request: pytest.FixtureRequest) -> ModuleType:
    """The backend under test: ``fenwire_fast._pure`` or ``fenwire_fast._native``."""
    return _load(request.param)


@pytest.fixture(scope="session")
def pure() -> ModuleType:
    return _load("python")


@pytest.fixture(scope="session")
def native() -> ModuleType:
    return _load("rust")


# ---------------------------------------------------------------------------------------------
# Strict comparison helpers (dict key order, float bit identity, exact types).


def strict(value: Any) -> Any:
    """A comparable form that distinguishes what ``==`` hides: ``1`` vs ``1.0`` vs ``True``,
    ``-0.0`` vs ``0.0``, dict key order, list vs tuple."""
    if isinstance(value, dict):
        return ("dict", type(value).__name__, [(strict(k), strict(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [strict(v) for v in value])
    if isinstance(value, tuple):
        return ("tuple", [strict(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex() if value == value else "nan")
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if value is None:
        return ("none",)
    rej_fields = ("code", "reason", "fatal", "seq", "type", "run", "errors")
    if all(hasattr(value, f) for f in rej_fields):
        return ("rejection", type(value).__name__, [(f, strict(getattr(value, f))) for f in rej_fields])
    return ("other", type(value).__name__, repr(value))


def assert_strict_equal(got: Any, expected: Any) -> None:
    assert strict(got) == strict(expected), f"\n got: {got!r}\nwant: {expected!r}"
