"""The child presenter's behaviours, each against a real child process.

All scenarios run concurrently in one module fixture; each test then checks one outcome. Where a
control must reach a running turn, the mock's turn waits at its gate until the script has seen the
control acknowledged (see ``live_harness``), so nothing depends on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest
from fenwire_fast import MAX_LINE_BYTES
from fenwire_fast.live.child.mock_agent import config_from_mapping, final_text
from fenwire_fast.testing import check_transcript
from live_harness import (
    Ctx,
    Outcome,
    Scenario,
    at_gate,
    blocking_in_tool,
    gated,
    python_child_command,
    rerun_until_arranged,
    run_scenarios,
    seen,
)

#: every turn stops at the start of its step 1 until the script releases the gate
GATED = gated({"steps": 2, "deltas": 4, "tools": 1}, [1])
HANG_YIELD = {"steps": 2, "deltas": 2, "tools": 1, "hang_step": 1, "hang": "yield"}
HANG_BLOCK = {"steps": 2, "deltas": 2, "tools": 1, "hang_step": 1, "hang": "block", "hang_seconds": 60}
#: the deadline of deadline-turn, in seconds from the child's start: its turn must be hanging in
#: its tool by then; if it is not, the scenario is run again with more time (rerun_until_arranged)
DEADLINE = 5.0
BIG = {"steps": 1, "deltas": 2, "final_bytes": 100_000}
#: an agent whose text and stop reason the wire cannot carry as they are
UNSAFE = {"prefix": "lone \ud800 surrogate, escape \x1b[31m: ", "stop_reason": "end\udc80turn"}


def line(seq: int, type_: str, run: str, **payload: Any) -> bytes:
    return (
        json.dumps({"v": 1, "seq": seq, "type": type_, "run": run, **payload}, separators=(",", ":")).encode() + b"\n"
    )


def close_when_idle(ctx: Ctx, turns: int = 1) -> Any:
    yield seen("turn-complete", turns)
    yield lambda c: c.child.channel.idle
    ctx.send("close", name="final-close")


def s_cancel_hang_yield(ctx: Ctx) -> Any:
    yield seen("tool-call")
    ctx.send("cancel")


def s_cancel_hang_block(ctx: Ctx) -> Any:
    yield blocking_in_tool  # not just the tool-call: the child could still read a cancel after it
    ctx.send("cancel")


def s_version_mismatch(ctx: Ctx) -> Any:
    yield seen("ready")
    ctx.raw(json.dumps({"v": "1", "seq": 1, "type": "prompt", "run": ctx.child.run, "text": "x"}).encode() + b"\n")


def s_garbage(ctx: Ctx) -> Any:
    run = ctx.child.run
    yield seen("ready")
    ctx.raw(
        b"garbage\n"
        + b"\n"
        + b"   \n"
        + b"x" * (MAX_LINE_BYTES + 5000)
        + b"\n"
        + line(1, "prompt", "someone-else", text="not yours")
        + line(1, "prompt", run, text="stale seq")
        + line(2, "prompt", run)  # no text
        + line(3, "pause", run)
        + line(4, "ready", run)
        + line(5, "prompt", run, text="the real task")
    )
    yield seen("turn-complete")
    yield lambda c: c.child.channel.status == "ready"
    ctx.raw(line(6, "close", run))


def s_truncate(ctx: Ctx) -> Any:
    yield at_gate(1, 1)
    os.truncate(ctx.child.control_path, 0)


def acked_ref(ref: int) -> Any:
    return seen("control-ack", ref=ref)


def s_drop_on_finalize(ctx: Ctx) -> Any:
    run = ctx.child.run
    yield at_gate(1, 1)
    ctx.raw(line(2, "steer", run, text="s") + line(3, "follow-up", run, text="f") + line(4, "finalize", run))
    yield acked_ref(4)
    ctx.release()


def s_drop_many(ctx: Ctx) -> Any:
    run = ctx.child.run
    yield at_gate(1, 1)
    ctx.raw(b"".join(line(i, "steer", run, text=f"s{i}") for i in range(2, 3002)) + line(3002, "finalize", run))
    yield acked_ref(3002)
    ctx.release()


def s_drop_on_close(ctx: Ctx) -> Any:
    run = ctx.child.run
    yield at_gate(1, 1)
    ctx.raw(line(2, "follow-up", run, text="f1") + line(3, "follow-up", run, text="f2") + line(4, "close", run))
    yield acked_ref(4)
    ctx.release()


def s_kill_external(ctx: Ctx) -> Any:
    yield seen("tool-call")
    fd = os.open(ctx.child.event_path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"v":1,"seq":50,"type":"tool-res')
    os.close(fd)
    os.kill(ctx.child.pid, signal.SIGKILL)


def scenarios() -> list[Scenario]:
    return [
        Scenario("cancel-hang-yield", s_cancel_hang_yield, mock=HANG_YIELD),
        Scenario("cancel-hang-block", s_cancel_hang_block, mock=HANG_BLOCK, kwargs={"grace": 1.0}),
        deadline_turn(DEADLINE),
        Scenario("deadline-idle", None, prompt=None, kwargs={"timeout": 1.5}),
        Scenario("version-mismatch", s_version_mismatch, prompt=None),
        Scenario("garbage", s_garbage, prompt=None, mock={"steps": 1, "deltas": 2}),
        Scenario("truncate", s_truncate, mock=GATED),
        Scenario("big-final", lambda ctx: close_when_idle(ctx), mock=BIG),
        Scenario("drop-on-finalize", s_drop_on_finalize, mock=GATED),
        Scenario("drop-on-close", s_drop_on_close, mock=GATED),
        Scenario("drop-many", s_drop_many, mock=GATED),
        Scenario("mock-fails", None, mock={"steps": 3, "deltas": 2, "fail_step": 2}),
        Scenario("mock-exits", None, mock={"steps": 3, "deltas": 2, "exit_step": 2, "exit_code": 3}),
        Scenario(
            "kill-midline-self", None, kwargs={"command": python_child_command("--agent", "live_agents:midline_killer")}
        ),
        Scenario("kill-external", s_kill_external, mock=HANG_BLOCK),
        Scenario(
            "user-agent",
            lambda ctx: close_when_idle(ctx),
            prompt="hello",
            kwargs={
                "command": python_child_command("--agent", "live_agents:echo", "--agent-config", '{"prefix": "ECHO "}')
            },
        ),
        Scenario(
            "unsafe-text",
            lambda ctx: close_when_idle(ctx),
            prompt="hello",
            kwargs={
                "command": python_child_command("--agent", "live_agents:echo", "--agent-config", json.dumps(UNSAFE))
            },
        ),
        Scenario(
            "thinking",
            lambda ctx: close_when_idle(ctx),
            mock={"steps": 2, "deltas": 3, "thinking": 3, "tools": 2, "tool_result_bytes": 9000, "delta_bytes": 5000},
        ),
    ]


def deadline_turn(deadline: float) -> Scenario:
    return Scenario("deadline-turn", None, mock=HANG_YIELD, kwargs={"timeout": deadline})


def _hanging_in_time(o: Outcome) -> bool:
    """deadline-turn was arranged: the turn was in its hanging tool when the deadline passed."""
    return "tool-call" in o.types


@pytest.fixture(scope="module")
def out() -> dict[str, Outcome]:
    outcomes = run_scenarios(scenarios())
    outcomes["deadline-turn"] = rerun_until_arranged(
        outcomes["deadline-turn"], deadline_turn, _hanging_in_time, DEADLINE
    )
    return outcomes


def _ok(o: Outcome) -> None:
    assert not o.timed_out, o.describe()
    assert o.script_error is None, f"{o.script_error!r}\n{o.describe()}"


def test_cancel_during_cooperative_hanging_tool(out: dict[str, Outcome]) -> None:
    o = out["cancel-hang-yield"]
    _ok(o)
    assert o.status == "cancelled" and o.child.returncode == 1, o.describe()
    at = o.events.index(o.ack("cancel"))
    assert o.ack("cancel")["status"] == "accepted"
    tail = o.events[at + 1 :]
    assert [e["type"] for e in tail] == ["tool-result", "turn-complete", "exit"], o.describe()
    assert tail[0]["is-error?"] is True and tail[0]["result"] == "cancelled"
    assert tail[0]["tool-call-id"] == o.events[o.index("tool-call")]["id"]
    assert tail[1]["stop-reason"] == "aborted"
    assert tail[2] == {**tail[2], "status": "cancelled"} and "error" not in tail[2]


def test_cancel_during_blocking_tool_is_killed_after_grace(out: dict[str, Outcome]) -> None:
    o = out["cancel-hang-block"]
    _ok(o)
    # the child never read the cancel: no ack, no exit line; the backstop killed it
    assert o.types[-1] == "tool-call", o.describe()
    assert o.child.killed and o.child.returncode in (-signal.SIGTERM, -signal.SIGKILL)
    assert o.status == "cancelled"
    assert "without an exit line" in (o.child.error or "")
    assert "after cancel" in (o.child.error or "")


def test_deadline_during_a_turn(out: dict[str, Outcome]) -> None:
    o = out["deadline-turn"]
    _ok(o)
    assert o.status == "timed-out" and o.child.returncode == 1, o.describe()
    assert o.events[-1] == {**o.events[-1], "status": "timed-out", "error": "run deadline exceeded"}
    assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "aborted"
    assert o.events[-3]["type"] == "tool-result" and o.events[-3]["result"] == "cancelled"
    assert "result" not in o.types


def test_deadline_while_idle(out: dict[str, Outcome]) -> None:
    o = out["deadline-idle"]
    _ok(o)
    assert o.types == ["ready", "exit"], o.describe()
    assert o.events[-1]["status"] == "timed-out"
    assert o.child.returncode == 1


def test_version_mismatch_fails_without_ack(out: dict[str, Outcome]) -> None:
    o = out["version-mismatch"]
    _ok(o)
    assert o.types == ["ready", "exit"], o.describe()
    assert o.events[-1]["status"] == "failed"
    assert "version" in o.events[-1]["error"]
    assert o.child.returncode == 1


def test_bad_control_lines_are_answered_and_the_run_goes_on(out: dict[str, Outcome]) -> None:
    o = out["garbage"]
    _ok(o)
    run = o.child.run
    acks = [(a.get("ref"), a["status"], a.get("reason", "")) for a in o.acks()]
    assert len(acks) == 10, o.describe()
    garbage, blank, oversized, foreign, stale, no_text, pause, ready, real = acks[:9]
    assert garbage[:2] == (None, "rejected")  # malformed, no seq to name
    assert blank[:2] == (None, "rejected")  # whitespace-only: malformed
    assert oversized[:2] == (None, "rejected") and "65536" in oversized[2]  # rejected once
    assert foreign == (1, "rejected", f"run someone-else is not {run}")
    assert stale[:2] == (None, "rejected") and "1" in stale[2]  # out-of-order: no ref
    assert no_text[:2] == (2, "rejected") and "text" in no_text[2]
    assert pause[:2] == (3, "rejected")
    assert ready[:2] == (4, "rejected") and "ready" in ready[2]
    assert real == (5, "accepted", "")
    assert o.status == "done" and o.child.returncode == 0
    assert o.events[o.index("user")]["text"] == "the real task"
    # only the empty line went unanswered: 8 bad lines + 1 good one + the close
    assert len(o.acks()) == 10
    assert o.types[-2:] == ["result", "exit"]


def test_control_file_shrink_is_fatal(out: dict[str, Outcome]) -> None:
    o = out["truncate"]
    _ok(o)
    assert o.status == "failed" and o.child.returncode == 1, o.describe()
    assert "control file truncated below offset" in o.events[-1]["error"]
    assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "aborted"


def test_100kb_final_text_through_final_text_path(out: dict[str, Outcome]) -> None:
    o = out["big-final"]
    _ok(o)
    assert o.status == "done", o.describe()
    result = o.child.channel.result
    assert result is not None
    full = final_text(config_from_mapping(BIG), 1)
    assert len(full.encode()) == 100_000
    assert result["truncated?"] is True
    cut = result["final-text"]
    assert full.startswith(cut) and 0 < len(cut.encode()) <= MAX_LINE_BYTES - 1024
    assert o.child.channel.final_text == full
    assert o.child.channel.final_text_note is None
    assert not os.path.exists(result["final-text-path"])  # the parent removed it
    assert os.path.dirname(result["final-text-path"]) == o.child.directory
    assert result["usage"] and result["stop-reason"] == "stop"


def test_finalize_drops_queued_controls_in_one_info(out: dict[str, Outcome]) -> None:
    o = out["drop-on-finalize"]
    _ok(o)
    assert o.status == "done", o.describe()
    ack4 = next(a for a in o.acks() if a.get("ref") == 4)
    i = o.events.index(ack4)
    assert ack4["status"] == "accepted"
    info = o.events[i + 1]
    assert info["type"] == "info" and info["refs"] == [2, 3], o.describe()
    assert "steering-injected" not in o.types and "follow-up-injected" not in o.types
    assert o.types[-2:] == ["result", "exit"]


def test_close_drops_queued_follow_ups_before_the_result(out: dict[str, Outcome]) -> None:
    o = out["drop-on-close"]
    _ok(o)
    assert o.status == "done", o.describe()
    assert o.types[-3:] == ["info", "result", "exit"], o.describe()
    assert o.events[-3]["refs"] == [2, 3]
    assert o.events[-3]["summary"] == "dropped 2 queued input line(s)"


def test_a_long_dropped_queue_is_listed_in_full(out: dict[str, Outcome]) -> None:
    o = out["drop-many"]
    _ok(o)
    assert o.status == "done", o.describe()
    acks = o.acks()
    assert [a["ref"] for a in acks] == list(range(1, 3003))
    assert all(a["status"] == "accepted" for a in acks)
    infos = [e for e in o.events if e["type"] == "info" and "refs" in e]  # not the mock's gate notices
    refs = [r for e in infos for r in e["refs"]]
    injected = [e["ref"] for e in o.events if e["type"] == "steering-injected"]
    assert sorted(refs + injected) == list(range(2, 3002)), o.describe()
    # the turn waited at its gate until the finalize was acked: no step boundary took any steering
    assert injected == [], o.describe()
    assert len(infos) == 2 and len(infos[0]["refs"]) == 2048
    assert infos[0]["summary"] == "dropped 3000 queued input line(s)"
    assert o.events.index(infos[0]) == o.events.index(acks[-1]) + 1


def test_agent_error_fails_the_run(out: dict[str, Outcome]) -> None:
    o = out["mock-fails"]
    _ok(o)
    assert o.status == "failed" and o.child.returncode == 1, o.describe()
    assert o.events[-2]["type"] == "turn-complete" and o.events[-2]["stop-reason"] == "error"
    assert o.events[-1]["error"] == "agent failed: MockFailure: mock agent failed at step 2"


def test_abrupt_exit_is_a_failed_run(out: dict[str, Outcome]) -> None:
    o = out["mock-exits"]
    _ok(o)
    assert o.status == "failed" and o.child.returncode == 3, o.describe()
    assert "exit" not in o.types
    assert (o.child.error or "").startswith("child exited with code 3 without an exit line")


def test_child_killed_mid_line_by_itself(out: dict[str, Outcome]) -> None:
    o = out["kill-midline-self"]
    _ok(o)
    assert o.child.returncode == -signal.SIGKILL, o.describe()
    assert o.status == "failed"
    assert o.types[-1] == "tool-call", o.describe()  # the half line was never delivered
    assert o.child.channel.errors == []
    assert "killed by signal 9" in (o.child.error or "")


def test_child_killed_mid_line_from_outside(out: dict[str, Outcome]) -> None:
    o = out["kill-external"]
    _ok(o)
    assert o.status == "failed" and o.child.returncode == -signal.SIGKILL, o.describe()
    assert o.types[-1] == "tool-call"
    assert o.child.channel.errors == []


def test_user_agent_loaded_with_agent_flag(out: dict[str, Outcome]) -> None:
    o = out["user-agent"]
    _ok(o)
    assert o.types[0] == "agent-started", o.describe()  # start() events come before ready
    assert o.types[1] == "ready"
    assert o.status == "done" and o.child.returncode == 0
    result = o.child.channel.result
    assert result is not None
    assert result["final-text"] == "ECHO hello (turn 1, tools True)"
    assert result["stop-reason"] == "end_turn"
    assert result["usage"] == {"input": 3, "output": 5}
    complete = o.events[o.index("turn-complete")]
    assert complete["usage"] == {"input": 3, "output": 5} and complete["stop-reason"] == "end_turn"


def test_a_final_text_with_a_lone_surrogate_is_scrubbed_as_its_events_are(out: dict[str, Outcome]) -> None:
    """The turn's own text (``TurnResult.text``) and stop reason hold a lone surrogate and an
    escape character: the ``result`` carries them scrubbed exactly as the ``assistant-text`` event
    was (the run's answer is not lost), and ``turn-complete`` and ``result`` agree on the stop reason."""
    o = out["unsafe-text"]
    _ok(o)
    assert o.status == "done" and o.child.returncode == 0, o.describe()
    result = o.child.channel.result
    assert result is not None, o.describe()
    shown = o.events[o.index("assistant-text")]["text"]
    assert "\\uD800" in shown and "\\x1B[31m" in shown and shown.startswith("lone "), shown
    assert result["final-text"] == shown == o.child.channel.final_text
    complete = o.events[o.index("turn-complete")]
    assert complete["stop-reason"] == result["stop-reason"] == "end\\uDC80turn\n\n[fenwire: 1 unsafe character escaped]"


def test_big_events_are_bounded_and_script_exact(out: dict[str, Outcome]) -> None:
    o = out["thinking"]
    _ok(o)
    assert o.status == "done"
    mock = {"steps": 2, "deltas": 3, "thinking": 3, "tools": 2, "tool_result_bytes": 9000, "delta_bytes": 5000}
    assert check_transcript(config_from_mapping(mock), o.events) == []
    assert any(e.get("transport-truncated?") for e in o.events)


def test_every_outcome_is_a_valid_transcript(out: dict[str, Outcome]) -> None:
    for name, o in out.items():
        if o.mock is None or name in ("mock-exits", "kill-external", "cancel-hang-block"):
            continue
        problems = check_transcript(o.config, o.events, controls=o.child.channel.controls)
        assert problems == [], f"{name}: {problems}\n{o.describe()}"
