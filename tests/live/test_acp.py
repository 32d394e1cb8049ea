"""The ACP bridge end to end: every scripted ACP agent (``acp_agents/``, real agents written with the
SDK's agent side) as a live child, through ``spawn(acp=...)`` and through a Hub, each transcript
checked by the independent oracle (``acp_oracle.py``); cancel of a running turn; steer, follow-up
and finalize becoming the next prompts; the three permission policies. And tests of the oracle
itself: it must reject what the bridge must not do.

The runs of one kind share a module fixture and run concurrently (the machine has 2 cores); the
cancel tests, which time the run's end, run alone. Nothing waits for time to pass: the stream
agent's ``--gate`` file holds its first prompt while the test sends its controls.
"""

from __future__ import annotations

import copy
import os
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp")

from acp_agents import scripted
from acp_oracle import (
    STOP_REASONS,
    Expect,
    Run,
    TurnExpect,
    agent_command,
    assert_clean,
    check,
    close_after_turns,
    drive,
    expect_bad,
    expect_cancelled,
    expect_permission,
    expect_stream,
    expect_tools,
    read_pid,
    spawn_run,
    wait_group_gone,
    with_pid,
)
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.proc.wakeups import WakeupsUnavailable
from live_harness import HANG_GUARD, assert_groups_empty, child_env

PROMPT = 'Stream, please: "quoted", \u00e9t\u00e9 \u2713\nand a second line'
POLICIES = ["deny", "allow-once", "allow-always"]
#: ACP stop reasons other than end_turn (stream_agent --stop), mapped by the oracle's STOP_REASONS
STOPS = ["max_tokens", "max_turn_requests", "refusal"]
#: stream_agent --flood: this many more chunks as fast as the agent can (a long message, cut on the wire)
FLOOD = 2000
STEER = ["steer A: look left", "steer B: then \u00e9\u00e9"]
FOLLOW_UP = "follow it up"
NOTE = "Sum up."


def _steer_script(gate: str) -> Any:
    """Turn 1 waits at the stream agent's gate; send two steers and a follow-up, see them acked,
    then open the gate; after three turns close the run."""

    def script(run: Run) -> Any:
        yield lambda r: r.count("assistant-thinking-delta") >= len(scripted.STREAM_THOUGHTS)
        run.send("steer", {"text": STEER[0]}, name="steer-a")
        run.send("steer", {"text": STEER[1]}, name="steer-b")
        run.send("follow-up", {"text": FOLLOW_UP}, name="follow-up")
        yield lambda r: r.count("control-ack") >= 4
        Path(gate).touch()
        yield lambda r: r.count("turn-complete") >= 3
        run.send("close")

    return script


def _finalize_script(run: Run) -> Any:
    yield lambda r: r.count("turn-complete") >= 1
    run.send("finalize", {"note": NOTE}, name="finalize")


def _finalize_prompt_ok(text: str | None) -> bool:
    """The finalize turn's prompt (as the stream agent echoes it): a line asking for a plain answer
    without tools, a blank line, then the note."""
    match = re.search(r"\n\[prompt 2: (.*)\]\Z", text or "", re.S)
    if match is None or not (text or "").startswith("".join(scripted.STREAM_MESSAGE)):
        return False
    prompt = match.group(1)
    head, sep, tail = prompt.partition("\n\n")
    return bool(sep) and tail == NOTE and "tools" in head


def _finalize_when_streaming(run: Run) -> Any:
    yield lambda r: r.count("assistant-text-delta") >= 2
    run.send("finalize", {"note": NOTE}, name="finalize")


def _finalize_after_cancel_ok(text: str | None) -> bool:
    """cancel_agent's answer to the finalize prompt that follows the interrupted turn."""
    prefix = scripted.cancel_later_text("")
    if not (text or "").startswith(prefix):
        return False
    head, sep, tail = (text or "")[len(prefix) :].partition("\n\n")
    return bool(sep) and tail == NOTE and "tools" in head


