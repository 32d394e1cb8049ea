"""The child presenter's loop: controls in, turns run, events out.

:class:`Presenter` is the protocol side: it reads controls (:class:`~.controls.ControlReader`),
acknowledges each, moves the run through :mod:`fenwire_fast.session`, watches the deadline and ends
the run. The agent side (turns, their events, injected input) is the :class:`~.runner.TurnRunner`;
the events are written by the :class:`~.event_writer.EventWriter`, queued input waits in the
:class:`~.inputs.InputQueues`, and the ``result`` comes from the :class:`~.result.RunResult`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ... import DISPLAY_EVENT_TYPES as DISPLAY_EVENTS
from ... import rejection_ack, session
from ...lines import LineReader
from ...text import first_line, truncate_line
from .agent import Agent
from .controls import ControlReader
from .event_writer import EventWriter
from .inputs import InputQueues
from .result import RunResult
from .runner import TurnRunner, describe_error, failure_reason
from .turn import Turn, TurnEnd

__all__ = ["Presenter", "DEFAULT_FINALIZE_NOTE", "DISPLAY_EVENTS", "BUSY_TICK", "IDLE_TICK"]

#: Longest slice a turn runs for, and longest sleep while it waits.
BUSY_TICK = 0.030
#: Sleep between control reads while no turn runs.
IDLE_TICK = 0.300
DEFAULT_FINALIZE_NOTE = "Stop working now. Without calling tools, give your final answer from what you have so far."


class Presenter:
    """One live run: the agent, the two files and the run state.

    ``control_path`` / ``event_path`` and ``run`` as in the environment variables; ``deadline`` is
    a Unix time or ``None``; ``traceparent`` the W3C trace context agents get as
    ``ctx.traceparent`` (``TRACEPARENT``). :meth:`run_loop` drives the run to its end and returns the exit code."""

    def __init__(
        self,
        agent: Agent,
        *,
        control_path: str,
        event_path: str,
        run: str = "run",
        deadline: float | None = None,
        busy_tick: float = BUSY_TICK,
        idle_tick: float = IDLE_TICK,
        stderr: Callable[[str], None] | None = None,
        traceparent: str | None = None,
    ) -> None:
        self.agent = agent
        self.run = run
        self.deadline = deadline
        self.busy_tick = busy_tick
        self.idle_tick = idle_tick
        self.control_path = control_path
        self.event_path = event_path
        self.state = "starting"
        self.error: str | None = None
        self.exit_status: str | None = None
        self._stderr = stderr or (lambda text: print(text, file=sys.stderr, flush=True))
        self._reader = LineReader(control_path)
        self._controls = ControlReader(self._reader)
        self._events = EventWriter(event_path, run, self._stderr)
        self._inputs = InputQueues()
        self._result = RunResult()
        self.turns = TurnRunner(agent, run, self._events, self._inputs, self._result, self._stderr, traceparent)
        self._note: str | None = None

    # -- the loop -------------------------------------------------------------------------------

    def run_loop(self) -> int:
        """Drive the run until ``exit``; return the process exit code (0 only after ``done``)."""
        try:
            try:
                self.turns.start_agent()
            except Exception as exc:  # noqa: BLE001 - an agent failure is a run failure
                self._events.emit("ready")
                self._advance("started")
                self._check_deadline()  # a start cut short by the run's deadline: timed-out, not failed
                if not session.is_terminal(self.state):
                    self._fatal(failure_reason("agent start failed", exc))
            else:
                self._events.emit("ready")
                self._advance("started")
            self._events.flush()
            while self.exit_status is None:
                self._poll_controls()
                if self.exit_status is not None:
                    break
                self._check_deadline()
                if self.exit_status is not None:
                    break
                self._tick()
                if self.exit_status is not None:
                    break
                self._events.flush()
                self._sleep()
        except KeyboardInterrupt:
            self._give_up("interrupted")
        except Exception as exc:  # noqa: BLE001 - a presenter bug still ends the run cleanly
            self._give_up(f"internal error: {describe_error(exc)}")
        finally:
            try:
                self._events.flush()
            except OSError as exc:
                self._stderr(f"fenwire child: cannot write to {self.event_path}: {exc.strerror or exc}")
            finally:
                self._events.close()
                self._reader.close()
                self.turns.close_agent()
        return 0 if self.exit_status == "done" else 1

    def _give_up(self, reason: str) -> None:
        """End the run as failed after something outside the protocol went wrong."""
        self._stderr(f"fenwire child: {reason}")
        if self.exit_status is None:
            self.exit_status = "failed"
            self._events.emit("exit", {"status": "failed", "error": reason})

    def _sleep(self) -> None:
        """Until the turn wants to resume (at most a busy tick), or an idle tick; never past the deadline."""
        delay = self.turns.wait_time(self.busy_tick, self.idle_tick)
        if self.deadline is not None:
            delay = min(delay, max(0.0, self.deadline - time.time()))
        if delay > 0:
            time.sleep(delay)

    def _tick(self) -> None:
        """Run the current turn for at most a busy tick, or until it waits or ends."""
        ended = self.turns.run_slice(self.busy_tick)
        if ended is not None:
            self._turn_ended(*ended)

    # -- controls -------------------------------------------------------------------------------

    def _poll_controls(self) -> None:
        """Read and apply the new control lines (a bounded number of reads per loop)."""
        for msg, rej in self._controls.poll():
            if self.exit_status is not None:
                return
            if rej is not None:
                if rej.fatal:
                    self._fatal(rej.reason)
                else:
                    self._events.emit("control-ack", rejection_ack(rej))
            elif msg is not None:
                self._apply(msg)
        if self._controls.truncated and not session.is_terminal(self.state):
            self._fatal(f"control file truncated below offset {self._reader.offset}")

    def _apply(self, msg: dict[str, Any]) -> None:
        """Acknowledge one control (before anything it causes), then act on it."""
        ref = int(msg["seq"])
        ctype = msg["type"]
        if msg.get("run") != self.run:
            reason = f"run {msg.get('run')} is not {self.run}"
            self._events.emit("control-ack", {"ref": ref, "status": "rejected", "reason": reason})
            return
        decision = session.decide(self.state, ctype)
        ack: dict[str, Any] = {"ref": ref, "status": decision.status}
        if decision.reason:
            ack["reason"] = decision.reason
        self._events.emit("control-ack", ack)
        if decision.status == "rejected" or decision.next is None:
            return
        if decision.status == "accepted" and ctype == "finalize":
            self._drop_queued()
            note = msg.get("note")
            self._note = note if isinstance(note, str) and note.strip() else None
        self.state = decision.next
        self._perform(decision.action, msg, ctype)

    def _perform(self, action: str, msg: dict[str, Any] | None, reason: str) -> None:
        """Carry out a session action (``reason`` is the control or event that caused it)."""
        if action == "start-turn" and msg is not None:
            self.turns.start(str(msg.get("text", "")), str(msg.get("type")))
        elif action == "queue-steering" and msg is not None:
            self._inputs.queue_steering(int(msg["seq"]), str(msg.get("text", "")))
        elif action == "queue-follow-up" and msg is not None:
            self._inputs.queue_follow_up(int(msg["seq"]), str(msg.get("text", "")))
        elif action == "start-finalize-turn":
            self.turns.start(self._note or DEFAULT_FINALIZE_NOTE, "finalize")
        elif action == "interrupt-turn":
            self.turns.interrupt(reason)
        elif action == "abort":
            if self.turns.current is not None:
                self.turns.interrupt(reason)
            else:
                self._exit(self.state, self.error)
        elif action == "finish":
            self._finish()
        elif action == "exit":
            self._exit(self.state, self.error)

    def _advance(self, event: str) -> None:
        transition = session.advance(self.state, event)
        if transition is not None:
            self.state = transition.next
            self._perform(transition.action, None, event)

    def _fatal(self, reason: str) -> None:
        self.error = reason
        self._advance("fatal")

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.time() >= self.deadline and not session.is_terminal(self.state):
            self.error = "run deadline exceeded"
            self._advance("deadline")

    # -- turns ----------------------------------------------------------------------------------

    def _turn_ended(self, turn: Turn, end: TurnEnd) -> None:
        """Write what the turn leaves, then move the run on: fail it, end it, or start the next turn."""
        self.turns.complete(turn, end)
        if end.error is not None:
            self._fatal(failure_reason("agent failed", end.error))
        else:
            self._advance("final-turn-done" if turn.request.final else "turn-done")
        if self.exit_status is None and self.turns.current is None and session.is_terminal(self.state):
            self._exit(self.state, self.error)
        if self.exit_status is None and self.turns.current is None and self.state == "ready":
            self._start_idle_turn()

    def _start_idle_turn(self) -> None:
        """Steering left over after a turn, or a queued follow-up, starts a turn on its own."""
        idle_input = self._inputs.take_idle_input()
        if idle_input is None:
            return
        kind, event, queued = idle_input
        decision = session.decide(self.state, kind)
        if decision.action != "start-turn" or decision.next is None:
            return
        self.state = decision.next
        self.turns.start("\n\n".join(text for _, text in queued), kind)
        self.turns.inject(event, queued)

    # -- the end --------------------------------------------------------------------------------

    def _drop_queued(self) -> None:
        for info in self._inputs.drop_all():
            self._events.emit("info", info)

    def _finish(self) -> None:
        """``done``: drop queued input, write the ``result`` and ``exit`` together."""
        self._drop_queued()
        line = self._result.encode(self._events, self._stderr)
        if line is not None:
            self._events.append(line)
        self._exit("done", None)

    def _exit(self, status: str, error: str | None) -> None:
        if self.exit_status is not None:
            return
        self._drop_queued()
        payload: dict[str, Any] = {"status": status}
        if error:
            payload["error"] = truncate_line(first_line(error), 4096)
        self._events.emit("exit", payload)
        self.exit_status = status
        self._events.flush()
        self.turns.close_agent()
