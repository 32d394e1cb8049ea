"""ACP agents that misbehave (``acp_agents/bad_agent.py --mode MODE``, and an agent that ignores the
``session/cancel`` of a finalize) end as the bridge's spec says: the run fails with an ``error``
that starts with ``ACP agent``, or the misbehaviour is reported as an ``info`` and the run still
ends ``done``. Never a hang (every wait is bounded), never a traceback in the child's log, never a
process left behind (the child's group and the agent's group are gone).

All runs go at once (one module fixture); each test checks one of them with the oracle.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp")

from acp_agents import scripted
from acp_oracle import (
    RAW_LONE_TEXT,
    Expect,
    Run,
    TurnExpect,
    agent_command,
    assert_clean,
    cancel_stream_ok,
    check,
    close_after_turns,
    drive,
    expect_bad,
    expect_raw,
    spawn_run,
    wait_group_gone,
)
from fenwire_fast.live.acp.client import EARLY_CAP
from fenwire_fast.live.proc.stderr_tail import PASS_ON_CAP
from live_harness import assert_groups_empty, group_empty, wait_for_event

#: what a misbehaving run may take at most (it should take a second or two): a hang guard
BOUND = 60.0
INIT_TIMEOUT = 2.0
GRACE = 1.0
MODES = [
    "no-init",
    "no-session",
    "exit-at-start",
    "exit-mid-turn",
    "garbage",
    "long-line",
    "unknown-session",
    "banner",
    "stderr-flood",
]
#: modes whose run fails before its first turn (nothing to close, maybe no ack)
EARLY = ("no-init", "no-session", "exit-at-start")
#: the early-flood run's hang guard (300,000 updates take the bridge a while on a busy machine)
EARLY_FLOOD_BOUND = 300.0
#: the bound on the early-flood child's peak RSS (KiB): it peaked at 48 MiB with the 300,000
#: updates bounded, at 253 MiB holding them all
PEAK_RSS_KIB = 150 * 1024
#: the request-flood run's deadline: time enough for the child to read all 100,000 requests, had
#: it not stopped (it read about 5,000 a second on a loaded 2-core machine)
REQUEST_FLOOD_DEADLINE = 20.0
#: raw_agent's modes (JSON-RPC that the SDK's receive loop cannot take); the last fails its run
RAW_MODES = [
    "deep-line",
    "list-id",
    "object-id",
    "bool-id",
    "unknown-id",
    "bad-method",
    "bad-params",
    "bad-notification",
    "error-string",
]


def _finalize_when_streaming(run: Run) -> Any:
    yield lambda r: r.count("assistant-text-delta") >= 2
    run.send("finalize", name="finalize")


def _expect_grace_kill() -> Expect:
    cid, title = scripted.CANCEL_TOOL
    turn = TurnExpect(text_ok=cancel_stream_ok, tools=[(cid, title, {"event": "cancel"}, True)])
    return Expect(
        turns=[turn],
        status="failed",
        error_prefix=f"ACP agent's process group killed: no answer to session/cancel within {GRACE}",
        model="cancel-agent",
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pids = str(tmp_path_factory.mktemp("acp-bad-pids"))
    started = [
        spawn_run(
            mode,
            agent_command("bad_agent.py", "--mode", mode),
            expect=expect_bad(mode),
            # a run that fails on its own is not closed (a close sent after its exit is never acked)
            script=None if mode in (*EARLY, "exit-mid-turn") else close_after_turns(),
            pid_dir=pids,
            # only no-init waits for the init timeout; the others may start slowly on a busy machine
            acp_init_timeout=INIT_TIMEOUT if mode in ("no-init", "no-session") else 30.0,
            acp_grace=GRACE,
        )
        for mode in MODES
    ]
    started += [
        spawn_run(
            "raw-" + mode,
            agent_command("raw_agent.py", "--mode", mode),
            expect=expect_raw(mode),
            script=None if mode == "error-string" else close_after_turns(),
            pid_dir=pids,
            acp_grace=GRACE,
        )
        for mode in [*RAW_MODES, "lone-surrogate"]
    ]
    started.append(
        spawn_run(
            "finalize-ignored",
            agent_command("cancel_agent.py", "--ignore-cancel"),
            expect=_expect_grace_kill(),
            script=_finalize_when_streaming,
            pid_dir=pids,
            acp_grace=GRACE,
        )
    )
    started.append(
        spawn_run(
            "missing-command",
            [os.path.join(pids, "no-such-agent")],
            expect=Expect(turns=[], status="failed", error_prefix="ACP agent"),
        )
    )
    return drive(started, timeout=BOUND)


def _problems(run: Run) -> list[str]:
    # an agent that never answers initialize fails the run before it reads a control: no acks then
    controls = [] if run.name in (*EARLY, "missing-command") else run.controls
    return check(run.events, run.expect, controls=controls)


@pytest.mark.parametrize("mode", MODES)
def test_a_misbehaving_agent_ends_as_the_spec_says(runs: dict[str, Run], mode: str) -> None:
    run = runs[mode]
    assert _problems(run) == [], run.describe()
    assert_clean(run)


@pytest.mark.parametrize("mode", [*EARLY, "exit-mid-turn", "missing-command"])
def test_a_failed_run_says_why_in_its_exit_error(runs: dict[str, Run], mode: str) -> None:
    run = runs[mode]
    assert run.child.status == "failed", run.describe()
    assert run.child.error is not None and run.child.error.startswith("ACP agent"), run.describe()


@pytest.mark.parametrize("mode", ["garbage", "long-line", "unknown-session", "banner", "stderr-flood"])
def test_a_skipped_line_or_update_leaves_the_answer_whole(runs: dict[str, Run], mode: str) -> None:
    run = runs[mode]
    assert run.child.status == "done", run.describe()
    assert run.child.channel.final_text == "".join(scripted.BAD_MESSAGE), run.describe()


@pytest.mark.parametrize("mode", RAW_MODES)
def test_json_rpc_the_sdk_cannot_take_is_an_info_and_never_a_hang(runs: dict[str, Run], mode: str) -> None:
    """A deep line, an id that is not a string, number or null, an answer to no request, a method
    that is not a string, params that are not structured: each an ``info``, the rest of what the
    agent wrote read on (the answer whole); an error that is not an error object ends its request
    as error -32603 (the run fails, it does not wait forever)."""
    run = runs["raw-" + mode]
    assert run.problems() == [], run.describe()
    assert_clean(run)
    if mode != "error-string":
        assert run.child.channel.final_text == "".join(scripted.BAD_MESSAGE), run.describe()


def test_a_lone_surrogate_in_the_answer_is_escaped_and_the_answer_kept(runs: dict[str, Run]) -> None:
    """A lone surrogate (an escape JSON allows) in the message: the ``result`` carries the text as
    the ``assistant-text`` event does, escaped with its note, rather than no ``result`` at all."""
    run = runs["raw-lone-surrogate"]
    assert run.problems() == [], run.describe()
    assert_clean(run)
    assert run.child.channel.result is not None, run.describe()
    assert run.child.channel.final_text == RAW_LONE_TEXT, run.describe()


@pytest.mark.parametrize("mode", ["no-init", "no-session"])
def test_the_init_timeout_is_kept(runs: dict[str, Run], mode: str) -> None:
    run = runs[mode]
    assert f"within {INIT_TIMEOUT}" in (run.child.error or ""), run.describe()


@pytest.mark.parametrize(
    ("mode", "code", "said"),
    [("exit-at-start", 2, scripted.BAD_START_STDERR), ("exit-mid-turn", 3, scripted.BAD_MID_TURN_STDERR)],
)
def test_an_agent_that_dies_says_its_code_and_last_stderr_line(
    runs: dict[str, Run], mode: str, code: int, said: str
) -> None:
    run = runs[mode]
    error = run.child.error or ""
    assert f"ACP agent exited with code {code} " in error, run.describe()
    assert error.endswith(f": {said}"), f"the agent's last stderr line does not end the error\n{run.describe()}"
    assert said in run.log, f"the agent's stderr is not in the run's log\n{run.describe()}"


def test_an_agent_that_floods_its_stderr_gets_a_bounded_log(runs: dict[str, Run]) -> None:
    """12 MiB of stderr: the run's log keeps its first PASS_ON_CAP bytes, says where it was cut and
    how much was dropped; the answer and the run are untouched."""
    run = runs["stderr-flood"]
    assert run.log_bytes > PASS_ON_CAP, run.describe()  # the cap was reached: the log is not empty
    assert run.log_bytes < PASS_ON_CAP + 64 * 1024, f"a log of {run.log_bytes} bytes\n{run.describe()}"
    dropped = re.search(r"\[fenwire: (\d+) more bytes of this stderr dropped\]", run.log)
    assert dropped is not None, run.describe()
    assert int(dropped.group(1)) >= scripted.BAD_STDERR_FLOOD_BYTES - PASS_ON_CAP, run.describe()


def _peak_rss_kib(pid: int) -> int:
    """The peak resident set size of process ``pid`` so far (``VmHWM``, KiB)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc/PID/status")
