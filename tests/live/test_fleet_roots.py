"""The fleet actors' root directories: held by a lock while their actor lives, swept once it has
died. Runs without Ray (these are plain files and processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fenwire_fast.live.fleet import ROOT_PREFIX, remove_if_orphaned, sweep_orphaned_roots

HOLDER = """
import sys, tempfile
tempfile.tempdir = sys.argv[1]
from fenwire_fast.live.fleet.node import _locked_root
root, _ = _locked_root()
print(root, flush=True)
sys.stdin.read()  # hold the lock until the test closes stdin or kills us
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A process that made a root under ``tmp_path`` and holds its lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    root = proc.stdout.readline().strip()
    yield proc, Path(root)
    proc.kill()
    proc.wait()


def test_a_held_root_is_kept_and_a_dead_actors_is_swept(
    holder: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    proc, root = holder
    assert root.parent == tmp_path and root.name.startswith(ROOT_PREFIX)
    (root / "fenwire-child").mkdir()
    (root / "fenwire-child" / "events.jsonl").write_bytes(b"{}\n")
    assert sweep_orphaned_roots(str(tmp_path)) == [] and root.is_dir()
    assert remove_if_orphaned(str(root)) is False
    proc.kill()  # no close: as when its node is lost
    proc.wait()
    assert sweep_orphaned_roots(str(tmp_path)) == [str(root)]
    assert not root.exists()


def test_what_is_not_a_root_with_a_lock_is_left_alone(tmp_path: Path) -> None:
    unlocked = tmp_path / f"{ROOT_PREFIX}new"  # made, its lock not in place yet
    unlocked.mkdir()
    other = tmp_path / "fenwire-elsewhere"
    other.mkdir()
    (other / ".lock").touch()
    linked = tmp_path / f"{ROOT_PREFIX}linked"
    linked.mkdir()
    target = tmp_path / "target"
    target.write_text("kept")
    os.symlink(target, linked / ".lock")  # a lock that is a link is not opened
    assert sweep_orphaned_roots(str(tmp_path)) == []
    assert unlocked.is_dir() and other.is_dir() and linked.is_dir() and target.read_text() == "kept"
    assert remove_if_orphaned(str(tmp_path / "absent")) is False


#: a parent with a non-durable hub and one child (``sleep``) in ``argv[1]`` as its temporary
#: directory; it prints the child's private directory and waits to be killed
PARENT = """
import sys, tempfile
tempfile.tempdir = sys.argv[1]
from fenwire_fast.live.parent.hub import Hub
hub = Hub()
child = hub.spawn(None, command=["sleep", "60"])
print(child.directory, flush=True)
sys.stdin.read()
"""


def _parent(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    directory = Path(proc.stdout.readline().strip())
    assert directory.is_dir() and (directory / "events.jsonl").exists(), directory
    return proc, directory


def test_a_killed_parents_private_directories_are_removed_by_the_next_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent with a non-durable hub is SIGKILLed: it removes nothing, and its child's private
    directory is left in the temporary directory. The next hub started on the host removes it
    (the hub keeps its children's directories under a root it holds locked while it lives), and
    never the directories of a parent still alive."""
    import tempfile

    from fenwire_fast.live.parent.hub import Hub

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    killed, left = _parent(tmp_path)
    living, kept = _parent(tmp_path)
    try:
        killed.kill()  # no close: nothing is removed on the way out
        killed.wait()
        assert left.is_dir()
        Hub().close()  # the next hub on the host
        assert not left.exists() and kept.is_dir()
        assert [p for p in tmp_path.iterdir() if left.is_relative_to(p)] == []  # its root went too
    finally:
        for proc in (killed, living):
            proc.kill()
            proc.wait()
    with Hub() as hub:  # a hub's own root goes when it closes
        directory = Path(hub.spawn(None, command=["sleep", "60"]).directory)
        assert directory.is_dir()
    assert not directory.exists() and not directory.parent.exists()
    Hub().close()
    assert list(tmp_path.iterdir()) == []
