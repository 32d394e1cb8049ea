"""Smoke tests of the ACP bridge: a real ACP agent (``acp_agents/echo_agent.py``, written with the
SDK's agent side) as a live child through ``spawn(acp=...)``, and the wiring's misuse errors."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast.cli import child_main
from fenwire_fast.live.parent.spawn import LiveChild, spawn
from live_harness import HANG_GUARD, child_env, wait_for_event, wait_gone

ECHO = str(Path(__file__).resolve().parent / "acp_agents" / "echo_agent.py")


@pytest.fixture
def sdk() -> None:
    pytest.importorskip("acp")


def drain(child: LiveChild, events: list[dict[str, Any]]) -> None:
    """Poll ``child`` until it has finished (bounded by the hang guard)."""
    end = time.monotonic() + HANG_GUARD
    while not child.finished:
        messages, _ = child.poll()
        events.extend(messages)
        if time.monotonic() > end:
            raise TimeoutError(f"child {child.run} still running after {HANG_GUARD} s")
        if not messages:
            time.sleep(0.005)


def agent_pid(path: Path) -> int:
    """The echo agent's pid, from its ``--pid-file`` (written before it speaks ACP)."""
    return int(path.read_text())


@pytest.mark.usefixtures("sdk")
def test_a_prompt_streams_back_through_the_bridge(tmp_path: Path) -> None:
    pid_file = tmp_path / "agent.pid"
    text = "hello from the ACP bridge, \u00e9t\u00e9 \u2713"
    child = spawn(text, acp=[sys.executable, ECHO, "--pid-file", str(pid_file)], env=child_env(), timeout=60)
    with child:
        events: list[dict[str, Any]] = []
        wait_for_event(child, lambda e: e["type"] == "turn-complete", events)
        child.close()
        drain(child, events)
        assert child.status == "done", child.error
        types = [e["type"] for e in events]
        started = next(e for e in events if e["type"] == "agent-started")
        assert (started["provider"], started["model"]) == ("acp", "echo-agent")
        assert types.index("agent-started") < types.index("ready")
        deltas = [e["delta"] for e in events if e["type"] == "assistant-text-delta"]
        assert len(deltas) == 3 and "".join(deltas) == text
        thinking = [e for e in events if e["type"] == "assistant-thinking"]
        assert [e["text"] for e in thinking] == ["echoing"]
        texts = [e for e in events if e["type"] == "assistant-text"]
        assert [(e["text"], e["final?"]) for e in texts] == [(text, True)]
        llm = [e for e in events if e["type"] in ("llm-start", "llm-end")]
        assert [e["type"] for e in llm] == ["llm-start", "llm-end"]
        assert llm[1]["stop-reason"] == "stop"
        complete = [e for e in events if e["type"] == "turn-complete"]
        assert [e["stop-reason"] for e in complete] == ["stop"]
        assert events[-1]["type"] == "exit" and events[-1]["status"] == "done"
        assert child.channel.final_text == text
        wait_gone([agent_pid(pid_file)])


@pytest.mark.usefixtures("sdk")
def test_cancel_mid_stream_ends_the_run_cancelled_within_a_second(tmp_path: Path) -> None:
    pid_file = tmp_path / "agent.pid"
    child = spawn("go", acp=[sys.executable, ECHO, "--slow", "--pid-file", str(pid_file)], env=child_env(), timeout=60)
    with child:
        events: list[dict[str, Any]] = []
        wait_for_event(child, lambda e: e["type"] == "assistant-text-delta", events)
        sent = time.monotonic()
        seq = child.cancel()
        exit_event = wait_for_event(child, lambda e: e["type"] == "exit", events)
        took = time.monotonic() - sent
        assert exit_event["status"] == "cancelled"
        assert took < 1.0, f"exit {took:.2f} s after cancel"
        drain(child, events)
        after = [e["type"] for e in events[events.index(exit_event) - 1 :: -1]]  # newest first, before exit
        ack = next(i for i, e in enumerate(events) if e["type"] == "control-ack" and e.get("ref") == seq)
        complete = next(i for i, e in enumerate(events) if e["type"] == "turn-complete")
        assert ack < complete < events.index(exit_event), after
        assert events[complete]["stop-reason"] == "aborted"
        assert child.status == "cancelled"
        wait_gone([agent_pid(pid_file)])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"acp": ["x"], "mock": {"steps": 1}},
        {"acp": ["x"], "agent": "m:f"},
        {"acp": ["x"], "command": ["true"]},
        {"acp": []},
        {"acp": "agent"},
        {"acp": ["x"], "acp_permissions": "always"},
        {"acp": ["x"], "acp_grace": 0},
        {"acp": ["x"], "acp_init_timeout": -1.0},
    ],
)
def test_spawn_acp_misuse_is_a_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        spawn("x", **kwargs)


FILES = {"FEN_WIRE_CONTROL_PATH": "/nonexistent/c", "FEN_WIRE_EVENT_PATH": "/nonexistent/e"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--acp"], "--acp needs the ACP agent's command after --"),
        (["--acp", "--"], "--acp needs the ACP agent's command after --"),
        (["--", "agent"], "a command after -- needs --acp"),
        (["--acp-grace", "1"], "--acp-grace needs --acp"),
        (["--acp", "--agent", "m:f", "--", "agent"], "--acp cannot be used with --agent"),
        (["--acp", "--steps", "2", "--", "agent"], "mock knobs (--steps) cannot be used with --acp"),
        (
            ["--acp", "--acp-permissions", "yes", "--", "agent"],
            "--acp-permissions must be deny, allow-once or allow-always",
        ),
        (["--acp", "--acp-grace", "0", "--", "agent"], "--acp-grace must be a positive number of seconds"),
    ],
)
def test_child_acp_misuse_is_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert child_main(argv, environ=FILES) == 1
    err = capsys.readouterr().err
    assert err.startswith("fenwire child: " + message), err
    assert err.count("\n") == 1, err


def test_child_acp_without_the_sdk_says_which_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "acp", None)  # import acp now fails as if it were not installed
    monkeypatch.delitem(sys.modules, "fenwire_fast.live.acp.agent", raising=False)
    monkeypatch.delitem(sys.modules, "fenwire_fast.live.acp.client", raising=False)
    assert child_main(["--acp", "--", "agent"], environ=FILES) == 1
    err = capsys.readouterr().err
    assert err == "fenwire child: the ACP bridge needs the acp extra: pip install 'fenwire_fast[acp]'\n"
