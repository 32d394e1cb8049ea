"""A fleet's child is driven and read as a local child is (``live/parent/surface.py``), checked in
this process without Ray: a :class:`NodeHub` (the body of a fleet's node actor) runs a real mock
child, a :class:`FleetChild` sends it controls through a stand-in for the fleet, and takes the
node's answers as a fleet's driver does. Nothing waits for time to pass: a turn is held with the
mock's gate, and each step waits for an event or a status.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fenwire_fast.live.child.mock_agent import gate_label
from fenwire_fast.live.fleet import FleetChild
from fenwire_fast.live.fleet.node import NodeHub
from fenwire_fast.live.parent.channel import ERRORS_KEPT, Channel
from fenwire_fast.live.parent.surface import ChannelStatus, ControlVerbs, status_key, status_of
from live_harness import HANG_GUARD, release_gate

VERBS = ("prompt", "steer", "follow_up", "finalize", "cancel", "close")


class _Recorder:
    """A stand-in for a fleet that only records the controls its children send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, Any] | None]] = []

    def _send(self, child: FleetChild, type_: str, payload: dict[str, Any] | None) -> int:
        self.sent.append((child.run, type_, payload))
        return len(self.sent)


class _InProcess(_Recorder):
    """A stand-in for a fleet with one node in this process: a control goes to the node's ``send``."""

    def __init__(self, node: NodeHub) -> None:
        super().__init__()
        self.node = node

    def _send(self, child: FleetChild, type_: str, payload: dict[str, Any] | None) -> int:
        super()._send(child, type_, payload)
        return self.node.send(child.run, type_, payload)


def test_a_fleet_child_has_the_control_verbs_and_only_sends() -> None:
    """Each verb of a FleetChild is the surface's, a ``send`` of its control type to the fleet."""
    for verb in VERBS:
        assert getattr(FleetChild, verb) is getattr(ControlVerbs, verb), verb
    fleet = _Recorder()
    child = FleetChild(fleet, "r", "node", 1)
    seqs = [
        child.prompt("a"),
        child.steer("b"),
        child.follow_up("c"),
        child.finalize(),
        child.finalize("why"),
        child.cancel(),
        child.close(),
        child.send("steer", {"text": "d"}),
    ]
    assert seqs == list(range(1, 9))
    assert fleet.sent == [
        ("r", "prompt", {"text": "a"}),
        ("r", "steer", {"text": "b"}),
        ("r", "follow-up", {"text": "c"}),
        ("r", "finalize", {}),
        ("r", "finalize", {"note": "why"}),
        ("r", "cancel", None),
        ("r", "close", None),
        ("r", "steer", {"text": "d"}),
    ]


def test_a_fleet_child_mirrors_its_node_child_at_every_answer(tmp_path: Path) -> None:
    """After every answer of its node, a FleetChild's status is its node child's, field for field:
    the node sends a status whenever its cheap key says it changed, and the driver takes it whole."""
    gate = str(tmp_path / "gate")
    asyncio.run(_drive(gate, {"steps": 2, "gate_path": gate, "gate_steps": [1]}))


async def _drive(gate: str, mock: dict[str, Any]) -> None:
    node = NodeHub("here")
    fleet = _InProcess(node)
    events: list[dict[str, Any]] = []
    try:
        child = FleetChild(fleet, "r", "here", node.spawn("Do the task.", "r", {"mock": mock}))
        live = node.children["r"]

        async def until(done: Callable[[], bool]) -> None:
            end = time.monotonic() + HANG_GUARD
            while not done():
                assert time.monotonic() < end, f"hung: {child!r}"
                for run, blob, status in await node.poll():
                    assert run == "r"
                    for _, messages in child._take(blob, status, False):
                        events.extend(messages)
                assert status_of(child) == status_of(live)

        def seen(type_: str, **fields: Any) -> Callable[[], bool]:
            return lambda: any(e["type"] == type_ and fields.items() <= e.items() for e in events)

        await until(seen("info", summary=gate_label(1, 1)))
        again = child.prompt("Do it again.")  # a turn runs: rejected
        await until(seen("control-ack", ref=again))
        assert child.rejected == [child.controls[again]] and child.controls[again].status == "rejected"
        release_gate(gate)
        await until(lambda: child.idle and seen("turn-complete")())
        closed = child.close()
        await until(lambda: child.finished)
        assert child.status == "done" and child.returncode == 0, (child, child.error)
        assert child.controls[closed].status == "accepted"
        assert child.result == next(e for e in events if e["type"] == "result")
        assert child.messages == len(events) and child.bytes == live.bytes
        assert fleet.sent == [("r", "prompt", {"text": "Do it again."}), ("r", "close", None)]
    finally:
        node.close()


class _Handle(ChannelStatus):
    """A handle that owns a channel, with the plain status fields a live child has."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.status = "running"
        self.error: str | None = None
        self.finished = False
        self.returncode: int | None = None


def test_the_status_key_moves_whenever_the_status_does(tmp_path: Path) -> None:
    """Read in small pieces, a run whose bad lines go past what its channel keeps changes its
    status at almost every read (the kept last errors turn over); the key changes each time too."""
    lines = []
    for i in range(4 * ERRORS_KEPT):
        lines.append(json.dumps({"v": 1, "seq": i + 1, "type": "info", "run": "r", "summary": f"own {i}"}))
        lines.append('{"v":1,"seq":' + str(i + 1) + ',"type":"nope-' + str(i) + '","run":"r"}')
    lines.append(
        json.dumps(
            {
                "v": 1,
                "seq": 4 * ERRORS_KEPT + 1,
                "type": "result",
                "run": "r",
                "stop-reason": "stop",
                "final-text": "ok",
            }
        )
    )
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "control.jsonl").touch(mode=0o600)
    channel = Channel("r", str(tmp_path / "control.jsonl"), str(tmp_path / "events.jsonl"), max_bytes=300)
    handle = _Handle(channel)
    before, key = status_of(handle), status_key(handle)
    changes = 0
    while True:
        messages, errors = channel.poll()
        if not (messages or errors or channel.pending()):
            break
        now = status_of(handle)
        if now != before:
            changes += 1
            assert status_key(handle) != key, f"the status changed, its key did not: {now}"
        before, key = now, status_key(handle)
    assert channel.errors_dropped > 0 and handle.result is not None
    assert changes > ERRORS_KEPT
