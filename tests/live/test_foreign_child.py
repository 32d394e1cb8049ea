"""Any command that speaks the protocol can be the child. A tiny scripted child (plain json + os)
answers controls while still ``starting`` (before ``ready``), which our own child never does, so
the ``starting`` row of the table is exercised through the wire from the parent's side: the
channel's mirror and the spawn supervision.

The parent reads one event per poll and records the mirrored status after each. The scripted child
does not end until the parent has read its ``exit`` line (it waits for a release file the test
creates then), so every status the parent records comes from the lines alone, never from when
the process happened to end."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fenwire_fast import session
from fenwire_fast.live.parent.spawn import spawn

SCRIPTED = r"""
import json, os, sys, time
release = sys.argv[1]
run = os.environ["FEN_WIRE_RUN_ID"]
control, events = os.environ["FEN_WIRE_CONTROL_PATH"], os.environ["FEN_WIRE_EVENT_PATH"]
guard = time.time() + 120  # only against a parent that never writes
while time.time() < guard:
    lines = [l for l in open(control, "rb").read().split(b"\n") if l]
    if len(lines) >= 6:
        break
    time.sleep(0.01)
seq = 0
def emit(type_, **payload):
    global seq
    seq += 1
    with open(events, "a") as f:
        f.write(json.dumps({"v": 1, "seq": seq, "type": type_, "run": run, **payload}) + "\n")
for raw in lines:
    msg = json.loads(raw)
    if msg["type"] == "cancel":
        emit("control-ack", ref=msg["seq"], status="accepted")
        emit("exit", status="cancelled")
        while not os.path.exists(release) and time.time() < guard:
            time.sleep(0.01)
        raise SystemExit(1)
    emit("control-ack", ref=msg["seq"], status="rejected", reason="child is not ready")
"""


def test_the_starting_row_through_a_scripted_child(tmp_path: Path) -> None:
    release = tmp_path / "release"
    # one byte per poll, so the mirrored status can be read after every single event
    child = spawn(
        "task", command=[sys.executable, "-c", SCRIPTED, str(release)], run="foreign", max_bytes=1, grace=15.0
    )
    try:
        seqs = {"prompt": 1}
        for type_, payload in (
            ("steer", {"text": "s"}),
            ("follow-up", {"text": "f"}),
            ("finalize", {}),
            ("close", {}),
            ("cancel", {}),
        ):
            seqs[type_] = child.send(type_, payload)
        statuses = []
        guard = time.monotonic() + 120  # only against a hang
        while not child.finished:
            messages, errors = child.poll()
            assert errors == []
            assert len(messages) <= 1
            statuses.extend((m["type"], child.channel.status) for m in messages)
            if messages and messages[0]["type"] == "exit":
                release.touch()  # every line has been read one at a time: the child may end now
            assert time.monotonic() < guard, f"the scripted child hangs; it sent {statuses}"
            if not messages:
                time.sleep(0.002)
        assert child.status == "cancelled" and child.returncode == 1
        # the five rejections left the mirror in starting; the accepted cancel moved it on
        assert statuses == [("control-ack", "starting")] * 5 + [("control-ack", "cancelled"), ("exit", "cancelled")]
        for type_, seq in seqs.items():
            sent = child.channel.controls[seq]
            want = session.decide("starting", type_)
            assert (sent.status, sent.reason) == (want.status, want.reason)
            assert want.status == ("accepted" if type_ == "cancel" else "rejected")
    finally:
        child.cleanup()
