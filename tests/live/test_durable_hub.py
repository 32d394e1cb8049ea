"""A durable hub's own rules, with real children: numbering after attach, detach and close, what a
commit writes, one hub per state dir. (Kill-and-attach scenarios: ``test_durable_attach.py``.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fenwire_fast.live.parent.adopt import alive
from fenwire_fast.live.parent.durable import StateDirBusy, read_manifests
from fenwire_fast.live.parent.hub import Hub
from live_harness import HANG_GUARD, child_env

SLEEP = ["sleep", "60"]


def manifests(state: Path) -> dict[str, object]:
    return {m.run: m for _, m in read_manifests(str(state)) if not isinstance(m, str)}


def test_detach_leaves_the_children_running_and_attach_takes_them_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    hub = Hub(state_dir=state)
    try:
        pids = [hub.spawn(None, command=SLEEP).pid for _ in range(3)]
    finally:
        hub.detach()
    assert all(alive(m) for m in manifests(state).values())  # type: ignore[arg-type]
    again = Hub.attach(state)
    try:
        assert again.attach_errors == []
        assert sorted((c.run, c.pid, c.adopted) for c in again.children) == [
            (f"child-{i + 1}", pid, True) for i, pid in enumerate(pids)
        ]
        assert all(c.returncode is None for c in again.children)  # adopted: never an exit code
        assert again.spawn(None, command=SLEEP).run == "child-4"  # numbered past the runs found
    finally:
        again.close()
    for child in again.children:
        assert child.finished or child.group.empty()
    # close killed them; their runs stay in the state dir, not closed (attach would read them out)
    found = manifests(state)
    assert sorted(found) == ["child-1", "child-2", "child-3", "child-4"]
    assert not any(m.closed or alive(m) for m in found.values())  # type: ignore[attr-defined]


def test_one_hub_per_state_dir(tmp_path: Path) -> None:
    with Hub(state_dir=tmp_path) as hub:
        with pytest.raises(StateDirBusy):
            Hub(state_dir=tmp_path)
        with pytest.raises(StateDirBusy):
            Hub.attach(tmp_path)
        assert hub.commit() == 0  # nothing handed over yet
    Hub(state_dir=tmp_path).close()  # free once the first is closed


def test_commit_writes_what_moved_and_closes_finished_runs(tmp_path: Path) -> None:
    with Hub(state_dir=tmp_path / "state") as hub:
        done = hub.spawn("hi", env=child_env())
        idle = hub.spawn(None, command=SLEEP)
        for child, _messages in hub.batches():
            if child is done and done.channel.idle:
                break
        assert hub.commit() == 1  # the child that handed something over
        assert hub.commit() == 0  # nothing moved since
        assert manifests(tmp_path / "state")["child-1"].committed_seq == done.delivered_seq > 0  # type: ignore[attr-defined]
        done.close()
        while not done.finished:
            hub.poll_batches()
            hub.sleep(HANG_GUARD)
        assert hub.commit() == 1
        record = manifests(tmp_path / "state")["child-1"]
        assert record.closed and record.status == "done"  # type: ignore[attr-defined]
        assert record.committed_seq == done.channel.last_seq  # type: ignore[attr-defined]
        assert not manifests(tmp_path / "state")["child-2"].closed  # type: ignore[attr-defined]
        idle.kill()
    assert os.listdir(tmp_path / "state")  # the state dir stays


def test_a_new_hub_over_a_state_dir_with_runs_numbers_past_them(tmp_path: Path) -> None:
    """``Hub(state_dir=S)`` (not ``attach``) over a state dir that holds runs, closed or not, names
    its new runs past every ``child-N`` kept there: no two runs of one state dir share an id."""
    state = tmp_path / "state"
    with Hub(state_dir=state) as hub:
        for _ in range(2):
            hub.spawn(None, command=SLEEP)
        hub.spawn(None, command=SLEEP, run="child-" + "9" * 5000)  # not a number to count
    with Hub(state_dir=state) as again:
        assert again.spawn(None, command=SLEEP).run == "child-3"
    runs = [m.run for m in manifests(state).values()]  # type: ignore[attr-defined]
    assert len(runs) == len(set(runs)) == 4


def test_attach_to_no_state_dir_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no state dir"):
        Hub.attach(tmp_path / "typo")
    assert not (tmp_path / "typo").exists()


def test_commit_needs_a_state_dir() -> None:
    with Hub() as hub, pytest.raises(RuntimeError, match="state_dir"):
        hub.commit()


def test_a_run_whose_process_was_never_found_signals_nobody(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest without a pid, and no process that names its event file: the run is read to its
    end and fails; its group id is 0, which must never reach ``killpg`` (the caller's own group)."""
    from fenwire_fast.live.parent.durable import StateDir, new_manifest

    state = StateDir(tmp_path)
    name, directory = state.new_run_directory("lost")
    for file in ("control.jsonl", "events.jsonl", "child.log"):
        Path(directory, file).write_bytes(b"")
    state.save(new_manifest("lost", name, directory))
    state.close()
    signalled: list[int] = []
    real_killpg = os.killpg
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: (signalled.append(pgid), real_killpg(pgid, sig)))
    hub = Hub.attach(tmp_path)
    try:
        [child] = hub.children
        assert (child.pid, child.pgid, child.adopted) == (0, 0, True)
        assert hub.wait(HANG_GUARD) == {"lost": "failed"}
        assert "no process" in str(child.error) or "without an exit line" in str(child.error)
        child.kill()
        assert child.group.empty()
    finally:
        hub.close()
    assert 0 not in signalled


def test_commit_at_commits_only_up_to_the_given_seq(tmp_path: Path) -> None:
    """``commit_at``: a hub whose consumer hands events on commits what that consumer handled,
    not what the hub handed over; a commit never goes back; the other children stay as they were."""
    state = tmp_path / "state"
    hub = Hub(state_dir=state)
    try:
        talker = hub.spawn("hi", env=child_env())
        other = hub.spawn("hi", env=child_env())
        idle = hub.spawn("hi", env=child_env())
        for _child, _messages in hub.batches():
            if talker.channel.idle and other.channel.idle and idle.channel.idle:
                break
        handed = talker.delivered_seq
        assert handed >= 4
        assert hub.commit_at({talker: 2}) == 1
        assert talker.delivered_seq == handed  # the hub's own position is untouched
        assert hub.commit_at({talker: 1}) == 0  # never back
        assert hub.commit_at({other: 10**9}) == 1  # past what was handed over: what was
        record = manifests(state)
        assert record["child-1"].committed_seq == 2  # type: ignore[attr-defined]
        assert record["child-2"].committed_seq == other.delivered_seq  # type: ignore[attr-defined]
        assert record["child-3"].committed_seq == 0  # type: ignore[attr-defined]
    finally:
        hub.detach()
    again = Hub.attach(state)
    try:
        seqs: dict[str, list[int]] = {}
        for child, messages in again.poll_batches():
            seqs.setdefault(child.run, []).extend(m["seq"] for m in messages)
        assert seqs["child-1"][0] == 3  # after the commit at 2
        assert "child-2" not in seqs  # committed to the end of what it wrote
        assert seqs["child-3"][0] == 1  # never committed: all of it again
    finally:
        again.close()
