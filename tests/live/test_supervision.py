"""Every supervision path of :class:`LiveChild`, each with a tiny scripted child built for it.

The children are ``python -c`` scripts that speak just enough of the protocol (a ``ready`` line, an
``exit`` line, a bad line) and then misbehave on purpose: ignore SIGTERM, ignore their deadline,
ignore ``cancel``, die without ``exit``. Each records what happened to it (``started``, ``TERM``)
in a file, so a test can tell "terminated, then killed" from "killed at once".

The backstop only acts inside :meth:`LiveChild.poll`, so a test that needs the child's SIGTERM
handler in place waits for the child's ``started`` record *without polling* first. Tests wait on
conditions; the timeouts are only guards against hangs, and every child ends by itself after a
minute at the latest.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from fenwire_fast.live.parent import spawn as spawn_module
from fenwire_fast.live.parent.spawn import LiveChild, spawn

GUARD = 30.0  # seconds; only against hangs

PRELUDE = r"""
import json, os, signal, sys, time
RECORD = sys.argv[1]
RUN = os.environ["FEN_WIRE_RUN_ID"]
_seq = 0

def note(text):
    with open(RECORD, "a") as f:
        f.write(text + "\n")

def line(obj):
    with open(os.environ["FEN_WIRE_EVENT_PATH"], "ab") as f:
        f.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())

def emit(type_, **fields):
    global _seq
    _seq += 1
    line({"v": 1, "seq": _seq, "type": type_, "run": RUN, **fields})

def controls():
    with open(os.environ["FEN_WIRE_CONTROL_PATH"], "rb") as f:
        return [json.loads(x) for x in f.read().splitlines() if x.strip()]

def linger(until=lambda: False):
    end = time.monotonic() + 60  # the guard: never outlive a broken test
    while time.monotonic() < end and not until():
        time.sleep(0.02)

if "ignore-term" in sys.argv[2:]:
    signal.signal(signal.SIGTERM, lambda *_: note("TERM"))
"""


def _child(body: str, record: Path, *flags: str, **kwargs: object) -> LiveChild:
    script = PRELUDE + body
    return spawn(None, command=[sys.executable, "-c", script, str(record), *flags], **kwargs)  # type: ignore[arg-type]


def _records(record: Path) -> list[str]:
    try:
        return record.read_text().splitlines()
    except FileNotFoundError:
        return []


def _until(condition: Callable[[], bool], what: str, guard: float = GUARD) -> None:
    """Wait (without polling any child) until ``condition`` holds."""
    end = time.monotonic() + guard
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def _started(record: Path) -> None:
    _until(lambda: "started" in _records(record), "the child's started record")


def _control_types(child: LiveChild) -> list[str]:
    with open(child.control_path, "rb") as f:
        return [json.loads(x)["type"] for x in f.read().splitlines() if x.strip()]


# -- SIGTERM ignored: escalation to SIGKILL after term_grace ------------------------------------

LINGER_AFTER_EXIT = """
note("started")
emit("ready")
emit("exit", status="done")
linger()
"""

SILENT = """
emit("ready")
note("started")
linger()
"""


def test_a_child_ignoring_sigterm_after_exit_is_killed(tmp_path: Path) -> None:
    """``exit`` arms the backstop; SIGTERM is tried first, SIGKILL follows ``term_grace`` later."""
    record = tmp_path / "record"
    with _child(LINGER_AFTER_EXIT, record, "ignore-term", grace=0.1, term_grace=0.2) as child:
        _started(record)
        assert child.wait(timeout=GUARD) == "done"
        assert child.returncode == -signal.SIGKILL, child.log_text()
        assert child.killed
        assert _records(record) == ["started", "TERM"]  # terminated first, then killed
        assert child.error is None  # the run itself ended well: it wrote exit


def test_a_child_ignoring_sigterm_and_cancel_is_killed(tmp_path: Path) -> None:
    """``cancel`` arms the backstop; a child that neither honours it nor SIGTERM is killed."""
    record = tmp_path / "record"
    with _child(SILENT, record, "ignore-term", grace=0.1, term_grace=0.2) as child:
        _started(record)
        child.cancel()
        assert child.wait(timeout=GUARD) == "cancelled"
        assert child.returncode == -signal.SIGKILL
        assert _records(record) == ["started", "TERM"]
        assert child.error is not None and "killed 0.1 s after cancel" in child.error


def test_a_child_lingering_after_exit_gets_sigterm_only(tmp_path: Path) -> None:
    """The other branch: a child that honours SIGTERM is not SIGKILLed."""
    record = tmp_path / "record"
    with _child(LINGER_AFTER_EXIT, record, grace=0.1, term_grace=GUARD) as child:
        _started(record)
        assert child.wait(timeout=GUARD) == "done"
        assert child.returncode == -signal.SIGTERM


# -- a deadline the child does not honour --------------------------------------------------------


@pytest.mark.parametrize("ignore_term", [False, True], ids=["honours-sigterm", "ignores-sigterm"])
def test_a_child_hanging_past_its_deadline_is_stopped(tmp_path: Path, ignore_term: bool) -> None:
    """The deadline arms the backstop: terminated ``grace`` after it, killed if that is ignored."""
    record = tmp_path / "record"
    flags = ("ignore-term",) if ignore_term else ()
    with _child(SILENT, record, *flags, timeout=0.3, grace=0.1, term_grace=0.2) as child:
        _started(record)
        assert child.wait(timeout=GUARD) == "timed-out"
        want = -signal.SIGKILL if ignore_term else -signal.SIGTERM
        assert child.returncode == want, child.log_text()
        assert _records(record) == (["started", "TERM"] if ignore_term else ["started"])
        assert child.error is not None and "after deadline" in child.error, child.error
        assert _control_types(child) == []  # a deadline sends nothing; the child should have known


# -- channel errors cancel by themselves ---------------------------------------------------------

BAD_LINE = """
note("started")
emit("ready")
kind = sys.argv[3]
if kind == "version":
    line({"v": 2, "seq": 2, "type": "info", "run": RUN})
