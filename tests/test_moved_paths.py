"""A moved module's old path keeps working: the very same module, with a warning naming the new path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from fenwire_fast._moved import MOVED

#: runs in a fresh interpreter: each old path imported, its warning and identity recorded
_PROBE = textwrap.dedent(
    """
    import importlib, json, sys, warnings
    old, new = sys.argv[1], sys.argv[2]
    try:
        importlib.import_module(new)
    except ImportError as exc:  # an optional extra (ray, opentelemetry) is not installed
        print(json.dumps({"missing": str(exc)}))
        raise SystemExit(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    print(json.dumps({
        "same": module is sys.modules[new],
        "name": module.__name__,
        "spec": module.__spec__.name,
        "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    }))
    """
)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_the_new_module_and_warns(old: str, new: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE, old, new], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    if "missing" in got:
        pytest.skip(got["missing"])
    assert got["same"] and got["name"] == new and got["spec"] == new
    assert got["warnings"] == [
        ["DeprecationWarning", f"{old} has moved to {new}; import it from there (the old path will go)"]
    ]


def test_from_a_package_import_an_old_name_works() -> None:
    """``from fenwire_fast.live import hub`` (the old spelling) finds the module through the package."""
    code = "import warnings; warnings.simplefilter('ignore')\nfrom fenwire_fast.live import hub\nprint(hub.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fenwire_fast.live.parent.hub"


@pytest.mark.parametrize("module", ["fenwire_fast.live.mock_agent", "fenwire_fast.live.child.mock_agent"])
def test_check_transcript_is_still_found_beside_the_mock_agent(module: str) -> None:
    """The oracle left the mock agent's module (for ``fenwire_fast.testing``): its old name works, and warns."""
    code = (
        "import warnings, sys\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    from {module} import check_transcript\n"
        "from fenwire_fast.testing.transcript import check_transcript as new\n"
        "print(check_transcript is new, [str(w.message) for w in caught if 'check_transcript' in str(w.message)])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "True ['fenwire_fast.live.child.mock_agent.check_transcript has moved to "
        "fenwire_fast.testing.transcript.check_transcript; import it from there (the old path will go)']"
    )


def test_a_name_that_never_was_beside_the_mock_agent_is_an_attribute_error() -> None:
    from fenwire_fast.live.child import mock_agent

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        mock_agent.nothing_here  # noqa: B018


def test_a_name_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        __import__("fenwire_fast.live.no_such_module")


def test_every_new_path_exists() -> None:
    import importlib.util

    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new
