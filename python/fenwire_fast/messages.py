"""Typed messages: a ``TypedDict`` per message type of the Fen wire protocol, for type checkers.

Generated from the tables in ``fenwire_fast._schema`` by ``python scripts/gen_schema_files.py``: do
not edit. Events are ``<Type>Event`` (``ToolCallEvent``), controls ``<Type>Control``
(``PromptControl``); ``Event`` and ``Control`` are the unions of each direction. The ``type`` field
and the enum kinds are ``Literal`` types; the envelope (``v``, ``seq``, ``type``, ``run``) is in
every one.

Field kinds and their types: string ``str``, boolean ``bool``, number ``float`` (an ``int`` is one
too), integer and pos ``int``, object ``dict[str, Any]``, array ``list[Any]``, refs ``list[int]``,
any ``Any``. They say what a sender writes; the validator accepts a little more, which these types
cannot say: ``2.0`` for an integer, an empty list for an object, an empty dict for an array, the
bounds of pos (1 to 2**53 - 1), fields the schema does not know (ignored), and a ``control-ack``
without ``ref`` only when its ``status`` is ``"rejected"``. ``fenwire_fast.decode`` checks all of it.
"""

# ruff: noqa: UP013 - the functional syntax throughout: most field names are not identifiers

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypeAlias, TypedDict

__all__ = [
    "Event",
    "Control",
    "AckStatus",
    "ExitStatus",
    "AgentStartedEvent",
    "UserEvent",
    "LlmStartEvent",
    "LlmEndEvent",
    "AssistantTextEvent",
    "AssistantTextDeltaEvent",
    "AssistantThinkingEvent",
    "AssistantThinkingDeltaEvent",
    "AssistantStreamEndEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "SteeringInjectedEvent",
    "FollowUpInjectedEvent",
    "AgentTurnCompleteEvent",
    "ErrorEvent",
    "InfoEvent",
    "ReadyEvent",
    "TurnStartedEvent",
    "TurnCompleteEvent",
    "ControlAckEvent",
    "ResultEvent",
    "ExitEvent",
    "PromptControl",
    "SteerControl",
    "FollowUpControl",
    "FinalizeControl",
    "CancelControl",
    "CloseControl",
]


AckStatus: TypeAlias = Literal["accepted", "rejected", "applied"]


ExitStatus: TypeAlias = Literal["done", "cancelled", "failed", "timed-out"]