@pytest.fixture(scope="module")
def spawned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every scripted agent through ``spawn(acp=...)``, all at once."""
    pids = str(tmp_path_factory.mktemp("acp-pids"))
    gate = os.path.join(pids, "steer.gate")
    stream, perm = agent_command("stream_agent.py"), agent_command("permission_agent.py")
    runs = [
        spawn_run(
            "stream", stream, prompt=PROMPT, expect=expect_stream([PROMPT]), script=close_after_turns(), pid_dir=pids
        ),
        spawn_run(
            "tools", agent_command("tools_agent.py"), expect=expect_tools(), script=close_after_turns(), pid_dir=pids
        ),
        *[
            spawn_run(
                f"permission-{policy}",
                perm,
                acp_permissions=policy,
                expect=expect_permission(policy),
                script=close_after_turns(),
                pid_dir=pids,
            )
            for policy in POLICIES
        ],
        *[
            spawn_run(
                f"permission-deny{flag}",
                [*perm, flag],
                expect=expect_permission("deny", flag),
                script=close_after_turns(),
                pid_dir=pids,
            )
            for flag in ("--no-reject-once", "--allow-only")
        ],
        spawn_run(
            "steer",
            [*stream, "--gate", gate],
            prompt="first",
            expect=expect_stream(["first", "\n\n".join(STEER), FOLLOW_UP]),
            script=_steer_script(gate),
            pid_dir=pids,
        ),
    ]
    runs += [
        spawn_run(
            f"stop-{reason}",
            [*stream, "--stop", reason],
            prompt=PROMPT,
            expect=expect_stream([PROMPT], stop=reason),
            script=close_after_turns(),
            pid_dir=pids,
        )
        for reason in STOPS
    ]
    runs.append(
        spawn_run(
            "flood",
            [*stream, "--flood", str(FLOOD)],
            prompt=PROMPT,
            expect=expect_stream([PROMPT], flood=FLOOD),
            script=close_after_turns(),
            pid_dir=pids,
        )
    )
    runs.append(
        spawn_run(
            "cli-permission-allow-always",
            perm,
            acp_permissions="allow-always",
            expect=expect_permission("allow-always"),
            script=close_after_turns(),
            pid_dir=pids,
            via_cli=True,
        )
    )
    mid = expect_cancelled(status="done")
    assert mid.turns is not None
    mid.turns.append(TurnExpect(text_ok=_finalize_after_cancel_ok, tools=[], infos=[], stop_reason="stop"))
    runs.append(
        spawn_run(
            "finalize-mid-turn",
            agent_command("cancel_agent.py"),
            expect=mid,
            script=_finalize_when_streaming,
            pid_dir=pids,
        )
    )
    finalize = expect_stream(["first", "?"])
    assert finalize.turns is not None
    finalize.turns[1] = TurnExpect(text_ok=_finalize_prompt_ok, tools=[], infos=[], stop_reason="stop")
    runs.append(spawn_run("finalize", stream, prompt="first", expect=finalize, script=_finalize_script, pid_dir=pids))
    return drive(runs)


SPAWNED = [
    "stream",
    "tools",
    *[f"permission-{p}" for p in POLICIES],
    "permission-deny--no-reject-once",
    "permission-deny--allow-only",
    "steer",
    "finalize",
    *[f"stop-{reason}" for reason in STOPS],
    "cli-permission-allow-always",
    "finalize-mid-turn",
    "flood",
]


@pytest.mark.parametrize("name", SPAWNED)
def test_each_agent_through_spawn_passes_the_oracle(spawned: dict[str, Run], name: str) -> None:
    run = spawned[name]
    assert run.problems() == [], run.describe()
    assert run.child.status == "done", run.describe()
    assert_clean(run)


def test_the_run_answer_is_the_last_turns_text(spawned: dict[str, Run]) -> None:
    for name in ("stream", "tools", "steer"):
        run = spawned[name]
        result = run.events[-2]
        texts = [e["text"] for e in run.events if e["type"] == "assistant-text"]
        assert result["type"] == "result" and result["final-text"] == texts[-1], run.describe()
        assert result["stop-reason"] == "stop", run.describe()


def test_steer_and_follow_up_become_the_next_prompts_at_the_turn_boundary(spawned: dict[str, Run]) -> None:
    run = spawned["steer"]
    starts = [run.index("turn-started", turn=n) for n in (1, 2, 3)]
    completes = [run.index("turn-complete", turn=n) for n in (1, 2, 3)]
    # the controls were acked while turn 1 ran, and only injected once it had completed
    for name in ("steer-a", "steer-b", "follow-up"):
        assert starts[0] < run.index("control-ack", ref=run.sent[name]) < completes[0], run.describe()
    steering = [e for e in run.events if e["type"] == "steering-injected"]
    follow = [e for e in run.events if e["type"] == "follow-up-injected"]
    assert [e["ref"] for e in steering] == [run.sent["steer-a"], run.sent["steer-b"]], run.describe()
    assert [e["ref"] for e in follow] == [run.sent["follow-up"]], run.describe()
    assert all(starts[1] < run.events.index(e) < completes[1] for e in steering), run.describe()
    assert starts[2] < run.events.index(follow[0]) < completes[2], run.describe()


def test_a_flood_of_chunks_arrives_whole(spawned: dict[str, Run]) -> None:
    """2000 chunks as fast as the agent writes them: every one arrives, in order; the run's answer
    is the whole message even though its ``assistant-text`` event was cut to the byte budget."""
    run = spawned["flood"]
    assert run.count("assistant-text-delta") == len(scripted.STREAM_MESSAGE) + FLOOD + 1, run.describe()
    assert run.child.channel.final_text == scripted.stream_text(1, PROMPT, FLOOD)


@pytest.mark.parametrize("reason", STOPS)
def test_the_stop_reason_is_mapped_through_to_the_result(spawned: dict[str, Run], reason: str) -> None:
    run = spawned[f"stop-{reason}"]
    assert run.events[-2]["type"] == "result", run.describe()
    assert run.events[-2]["stop-reason"] == STOP_REASONS[reason], run.describe()
    assert run.events[-2]["final-text"] == scripted.stream_text(1, PROMPT), run.describe()


def test_a_finalize_during_a_turn_cancels_it_then_sends_the_finalize_prompt(spawned: dict[str, Run]) -> None:
    run = spawned["finalize-mid-turn"]
    ack = run.index("control-ack", ref=run.sent["finalize"])
    assert run.index("turn-started", turn=1) < ack < run.index("turn-complete", turn=1), run.describe()
    assert run.events[run.index("turn-complete", turn=1)]["stop-reason"] == "aborted", run.describe()


def test_the_finalize_turn_asks_for_a_plain_answer_without_tools(spawned: dict[str, Run]) -> None:
    run = spawned["finalize"]
    assert run.count("turn-started") == 2, run.describe()
    assert run.child.channel.final_text is not None and run.child.channel.final_text.endswith(NOTE + "]")


# -- cancel --------------------------------------------------------------------------------------------------


def _cancel_when_streaming(run: Run) -> Any:
    yield lambda r: r.count("assistant-text-delta") >= 2
    run.send("cancel")


def test_cancel_of_a_running_turn_acks_first_then_ends_cancelled_within_a_second(tmp_path: Path) -> None:
    run = spawn_run(
        "cancel",
        agent_command("cancel_agent.py"),
        expect=expect_cancelled(),
        script=_cancel_when_streaming,
        pid_dir=str(tmp_path),
    )
    run = drive([run])["cancel"]
    assert run.problems() == [], run.describe()
    ack = run.index("control-ack", ref=run.sent["cancel"])
    assert ack < run.index("turn-complete") < run.index("exit"), run.describe()
    assert run.events[ack]["status"] == "accepted", run.describe()
    took = run.arrival("exit") - run.sent_at["cancel"]
    assert took < 1.0, f"the run ended {took:.2f} s after the cancel\n{run.describe()}"
    assert_clean(run)


def test_cancel_of_an_agent_that_ignores_it_kills_its_group_after_the_grace(tmp_path: Path) -> None:
    grace = 1.0
    run = spawn_run(
        "ignore-cancel",
        agent_command("cancel_agent.py", "--ignore-cancel"),
        expect=expect_cancelled(),
        script=_cancel_when_streaming,
        pid_dir=str(tmp_path),
        acp_grace=grace,
    )
    run = drive([run])["ignore-cancel"]
    assert run.problems() == [], run.describe()
    ack = run.index("control-ack", ref=run.sent["cancel"])
    assert ack < run.index("turn-complete") < run.index("exit"), run.describe()
    took = run.arrival("exit") - run.sent_at["cancel"]
    assert took < grace + 1.0, f"the run ended {took:.2f} s after the cancel\n{run.describe()}"
    # the agent kept streaming for a while after the cancel: the bridge went on mapping it
    assert run.agent_pid is not None
    wait_group_gone(run.agent_pid, timeout=2.0)
    assert_clean(run)


# -- a Hub running several bridged children at once ----------------------------------------------------------


@pytest.fixture(params=["kernel", "poll"])
def wakeups(request: pytest.FixtureRequest) -> str:
    """The hub's driver; the kernel one is skipped only where the kernel refuses it."""
    try:
        Hub(wakeups=request.param).close()
    except WakeupsUnavailable as exc:
        pytest.skip(f"kernel wake-ups unavailable here: {exc}")
    return str(request.param)


