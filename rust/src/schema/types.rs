//! The message types and their payload schemas: one table, [`message_types!`], gives the type
//! names in order, [`EVENT_TYPES`] and [`CONTROL_TYPES`], [`type_index`] and the schema of each
//! type, so no index or list is kept by hand.

use super::{Direction, KeyId};

/// The kind of value a payload field must hold (the keys of `_schema.py`'s `_KINDS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Boolean,
    Number,
    Integer,
    Object,
    Pos,
    Refs,
    Any,
    AckStatus,
    ExitStatus,
}

impl Kind {
    /// The kind's name in `_schema.py`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Boolean => "boolean",
            Kind::Number => "number",
            Kind::Integer => "integer",
            Kind::Object => "object",
            Kind::Pos => "pos",
            Kind::Refs => "refs",
            Kind::Any => "any",
            Kind::AckStatus => "ack-status",
            Kind::ExitStatus => "exit-status",
        }
    }
}

/// The payload schema of one message type.
pub struct Schema {
    // `required` and `fields` in `_schema.py`'s order (errors are reported in it).
    pub(crate) required: &'static [KeyId],
    pub(crate) fields: &'static [(KeyId, Kind)],
    pub(crate) is_ack: bool,
    /// Bits of the required keys, of the typed (not `any`) keys, and each key's kind: for the
    /// fast "is it valid at all" check.
    pub(crate) required_mask: u64,
    pub(crate) typed_mask: u64,
    pub(crate) kinds: [Kind; KeyId::COUNT],
}

use KeyId as K;

macro_rules! display {
    ($($f:expr,)*) => {
        &[
            $($f,)*
            (K::Timestamp, Kind::String),
            (K::Summary, Kind::String),
            (K::RunId, Kind::String),
            (K::Agent, Kind::String),
            (K::RequestedCwd, Kind::String),
            (K::Cwd, Kind::String),
            (K::PhysicalCwd, Kind::String),
            (K::TransportTruncated, Kind::Boolean),
        ]
    };
}

const fn schema(required: &'static [KeyId], fields: &'static [(KeyId, Kind)]) -> Schema {
    make_schema(required, fields, false)
}

const fn make_schema(
    required: &'static [KeyId],
    fields: &'static [(KeyId, Kind)],
    is_ack: bool,
) -> Schema {
    let mut required_mask = 0u64;
    let mut i = 0;
    while i < required.len() {
        required_mask |= 1 << required[i] as u32;
        i += 1;
    }
    let mut typed_mask = 0u64;
    let mut kinds = [Kind::Any; KeyId::COUNT];
    let mut i = 0;
    while i < fields.len() {
        let (id, kind) = fields[i];
        if !matches!(kind, Kind::Any) {
            typed_mask |= 1 << id as u32;
        }
        kinds[id as usize] = kind;
        i += 1;
    }
    Schema {
        required,
        fields,
        is_ack,
        required_mask,
        typed_mask,
        kinds,
    }
}

static TOOL_CALL: Schema = schema(
    &[K::Name],
    display!(
        (K::Name, Kind::String),
        (K::Id, Kind::String),
        (K::Arguments, Kind::Any),
    ),
);
static TOOL_RESULT: Schema = schema(
    &[K::Name, K::IsError],
    display!(
        (K::Name, Kind::String),
        (K::Id, Kind::String),
        (K::ToolCallId, Kind::String),
        (K::DurationSeconds, Kind::Number),
        (K::IsError, Kind::Boolean),
        (K::Result, Kind::Any),
    ),
);
static TEXT_BLOCK: Schema = schema(
    &[K::Final],
    display!(
        (K::Final, Kind::Boolean),
        (K::ContentIndex, Kind::Integer),
        (K::Text, Kind::String),
    ),
);
static DELTA: Schema = schema(
    &[],
    display!((K::ContentIndex, Kind::Integer), (K::Delta, Kind::String),),
);
static STREAM_END: Schema = schema(&[K::Final], display!((K::Final, Kind::Boolean),));
static USER: Schema = schema(&[], display!((K::Text, Kind::String),));
static INJECTED: Schema = schema(&[], display!((K::Text, Kind::String), (K::Ref, Kind::Pos),));
static PROVIDER_MODEL: Schema = schema(
    &[],
    display!((K::Provider, Kind::String), (K::Model, Kind::String),),
);
static LLM_END: Schema = schema(
    &[],
    display!((K::StopReason, Kind::String), (K::Usage, Kind::Object),),
);
static AGENT_TURN_COMPLETE: Schema = schema(
    &[],
    display!((K::Status, Kind::String), (K::Error, Kind::String),),
);
static ERROR: Schema = schema(
    &[],
    display!((K::Error, Kind::String), (K::Source, Kind::String),),
);
static INFO: Schema = schema(&[], display!((K::Refs, Kind::Refs),));
static EMPTY: Schema = schema(&[], &[]);
static TURN_STARTED: Schema = schema(&[K::Turn], &[(K::Turn, Kind::Pos)]);
static TURN_COMPLETE: Schema = schema(
    &[K::Turn, K::StopReason],
    &[
        (K::Turn, Kind::Pos),
        (K::StopReason, Kind::String),
        (K::Usage, Kind::Object),
    ],
);
static CONTROL_ACK: Schema = make_schema(
    &[K::Status],
    &[
        (K::Ref, Kind::Pos),
        (K::Status, Kind::AckStatus),
        (K::Reason, Kind::String),
    ],
    true,
);
static RESULT: Schema = schema(
    &[K::StopReason],
    &[
        (K::FinalText, Kind::String),
        (K::StopReason, Kind::String),
        (K::Usage, Kind::Object),
        (K::Truncated, Kind::Boolean),
        (K::FinalTextPath, Kind::String),
    ],
);
static EXIT: Schema = schema(
    &[K::Status],
    &[(K::Status, Kind::ExitStatus), (K::Error, Kind::String)],
);
static TEXT_REQUIRED: Schema = schema(&[K::Text], &[(K::Text, Kind::String)]);
static FINALIZE: Schema = schema(&[], &[(K::Note, Kind::String)]);