def test_updates_before_session_new_are_bounded_and_counted(tmp_path: Path) -> None:
    """300,000 updates before the answer to session/new: the child keeps EARLY_CAP of them for
    the first turn and counts the rest in an info; its peak RSS, read before it exits, stays far
    below what holding them all takes (253 MiB)."""
    peak: list[int] = []

    def script(run: Run) -> Any:
        yield lambda r: r.count("turn-complete") >= 1
        peak.append(_peak_rss_kib(run.child.pid))
        run.send("close")

    kept = EARLY_CAP
    info = (
        f"ACP agent sent {scripted.RAW_EARLY_UPDATES} updates and notes before session/new was answered: "
        f"the first {kept} kept, {scripted.RAW_EARLY_UPDATES - kept} dropped"
    )
    turn = TurnExpect(text="".join(scripted.BAD_MESSAGE), tools=[], infos=[info], stop_reason="stop")
    expect = Expect(turns=[turn], model="raw-agent", infos=[info])
    run = spawn_run(
        "early-flood",
        agent_command("raw_agent.py", "--mode", "early-flood"),
        expect=expect,
        script=script,
        pid_dir=str(tmp_path),
        acp_init_timeout=EARLY_FLOOD_BOUND,
    )
    drive([run], timeout=EARLY_FLOOD_BOUND)
    assert peak, run.describe()
    assert peak[0] < PEAK_RSS_KIB, f"the child's peak RSS was {peak[0]} KiB\n{run.describe()}"
    assert run.problems() == [], run.describe()
    assert_clean(run)


