"""``fenwire demo`` says FAIL, with a non-zero exit code, when a child drops, duplicates, alters or
reorders one event: its verdict rests on the transcript oracle, not only on the exits.

The demo runs in-process (``fenwire_fast.cli.main``); the hub's ``spawn`` is wrapped so every child
runs ``live_agents:sabotaged`` (the mock agent with one event of turn 1 tampered with), on the
demo's own scripts. The ``none`` run is the control: the same path, no sabotage, PASS.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from fenwire_fast import cli
from fenwire_fast.live import hub as hub_module
from live_harness import child_env

ORDER_CHECK = "every event arrived exactly once and in order"
ARGS = ["demo", "--children", "5", "--steps", "2", "--deltas", "30", "--paced-deltas", "20", "--plain"]


@pytest.mark.parametrize("mode", ["none", "drop", "duplicate", "alter", "reorder"])
def test_demo_verdict_follows_the_transcript(
    mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_spawn = hub_module.spawn
    spawned: list[Any] = []

    def sabotaged_spawn(prompt: str | None, **kwargs: Any) -> Any:
        kwargs["command"] = [sys.executable, "-m", "fenwire_fast", "child", "--agent", "live_agents:sabotaged"]
        kwargs["env"] = child_env({"FENWIRE_SABOTAGE": mode})
        child = real_spawn(prompt, **kwargs)
        spawned.append(child)
        return child

    monkeypatch.setattr(hub_module, "spawn", sabotaged_spawn)
    code = cli.main([*ARGS, "--timeout", "60"])
    out = capsys.readouterr().out
    assert len(spawned) == 5
    checks = [re.match(r"^  \[(ok|FAIL)\] (.*)$", line) for line in out.splitlines()]
    verdicts = {m.group(2): m.group(1) == "ok" for m in checks if m}
    assert len(verdicts) == 4, out
    order = [v for name, v in verdicts.items() if name.startswith(ORDER_CHECK)]
    assert len(order) == 1, out
    if mode == "none":
        assert code == 0 and out.rstrip().endswith("PASS"), out
        assert all(verdicts.values()), out
        return
    assert code == 1, out
    assert out.rstrip().endswith("FAIL"), out
    # the exits, answers and acks are all fine: the transcript oracle alone catches the sabotage
    assert order == [False], out
    assert [name for name, ok in verdicts.items() if not ok] == [n for n in verdicts if n.startswith(ORDER_CHECK)]
    assert "turn 1" in out, out
