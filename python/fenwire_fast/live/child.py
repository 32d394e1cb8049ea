"""The child presenter: runs an agent as a live child over two files (DESIGN §7).

``fenwire child`` / ``python -m fenwire_fast child`` reads

- ``FEN_WIRE_CONTROL_PATH`` — the control JSONL file the parent appends to (required; may be
  created later),
- ``FEN_WIRE_EVENT_PATH`` — the event JSONL file this process appends to (required),
- ``FEN_WIRE_RUN_ID`` — the ``run`` of both directions (default ``run``),
- ``FEN_WIRE_DEADLINE`` — optional Unix time in seconds; past it the run exits ``timed-out``,

emits ``ready``, and then loops: read new control lines (a size check first; at most 64 lines /
64 KiB per read, the reference's line reader), answer each with exactly one ``control-ack`` before
anything it causes, check the deadline, run the active turn for a slice of at most 30 ms, write the
events, and sleep (while a turn waits: until it wants to resume, at most 30 ms; idle: 300 ms).
Every state change goes through :mod:`fenwire_fast.session`. The process exits 0 after
``exit done`` and 1 otherwise.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import DISPLAY_EVENT_TYPES as DISPLAY_EVENTS
from .. import MAX_LINE_BYTES, Receiver, Sender, rejection_ack, session
from ..lines import LineReader
from ..normalize import normalize, timestamp
from ..text import first_line, truncate_line, utf8_prefix
from .agent import (
    Agent,
    TurnInput,
    TurnInterrupted,
    TurnResult,
    Wait,
    start_events,
)

__all__ = ["Presenter", "DEFAULT_FINALIZE_NOTE", "DISPLAY_EVENTS", "BUSY_TICK", "IDLE_TICK"]

BUSY_TICK = 0.030
IDLE_TICK = 0.300
RESULT_OVERHEAD_BYTES = 1024
POST_INTERRUPT_ITEMS = 1000
FLUSH_BYTES = 64 * 1024
DROP_REFS_PER_LINE = 2048  # 2048 refs of up to 16 digits fit one line with room to spare
DEFAULT_FINALIZE_NOTE = "Stop working now. Without calling tools, give your final answer from what you have so far."


def _add_usage(total: dict[str, Any], usage: object) -> None:
    if not isinstance(usage, Mapping):
        return
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            total[key] = total.get(key, 0) + value


@dataclass
class _Turn:
    number: int
    request: TurnInput
    items: Iterator[Any]
    wait_until: float = 0.0
    interrupt: str | None = None
    thrown: bool = False
    after_interrupt: int = 0
    open_calls: dict[str, str] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    spoke: bool = False


class _Context:
    """The :class:`~fenwire_fast.live.agent.TurnContext` the presenter hands a turn."""

    def __init__(self, presenter: Presenter, turn: _Turn) -> None:
        self._presenter = presenter
        self._turn = turn

    @property
    def run(self) -> str:
        return self._presenter.run

    def take_steering(self) -> list[str]:
        return self._presenter._take_steering(self._turn)


class Presenter:
    """One live run: the agent, the two files and the run state.

    ``control_path`` / ``event_path`` and ``run`` as in the environment variables; ``deadline`` is
    a Unix time or ``None``. :meth:`run` drives the run to its end and returns the exit code."""

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
        self._sender = Sender("event", run)
        self._receiver = Receiver("control")
        self._reader = LineReader(control_path)
        self._fd = os.open(event_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._turn: _Turn | None = None
        self._turns = 0
        self._steering: list[tuple[int, str]] = []
        self._follow_ups: list[tuple[int, str]] = []
        self._note: str | None = None
        self._run_usage: dict[str, Any] = {}
        self._last_text: str | None = None
        self._last_stop: str | None = None
        self._agent_closed = False

    # -- writing --------------------------------------------------------------------------------

    def _emit(self, type_: str, payload: dict[str, Any] | None = None) -> bool:
        line, rej = self._sender.next(type_, payload or {})
        if line is None:
            reason = rej.reason if rej is not None else "unknown error"
            self._stderr(f"fenwire child: cannot send {type_}: {reason}")
            return False
        self._buffer.append(line)
        self._buffer.append(b"\n")
        self._buffered += len(line) + 1
        if self._buffered >= FLUSH_BYTES:
            self._flush()
        return True

    def _flush(self) -> None:
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        self._buffered = 0
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    # -- the loop -------------------------------------------------------------------------------

    def run_loop(self) -> int:
        """Drive the run until ``exit``; return the process exit code (0 only after ``done``)."""
        try:
            try:
                for event in start_events(self.agent):
                    self._forward(None, event)
            except Exception as exc:  # noqa: BLE001 - an agent failure is a run failure
                self._emit("ready")
                self._advance("started")
                self._fatal(f"agent start failed: {_describe(exc)}")
            else:
                self._emit("ready")
                self._advance("started")
            self._flush()
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
                self._flush()
                self._sleep()
        except KeyboardInterrupt:
            self._give_up("interrupted")
        except Exception as exc:  # noqa: BLE001 - a presenter bug still ends the run cleanly
            self._give_up(f"internal error: {_describe(exc)}")
        finally:
            try:
                self._flush()
            except OSError as exc:
                self._stderr(f"fenwire child: cannot write to {self.event_path}: {exc.strerror or exc}")
            finally:
                os.close(self._fd)
                self._reader.close()
                self._close_agent()
        return 0 if self.exit_status == "done" else 1

    def _give_up(self, reason: str) -> None:
        """End the run as failed after something outside the protocol went wrong."""
        self._stderr(f"fenwire child: {reason}")
        if self.exit_status is None:
            self.exit_status = "failed"
            self._emit("exit", {"status": "failed", "error": reason})

    def _sleep(self) -> None:
        turn = self._turn
        now = time.monotonic()
        if turn is not None:
            if turn.interrupt is not None and not turn.thrown:
                return
            if turn.wait_until <= now:
                return
            delay = min(self.busy_tick, turn.wait_until - now)
        else:
            delay = self.idle_tick
        if self.deadline is not None:
            delay = min(delay, max(0.0, self.deadline - time.time()))
        if delay > 0:
            time.sleep(delay)

    def _tick(self) -> None:
        turn = self._turn
        if turn is None:
            return
        end = time.monotonic() + self.busy_tick
        while self._turn is turn and self.exit_status is None:
            if turn.wait_until:
                if turn.interrupt is not None and not turn.thrown:
                    turn.wait_until = 0.0
                elif time.monotonic() < turn.wait_until:
                    return
                else:
                    turn.wait_until = 0.0
            self._resume(turn)
            if time.monotonic() >= end:
                return

    def _resume(self, turn: _Turn) -> None:
        """Resume the turn once: throw the pending interruption in, or take its next item."""
        item: Any = None
        ended = False
        result: TurnResult | None = None
        error: BaseException | None = None
        try:
            if turn.interrupt is not None and not turn.thrown:
                turn.thrown = True
                throw = getattr(turn.items, "throw", None)
                if throw is None:  # a plain iterator cannot be interrupted: just stop it
                    ended = True
                else:
                    item = throw(TurnInterrupted(turn.interrupt))
            elif turn.thrown and turn.after_interrupt >= POST_INTERRUPT_ITEMS:
                ended = True  # it will not stop by itself: cut it off
                close = getattr(turn.items, "close", None)
                if close is not None:
                    close()
            else:
                if turn.thrown:
                    turn.after_interrupt += 1
                item = next(turn.items)
        except StopIteration as stop:
            ended = True
            result = stop.value if isinstance(stop.value, TurnResult) else None
        except TurnInterrupted:
            ended = True
        except Exception as exc:  # noqa: BLE001 - an agent error ends the turn and fails the run
            ended = True
            error = exc
        if ended:
            self._turn_ended(turn, result, error)
        elif isinstance(item, Wait):
            seconds = item.seconds if isinstance(item.seconds, (int, float)) else 0.0
            if seconds > 0:
                turn.wait_until = time.monotonic() + seconds
        elif isinstance(item, dict):
            self._forward(turn, item)
        else:
            self._turn_ended(turn, None, TypeError(f"agent yielded {type(item).__name__}, not an event dict or Wait"))

    # -- agent events ---------------------------------------------------------------------------

    def _forward(self, turn: _Turn | None, event: dict[str, Any]) -> None:
        etype = event.get("type")
        if not isinstance(etype, str) or etype not in DISPLAY_EVENTS:
            return
        if turn is not None:
            if etype == "llm-end":
                turn.spoke = True
                reason = event.get("stop-reason")
                if reason is not None:
                    turn.stop_reason = str(reason)
                _add_usage(turn.usage, event.get("usage"))
            elif etype == "assistant-text":
                turn.spoke = True
                text = event.get("text")
                turn.text = text if isinstance(text, str) else None
            elif etype == "tool-call":
                call_id = event.get("id")
                if isinstance(call_id, str):
                    name = event.get("name")
                    turn.open_calls[call_id] = name if isinstance(name, str) else ""
            elif etype == "tool-result":
                for key in ("tool-call-id", "id"):
                    call_id = event.get(key)
                    if isinstance(call_id, str) and call_id in turn.open_calls:
                        del turn.open_calls[call_id]
                        break
        out = normalize(event)
        if etype in ("steering-injected", "follow-up-injected"):
            queue = self._steering if etype == "steering-injected" else self._follow_ups
            if queue and queue[0][1] == event.get("text"):
                out["ref"] = queue.pop(0)[0]
        self._emit(etype, out)
        if etype == "tool-call":
            self._flush()  # a tool may block: let the parent see the call first

    def _take_steering(self, turn: _Turn) -> list[str]:
        if self._turn is not turn or turn.interrupt is not None or not self._steering:
            return []
        texts = []
        for ref, text in self._steering:
            self._inject("steering-injected", ref, text)
            texts.append(text)
        self._steering.clear()
        return texts

    def _inject(self, etype: str, ref: int, text: str) -> None:
        out = normalize({"type": etype, "text": text})
        out["ref"] = ref
        self._emit(etype, out)

    # -- controls -------------------------------------------------------------------------------

    def _poll_controls(self) -> None:
        for _ in range(64):
            lines, status = self._reader.read()
            if status == "truncated":
                if not session.is_terminal(self.state):
                    self._fatal(f"control file truncated below offset {self._reader.offset}")
                return
            for line in lines:
                if self.exit_status is not None:
                    return
                if not line:
                    continue
                msg, rej = self._receiver.receive(line)
                if rej is not None:
                    if rej.fatal:
                        self._fatal(rej.reason)
                    else:
                        self._emit("control-ack", rejection_ack(rej))
                    continue
                if msg is not None:
                    self._apply(msg)
            if len(lines) < 64:
                return

    def _apply(self, msg: dict[str, Any]) -> None:
        ref = int(msg["seq"])
        ctype = msg["type"]
        if msg.get("run") != self.run:
            self._emit(
                "control-ack", {"ref": ref, "status": "rejected", "reason": f"run {msg.get('run')} is not {self.run}"}
            )
            return
        decision = session.decide(self.state, ctype)
        ack: dict[str, Any] = {"ref": ref, "status": decision.status}
        if decision.reason:
            ack["reason"] = decision.reason
        self._emit("control-ack", ack)
        if decision.status == "rejected" or decision.next is None:
            return
        if decision.status == "accepted" and ctype == "finalize":
            self._drop_queued()
            note = msg.get("note")
            self._note = note if isinstance(note, str) and note.strip() else None
        self.state = decision.next
        self._perform(decision.action, msg, ctype)

    def _perform(self, action: str, msg: dict[str, Any] | None, reason: str) -> None:
        if action == "start-turn" and msg is not None:
            self._start_turn(str(msg.get("text", "")), str(msg.get("type")))
        elif action == "queue-steering" and msg is not None:
            self._steering.append((int(msg["seq"]), str(msg.get("text", ""))))
        elif action == "queue-follow-up" and msg is not None:
            self._follow_ups.append((int(msg["seq"]), str(msg.get("text", ""))))
        elif action == "start-finalize-turn":
            self._start_turn(self._note or DEFAULT_FINALIZE_NOTE, "finalize")
        elif action == "interrupt-turn":
            self._interrupt(reason)
        elif action == "abort":
            if self._turn is not None:
                self._interrupt(reason)
            else:
                self._exit(self.state, self.error)
        elif action == "finish":
            self._finish()
        elif action == "exit":
            self._exit(self.state, self.error)

    def _interrupt(self, reason: str) -> None:
        if self._turn is not None and self._turn.interrupt is None:
            self._turn.interrupt = reason

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

    def _start_turn(self, text: str, kind: str) -> _Turn:
        self._turns += 1
        request = TurnInput(text=text, kind=kind, turn=self._turns, tools=kind != "finalize")
        turn = _Turn(number=self._turns, request=request, items=iter(()))
        self._turn = turn
        try:
            turn.items = iter(self.agent.turn(request, _Context(self, turn)))
        except Exception as exc:  # noqa: BLE001
            turn.items = _raising(exc)
        self._emit("turn-started", {"turn": turn.number})
        return turn

    def _turn_ended(self, turn: _Turn, result: TurnResult | None, error: BaseException | None) -> None:
        self._turn = None
        if turn.thrown or error is not None:
            for call_id, name in list(turn.open_calls.items()):
                self._emit(
                    "tool-result",
                    normalize(
                        {
                            "type": "tool-result",
                            "name": name,
                            "id": call_id,
                            "tool-call-id": call_id,
                            "is-error?": True,
                            "result": "cancelled",
                        }
                    ),
                )
            turn.open_calls.clear()
        if error is not None:
            stop_reason = "error"
        elif turn.thrown:
            stop_reason = "aborted"
        elif result is not None:
            stop_reason = str(result.stop_reason)
        else:
            stop_reason = turn.stop_reason or "none"
        usage = dict(turn.usage)
        text = turn.text
        if result is not None:
            if result.usage:
                usage = {}
                _add_usage(usage, result.usage)
            if result.text is not None:
                text = result.text
        if turn.spoke or result is not None:
            self._last_text = text
            self._last_stop = stop_reason
        _add_usage(self._run_usage, usage)
        payload: dict[str, Any] = {"turn": turn.number, "stop-reason": stop_reason}
        if usage:
            payload["usage"] = usage
        self._emit("turn-complete", payload)
        if error is not None:
            self._fatal(f"agent failed: {_describe(error)}")
        else:
            self._advance("final-turn-done" if turn.request.final else "turn-done")
        if self.exit_status is None and self._turn is None and session.is_terminal(self.state):
            self._exit(self.state, self.error)
        if self.exit_status is None and self._turn is None and self.state == "ready":
            self._start_idle_turn()

    def _start_idle_turn(self) -> None:
        """Steering left over after a turn, or a queued follow-up, starts a turn on its own."""
        if self._steering:
            kind, queued = "steer", list(self._steering)
            self._steering.clear()
            event = "steering-injected"
        elif self._follow_ups:
            kind, queued = "follow-up", [self._follow_ups.pop(0)]
            event = "follow-up-injected"
        else:
            return
        decision = session.decide(self.state, kind)
        if decision.action != "start-turn" or decision.next is None:
            return
        self.state = decision.next
        text = "\n\n".join(t for _, t in queued)
        self._start_turn(text, kind)
        for ref, queued_text in queued:
            self._inject(event, ref, queued_text)

    # -- the end --------------------------------------------------------------------------------

    def _drop_queued(self) -> None:
        refs = [ref for ref, _ in self._steering] + [ref for ref, _ in self._follow_ups]
        self._steering.clear()
        self._follow_ups.clear()
        if refs:
            summary = f"dropped {len(refs)} queued input line(s)"
            # One info line; only a queue too long for one line is split over several.
            for start in range(0, len(refs), DROP_REFS_PER_LINE):
                self._emit(
                    "info",
                    {"timestamp": timestamp(), "summary": summary, "refs": refs[start : start + DROP_REFS_PER_LINE]},
                )

    def _finish(self) -> None:
        self._drop_queued()
        payload: dict[str, Any] = {}
        text = self._last_text
        if text:
            payload["final-text"] = text
        payload["stop-reason"] = self._last_stop or "none"
        if self._run_usage:
            payload["usage"] = dict(self._run_usage)
        line, rej = self._sender.next("result", payload)
        if line is None and text and rej is not None and rej.code == "too-large":
            path = self._write_final_text(text)
            limit = MAX_LINE_BYTES - RESULT_OVERHEAD_BYTES
            while line is None and limit > 0:
                payload["final-text"] = utf8_prefix(text, limit)
                payload["truncated?"] = True
                if path is not None:
                    payload["final-text-path"] = path
                line, rej = self._sender.next("result", payload)
                limit //= 2
            if line is None:
                payload.pop("final-text", None)
                payload.pop("usage", None)
                line, rej = self._sender.next("result", payload)
        if line is None:
            self._stderr(f"fenwire child: cannot encode result: {rej.reason if rej else 'unknown'}")
        else:
            self._buffer.append(line)
            self._buffer.append(b"\n")
            self._buffered += len(line) + 1
        self._exit("done", None)

    def _write_final_text(self, text: str) -> str | None:
        directory = os.path.dirname(os.path.abspath(self.event_path))
        try:
            fd, path = tempfile.mkstemp(prefix="fenwire-final-", suffix=".txt", dir=directory)
        except OSError as exc:
            self._stderr(f"fenwire child: cannot write the final text file: {exc}")
            return None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8", "surrogatepass"))
        except OSError as exc:
            self._stderr(f"fenwire child: cannot write the final text file: {exc}")
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        return path

    def _exit(self, status: str, error: str | None) -> None:
        if self.exit_status is not None:
            return
        self._drop_queued()
        payload: dict[str, Any] = {"status": status}
        if error:
            payload["error"] = truncate_line(first_line(error), 4096)
        self._emit("exit", payload)
        self.exit_status = status
        self._flush()
        self._close_agent()

    def _close_agent(self) -> None:
        if self._agent_closed:
            return
        self._agent_closed = True
        close = getattr(self.agent, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:  # noqa: BLE001
                self._stderr(f"fenwire child: agent close failed: {_describe(exc)}")


def _raising(exc: BaseException) -> Iterator[Any]:
    raise exc
    yield  # pragma: no cover


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
