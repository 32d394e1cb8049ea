"""``Channel.poll_raw`` and ``Hub.raw_batches``: the raw path hands over exactly what the dict path
does, as the child's own line bytes.

Two channels read two identical event files (same bytes, same read sizes): one with ``poll``, one
with ``poll_raw``. After every poll the raw batches, decoded, must be the dicts, the errors the
same, and in the end the mirrored state (status, result, exit, error, final text, counts) equal.
The streams mix what a child may write: plain events, every mirrored type, acks of controls sent,
another run's lines (also of mirrored types), rejected lines, a version mismatch (which stops the
channel), a ``result`` whose final text is read from a file first, and lines after ``exit``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fenwire_fast import ScanBatch
from fenwire_fast.live.parent.channel import Channel, decoded
from fenwire_fast.live.parent.hub import Hub
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FINAL = "the whole answer, ünïcödé: " + "z" * 5000

KINDS = [
    "delta",
    "delta",
    "delta",
    "ready",
    "ack",
    "turn-started",
    "turn-complete",
    "result",
    "result-file",
    "exit",
    "foreign",
    "foreign-exit",
    "foreign-escaped",
    "foreign-escaped-turn",
    "foreign-escaped-exit",
    "bad",
    "out-of-order",
    "version",
]


#: The type and payload of each ``foreign-escaped`` kind.
ESCAPED_FOREIGN = {
    "foreign-escaped": ("info", '"summary":"s"'),
    "foreign-escaped-turn": ("turn-started", '"turn":1'),
    "foreign-escaped-exit": ("exit", '"status":"done"'),
}


def event_lines(kinds: list[str], run_dir: str) -> bytes:
    """The event file a child writing ``kinds`` in order makes (``run_dir``: its directory)."""
    out = []
    seq = 0
    for i, kind in enumerate(kinds):
        seq += 1
        base: dict[str, Any] = {"v": 1, "seq": seq, "run": "r"}
        if kind == "delta":
            msg = {**base, "type": "assistant-text-delta", "delta": f'line {i}: "q" é\n{"x" * (i % 7)}'}
        elif kind == "ready":
            msg = {**base, "type": "ready"}
        elif kind == "ack":
            msg = {**base, "type": "control-ack", "ref": 1 + i % 3, "status": "accepted"}
        elif kind in ("turn-started", "turn-complete"):
            msg = {**base, "type": kind, "turn": 1}
            if kind == "turn-complete":
                msg["stop-reason"] = "stop"
        elif kind == "result":
            msg = {**base, "type": "result", "stop-reason": "stop", "final-text": "short"}
        elif kind == "result-file":
            path = os.path.join(run_dir, f"fenwire-final-{i}.txt")
            msg = {**base, "type": "result", "stop-reason": "stop", "final-text": FINAL[:3], "truncated?": True}
            msg["final-text-path"] = path
        elif kind == "exit":
            msg = {**base, "type": "exit", "status": "done"}
        elif kind == "foreign":
            msg = {**base, "run": "other", "type": "info", "summary": "not mine"}
        elif kind == "foreign-exit":
            msg = {**base, "run": "other", "type": "exit", "status": "failed"}
        elif kind.startswith("foreign-escaped"):
            # this run's name first, then a later key that decodes to "run" too (the last wins)
            t, extra = ESCAPED_FOREIGN[kind]
            text = f'{{"v":1,"seq":{seq},"type":"{t}","run":"r",{extra},"\\u0072u\\u006e":"other"}}'
            out.append(text.encode())
            continue
        elif kind == "bad":
            out.append(b'{"v":1,"seq":' + str(seq).encode() + b',"type":"nope","run":"r"}')
            continue
        elif kind == "out-of-order":
            msg = {**base, "seq": max(seq - 3, 1), "type": "info", "summary": "late"}
        else:
            msg = {**base, "v": 2, "type": "info", "summary": "from the future"}
        out.append(json.dumps(msg, ensure_ascii=i % 2 == 0).encode())
    return b"\n".join(out) + b"\n"


def make_run(root: Path, name: str, kinds: list[str]) -> tuple[str, str, str]:
    d = root / name / "run"
    d.mkdir(parents=True, mode=0o700)
    for i, kind in enumerate(kinds):
        if kind == "result-file":
            fd = os.open(d / f"fenwire-final-{i}.txt", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.write(fd, FINAL.encode())
            os.close(fd)
    events, control = d / "events.jsonl", d / "control.jsonl"
    events.write_bytes(event_lines(kinds, str(d)))
    control.touch(mode=0o600)
    return str(d), str(control), str(events)


def state(ch: Channel) -> tuple[Any, ...]:
    return (
        ch.status,
        ch.result,
        ch.exit,
        ch.error,
        ch.stopped,
        ch.final_text,
        ch.final_text_note,
        ch.events,
        ch.last_seq,
        ch.ignored_after_exit,
        [(c.seq, c.status) for c in ch.controls.values()],
    )


def same(x: Any) -> str:
    """``x`` as text, with the raw run's directory named as the dict run's (the one difference)."""
    return json.dumps(x, default=repr).replace("/b/run/", "/a/run/")


def drain_both(root: Path, kinds: list[str], max_bytes: int, step: int) -> list[ScanBatch]:
    runs = [make_run(root, name, kinds) for name in ("a", "b")]
    by_dict, by_raw = (
        Channel("r", control, events, max_bytes=max_bytes, final_text_step=step) for _, control, events in runs
    )
    for ch in (by_dict, by_raw):
        for _ in range(3):
            ch.send("steer", {"text": "t"})
    everything: list[ScanBatch] = []
    for _ in range(10_000):
        messages, errors = by_dict.poll()
        batches, raw_errors = by_raw.poll_raw()
        assert all(type(b) is ScanBatch and len(b) for b in batches)
        assert same([m for b in batches for m in decoded(b)]) == same(messages)
        assert same(raw_errors) == same(errors)
        assert same(state(by_raw)) == same(state(by_dict))
        everything.extend(batches)
        if not (messages or errors or by_dict.pending() or by_raw.pending()):
            break
    else:
        pytest.fail("the channels never caught up")
    assert same(state(by_raw)) == same(state(by_dict))
    by_dict.close()
    by_raw.close()
    assert sorted(os.listdir(runs[0][0])) == sorted(os.listdir(runs[1][0]))
    return everything


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(KINDS), max_size=40),
    st.sampled_from([1, 7, 64, 300, 4096, 1 << 20]),
    st.sampled_from([100, 1000, 1 << 20]),
)
def test_raw_polls_hand_over_what_dict_polls_do(
    tmp_path_factory: Any, kinds: list[str], max_bytes: int, step: int
) -> None:
    drain_both(tmp_path_factory.mktemp("raw"), kinds, max_bytes, step)


def test_a_plain_read_is_the_file_itself(tmp_path: Path) -> None:
    kinds = ["delta"] * 50
    batches = drain_both(tmp_path, kinds, 1 << 20, 1000)
    assert len(batches) == 1
    assert batches[0].lines == (tmp_path / "a" / "run" / "events.jsonl").read_bytes()


def test_cuts_around_foreign_lines_a_held_result_and_the_exit(tmp_path: Path) -> None:
    kinds = ["ready", "delta", "foreign", "delta", "result-file", "delta", "exit", "delta", "bad"]
    batches = drain_both(tmp_path, kinds, 1 << 20, 100)
    seqs = [list(b.seqs) for b in batches]
    assert seqs[0] == [1, 2]  # cut before the foreign line
    assert [s for part in seqs for s in part] == [1, 2, 4, 5, 6, 7]  # and nothing after the exit
    for name in ("a", "b"):  # the final text was read whole (in steps) and its file removed, not refused
        assert not (tmp_path / name / "run" / "fenwire-final-4.txt").exists()


def test_a_later_escaped_run_key_makes_the_line_another_runs(tmp_path: Path) -> None:
    """An ``info``, a ``turn-started`` and an ``exit`` whose later ``run`` key (written with
    escapes) names another run: each is that run's line, skipped with an error, never mirrored or
    delivered, never raised."""
    kinds = ["ready", "foreign-escaped", "delta", "foreign-escaped-turn", "delta", "foreign-escaped-exit", "exit"]
    batches = drain_both(tmp_path, kinds, 1 << 20, 100)
    assert [s for b in batches for s in b.seqs] == [1, 3, 5, 7]
    _, control, events = make_run(tmp_path, "c", kinds)
    ch = Channel("r", control, events)
    got, errors = ch.poll_raw()
    assert [s for b in got for s in b.seqs] == [1, 3, 5, 7]
    assert [e.error for e in errors] == ["event for foreign run other"] * 3
    assert ch.exit is not None and ch.exit["seq"] == 7
    ch.close()


def test_a_channel_hands_over_one_kind(tmp_path: Path) -> None:
    _, control, events = make_run(tmp_path, "a", ["delta"])
    ch = Channel("r", control, events)
    ch.poll_raw()
    with pytest.raises(RuntimeError, match="hands over raw batches"):
        ch.poll()
    ch2 = Channel("r", control, events)
    ch2.poll()
    with pytest.raises(RuntimeError, match="hands over dicts"):
        ch2.poll_raw()


def test_hub_raw_batches_bring_every_event_once(tmp_path: Path) -> None:
    """Mock children through ``Hub.raw_batches``: the decoded batches are each child's whole
    transcript, in order, and the runs end as through ``batches``."""
    from fenwire_fast.live.child.mock_agent import MockConfig
    from fenwire_fast.testing import check_transcript

    config = MockConfig(steps=2, deltas=200, delta_bytes=40, delay=0.0, thinking=1, tools=1, tool_result_bytes=3000)
    with Hub() as hub:
        children = [hub.spawn(f"task {i}", mock=config) for i in range(3)]
        got: dict[str, list[dict[str, Any]]] = {c.run: [] for c in children}
        for child, batch in hub.raw_batches():
            assert type(batch) is ScanBatch
            got[child.run].extend(decoded(batch))
            if child.channel.idle and not child.cancel_sent:
                child.close()
        for c in children:
            assert c.status == "done", (c.run, c.status, c.error)
            seqs = [m["seq"] for m in got[c.run]]
            assert seqs == list(range(1, len(seqs) + 1))
            assert check_transcript(config, got[c.run], controls=c.channel.controls) == []


@pytest.mark.parametrize("committed", [0, 1, 5, 17, 40])
@pytest.mark.parametrize("max_bytes", [64, 1 << 20])
def test_resumed_raw_channel_hands_over_what_follows_the_commit(tmp_path: Path, committed: int, max_bytes: int) -> None:
    kinds = ["ready", "ack", "turn-started", *["delta"] * 30, "turn-complete", "exit"]
    runs = [make_run(tmp_path, name, kinds) for name in ("a", "b")]
    channels = [Channel("r", control, events, max_bytes=max_bytes) for _, control, events in runs]
    for ch in channels:
        ch.send("prompt", {"text": "t"})
    by_dict, by_raw = (Channel("r", control, events, max_bytes=max_bytes) for _, control, events in runs)
    by_dict.resume(committed)
    by_raw.resume(committed)
    got_dict: list[dict[str, Any]] = []
    got_raw: list[dict[str, Any]] = []
    for _ in range(1000):
        messages, _errors = by_dict.poll()
        batches, _raw_errors = by_raw.poll_raw()
        got_dict += messages
        got_raw += [m for b in batches for m in decoded(b)]
        if not (messages or batches or by_dict.pending() or by_raw.pending()):
            break
    assert got_raw == got_dict
    assert [m["seq"] for m in got_raw] == list(range(committed + 1, len(kinds) + 1))
    assert same(state(by_raw)) == same(state(by_dict))
    for ch in (*channels, by_dict, by_raw):
        ch.close()
