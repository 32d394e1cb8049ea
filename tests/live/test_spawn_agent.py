"""``spawn(agent="module:factory", agent_config=...)`` runs your own agent in this package's child,
and a child that dies without an ``exit`` line says why, from its log."""

from __future__ import annotations

import sys
import time

import pytest
from fenwire_fast.live.parent.spawn import spawn
from live_harness import child_env


def test_spawn_runs_a_user_agent_with_its_config() -> None:
    child = spawn("hello", agent="live_agents:echo", agent_config={"prefix": "said: "}, env=child_env(), timeout=60)
    with child:
        events = []
        while not child.finished:
            messages, _ = child.poll()
            events += messages
            if any(e["type"] == "turn-complete" for e in messages) and child.channel.idle:
                child.close()
            if not messages:
                time.sleep(0.005)
        assert child.status == "done", child.error
        texts = [e["text"] for e in events if e["type"] == "assistant-text"]
        assert texts == ["said: hello (turn 1, tools True)"]
        assert child.channel.final_text == texts[0]


@pytest.mark.parametrize(
    "kwargs",
    [{"agent_config": {"a": 1}}, {"agent": "m:f", "mock": {"steps": 2}}, {"agent": "m:f", "command": ["true"]}],
)
def test_agent_arguments_that_do_not_go_together(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        spawn("x", **kwargs)  # type: ignore[arg-type]


def test_a_child_that_dies_without_exit_says_why_from_its_log() -> None:
    script = "import sys; print('agent setup failed: no API key', file=sys.stderr); sys.exit(3)"
    child = spawn("x", command=[sys.executable, "-c", script])
    with child:
        assert child.wait(timeout=60) == "failed"
        assert child.error is not None
        assert child.error.startswith("child exited with code 3 without an exit line; its log ends:")
        assert "agent setup failed: no API key" in child.error
