"""Any command that speaks the protocol can be the child. A tiny scripted child (plain json + os)
answers controls while still ``starting`` (before ``ready``), which our own child never does, so
the ``starting`` row of the table is exercised through the wire from the parent's side: the
channel's mirror and the spawn supervision."""

from __future__ import annotations

import sys

from fenwire_fast import session
from fenwire_fast.live.spawn import spawn

SCRIPTED = r"""
import json, os, time
run = os.environ["FEN_WIRE_RUN_ID"]
control, events = os.environ["FEN_WIRE_CONTROL_PATH"], os.environ["FEN_WIRE_EVENT_PATH"]
deadline = time.time() + 30
while time.time() < deadline:
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
        raise SystemExit(1)
    emit("control-ack", ref=msg["seq"], status="rejected", reason="child is not ready")
"""


def test_the_starting_row_through_a_scripted_child() -> None:
    # one byte per poll, so the mirrored status can be read after every single event
    child = spawn("task", command=[sys.executable, "-c", SCRIPTED], run="foreign", max_bytes=1)
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
        while not child.finished:
            messages, errors = child.poll()
            assert errors == []
            assert len(messages) <= 1
            statuses.extend((m["type"], child.channel.status) for m in messages)
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