def test_many_skipped_lines_before_session_new_do_not_stop_the_reading(tmp_path: Path) -> None:
    """10,000 lines that are not JSON (1 MB) before the answer to session/new: their infos are held for the
    first turn (EARLY_CAP of them, the rest counted), not queued where the reading of stdout waits
    for a turn to take them (no turn can before session/new is answered: the start timed out)."""
    garbage = scripted.RAW_EARLY_GARBAGE
    info = (
        f"ACP agent sent {garbage} updates and notes before session/new was answered: "
        f"the first {EARLY_CAP} kept, {garbage - EARLY_CAP} dropped"
    )
    skipped = "ACP agent wrote a line that is not JSON-RPC; skipped"
    turn = TurnExpect(text="".join(scripted.BAD_MESSAGE), tools=[], infos=[skipped] * EARLY_CAP + [info])
    run = spawn_run(
        "early-garbage",
        agent_command("raw_agent.py", "--mode", "early-garbage"),
        expect=Expect(turns=[turn], model="raw-agent"),
        script=close_after_turns(),
        pid_dir=str(tmp_path),
        acp_init_timeout=20.0,
    )
    drive([run], timeout=BOUND)
    assert run.problems() == [], run.describe()
    assert_clean(run)


def test_an_agent_that_asks_without_reading_the_answers_is_read_no_further(tmp_path: Path) -> None:
    """100,000 requests written without reading stdin, where their answers wait: the child stops
    reading the agent's stdout once QUEUE_HIGH answers wait (as on a pipe: the agent now waits
    too), rather than holding every request and its answer (3.7 KiB each); the run's deadline
    still ends the run, and the agent's group is killed after the grace."""
    peak: list[int] = []

    def sample(run: Run) -> bool:
        try:
            peak.append(_peak_rss_kib(run.child.pid))
        except (OSError, AssertionError):
            pass  # the child has just exited
        return False

    def script(run: Run) -> Any:
        yield sample

    run = spawn_run(
        "request-flood",
        agent_command("raw_agent.py", "--mode", "request-flood"),
        script=script,
        pid_dir=str(tmp_path),
        timeout=REQUEST_FLOOD_DEADLINE,
        acp_grace=GRACE,
    )
    drive([run], timeout=BOUND + REQUEST_FLOOD_DEADLINE)
    assert peak, run.describe()
    assert max(peak) < PEAK_RSS_KIB, f"the child's peak RSS was {max(peak)} KiB\n{run.describe()}"
    assert run.child.status == "timed-out", run.describe()
    assert check(run.events, controls=run.controls) == [], run.describe()
    assert_clean(run)