pub const ACK_STATUSES: [&str; 3] = ["accepted", "rejected", "applied"];
pub const EXIT_STATUSES: [&str; 4] = ["done", "cancelled", "failed", "timed-out"];

impl Schema {
    /// The required field names, in order.
    pub fn required(&self) -> impl ExactSizeIterator<Item = &'static str> {
        self.required.iter().map(|k| k.name())
    }

    /// The fields and their kinds, in order.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = (&'static str, Kind)> {
        self.fields.iter().map(|&(k, kind)| (k.name(), kind))
    }
}

/// Declares the message types, events first, each with its payload schema: generates the
/// [`MessageType`] enum (whose discriminant is the type's index), [`EVENT_TYPES`],
/// [`CONTROL_TYPES`], [`type_index`] and the per-index schema table.
macro_rules! message_types {
    (
        event { $($event:ident = $event_name:literal => $event_schema:ident,)* }
        control { $($control:ident = $control_name:literal => $control_schema:ident,)* }
    ) => {
        /// A message type; its discriminant is its index in [`EVENT_TYPES`] followed by
        /// [`CONTROL_TYPES`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum MessageType { $($event,)* $($control,)* }

        /// The event types (child to parent), in the protocol's order.
        pub const EVENT_TYPES: [&str; [$($event_name,)*].len()] = [$($event_name,)*];
        /// The control types (parent to child), in the protocol's order.
        pub const CONTROL_TYPES: [&str; [$($control_name,)*].len()] = [$($control_name,)*];

        /// The schema of each type, by [`type_index`].
        static SCHEMAS: [&Schema; EVENT_TYPES.len() + CONTROL_TYPES.len()] =
            [$(&$event_schema,)* $(&$control_schema,)*];

        /// The index of a type name in [`EVENT_TYPES`] followed by [`CONTROL_TYPES`].
        #[inline]
        pub fn type_index(name: &str) -> Option<usize> {
            Some(match name {
                $($event_name => MessageType::$event as usize,)*
                $($control_name => MessageType::$control as usize,)*
                _ => return None,
            })
        }
    };
}

message_types! {
    event {
        AgentStarted = "agent-started" => PROVIDER_MODEL,
        User = "user" => USER,
        LlmStart = "llm-start" => PROVIDER_MODEL,
        LlmEnd = "llm-end" => LLM_END,
        AssistantText = "assistant-text" => TEXT_BLOCK,
        AssistantTextDelta = "assistant-text-delta" => DELTA,
        AssistantThinking = "assistant-thinking" => TEXT_BLOCK,
        AssistantThinkingDelta = "assistant-thinking-delta" => DELTA,
        AssistantStreamEnd = "assistant-stream-end" => STREAM_END,
        ToolCall = "tool-call" => TOOL_CALL,
        ToolResult = "tool-result" => TOOL_RESULT,
        SteeringInjected = "steering-injected" => INJECTED,
        FollowUpInjected = "follow-up-injected" => INJECTED,
        AgentTurnComplete = "agent-turn-complete" => AGENT_TURN_COMPLETE,
        Error = "error" => ERROR,
        Info = "info" => INFO,
        Ready = "ready" => EMPTY,
        TurnStarted = "turn-started" => TURN_STARTED,
        TurnComplete = "turn-complete" => TURN_COMPLETE,
        ControlAck = "control-ack" => CONTROL_ACK,
        Result = "result" => RESULT,
        Exit = "exit" => EXIT,
    }
    control {
        Prompt = "prompt" => TEXT_REQUIRED,
        Steer = "steer" => TEXT_REQUIRED,
        FollowUp = "follow-up" => TEXT_REQUIRED,
        Finalize = "finalize" => FINALIZE,
        Cancel = "cancel" => EMPTY,
        Close = "close" => EMPTY,
    }
}

/// The schema of the type with index `index` (see [`type_index`]) when that type belongs to
/// `direction`.
#[inline]
pub fn schema_at(direction: Direction, index: usize) -> Option<&'static Schema> {
    let is_event = index < EVENT_TYPES.len();
    if is_event == (direction == Direction::Event) {
        SCHEMAS.get(index).copied()
    } else {
        None
    }
}

/// The schema of type `name` in `direction`.
pub fn schema_for(direction: Direction, name: &str) -> Option<&'static Schema> {
    schema_at(direction, type_index(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_index_matches_the_lists() {
        for (i, t) in EVENT_TYPES.iter().chain(CONTROL_TYPES.iter()).enumerate() {
            assert_eq!(type_index(t), Some(i), "{t}");
        }
        assert_eq!(type_index("nope"), None);
    }

    #[test]
    fn every_type_has_a_schema_in_its_direction_only() {
        for t in EVENT_TYPES {
            assert!(schema_for(Direction::Event, t).is_some(), "{t}");
            assert!(schema_for(Direction::Control, t).is_none(), "{t}");
        }
        for t in CONTROL_TYPES {
            assert!(schema_for(Direction::Control, t).is_some(), "{t}");
            assert!(schema_for(Direction::Event, t).is_none(), "{t}");
        }
    }
}