elif kind == "foreign":
    line({"v": 1, "seq": 2, "type": "info", "run": "someone-else"})
if "honour-cancel" in sys.argv[2:]:
    linger(lambda: any(c["type"] == "cancel" for c in controls()))
    note("cancel seen")
    _seq = 2
    emit("exit", status="cancelled")
    sys.exit(1)
linger()
"""


@pytest.mark.parametrize("kind", ["version", "foreign"])
def test_a_channel_error_sends_cancel_then_the_backstop_follows(tmp_path: Path, kind: str) -> None:
    record = tmp_path / "record"
    with _child(BAD_LINE, record, "ignore-term", kind, grace=0.1, term_grace=0.2) as child:
        _started(record)
        assert child.wait(timeout=GUARD) == "cancelled"
        assert _control_types(child) == ["cancel"]  # the parent sent it by itself, once
        assert child.cancel_sent
        assert child.returncode == -signal.SIGKILL
        assert _records(record) == ["started", "TERM"]
        want = "wire version 2" if kind == "version" else "foreign run someone-else"
        assert child.channel.error is not None and want in child.channel.error
        assert child.error == child.channel.error


def test_a_channel_error_cancel_is_a_real_control_the_child_can_honour(tmp_path: Path) -> None:
    record = tmp_path / "record"
    with _child(BAD_LINE, record, "honour-cancel", "foreign", grace=GUARD) as child:
        _started(record)
        assert child.wait(timeout=GUARD) == "cancelled"
        assert child.returncode == 1 and not child.killed
        assert _records(record) == ["started", "cancel seen"]
        with open(child.control_path, "rb") as f:
            sent = [json.loads(x) for x in f.read().splitlines()]
        assert sent == [{"v": 1, "seq": 1, "type": "cancel", "run": "run"}]


# -- death without exit: failed before the deadline, timed-out past it ---------------------------

DIE = """
note("started")
emit("ready")
if "after-deadline" in sys.argv[2:]:
    deadline = float(os.environ["FEN_WIRE_DEADLINE"])
    linger(lambda: time.time() > deadline)
sys.exit(4)
"""


def test_death_without_exit_past_the_deadline_is_timed_out(tmp_path: Path) -> None:
    record = tmp_path / "record"
    with _child(DIE, record, "after-deadline", timeout=0.3, grace=GUARD) as child:
        assert child.wait(timeout=GUARD) == "timed-out"
        assert child.returncode == 4 and not child.killed
        assert (child.error or "").startswith("child exited with code 4 without an exit line")


def test_death_without_exit_before_the_deadline_is_failed_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "record"
    with _child(DIE, record, timeout=3600, grace=GUARD) as child:
        assert child.wait(timeout=GUARD) == "failed"
        assert child.returncode == 4
        assert (child.error or "").startswith("child exited with code 4 without an exit line")
        # the clock passes the deadline (and a late cancel is sent): the run failed, and stays failed
        later = types.SimpleNamespace(time=lambda: time.time() + 7200, monotonic=time.monotonic, sleep=time.sleep)
        monkeypatch.setattr(spawn_module, "time", later)
        assert child.status == "failed"
        child.cancel()
        assert child.status == "failed"
        assert child.wait(timeout=GUARD) == "failed"


def test_death_without_exit_after_cancel_is_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "record"
    with _child(SILENT, record, grace=0.1, term_grace=GUARD) as child:
        _started(record)
        child.cancel()
        assert child.wait(timeout=GUARD) == "cancelled"
        assert child.returncode == -signal.SIGTERM


# -- wait() timing out ---------------------------------------------------------------------------


def test_wait_timing_out_raises_and_the_child_stays_supervised(tmp_path: Path) -> None:
    record = tmp_path / "record"
    with _child(SILENT, record, grace=0.1, term_grace=GUARD) as child:
        _started(record)
        with pytest.raises(TimeoutError, match=r"^child run still running after 0\.05 s$"):
            child.wait(timeout=0.05)
        assert child.process.poll() is None and not child.finished and not child.killed  # untouched
        assert child.channel.status == "ready"  # it kept reading the events
        assert child.messages == 1
        with pytest.raises(TimeoutError):
            child.wait(timeout=0)
        # still supervised: a cancel arms the backstop, and the next wait sees it through
        child.cancel()
        assert child.wait(timeout=GUARD) == "cancelled"
        assert child.returncode == -signal.SIGTERM and child.killed
        assert os.path.exists(child.directory)  # wait() cleans nothing up; cleanup() does
