"""The state dir of durable runs, without live children: manifests, the lock, kept final texts,
start times, a channel resumed from files, and ``fenwire runs`` (on both backends, as every test)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fenwire_fast import Sender
from fenwire_fast.cli import main
from fenwire_fast.cli.runs import inspect, print_runs
from fenwire_fast.live.parent.channel import Channel
from fenwire_fast.live.parent.durable import (
    Manifest,
    StateDir,
    StateDirBusy,
    new_manifest,
    process_start,
    read_manifests,
)
from fenwire_fast.live.parent.final_text import FinalTextFollower
from fenwire_fast.live.parent.hub import Hub


def lines(direction: str, run: str, messages: list[tuple[str, dict[str, object]]]) -> bytes:
    sender = Sender(direction, run)
    out = b""
    for type_, payload in messages:
        line, rejection = sender.next(type_, payload)
        assert rejection is None, rejection
        out += line + b"\n"
    return out


EVENTS = [
    ("ready", {}),
    ("control-ack", {"ref": 1, "status": "accepted"}),
    ("turn-started", {"turn": 1}),
    *[("assistant-text-delta", {"delta": f'part {i} «é» "q"\n'}) for i in range(6)],
    ("turn-complete", {"turn": 1, "stop-reason": "stop"}),
]


def make_run(state: StateDir, run: str, events: bytes, controls: bytes, **settings: object) -> Manifest:
    name, directory = state.new_run_directory(run)
    Path(directory, "control.jsonl").write_bytes(controls)
    Path(directory, "events.jsonl").write_bytes(events)
    Path(directory, "child.log").write_bytes(b"")
    manifest = new_manifest(run, name, directory, **settings)
    state.save(manifest)
    return manifest


# -- manifests and the state dir ----------------------------------------------------------------


def test_a_manifest_round_trips(tmp_path: Path) -> None:
    with_state = StateDir(tmp_path / "state")
    try:
        manifest = make_run(with_state, "r/1 ü", b"", b"", deadline=12.5, grace=2.0)
        assert manifest.name.startswith("run-r_1_-")
        assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
        [(name, read)] = with_state.manifests()
        assert name == manifest.name and read == manifest
        assert not [n for n in os.listdir(tmp_path / "state") if n.endswith(".tmp")]
    finally:
        with_state.close()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"{", "not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"version": 2}', "manifest version 2"),
        (b'{"version": 1, "run": "r", "name": "../x"}', "not a run directory's name"),
        (b'{"version": 1, "run": "r", "name": "run-x", "pid": true}', "pid is True"),
        (b'{"version": 1, "run": "r", "name": "run-x", "committed_seq": -1}', "negative"),
        (b'{"version": 1, "run": 5, "name": "run-x"}', "run is 5"),
        (b'{"version": 1, "run": "r", "name": "run-x", "command": [1]}', "command"),
    ],
)
def test_a_bad_manifest_is_refused_in_words(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        Manifest.from_json(data)


def test_unusable_manifests_are_listed_with_why(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    try:
        good = make_run(state, "good", b"", b"")
        (tmp_path / "run-broken.json").write_bytes(b"\xff not json")
        (tmp_path / "run-other.json").write_bytes(good.to_json())  # names another directory
        (tmp_path / "run-huge.json").write_bytes(b" " * (2 << 20))
        found = dict(state.manifests())
        assert found[good.name] == good
        assert "not a manifest: not JSON" in str(found["run-broken"])
        assert "names another run directory" in str(found["run-other"])
        assert "larger than" in str(found["run-huge"])
    finally:
        state.close()


def test_a_manifest_half_written_by_a_dead_writer_is_swept_away(tmp_path: Path) -> None:
    (tmp_path / ".run-x-1.json.999.tmp").write_bytes(b'{"run": "x", "na')
    state = StateDir(tmp_path)
    state.close()
    assert sorted(os.listdir(tmp_path)) == ["commits.log"]


def test_commits_go_to_the_log_and_readers_take_the_highest(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    try:
        a = make_run(state, "a", b"", b"")
        b = make_run(state, "b", b"", b"")
        state.record_commits([(a.name, 5, 100.0, None, None), (b.name, 2, 100.0, None, None)])
        state.record_commits([(a.name, 9, 101.0, "done", None)])
        found = {m.run: m for _, m in read_manifests(str(tmp_path)) if isinstance(m, Manifest)}
        assert (found["a"].committed_seq, found["a"].closed, found["a"].status) == (9, True, "done")
        assert (found["b"].committed_seq, found["b"].closed, found["b"].committed_at) == (2, False, 100.0)
        on_disk = {m.run: m for _, m in read_manifests(str(tmp_path), with_log=False) if isinstance(m, Manifest)}
        assert on_disk["a"].committed_seq == 0  # the manifests are not rewritten per commit
    finally:
        state.close()
    with open(tmp_path / "commits.log", "ab") as log:
        log.write(f"{b.name} 7 102.0 .\n{b.name} 8 10".encode())  # the last line cut short by a crash
        log.write(f"\n{b.name} 9 1.0 closed do\nrun-../x 9 1.0 .\nnot a record .\n".encode())
    assert read_commits_of(tmp_path)[b.name][0] == 7
    state = StateDir(tmp_path)  # opening folds the log into the manifests and empties it
    state.close()
    assert (tmp_path / "commits.log").read_bytes() == b""
    on_disk = {m.run: m for _, m in read_manifests(str(tmp_path), with_log=False) if isinstance(m, Manifest)}
    assert (on_disk["a"].committed_seq, on_disk["a"].closed, on_disk["b"].committed_seq) == (9, True, 7)


def read_commits_of(path: Path) -> dict[str, tuple[int, float, str | None, str | None]]:
    from fenwire_fast.live.parent.durable import read_commits

    fd = os.open(path, os.O_RDONLY)
    try:
        return read_commits(fd)
    finally:
        os.close(fd)


def test_a_large_log_is_folded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fenwire_fast.live.parent import durable

    monkeypatch.setattr(durable, "FOLD_AT", 200)
    state = StateDir(tmp_path)
    try:
        run = make_run(state, "a", b"", b"")
        for seq in range(1, 20):
            state.record_commits([(run.name, seq, 1.0, None, None)])
        assert (tmp_path / "commits.log").stat().st_size < 200
        [(_, on_disk)] = read_manifests(str(tmp_path), with_log=False)
        [(_, latest)] = read_manifests(str(tmp_path))
        assert isinstance(on_disk, Manifest) and isinstance(latest, Manifest)
        assert 1 < on_disk.committed_seq <= latest.committed_seq == 19
    finally:
        state.close()


def test_one_hub_at_a_time_holds_a_state_dir(tmp_path: Path) -> None:
    first = StateDir(tmp_path)
    with pytest.raises(StateDirBusy, match="in use by another hub"):
        StateDir(tmp_path)
    first.close()
    StateDir(tmp_path).close()  # free again once let go


def test_the_lock_cannot_be_removed_from_under_its_holder(tmp_path: Path) -> None:
    """Hub A holds the state dir; whatever is removed from it (a ``.lock`` file, were there one),
    hub B is refused: the lock is on the directory itself, which cannot be unlinked while A runs.
    Were B let in, both would send the same control ``seq`` to one run."""
    first = StateDir(tmp_path)
    try:
        for name in os.listdir(tmp_path):
            if name.startswith("."):
                os.unlink(tmp_path / name)
        with pytest.raises(StateDirBusy, match="in use by another hub"):
            StateDir(tmp_path)
        with pytest.raises(StateDirBusy):
            Hub(state_dir=tmp_path)
    finally:
        first.close()
    StateDir(tmp_path).close()  # free again once let go


def test_the_lock_goes_with_a_process_that_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from fenwire_fast.live.parent.durable import StateDir; StateDir(sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(StateDirBusy):
            StateDir(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    StateDir(tmp_path).close()


def test_a_final_text_is_kept_per_result(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    try:
        state.keep_final_text("run-a", 7, "whole «text»\nwith lines \udc80")
        assert state.final_text("run-a", 7) == "whole «text»\nwith lines \udc80"
        assert state.final_text("run-a", 8) is None  # another result
        assert state.final_text("run-b", 7) is None
    finally:
        state.close()


# -- start times ---------------------------------------------------------------------------------


def test_start_times_tell_processes_apart() -> None:
    assert isinstance(process_start(os.getpid()), int)
    child = subprocess.Popen(["sleep", "30"])
    try:
        started = process_start(child.pid)
        assert started is not None and started >= process_start(os.getpid())  # type: ignore[operator]
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # a zombie now: ended
        assert process_start(child.pid) is None
    finally:
        child.kill()
        child.wait()
    assert process_start(child.pid) is None or process_start(child.pid) != started


# -- a channel resumed from its files ----------------------------------------------------------


class Store:
    def __init__(self) -> None:
        self.kept: dict[int, str] = {}

    def load(self, seq: int) -> str | None:
        return self.kept.get(seq)

    def keep(self, seq: int, text: str) -> None:
        self.kept[seq] = text


def test_resume_continues_seq_and_hands_over_only_what_follows_the_commit(tmp_path: Path) -> None:
    controls = lines("control", "r", [("prompt", {"text": "go"}), ("steer", {"text": "left"})])
    (tmp_path / "control.jsonl").write_bytes(controls + b'{"v":1,"seq":3,"type":"fol')  # cut short
    (tmp_path / "events.jsonl").write_bytes(lines("event", "r", EVENTS))
    channel = Channel("r", tmp_path / "control.jsonl", tmp_path / "events.jsonl")
    try:
        channel.resume(committed_seq=5)
        # mirrored before anything is polled: the status after the read that reached the commit
        # (here the whole file, as for any read)
        assert channel.status == "ready"
        assert sorted(channel.unacked) == [2] and channel.controls[1].status == "accepted"
        messages, errors = channel.poll()
        assert [m["seq"] for m in messages] == list(range(6, len(EVENTS) + 1)) and not errors
        assert channel.events == len(EVENTS) - 5
        assert channel.send("follow-up", {"text": "more"}) == 3
    finally:
        channel.close()
    written = (tmp_path / "control.jsonl").read_bytes()
    assert written.startswith(controls + b'{"v":1,"seq":3,"type":"fol\n{"v":1,"seq":3,')  # ended, then whole


#: a resumed channel in a subprocess: how much its peak RSS grew while it read the control file
#: back, the ``seq`` its next control gets, and how many controls it keeps unacknowledged
RESUME = """
import resource, sys
from fenwire_fast.live.parent.channel import Channel

