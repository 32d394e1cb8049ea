"""A detached child that ended before ``Hub.attach`` took its run up is reaped, not left a zombie.

``Hub.detach`` hands the children this process started to the reaper thread; ``Hub.attach`` in the
same process takes them back from it, for their new handles to reap. A child that had ended (a
zombie the reaper had not reaped yet) is found ended by the new handle, which holds no pidfd and
reaps nothing: it must go back to the reaper. Before, it was let go and stayed a zombie for as long
as the parent lived (seen in about one run in three of a hub detached and attached every few events).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from fenwire_fast.live.parent.hub import Hub
from fenwire_fast.live.proc import reaper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="durable runs need /proc and pidfds")


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except FileNotFoundError:
        return None


def _wait_for(check: object, what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, what
        time.sleep(0.01)


def test_a_child_that_ended_while_detached_is_reaped_on_attach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    hub = Hub(state_dir=state)
    child = hub.spawn("go", run="r", mock={"steps": 1, "deltas": 3})
    child.close()  # the child ends on its own once its turn is done
    pid = child.pid
    monkeypatch.setattr(reaper, "_reaped", lambda waiting: False)  # the reaper thread reaps nothing
    hub.detach()
    try:
        _wait_for(lambda: _state(pid) == "Z", "the detached child did not end")
        monkeypatch.undo()
        with Hub.attach(state) as again:
            assert [c.run for c in again.children] == ["r"]
            assert _state(pid) is None, "the ended child was left a zombie"
            assert again.wait(timeout=30) == {"r": "done"}
    finally:
        try:
            os.waitpid(pid, os.WNOHANG)  # whatever the outcome, no zombie outlives the test
        except ChildProcessError:
            pass