def test_a_missing_agent_command_fails_the_run_cleanly(runs: dict[str, Run]) -> None:
    run = runs["missing-command"]
    assert _problems(run) == [], run.describe()
    assert_clean(run)


def test_an_ignored_cancel_of_a_finalize_kills_the_group_and_fails_the_run(runs: dict[str, Run]) -> None:
    run = runs["finalize-ignored"]
    assert _problems(run) == [], run.describe()
    ack = run.index("control-ack", ref=run.sent["finalize"])
    assert ack < run.index("turn-complete"), run.describe()
    took = run.arrival("exit") - run.sent_at["finalize"]
    assert took < GRACE + 1.0, f"the run ended {took:.2f} s after the finalize\n{run.describe()}"
    assert_clean(run)


def test_a_sigkilled_child_takes_its_agent_group_with_it(tmp_path: Path) -> None:
    """The ACP agent runs in a process group of its own; when the child is SIGKILLed (no chance to
    close the agent), the orphan protection must still end that group."""
    run = spawn_run("sigkilled", agent_command("cancel_agent.py"), pid_dir=str(tmp_path))
    try:
        wait_for_event(run.child, lambda e: e["type"] == "assistant-text-delta", run.events, timeout=BOUND)
        assert run.pid_file is not None
        agent = int(Path(run.pid_file).read_text())
        assert not group_empty(agent), "the agent is not streaming in a group of its own"
        os.kill(run.child.pid, signal.SIGKILL)
        wait_group_gone(agent, timeout=15.0)
    finally:
        run.child.cleanup()
    assert_groups_empty([run.child])


def test_a_deadline_during_initialize_ends_the_run_timed_out_with_its_exit_line(tmp_path: Path) -> None:
    """An agent that never answers ``initialize``, with a run deadline well inside the init timeout:
    the child itself ends the run ``timed-out`` at the deadline (an ``exit`` line of its own), rather
    than waiting out the init timeout and leaving the parent's kill backstop to end it unexplained."""
    # counted from the spawn: the child's start and its import of the ACP SDK come out of it first,
    # and a loaded 2-core machine took over 2 s for that (the agent was killed before it could write
    # its pid); 6 s leaves that start room several times over
    deadline = 6.0
    run = spawn_run(
        "deadline-in-init",
        agent_command("bad_agent.py", "--mode", "no-init"),
        pid_dir=str(tmp_path),
        timeout=deadline,
        acp_init_timeout=30.0,
        acp_grace=5.0,  # the parent's kill backstop waits 6 s past the deadline: the child beats it
    )
    drive([run], timeout=BOUND)
    exits = [e for e in run.events if e["type"] == "exit"]
    assert [e.get("status") for e in exits] == ["timed-out"], run.describe()
    assert exits[0].get("error") == "run deadline exceeded", run.describe()
    assert run.child.status == "timed-out" and not run.child.killed, run.describe()
    assert_clean(run)
