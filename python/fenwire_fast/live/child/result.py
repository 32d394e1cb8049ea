"""The run's result: what each turn ends with, and the ``result`` event built from the last one.

A turn that returns a :class:`~fenwire_fast.live.child.agent.TurnResult` says its stop reason, usage and
final text itself; otherwise they fall back to what its events said (the ``llm-end`` stop reasons
and summed usage, the last ``assistant-text``). An interrupted turn stops with ``aborted``, a failed
one with ``error``. The ``result`` carries the last turn that spoke and the usage of every turn.

The agent's text and stop reason are scrubbed as a display event's strings are (control characters
and lone surrogates escaped, with the note that says so), so the wire can always carry them: the
final text is never cut by it (a long one goes through ``final-text-path``), the stop reason is cut
to :data:`STOP_REASON_BYTES`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import MAX_LINE_BYTES
from ...text import scrub, utf8_prefix
from .agent import TurnResult
from .usage import add_usage

if TYPE_CHECKING:
    from .event_writer import EventWriter
    from .turn import Turn

__all__ = ["RunResult", "add_usage", "wire_text", "write_final_text", "RESULT_OVERHEAD_BYTES", "STOP_REASON_BYTES"]

#: Room left in a ``result`` line for everything but the cut final text.
RESULT_OVERHEAD_BYTES = 1024
#: An agent's stop reason is cut to this many bytes.
STOP_REASON_BYTES = 256


def wire_text(text: object) -> str | None:
    """An agent's final text as the wire carries it: scrubbed as a display event's text is
    (control characters and lone surrogates escaped, a note added), never cut; ``None`` for
    anything but a string."""
    if not isinstance(text, str):
        return None
    # an escape is at most 6 bytes for one character, and the note far less than 256
    return scrub(text, 6 * len(text) + 256)[0]


class RunResult:
    """The run's result so far: the final text and stop reason of the last turn that spoke, and the
    usage summed over every turn."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}

    def turn_complete(self, turn: Turn, result: TurnResult | None, error: BaseException | None) -> dict[str, Any]:
        """Record how ``turn`` ended; return the ``turn-complete`` payload (turn, stop reason, usage)."""
        if error is not None:
            stop_reason = "error"
        elif turn.thrown:
            stop_reason = "aborted"
        elif result is not None:
            stop_reason = str(result.stop_reason)
        else:
            stop_reason = turn.stop_reason or "none"
        stop_reason = scrub(stop_reason, STOP_REASON_BYTES)[0]
        usage = dict(turn.usage)
        text = turn.text
        if result is not None:
            if result.usage:
                usage = {}
                add_usage(usage, result.usage)
            if result.text is not None:
                text = result.text
        if turn.spoke or result is not None:
            self.text = text
            self.stop_reason = stop_reason
        add_usage(self.usage, usage)
        payload: dict[str, Any] = {"turn": turn.number, "stop-reason": stop_reason}
        if usage:
            payload["usage"] = usage
        return payload

    def encode(self, writer: EventWriter, stderr: Callable[[str], None]) -> bytes | None:
        """The ``result`` line, stamped by ``writer``; ``None`` (reported on stderr) if it cannot be made.

        A final text too large for one line is written whole to a private file beside the event
        file (``final-text-path``) and cut, halving the cut until the line fits (``truncated?``);
        as a last resort the line goes without the text and the usage."""
        payload: dict[str, Any] = {}
        text = wire_text(self.text)
        if text:
            payload["final-text"] = text
        payload["stop-reason"] = self.stop_reason or "none"
        if self.usage:
            payload["usage"] = dict(self.usage)
        line, rej = writer.encode("result", payload)
        if line is None and text and rej is not None and rej.code == "too-large":
            directory = os.path.dirname(os.path.abspath(writer.path))
            path = write_final_text(text, directory, stderr)
            limit = MAX_LINE_BYTES - RESULT_OVERHEAD_BYTES
            while line is None and limit > 0:
                payload["final-text"] = utf8_prefix(text, limit)
                payload["truncated?"] = True
                if path is not None:
                    payload["final-text-path"] = path
                line, rej = writer.encode("result", payload)
                limit //= 2
            if line is None:
                payload.pop("final-text", None)
                payload.pop("usage", None)
                line, rej = writer.encode("result", payload)
        if line is None:
            stderr(f"fenwire child: cannot encode result: {rej.reason if rej else 'unknown'}")
        return line


def write_final_text(text: str, directory: str, stderr: Callable[[str], None]) -> str | None:
    """Write ``text`` to a new private file (mode 0600) in ``directory``; return its path, or
    ``None`` (reported on stderr, nothing left behind) when it cannot be written."""
    try:
        fd, path = tempfile.mkstemp(prefix="fenwire-final-", suffix=".txt", dir=directory)
    except OSError as exc:
        stderr(f"fenwire child: cannot write the final text file: {exc}")
        return None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", "surrogatepass"))
    except OSError as exc:
        stderr(f"fenwire child: cannot write the final text file: {exc}")
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    return path
