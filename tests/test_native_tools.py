"""The Rust backend's own checks: its stub matches the module, and the differential script finds
no difference between the two backends on a few thousand random cases."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

native = pytest.importorskip("fenwire_fast._native")


def test_native_exposes_the_pure_boundary() -> None:
    from fenwire_fast import _pure

    assert sorted(native.__all__) == sorted(_pure.__all__)
    assert native.IMPLEMENTATION == "rust"


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed")
def test_stub_matches_the_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "fenwire_fast._native"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_differential_finds_no_difference() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "differential.py"), "-n", "4000", "--seed", "20261202"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "0 difference(s)" in result.stdout
