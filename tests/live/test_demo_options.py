"""``fenwire demo``'s options, where no child or cluster is needed: misuse of the Ray options is a
parser error (exit 2), ``--ray`` without Ray installed says so in one line (exit 1), and the
default ``--timeout`` grows with ``--children``. Ray need not be installed."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from fenwire_fast.cli import parser as cli


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--ray", "--nodes", "0"], "--nodes must be at least 1"),
        (["--nodes", "2"], "--nodes needs --ray"),
        (["--address", "127.0.0.1:6379"], "--address needs --ray"),
        (["--connect-timeout", "5"], "--connect-timeout needs --ray"),
        (["--ray", "--nodes", "2", "--address", "127.0.0.1:6379"], "--nodes starts a local cluster; it cannot"),
        (["--ray", "--connect-timeout", "0"], "--connect-timeout must be a positive number"),
    ],
)
def test_misuse_is_a_parser_error(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["demo", *argv])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: fenwire demo") and f"fenwire demo: error: {said}" in err, err


def test_ray_missing_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where Ray is not installed
    assert cli.main(["demo", "--ray", "--children", "1"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "fenwire demo: --ray needs Ray: pip install 'fenwire_fast[ray]'\n"


@pytest.mark.parametrize(("argv", "timeout"), [([], 34.0), (["--children", "256"], 158.0), (["--timeout", "7"], 7.0)])
def test_the_default_timeout_grows_with_the_children(
    argv: list[str], timeout: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``--timeout`` the demo waits 30 s plus 0.5 s per child; ``--timeout`` overrides it."""
    from fenwire_fast.cli.demo import driver as demo

    seen: list[float] = []

    def fake_run(source: Any, children: int, config: Any, paced: Any, timeout: float, *rest: Any) -> Any:
        seen.append(timeout)
        return SimpleNamespace(ok=True)

    monkeypatch.setattr(demo, "_run", fake_run)
    assert cli.main(["demo", *argv, "--plain"]) == 0
    assert seen == [timeout]
    assert demo.default_timeout(8) == 34.0