channel = Channel("r", sys.argv[1], sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
channel.resume()
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(grown, channel.send("steer", {"text": "next"}), len(channel.unacked), max(channel.unacked))
"""


def test_a_large_control_file_is_read_back_in_bounded_memory(tmp_path: Path) -> None:
    """A child can write its own control file: 48 MB of valid controls (800 lines of 60 KB, made
    in a blink) is read back in chunks, keeping only the newest controls, so the peak RSS of the
    resuming process grows by far less than the file (it grew by about twice the file when the file
    was read whole, with a quadratic ``bytes +=``); the next control still follows the last
    ``seq`` there, and a last line cut short is ended."""
    template = Sender("control", "r").next("prompt", {"text": "x" * 60_000})[0]
    assert template is not None
    count = 800
    control = tmp_path / "control.jsonl"
    with open(control, "wb") as handle:
        for seq in range(1, count + 1):
            handle.write(template.replace(b'"seq":1,', b'"seq":%d,' % seq, 1) + b"\n")
        handle.write(b'{"v":1,"seq":')  # cut short by a writer that died
    size = control.stat().st_size
    assert size > 48_000_000
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"")
    proc = subprocess.run(
        [sys.executable, "-c", RESUME, str(control), str(events)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    grown, next_seq, unacked, newest = map(int, proc.stdout.split())
    assert grown < size // 4, f"peak RSS grew by {grown} bytes reading a {size}-byte control file"
    assert next_seq == count + 1 and newest == count + 1

    from fenwire_fast.live.parent.channel import RESUME_CONTROLS

    assert unacked <= RESUME_CONTROLS + 1
    assert control.read_bytes().endswith(b'{"v":1,"seq":\n{"v":1,"seq":801,"type":"steer","run":"r","text":"next"}\n')


def test_resume_without_repair_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "control.jsonl").write_bytes(b'{"v":1,"seq":1,"ty')
    (tmp_path / "events.jsonl").write_bytes(b"")
    channel = Channel("r", tmp_path / "control.jsonl", tmp_path / "events.jsonl")
    channel.resume(repair=False)
    channel.close()
    assert (tmp_path / "control.jsonl").read_bytes() == b'{"v":1,"seq":1,"ty'


def test_a_kept_final_text_is_used_and_a_read_one_is_kept_before_its_file_goes(tmp_path: Path) -> None:
    path = tmp_path / "final.txt"
    path.write_text("the whole answer, longer than its line")
    os.chmod(path, 0o600)
    store = Store()
    follower = FinalTextFollower(str(tmp_path), [], 1 << 20, 1 << 20, store)
    follower.follow({"seq": 9, "final-text": "the whole", "final-text-path": str(path)})
    assert follower.text == "the whole answer, longer than its line" and not path.exists()
    assert store.kept == {9: "the whole answer, longer than its line"}
    again = FinalTextFollower(str(tmp_path), [], 1 << 20, 1 << 20, store)
    again.follow({"seq": 9, "final-text": "the whole", "final-text-path": str(path)})  # the file is gone
    assert again.text == "the whole answer, longer than its line" and again.note is None


def test_a_file_left_beside_a_kept_copy_is_removed(tmp_path: Path) -> None:
    """A parent killed between keeping the copy and removing the file: the next one removes it."""
    path = tmp_path / "final.txt"
    path.write_text("the whole answer")
    os.chmod(path, 0o600)
    store = Store()
    store.kept[9] = "the whole answer"
    follower = FinalTextFollower(str(tmp_path), [str(tmp_path / "events.jsonl")], 1 << 20, 1 << 20, store)
    follower.follow({"seq": 9, "final-text": "the whole", "final-text-path": str(path)})
    assert follower.text == "the whole answer" and not path.exists()
    protected = tmp_path / "events.jsonl"
    protected.write_text("")
    guarded = FinalTextFollower(str(tmp_path), [str(protected)], 1 << 20, 1 << 20, store)
    guarded.follow({"seq": 9, "final-text": "the whole", "final-text-path": str(protected)})
    assert protected.exists()  # a channel's own file is never removed


def test_a_final_text_that_cannot_be_kept_is_not_removed(tmp_path: Path) -> None:
    class Full(Store):
        def keep(self, seq: int, text: str) -> None:
            raise OSError(28, "No space left on device")

    path = tmp_path / "final.txt"
    path.write_text("the whole answer")
    os.chmod(path, 0o600)
    follower = FinalTextFollower(str(tmp_path), [], 1 << 20, 1 << 20, Full())
    follower.follow({"seq": 9, "final-text": "the whole", "final-text-path": str(path)})
    assert follower.text == "the whole" and path.exists()
    assert "cannot keep a copy" in str(follower.note) and "No space left" in str(follower.note)


def test_a_look_without_following_never_opens_the_file(tmp_path: Path) -> None:
    path = tmp_path / "final.txt"
    path.write_text("")
    os.chmod(path, 0o600)
    follower = FinalTextFollower(str(tmp_path), [], 1 << 20, 1 << 20, follow=False)
    follower.follow({"seq": 9, "final-text": "", "final-text-path": str(path)})
    assert path.exists() and "not read" in str(follower.note)


# -- fenwire runs --------------------------------------------------------------------------------


def test_fenwire_runs_lists_what_a_dead_parent_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = StateDir(tmp_path)
    exit_line = lines("event", "done-run", [*EVENTS, ("exit", {"status": "done"})])
    controls = lines("control", "r", [("prompt", {"text": "go"}), ("cancel", {})])
    try:
        running = make_run(state, "r", lines("event", "r", EVENTS), controls)
        running.pid, running.start, running.committed_seq = 2**22 + 7, 1, 4  # no such process
        state.save(running)
        done = make_run(state, "done-run", exit_line, lines("control", "done-run", [("prompt", {"text": "go"})]))
        (tmp_path / "run-junk.json").write_bytes(b"{}")
        before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != ".lock"}
    finally:
        state.close()
    reports = {r.name: r for r in inspect(tmp_path)}
    assert (reports[running.name].status, reports[running.name].alive) == ("cancelled", False)
    assert reports[running.name].events == len(EVENTS) and reports[running.name].committed_seq == 4
    assert reports[done.name].status == "done" and reports[done.name].error is None
    assert "not a manifest" in str(reports["run-junk"].problem)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before  # nothing written

    assert main(["runs", str(tmp_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["RUN", "PID", "PROCESS", "STATUS"]
    assert any(row.split()[:4] == ["r", str(2**22 + 7), "ended", "cancelled"] for row in table)
    assert any("its process ended without an exit line" in row for row in table)
    assert main(["runs", str(tmp_path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {row["name"] for row in rows} == {running.name, done.name, "run-junk"}
    assert main(["runs", str(tmp_path / "missing")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_a_problem_is_printed_on_one_line() -> None:
    from fenwire_fast.cli.runs import RunReport

    out = io.StringIO()
    print_runs([RunReport(name="run-x", run="x", error="line one\nline two")], out)
    assert out.getvalue().splitlines()[-1] == "  run-x: line one line two"
    assert read_manifests  # the read-only reader is public for tools


def test_prune_removes_closed_runs_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = StateDir(tmp_path)
    try:
        closed = make_run(state, "closed", b"", b"")
        kept = make_run(state, "open", b"", b"")
        state.keep_final_text(closed.name, 3, "text")
        state.record_commits([(closed.name, 0, 1.0, "done", None)])
        assert main(["runs", str(tmp_path), "--prune"]) == 1  # the lock is held
        assert "in use by another hub" in capsys.readouterr().err
    finally:
        state.close()
    assert main(["runs", str(tmp_path), "--prune", "--json"]) == 0
    out = capsys.readouterr()
    assert "pruned 1 closed run(s)" in out.err
    assert [json.loads(line)["run"] for line in out.out.splitlines()] == ["open"]
    assert sorted(os.listdir(tmp_path)) == sorted(["commits.log", kept.name, kept.name + ".json"])


def test_fenwire_runs_escapes_what_a_child_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run id and a child's exit error holding escape sequences are printed escaped, as
    ``fenwire check`` and ``fenwire tail`` print them: nothing reaches the terminal raw."""
    run = "r\x1b[2J\x1b]0;owned\x07"
    error = "boom\x1b[31m red\x9b1m\u202e"
    state = StateDir(tmp_path)
    try:
        events = lines("event", run, [*EVENTS, ("exit", {"status": "failed", "error": error})])
        make_run(state, run, events, lines("control", run, [("prompt", {"text": "go"})]))
    finally:
        state.close()
    assert main(["runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert "r\\x1b[2J\\x1b]0;owned\\x07" in out
    assert "boom\\x1b[31m red\\x9b1m\\u202e" in out


# -- the commit log: numbers out of range, a line cut short ------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "9" * 5000,  # more digits than int() takes
        str(2**64),  # past any seq on the wire
        "٣",  # a digit, but not an ASCII one
    ],
)
def test_a_record_out_of_range_is_ignored_and_the_state_dir_still_opens(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from fenwire_fast.live.parent.hub import Hub

    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", lines("event", "r", EVENTS), lines("control", "r", [("prompt", {"text": "go"})]))
    finally:
        state.close()
    log = f"{run.name} 3 1.0 .\n{run.name} {bad} 2.0 .\n{run.name} 4 1e999 .\n{run.name} 4 nan .\n"
    (tmp_path / "commits.log").write_bytes(log.encode())
    [(_, read)] = read_manifests(str(tmp_path))
    assert isinstance(read, Manifest) and read.committed_seq == 3  # the bad records are ignored
    [report] = inspect(tmp_path)
    assert report.committed_seq == 3 and report.problem is None
    assert main(["runs", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["committed_seq"] == 3
    hub = Hub.attach(tmp_path)  # opens (and folds) the state dir
    try:
        [child] = hub.children
        assert child.durable is not None and child.durable.manifest.committed_seq == 3
    finally:
        hub.detach()
    Hub(state_dir=tmp_path).detach()


def test_a_manifest_with_a_position_out_of_range_is_refused_in_words(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", b"", b"")
    finally:
        state.close()
    for field, value in (("committed_seq", 2**64), ("pid", 2**70)):
        raw = json.loads((tmp_path / f"{run.name}.json").read_bytes())
        raw[field] = value
        (tmp_path / f"{run.name}.json").write_text(json.dumps(raw))
        [(_, read)] = read_manifests(str(tmp_path))
        assert isinstance(read, str) and "out of range" in read


@pytest.mark.parametrize(
    ("mark", "why"),
    [
        (5, "mark is int, not a string"),
        ("here", "mark is 'here': not OFFSET.SEQ.TAIL.STATUS.EVENTS.ACKS"),
        (f"10.{2**53}.0.ready.1.", "mark's seq is 9007199254740992: not between 0 and 9007199254740991"),
        (f"10.1.{2**32}.ready.1.", "mark's tail is 4294967296: not between 0 and 4294967295"),
        (f"{2**63}.1.0.ready.1.", "mark's offset is 9223372036854775808: not between"),
        ("10.1.0.ready.1.AAAA", "mark's acknowledged controls are not a list"),
    ],
)
def test_a_manifest_whose_mark_is_not_one_is_refused_in_words(tmp_path: Path, mark: object, why: str) -> None:
    """A manifest's ``mark`` goes through the same checks as its other fields (its numbers bounded
    as ``committed_seq`` and the rest are), and the commit log ignores a record whose mark would
    fail them, so a fold never writes a manifest that a reader then refuses."""
    from fenwire_fast.live.parent.channel import ResumePoint
    from fenwire_fast.live.parent.durable import encode_mark

    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", b"", b"")
    finally:
        state.close()
    raw = json.loads((tmp_path / f"{run.name}.json").read_bytes())
    good = encode_mark(ResumePoint(0, 0, 0, "starting", 0))
    (tmp_path / f"{run.name}.json").write_text(json.dumps({**raw, "mark": good}))
    [(_, read)] = read_manifests(str(tmp_path))
    assert isinstance(read, Manifest) and read.mark == good
    (tmp_path / f"{run.name}.json").write_text(json.dumps({**raw, "mark": mark}))
    [(_, read)] = read_manifests(str(tmp_path))
    assert isinstance(read, str) and why in read, read
    [report] = inspect(tmp_path)
    assert report.problem is not None and why in report.problem
    (tmp_path / f"{run.name}.json").write_text(json.dumps(raw))
    if isinstance(mark, str):  # the same mark in a record of the log: the record is ignored
        (tmp_path / "commits.log").write_text(f"{run.name} 3 1.0 .\n{run.name} 4 2.0 @{mark} .\n")
        Hub(state_dir=tmp_path).detach()  # folds the log into the manifest
        [(_, read)] = read_manifests(str(tmp_path))
        assert isinstance(read, Manifest) and (read.committed_seq, read.mark) == (3, None)


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
def test_fenwire_runs_says_why_it_cannot_read_the_commit_log(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A commit log that is not a regular file (a FIFO, a directory, a symlink) is never waited on
    nor followed, and ``fenwire runs`` says so, in the table and in ``--json``, instead of leaving
    it out in silence: the positions it shows are then the manifests' alone. The runs are listed."""
    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", lines("event", "r", EVENTS), lines("control", "r", [("prompt", {"text": "go"})]))
    finally:
        state.close()
    log = tmp_path / "commits.log"
    log.unlink()
    if kind == "fifo":
        os.mkfifo(log, 0o600)
    elif kind == "directory":
        log.mkdir()
    else:
        (tmp_path / "elsewhere").write_text(f"{run.name} 4 1.0 .\n")
        log.symlink_to(tmp_path / "elsewhere")
    what = {"fifo": "a FIFO", "directory": "a directory", "symlink": "a symbolic link"}[kind]
    why = f"cannot be read: commits.log is {what}, not a regular file; committed positions are the manifests' alone"
    reports = {r.name: r for r in inspect(tmp_path)}
    assert reports["commits.log"].problem == why
    assert reports[run.name].problem is None and reports[run.name].committed_seq == 0
    assert main(["runs", str(tmp_path)]) == 0
    assert f"  commits.log: {why}" in capsys.readouterr().out.splitlines()
    assert main(["runs", str(tmp_path), "--json"]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["name"], r["problem"]) for r in found] == [("commits.log", why), (run.name, None)]


def test_a_line_cut_short_by_a_short_write_does_not_swallow_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fenwire_fast.live.parent import durable

    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", b"", b"")
        real_write = os.write

        def short_write(fd: int, data: bytes) -> int:  # the disk fills up mid-record
            return real_write(fd, bytes(data)[:7])

        monkeypatch.setattr(durable.os, "write", short_write)
        with pytest.raises(OSError, match="short write"):
            state.record_commits([(run.name, 5, 1.0, None, None)])
        monkeypatch.setattr(durable.os, "write", real_write)
        assert not (tmp_path / "commits.log").read_bytes().endswith(b"\n")  # a torn record
        state.record_commits([(run.name, 6, 2.0, None, None)])
    finally:
        state.close()
    [(_, read)] = read_manifests(str(tmp_path))
    assert isinstance(read, Manifest) and read.committed_seq == 6


def test_a_torn_log_left_by_a_crash_is_ended_before_the_next_commit(tmp_path: Path) -> None:
    from fenwire_fast.live.parent.hub import Hub

    state = StateDir(tmp_path)
    try:
        run = make_run(state, "r", lines("event", "r", EVENTS), lines("control", "r", [("prompt", {"text": "go"})]))
        state.record_commits([(run.name, 2, 1.0, None, None)])
    finally:
        state.close()
    with open(tmp_path / "commits.log", "ab") as log:
        log.write(f"{run.name} 4 1.".encode())  # a machine's crash cut the last record short
    hub = Hub.attach(tmp_path)
    try:
        [child] = hub.children
        assert child.durable is not None and child.durable.manifest.committed_seq == 2
        got: list[int] = []
        while len(got) < len(EVENTS) - 2:
            for _child, messages in hub.poll_batches():
                got += [m["seq"] for m in messages]
        assert got == list(range(3, len(EVENTS) + 1))
        assert hub.commit() == 1
    finally:
        hub.detach()
    hub = Hub.attach(tmp_path)  # the run was committed to its end and closed: nothing to take up
    try:
        assert not hub.children and not hub.attach_errors
    finally:
        hub.detach()
    [(_, read)] = read_manifests(str(tmp_path))
    assert isinstance(read, Manifest) and (read.committed_seq, read.closed) == (len(EVENTS), True)
