"""Agents for the live tests, loaded by children with ``--agent live_agents:<factory>``."""

from __future__ import annotations

import os
import signal
from typing import Any

from fenwire_fast.live.child.agent import TurnContext, TurnGenerator, TurnInput, TurnInterrupted, TurnResult, Wait


class EchoAgent:
    """One step per turn: echoes the input and reports its own result (config: the text's
    ``prefix``, the ``stop_reason``)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.prefix = (config or {}).get("prefix", "echo: ")
        self.stop_reason = (config or {}).get("stop_reason", "end_turn")
        self.closed = False

    def start(self) -> list[dict[str, Any]]:
        return [{"type": "agent-started", "provider": "test", "model": "echo"}]

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "llm-start", "provider": "test", "model": "echo"}
        yield {"type": "assistant-text-delta", "content-index": 0, "delta": request.text}
        text = f"{self.prefix}{request.text} (turn {request.turn}, tools {request.tools})"
        yield {"type": "assistant-text", "final?": True, "content-index": 0, "text": text}
        return TurnResult(stop_reason=self.stop_reason, usage={"input": 3, "output": 5}, text=text)


def echo(config: dict[str, Any] | None = None) -> EchoAgent:
    return EchoAgent(config)


class MidLineKiller:
    """Writes half an event line straight into the event file, then SIGKILLs its own process."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "llm-start", "provider": "test", "model": "killer"}
        # a tool-call makes the presenter flush everything before it
        yield {"type": "tool-call", "name": "read", "id": "call-1", "arguments": {}}
        fd = os.open(os.environ["FEN_WIRE_EVENT_PATH"], os.O_WRONLY | os.O_APPEND)
        os.write(fd, b'{"v":1,"seq":99,"type":"tool-result","run":"x","name":"read","is-')
        os.kill(os.getpid(), signal.SIGKILL)
        yield {"type": "llm-end", "stop-reason": "unreachable"}


def midline_killer() -> MidLineKiller:
    return MidLineKiller()


def not_an_agent() -> int:
    return 42


def broken_factory() -> None:
    raise RuntimeError("no model configured")


class CleanupAgent:
    """Catches the interruption, reports its own cancelled tool result, then ends the turn."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "tool-call", "name": "slow", "id": "slow-1", "arguments": {}}
        try:
            while True:
                yield Wait(0.05)
        except TurnInterrupted as exc:
            yield {
                "type": "tool-result",
                "name": "slow",
                "id": "slow-1",
                "tool-call-id": "slow-1",
                "is-error?": True,
                "result": f"stopped by {exc.reason}",
            }
            yield {"type": "error", "error": f"interrupted: {exc.reason}", "source": "agent"}
        return None


def cleanup() -> CleanupAgent:
    return CleanupAgent()


class StubbornAgent:
    """Ignores interruptions and would yield events forever."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        n = 0
        while True:
            n += 1
            try:
                yield {"type": "assistant-text-delta", "content-index": 0, "delta": f"{n} "}
                if n < 5:
                    yield Wait(0.05)
            except TurnInterrupted:
                pass


def stubborn() -> StubbornAgent:
    return StubbornAgent()


class BadYieldAgent:
    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        yield {"type": "llm-start"}
        yield 42  # type: ignore[misc]


def bad_yield() -> BadYieldAgent:
    return BadYieldAgent()


class BadStartAgent(EchoAgent):
    def start(self) -> list[dict[str, Any]]:
        raise RuntimeError("cannot reach the model")


def bad_start() -> BadStartAgent:
    return BadStartAgent()


class ListAgent:
    """A turn that is a plain list (no generator): it cannot be interrupted mid-way."""

    def turn(self, request: TurnInput, ctx: TurnContext) -> Any:
        return [
            {"type": "assistant-text", "final?": True, "text": f"list says {request.text}"},
            {"type": "llm-end", "stop-reason": "stop", "usage": {"output": 2}},
        ]


def list_agent() -> ListAgent:
    return ListAgent()


class SabotagedMock:
    """The mock agent with one event of turn 1 sabotaged (its third text delta): ``drop``,
    ``duplicate``, ``alter`` or ``reorder`` (sent after the fourth); ``none`` leaves it alone.
    The mode comes from ``FENWIRE_SABOTAGE``, the script's knobs from ``FENWIRE_MOCK``."""

    def __init__(self, mode: str) -> None:
        from fenwire_fast.live.child.mock_agent import MockAgent, config_from_env

        self.mode = mode
        self.inner = MockAgent(config_from_env())

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        inner = self.inner.turn(request, ctx)
        if request.turn != 1 or self.mode == "none":
            return inner
        return self._sabotage(inner)

    def _sabotage(self, inner: TurnGenerator) -> TurnGenerator:
        deltas = 0
        held: dict[str, Any] | None = None
        try:
            item = next(inner)
            while True:
                out: list[Any] = [item]
                if isinstance(item, dict) and item.get("type") == "assistant-text-delta":
                    deltas += 1
                    if deltas == 3:
                        out = {
                            "drop": [],
                            "duplicate": [item, item],
                            "alter": [{**item, "delta": item["delta"].upper()}],
                            "reorder": [],
                        }[self.mode]
                        held = item if self.mode == "reorder" else None
                    elif deltas == 4 and held is not None:
                        out = [item, held]
                try:
                    yield from out
                except GeneratorExit:
                    inner.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 - forwarded to the mock (TurnInterrupted)
                    item = inner.throw(exc)
                    continue
                item = next(inner)
        except StopIteration as stop:
            return stop.value


def sabotaged() -> SabotagedMock:
    return SabotagedMock(os.environ.get("FENWIRE_SABOTAGE", "none"))


class SpawnerAgent:
    """A tool that starts a subprocess of its own (``sleep 600``, or one that ignores SIGTERM) and
    leaves it running, writing ``"<child pid> <grandchild pid>"`` to ``pid_file``. Then the turn
    ``ends`` (``done``: it returns), ``waits`` (``yield``: cancellable) or ``blocks`` (``block``:
    sleeps, reading no control: only the backstop helps)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.pid_file = str(config["pid_file"])
        self.then = str(config.get("then", "done"))
        self.stubborn = bool(config.get("stubborn", False))

    def turn(self, request: TurnInput, ctx: TurnContext) -> TurnGenerator:
        import subprocess
        import time

        command = ["sh", "-c", "trap '' TERM; exec sleep 600"] if self.stubborn else ["sleep", "600"]
        yield {"type": "tool-call", "name": "bash", "id": "call-1", "arguments": {"command": " ".join(command)}}
        grandchild = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        with open(self.pid_file + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {grandchild.pid}")
        os.replace(self.pid_file + ".tmp", self.pid_file)
        yield {"type": "tool-result", "name": "bash", "id": "call-1", "tool-call-id": "call-1", "result": "started"}
        if self.then == "block":
            time.sleep(3600)
        while self.then == "yield":
            yield Wait(0.05)
        return TurnResult(stop_reason="end_turn", text="left a subprocess behind")


def spawner(config: dict[str, Any]) -> SpawnerAgent:
    return SpawnerAgent(config)
