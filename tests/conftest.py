"""Shared fixtures: every codec test runs against both backends through ``backend``.

- ``backend`` is parametrised over ``"python"`` (``fenwire_fast._pure``) and ``"rust"``
  (``fenwire_fast._native``). With ``FENWIRE_NO_EXTENSIONS=1`` the rust parameter is skipped;
  otherwise a missing or incomplete extension is a test *failure*, never a skip.
- ``pure`` / ``native`` give one backend each, for differential tests (``native`` skips only when
  ``FENWIRE_NO_EXTENSIONS=1``).

Hypothesis profiles: ``dev`` (default) and ``ci`` (200 examples per property), chosen with the
``HYPOTHESIS_PROFILE`` environment variable. Neither is derandomized: every run draws fresh inputs.
CI passes a fresh ``--hypothesis-seed`` and prints it, so a failure there can be replayed.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
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
# CI's other CPythons: the same properties, fewer examples (3.11 runs them at 200)
settings.register_profile(
    "quick",
    max_examples=30,
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
    "ScanBatch",
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


REJECTION_FIELDS = ("code", "reason", "fatal", "seq", "type", "run", "errors")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m fenwire_fast.cli ARGS`` in a subprocess (this environment, so this backend), its
    output captured as text, bounded at 60 s."""
    return subprocess.run(
        [sys.executable, "-m", "fenwire_fast.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


def strict(value: Any) -> tuple[Any, ...]:
    """A comparable form that distinguishes what ``==`` hides: ``1`` vs ``1.0`` vs ``True``,
    ``-0.0`` vs ``0.0``, dict key order, list vs tuple, exact types. Iterative, so values nested
    1024 deep are fine."""
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(("dict", type(v).__name__, len(v)))
            for k, x in reversed(list(v.items())):
                stack.append(x)
                stack.append(k)
        elif isinstance(v, (list, tuple)):
            out.append((type(v).__name__, len(v)))
            stack.extend(reversed(v))
        elif isinstance(v, float):
            out.append(("float", v.hex() if v == v else "nan"))
        elif isinstance(v, (bool, int, str, bytes)) or v is None:
            out.append((type(v).__name__, v))
        elif all(hasattr(v, f) for f in REJECTION_FIELDS):
            out.append(("rejection", type(v).__name__))
            stack.extend(reversed([getattr(v, f) for f in REJECTION_FIELDS]))
        else:
            out.append(("other", type(v).__name__, repr(v)))
    return tuple(out)


def assert_strict_equal(got: Any, expected: Any) -> None:
    if strict(got) != strict(expected):
        raise AssertionError(f"\n got: {short_repr(got)}\nwant: {short_repr(expected)}")


def short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested too deep to repr>"
    return text if len(text) < 2000 else text[:1000] + " ... " + text[-500:]


@pytest.fixture(autouse=True)
def live_groups_empty(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test in ``tests/live`` ends with the process group of each child it spawned empty.

    Records every ``LiveChild`` made during the test and, once it is over (its children cleaned
    up), waits until each child's group is empty (``os.killpg(pgid, 0)`` raises
    ``ProcessLookupError``; see ``live_harness.assert_groups_empty``). Here rather than in a
    ``tests/live/conftest.py``, which would shadow this module for ``from conftest import ...``."""
    if request.node.path.parent.name != "live":
        yield
        return
    from fenwire_fast.live.parent.spawn import LiveChild
    from live_harness import assert_groups_empty

    children: list[LiveChild] = []
    real_init = LiveChild.__init__

    def init(self: LiveChild, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        children.append(self)

    monkeypatch.setattr(LiveChild, "__init__", init)
    yield
    monkeypatch.undo()
    if children:
        assert_groups_empty(children)
