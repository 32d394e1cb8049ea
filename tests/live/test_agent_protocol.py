"""The agent protocol (fenwire_fast.live.child.agent) as seen through the wire, with small custom agents
(tests/live/live_agents.py) loaded by real children with ``--agent``."""

from __future__ import annotations

from typing import Any

import pytest
from live_harness import Ctx, Outcome, Scenario, python_child_command, run_scenarios, seen


def agent(name: str) -> dict[str, Any]:
    return {"command": python_child_command("--agent", f"live_agents:{name}")}


def cancel_after(type_: str) -> Any:
    def script(ctx: Ctx) -> Any:
        yield seen(type_)
        ctx.send("cancel")

    return script


def close_when_idle(ctx: Ctx) -> Any:
    yield seen("turn-complete")
    yield lambda c: c.child.channel.idle
    ctx.send("close")


@pytest.fixture(scope="module")
def out() -> dict[str, Outcome]:
    return run_scenarios(
        [
            Scenario("cleanup", cancel_after("tool-call"), kwargs=agent("cleanup")),
            Scenario("stubborn", cancel_after("assistant-text-delta"), kwargs=agent("stubborn")),
            Scenario("bad-yield", None, kwargs=agent("bad_yield")),
            Scenario("bad-start", None, kwargs=agent("bad_start")),
            Scenario("list", close_when_idle, prompt="hi", kwargs=agent("list_agent")),
            Scenario("finalize-echo", lambda ctx: _finalize_when_idle(ctx), prompt="first", kwargs=agent("echo")),
        ],
        timeout=45,
    )


def _finalize_when_idle(ctx: Ctx) -> Any:
    yield seen("turn-complete")
    yield lambda c: c.child.channel.idle
    ctx.send("finalize")


def test_an_agent_may_clean_up_after_an_interruption(out: dict[str, Outcome]) -> None:
    o = out["cleanup"]
    assert o.status == "cancelled", o.describe()
    tail = o.types[o.types.index("control-ack", 2) :]
    assert tail == ["control-ack", "tool-result", "error", "turn-complete", "exit"], o.describe()
    result = o.events[o.index("tool-result")]
    assert result["result"] == "stopped by cancel"  # the agent's own, not a presenter-made one
    assert o.events[-2]["stop-reason"] == "aborted"


def test_an_agent_that_ignores_interruption_is_cut_off(out: dict[str, Outcome]) -> None:
    o = out["stubborn"]
    assert o.status == "cancelled" and o.child.returncode == 1, o.describe()
    after = o.types[o.index("control-ack", ref=2) + 1 :]
    assert after[-2:] == ["turn-complete", "exit"]
    assert 900 <= after.count("assistant-text-delta") <= 1001
    assert o.events[-2]["stop-reason"] == "aborted"


def test_an_unsupported_yield_fails_the_run(out: dict[str, Outcome]) -> None:
    o = out["bad-yield"]
    assert o.status == "failed", o.describe()
    assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "error"
    assert o.events[-1]["error"] == "agent failed: TypeError: agent yielded int, not an event dict or Wait"


def test_a_failing_start_fails_the_run(out: dict[str, Outcome]) -> None:
    o = out["bad-start"]
    assert o.types == ["ready", "exit"], o.describe()
    assert o.events[-1]["status"] == "failed"
    assert o.events[-1]["error"] == "agent start failed: RuntimeError: cannot reach the model"


def test_a_plain_iterable_turn_works(out: dict[str, Outcome]) -> None:
    o = out["list"]
    assert o.status == "done", o.describe()
    result = o.child.channel.result
    assert result is not None and result["final-text"] == "list says hi"
    assert result["usage"] == {"output": 2} and result["stop-reason"] == "stop"


def test_the_finalize_turn_is_tool_free_and_gets_the_default_note(out: dict[str, Outcome]) -> None:
    o = out["finalize-echo"]
    assert o.status == "done", o.describe()
    from fenwire_fast.live.child import DEFAULT_FINALIZE_NOTE

    result = o.child.channel.result
    assert result is not None
    assert result["final-text"] == f"echo: {DEFAULT_FINALIZE_NOTE} (turn 2, tools False)"
    assert result["usage"] == {"input": 6, "output": 10}  # summed over both turns