def test_several_agents_at_once_through_a_hub(tmp_path: Path, wakeups: str) -> None:
    """Six bridged children in one Hub: five run their prompt and are closed, one is cancelled
    while it streams. Each passes the oracle; no agent's group is left."""
    specs: list[tuple[list[str], dict[str, Any], Expect]] = [
        (agent_command("stream_agent.py"), {}, expect_stream(["hub task 1"])),
        (agent_command("tools_agent.py"), {}, expect_tools()),
        (agent_command("permission_agent.py"), {"acp_permissions": "allow-once"}, expect_permission("allow-once")),
        (agent_command("cancel_agent.py"), {}, expect_cancelled()),
        (agent_command("stream_agent.py"), {}, expect_stream(["hub task 5"])),
        (agent_command("bad_agent.py", "--mode", "garbage"), {}, expect_bad("garbage")),
    ]
    pid_files = [str(tmp_path / f"agent-{i}.pid") for i in range(len(specs))]
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with Hub(wakeups=wakeups) as hub:
        children = [
            hub.spawn(f"hub task {i}", acp=with_pid(cmd, pid), env=child_env(), timeout=HANG_GUARD, **kw)
            for i, ((cmd, kw, _), pid) in enumerate(zip(specs, pid_files, strict=True), 1)
        ]
        streaming = children[3]
        cancelled = False
        end = time.monotonic() + HANG_GUARD
        for child, event in hub:
            events[child.run].append(event)
            if child is streaming and event["type"] == "assistant-text-delta" and not cancelled:
                child.cancel()
                cancelled = True
            elif event["type"] == "turn-complete" and child.channel.idle and child is not streaming:
                child.close()
            assert time.monotonic() < end, "the hub's children hung"
        assert hub.finished
        for child, (_, _, expect) in zip(children, specs, strict=True):
            problems = check(events[child.run], expect, controls=sorted(child.channel.controls))
            assert problems == [], (child.run, problems, events[child.run])
            assert child.status == expect.status
            assert "Traceback" not in child.log_text()
        assert_groups_empty(hub.children)
    for pid_file in pid_files:
        pid = read_pid(pid_file)
        assert pid is not None, f"no pid in {pid_file}"
        wait_group_gone(pid)


