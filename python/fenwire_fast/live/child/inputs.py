"""The child's input queues: ``steer`` and ``follow-up`` texts waiting for a turn."""

from __future__ import annotations

from typing import Any

from ...normalize import timestamp

__all__ = ["InputQueues", "Queued", "DROP_REFS_PER_LINE"]

#: 2048 refs of up to 16 digits fit one ``info`` line with room to spare.
DROP_REFS_PER_LINE = 2048

#: A queued input: the ``seq`` of the control that queued it (the ``ref`` of its injection) and its text.
Queued = tuple[int, str]


class InputQueues:
    """Steering waits for the running turn's next step (or the next idle moment); follow-ups wait
    for the run to be idle, one turn each. Each entry keeps the ``seq`` of the control that queued it."""

    def __init__(self) -> None:
        self.steering: list[Queued] = []
        self.follow_ups: list[Queued] = []

    def queue_steering(self, ref: int, text: str) -> None:
        self.steering.append((ref, text))

    def queue_follow_up(self, ref: int, text: str) -> None:
        self.follow_ups.append((ref, text))

    def take_steering(self) -> list[Queued]:
        """Every queued steer, oldest first; the queue is left empty."""
        taken = list(self.steering)
        self.steering.clear()
        return taken

    def take_idle_input(self) -> tuple[str, str, list[Queued]] | None:
        """What an idle run starts a turn with: all left-over steering (kind ``steer``), else the
        oldest follow-up (kind ``follow-up``); ``(kind, injection event type, entries)`` or ``None``."""
        if self.steering:
            return "steer", "steering-injected", self.take_steering()
        if self.follow_ups:
            return "follow-up", "follow-up-injected", [self.follow_ups.pop(0)]
        return None

    def claim_ref(self, event_type: str, text: object) -> int | None:
        """The ``ref`` for an injection the agent reported itself: the oldest entry of that queue,
        taken off it, when its text is ``text``; else ``None``."""
        queue = self.steering if event_type == "steering-injected" else self.follow_ups
        if queue and queue[0][1] == text:
            return queue.pop(0)[0]
        return None

    def drop_all(self) -> list[dict[str, Any]]:
        """Empty both queues; return the ``info`` payloads that report the dropped refs (none when
        nothing was queued; one line unless the refs do not fit one)."""
        refs = [ref for ref, _ in self.steering] + [ref for ref, _ in self.follow_ups]
        self.steering.clear()
        self.follow_ups.clear()
        if not refs:
            return []
        summary = f"dropped {len(refs)} queued input line(s)"
        return [
            {"timestamp": timestamp(), "summary": summary, "refs": refs[start : start + DROP_REFS_PER_LINE]}
            for start in range(0, len(refs), DROP_REFS_PER_LINE)
        ]
