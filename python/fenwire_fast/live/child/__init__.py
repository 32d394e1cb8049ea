"""The child presenter: runs an agent as a live child over two files.

``fenwire child`` / ``python -m fenwire_fast child`` reads

- ``FEN_WIRE_CONTROL_PATH`` — the control JSONL file the parent appends to (required; may be
  created later),
- ``FEN_WIRE_EVENT_PATH`` — the event JSONL file this process appends to (required),
- ``FEN_WIRE_RUN_ID`` — the ``run`` of both directions (default ``run``),
- ``FEN_WIRE_DEADLINE`` — optional Unix time in seconds; past it the run exits ``timed-out``,
- ``FEN_WIRE_PARENT_FD`` / ``FEN_WIRE_TERM_GRACE`` — optional: the parent's lifeline pipe; at its
  end-of-file the child takes its process group down (:mod:`fenwire_fast.live.proc.orphans`),

emits ``ready``, and then loops: read new control lines (a size check first; at most 64 lines /
64 KiB per read), answer each with exactly one ``control-ack`` before anything it causes, check the
deadline, run the active turn for a slice of at most 30 ms, write the events, and sleep (while a
turn waits: until it wants to resume, at most 30 ms; idle: 300 ms). Every state change goes through
:mod:`fenwire_fast.session`. The process exits 0 after ``exit done`` and 1 otherwise.

The parts:

- :mod:`.presenter`: :class:`Presenter`, the loop and the protocol side (acks, session, deadline, exit);
- :mod:`.controls`: reading and decoding the control file;
- :mod:`.runner`: the agent side: starting turns, running them in slices, writing their events;
- :mod:`.turn`: one running turn, resumed an item at a time, and what its events said;
- :mod:`.inputs`: the queued ``steer`` and ``follow-up`` texts;
- :mod:`.result`: each turn's stop reason, usage and text, and the run's ``result`` line;
- :mod:`.event_writer`: stamping and appending the events.
"""

from __future__ import annotations

from .presenter import BUSY_TICK, DEFAULT_FINALIZE_NOTE, DISPLAY_EVENTS, IDLE_TICK, Presenter

__all__ = ["Presenter", "DEFAULT_FINALIZE_NOTE", "DISPLAY_EVENTS", "BUSY_TICK", "IDLE_TICK"]
