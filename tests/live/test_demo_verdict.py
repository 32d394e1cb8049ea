"""``fenwire demo`` says FAIL, with a non-zero exit code, when a child drops, duplicates, alters or
reorders one event: its verdict rests on the transcript oracle, not only on the exits.

The demo runs in-process (``fenwire_fast.cli.main``); the hub's ``spawn`` is wrapped so every child
runs ``live_agents:sabotaged`` (the mock agent with one event of turn 1 tampered with), on the
demo's own scripts. The ``none`` run is the control: the same path, no sabotage, PASS. A run that
times out says so once, naming the children still running, on a clock the test moves.
"""

from __future__ import annotations

import io
import re
import sys
import time
from types import SimpleNamespace
from typing import Any

import pytest
from fenwire_fast.cli import parser as cli
from fenwire_fast.cli.demo import driver as demo
from fenwire_fast.live.parent import hub_children as hub_module
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
    assert "turn 1" in " ".join(out.split()), out  # a long problem line is wrapped at 80 columns


class StuckChild:
    """A child that never writes nor exits (what a child not yet done looks like at a timeout)."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.status, self.error, self.finished, self.idle, self.returncode = "running", None, False, False, None
        self.controls: dict[int, Any] = {}
        self.rejected: list[Any] = []
        self.errors: list[str] = []
        self.result = self.final_text = None
        self.bytes = 0


class StuckSource:
    """A source of stuck children whose ``sleep`` moves the demo's clock on instead of waiting."""

    lost: tuple[type[BaseException], ...] = ()
    acp: list[str] | None = None  # mock children, so the demo's scripted checks apply

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.children: list[StuckChild] = []

    def spawn(self, prompt: str, mock: Any) -> StuckChild:
        self.children.append(StuckChild(f"child-{len(self.children) + 1}"))
        return self.children[-1]

    def poll(self) -> list[Any]:
        return []

    def sleep(self, timeout: float) -> None:
        self.clock[0] += 10.0

    def cluster(self) -> None:
        return None

    @property
    def finished(self) -> bool:
        return False


def test_a_timeout_names_the_children_still_running_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the timeout, one failed check says how many children did not finish and names a few;
    the other checks leave them out (no line per child), and no exit code reads ``None``."""
    clock = [1000.0]
    monkeypatch.setattr(demo, "time", SimpleNamespace(monotonic=lambda: clock[0], process_time=time.process_time))
    out = io.StringIO()
    report = demo._run(StuckSource(clock), 40, None, None, 25.0, out, False, None)
    text = out.getvalue()
    assert not report.ok and report.unfinished == [f"child-{i}" for i in range(1, 41)]
    checks = re.findall(r"^  \[(ok|FAIL)\] (.*)$", text, re.M)
    assert checks[0] == ("FAIL", "finished within the timeout (25 s)"), text
    assert [verdict for verdict, _ in checks[1:]] == ["ok"] * 4, text
    said = text.split("[FAIL] finished within the timeout (25 s)\n", 1)[1].split("  [ok]", 1)[0].splitlines()
    assert re.fullmatch(r" {9}40 not finished: child-1, child-2, child-3(, child-\d+)* and \d+ more", said[0]), said
    assert said[1:] == ["         killed at the timeout; their exits, events and acks are not checked"], said
    assert "None" not in text and text.count("still running") == 8, text  # a row for each of the first 8
    assert "    ... and 32 more, not finished\n" in text, text
    assert text.rstrip().endswith("FAIL")


class _Recorder:
    """A child handle that records what the demo sends it and is idle when told."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.idle = True
        self.finished = False
        self.bytes = 0

    def follow_up(self, text: str) -> int:
        self.sent.append("follow-up")
        return 2

    def close(self) -> int:
        self.sent.append("close")
        return 3


def test_a_follow_up_sent_to_an_idle_child_is_not_closed_behind() -> None:
    """A slow parent reads a whole first turn at once: it sends the follow-up at the second delta
    with the child already idle. The close must wait until a turn ended after the follow-up's ack
    (before, it went right behind the follow-up, and the child acked it ahead of the new turn)."""
    child = _Recorder()
    track = demo.Track(child=child, role="follow-up", config=demo.default_config())  # type: ignore[arg-type]
    by_child = {id(child): track}
    run = "child-4"
    turn = [
        {"type": "turn-started", "seq": 3},
        {"type": "assistant-text-delta", "seq": 4},
        {"type": "assistant-text-delta", "seq": 5},
        {"type": "turn-complete", "seq": 6},
    ]
    demo._take([(child, {**e, "run": run}) for e in turn], by_child, time.monotonic(), ())
    assert child.sent == ["follow-up"] and track.trigger_seq == 2
    demo._close_idle([track])
    assert child.sent == ["follow-up"]  # idle, but nothing of the follow-up seen yet
    ack = {"type": "control-ack", "seq": 7, "ref": 2, "status": "accepted", "run": run}
    demo._take([(child, ack)], by_child, time.monotonic(), ())
    demo._close_idle([track])
    assert child.sent == ["follow-up"]  # acked: its turn has not ended
    demo._take([(child, {"type": "turn-complete", "seq": 9, "run": run})], by_child, time.monotonic(), ())
    demo._close_idle([track])
    assert child.sent == ["follow-up", "close"]


def test_sigterm_in_a_guarded_block_still_ends_the_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM lands wherever the main thread is: inside a block that turns a child's bad line into
    an error (``except Exception`` in the channel's mirroring), the demo must still end as
    terminated, with its children stopped, and not count it as one more error and go on."""
    from fenwire_fast.cli.demo import _terminated
    from fenwire_fast.live.parent.channel import Channel

    real_mirror = Channel._mirror
    fired: list[str] = []

    def mirror(self: Any, item: dict[str, Any]) -> None:
        if not fired and item["type"] == "turn-started":
            fired.append(item["run"])
            _terminated(15, None)  # what the SIGTERM handler does, at this point of the loop
        real_mirror(self, item)

    monkeypatch.setattr(Channel, "_mirror", mirror)
    code = cli.main(["demo", "--children", "2", "--deltas", "50", "--plain"])
    out, err = capsys.readouterr()
    assert fired and code == 128 + 15, out + err
    assert "terminated; the children were stopped" in err