# -- the oracle itself ---------------------------------------------------------------------------------------


def _ideal_tools_transcript() -> list[dict[str, Any]]:
    """What the spec says a bridged tools_agent run (prompt, then close) looks like."""
    body: list[dict[str, Any]] = [
        {"type": "llm-start", "provider": "acp", "model": "tools-agent"},
        {"type": "info", "summary": "plan: " + "; ".join(scripted.TOOLS_PLAN)},
    ]
    for cid, title, raw, progress, status, out, text in scripted.TOOLS:
        body.append({"type": "tool-call", "name": title, "id": cid, "arguments": raw or {}})
        body += [{"type": "info", "summary": f"tool {cid} in_progress"}] * progress
        result = out if out is not None else text
        body.append(
            {
                "type": "tool-result",
                "name": title,
                "id": cid,
                "tool-call-id": cid,
                "is-error?": status == "failed",
                "result": result,
            }
        )
    body += [
        {"type": "assistant-text-delta", "content-index": 0, "delta": "All tools ran; "},
        {"type": "assistant-text-delta", "content-index": 0, "delta": "deploy failed."},
        {"type": "assistant-text", "final?": True, "content-index": 0, "text": scripted.TOOLS_TEXT},
        {"type": "llm-end", "stop-reason": "stop"},
    ]
    events = [
        {"type": "agent-started", "provider": "acp", "model": "tools-agent"},
        {"type": "ready"},
        {"type": "control-ack", "ref": 1, "status": "accepted"},
        {"type": "turn-started", "turn": 1},
        {"type": "user", "text": "use your tools"},
        *body,
        {"type": "turn-complete", "turn": 1, "stop-reason": "stop"},
        {"type": "control-ack", "ref": 2, "status": "accepted"},
        {"type": "result", "final-text": scripted.TOOLS_TEXT, "stop-reason": "stop"},
        {"type": "exit", "status": "done"},
    ]
    return _renumber(events)


def _renumber(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**{k: v for k, v in e.items() if k != "seq"}, "seq": i} for i, e in enumerate(events, 1)]


def _oracle(events: list[dict[str, Any]]) -> list[str]:
    return check(events, expect_tools(), controls=[1, 2])


#: events whose loss or doubling no rule of the spec can see (the child's announcement of its agent)
_INVISIBLE = ("agent-started",)
#: swaps that give another legal transcript: the close may be acked while the turn still runs
_LEGAL_SWAPS = {("turn-complete", "control-ack")}


def test_the_oracle_accepts_the_ideal_transcript() -> None:
    assert _oracle(_ideal_tools_transcript()) == []