AgentStartedEvent = TypedDict(
    "AgentStartedEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["agent-started"]],
        "run": Required[str],
        "provider": NotRequired[str],
        "model": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


UserEvent = TypedDict(
    "UserEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["user"]],
        "run": Required[str],
        "text": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


LlmStartEvent = TypedDict(
    "LlmStartEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["llm-start"]],
        "run": Required[str],
        "provider": NotRequired[str],
        "model": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


LlmEndEvent = TypedDict(
    "LlmEndEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["llm-end"]],
        "run": Required[str],
        "stop-reason": NotRequired[str],
        "usage": NotRequired[dict[str, Any]],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AssistantTextEvent = TypedDict(
    "AssistantTextEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["assistant-text"]],
        "run": Required[str],
        "final?": Required[bool],
        "content-index": NotRequired[int],
        "text": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AssistantTextDeltaEvent = TypedDict(
    "AssistantTextDeltaEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["assistant-text-delta"]],
        "run": Required[str],
        "content-index": NotRequired[int],
        "delta": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AssistantThinkingEvent = TypedDict(
    "AssistantThinkingEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["assistant-thinking"]],
        "run": Required[str],
        "final?": Required[bool],
        "content-index": NotRequired[int],
        "text": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AssistantThinkingDeltaEvent = TypedDict(
    "AssistantThinkingDeltaEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["assistant-thinking-delta"]],
        "run": Required[str],
        "content-index": NotRequired[int],
        "delta": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AssistantStreamEndEvent = TypedDict(
    "AssistantStreamEndEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["assistant-stream-end"]],
        "run": Required[str],
        "final?": Required[bool],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


ToolCallEvent = TypedDict(
    "ToolCallEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["tool-call"]],
        "run": Required[str],
        "name": Required[str],
        "id": NotRequired[str],
        "arguments": NotRequired[Any],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


ToolResultEvent = TypedDict(
    "ToolResultEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["tool-result"]],
        "run": Required[str],
        "name": Required[str],
        "id": NotRequired[str],
        "tool-call-id": NotRequired[str],
        "duration-seconds": NotRequired[float],
        "is-error?": Required[bool],
        "result": NotRequired[Any],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


SteeringInjectedEvent = TypedDict(
    "SteeringInjectedEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["steering-injected"]],
        "run": Required[str],
        "text": NotRequired[str],
        "ref": NotRequired[int],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


FollowUpInjectedEvent = TypedDict(
    "FollowUpInjectedEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["follow-up-injected"]],
        "run": Required[str],
        "text": NotRequired[str],
        "ref": NotRequired[int],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


AgentTurnCompleteEvent = TypedDict(
    "AgentTurnCompleteEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["agent-turn-complete"]],
        "run": Required[str],
        "status": NotRequired[str],
        "error": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


ErrorEvent = TypedDict(
    "ErrorEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["error"]],
        "run": Required[str],
        "error": NotRequired[str],
        "source": NotRequired[str],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


InfoEvent = TypedDict(
    "InfoEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["info"]],
        "run": Required[str],
        "refs": NotRequired[list[int]],
        "timestamp": NotRequired[str],
        "summary": NotRequired[str],
        "run-id": NotRequired[str],
        "agent": NotRequired[str],
        "requested-cwd": NotRequired[str],
        "cwd": NotRequired[str],
        "physical-cwd": NotRequired[str],
        "transport-truncated?": NotRequired[bool],
    },
)


ReadyEvent = TypedDict(
    "ReadyEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["ready"]],
        "run": Required[str],
    },
)


TurnStartedEvent = TypedDict(
    "TurnStartedEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["turn-started"]],
        "run": Required[str],
        "turn": Required[int],
    },
)


TurnCompleteEvent = TypedDict(
    "TurnCompleteEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["turn-complete"]],
        "run": Required[str],
        "turn": Required[int],
        "stop-reason": Required[str],
        "usage": NotRequired[dict[str, Any]],
    },
)


ControlAckEvent = TypedDict(
    "ControlAckEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["control-ack"]],
        "run": Required[str],
        "ref": NotRequired[int],
        "status": Required[AckStatus],
        "reason": NotRequired[str],
    },
)


ResultEvent = TypedDict(
    "ResultEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["result"]],
        "run": Required[str],
        "final-text": NotRequired[str],
        "stop-reason": Required[str],
        "usage": NotRequired[dict[str, Any]],
        "truncated?": NotRequired[bool],
        "final-text-path": NotRequired[str],
    },
)


ExitEvent = TypedDict(
    "ExitEvent",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["exit"]],
        "run": Required[str],
        "status": Required[ExitStatus],
        "error": NotRequired[str],
    },
)


PromptControl = TypedDict(
    "PromptControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["prompt"]],
        "run": Required[str],
        "text": Required[str],
    },
)


SteerControl = TypedDict(
    "SteerControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["steer"]],
        "run": Required[str],
        "text": Required[str],
    },
)


FollowUpControl = TypedDict(
    "FollowUpControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["follow-up"]],
        "run": Required[str],
        "text": Required[str],
    },
)


FinalizeControl = TypedDict(
    "FinalizeControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["finalize"]],
        "run": Required[str],
        "note": NotRequired[str],
    },
)


CancelControl = TypedDict(
    "CancelControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["cancel"]],
        "run": Required[str],
    },
)


CloseControl = TypedDict(
    "CloseControl",
    {
        "v": Required[Literal[1]],
        "seq": Required[int],
        "type": Required[Literal["close"]],
        "run": Required[str],
    },
)


#: Any event: a line a child writes.
Event: TypeAlias = (
    AgentStartedEvent
    | UserEvent
    | LlmStartEvent
    | LlmEndEvent
    | AssistantTextEvent
    | AssistantTextDeltaEvent
    | AssistantThinkingEvent
    | AssistantThinkingDeltaEvent
    | AssistantStreamEndEvent
    | ToolCallEvent
    | ToolResultEvent
    | SteeringInjectedEvent
    | FollowUpInjectedEvent
    | AgentTurnCompleteEvent
    | ErrorEvent
    | InfoEvent
    | ReadyEvent
    | TurnStartedEvent
    | TurnCompleteEvent
    | ControlAckEvent
    | ResultEvent
    | ExitEvent
)


#: Any control: a line a parent writes.
Control: TypeAlias = PromptControl | SteerControl | FollowUpControl | FinalizeControl | CancelControl | CloseControl