def test_the_oracle_wants_one_user_event_first_in_each_turn() -> None:
    events = _ideal_tools_transcript()
    at = next(i for i, e in enumerate(events) if e["type"] == "user")
    without = _renumber(events[:at] + events[at + 1 :])
    assert any("one user event" in p for p in _oracle(without))
    moved = events[:at] + events[at + 1 : at + 3] + [events[at]] + events[at + 3 :]
    assert any("user event comes after" in p for p in _oracle(_renumber(moved)))


def test_the_oracle_rejects_a_dropped_event() -> None:
    ideal = _ideal_tools_transcript()
    missed = []
    for i, event in enumerate(ideal):
        kept = ideal[:i] + ideal[i + 1 :]
        assert _oracle(kept), f"dropping {event} (seq gap) went unnoticed"
        if event["type"] not in _INVISIBLE and not _oracle(_renumber(kept)):
            missed.append(event)
    assert missed == []


def test_the_oracle_rejects_a_duplicated_event() -> None:
    ideal = _ideal_tools_transcript()
    missed = []
    for i, event in enumerate(ideal):
        doubled = ideal[: i + 1] + [copy.deepcopy(event)] + ideal[i + 1 :]
        assert _oracle(doubled), f"doubling {event} (seq repeated) went unnoticed"
        if event["type"] not in _INVISIBLE and not _oracle(_renumber(doubled)):
            missed.append(event)
    assert missed == []


def _strip(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != "seq"}


def test_the_oracle_rejects_reordered_events() -> None:
    ideal = _ideal_tools_transcript()
    missed = []
    for i in range(len(ideal) - 1):
        a, b = ideal[i], ideal[i + 1]
        if _strip(a) == _strip(b) or {a["type"], b["type"]} & set(_INVISIBLE) or (a["type"], b["type"]) in _LEGAL_SWAPS:
            continue
        swapped = ideal[:i] + [b, a] + ideal[i + 2 :]
        assert _oracle(swapped), f"swapping seq {a['seq']} and {b['seq']} (seqs out of order) went unnoticed"
        if not _oracle(_renumber(swapped)):
            missed.append((a["type"], b["type"]))
    assert missed == []


def test_the_oracle_rejects_a_wrong_delta_concatenation() -> None:
    events = _ideal_tools_transcript()
    text = next(e for e in events if e["type"] == "assistant-text")
    text["text"] = "All tools ran;deploy failed."
    assert any("is not its deltas'" in p for p in _oracle(events))
    events = _ideal_tools_transcript()
    deltas = [e for e in events if e["type"] == "assistant-text-delta"]
    deltas[0]["delta"], deltas[1]["delta"] = deltas[1]["delta"], deltas[0]["delta"]
    assert _oracle(events)


def test_the_oracle_rejects_a_wrong_tool_pairing_or_outcome() -> None:
    events = _ideal_tools_transcript()
    result = next(e for e in events if e["type"] == "tool-result" and e["tool-call-id"] == "call-deploy")
    result["is-error?"] = False
    assert any("is-error?" in p for p in _oracle(events))
    events = _ideal_tools_transcript()
    result = next(e for e in events if e["type"] == "tool-result" and e["tool-call-id"] == "call-read")
    result["tool-call-id"] = "call-other"
    assert _oracle(events)


def test_the_oracle_rejects_a_missing_ack_and_a_wrong_final_flag() -> None:
    assert any("control 3" in p for p in check(_ideal_tools_transcript(), expect_tools(), controls=[1, 2, 3]))
    events = _ideal_tools_transcript()
    next(e for e in events if e["type"] == "assistant-text")["final?"] = False
    assert any("not final?" in p for p in _oracle(events))


def test_the_oracle_checks_the_exit_status_and_error() -> None:
    events = _ideal_tools_transcript()[:-2] + [{"type": "exit", "status": "failed", "error": "ACP agent went away"}]
    events = _renumber(events)
    assert any("exit status" in p for p in _oracle(events))
    failed = Expect(turns=None, status="failed", error_prefix="ACP agent exited")
    assert any("does not start with" in p for p in check(events, failed))
    assert check(events, Expect(turns=None, status="failed", error_prefix="ACP agent went")) == []


def test_the_oracle_accepts_a_text_cut_on_the_wire_only_when_flagged() -> None:
    events = _ideal_tools_transcript()
    text = next(e for e in events if e["type"] == "assistant-text")
    text["text"] = "All tools\n\n[fenwire: kept 9 of 29 bytes]"
    assert any("is not its deltas'" in p for p in _oracle(events))
    text["transport-truncated?"] = True
    assert not any("is not its deltas'" in p for p in _oracle(events))
    text["text"] = "All rules\n\n[fenwire: kept 9 of 29 bytes]"
    assert any("is not its deltas'" in p for p in _oracle(events))
