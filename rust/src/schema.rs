//! The protocol's message schemas and the validator, mirroring `python/fenwire_fast/_schema.py`
//! and `_pure.validate` check for check and reason for reason.
//!
//! The validator works on [`Fields`]: the shapes of the known top-level fields of a message,
//! recorded by the JSON parser while it builds the message (or read off a Python dict), so no
//! dict lookups happen on the hot path.

use crate::json::Number;

/// `MAX_SAFE_INTEGER = 2**53 - 1`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
pub const VERSION: u64 = 1;
pub const MAX_LINE_BYTES: usize = 65536;

/// Byte equality for short slices without a call into libc's `memcmp` (which showed up at 4 %
/// of `Receiver.feed` time comparing keys and cached values): overlapping 4- or 8-byte loads.
#[inline(always)]
pub fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn u32_at(s: &[u8], i: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(w)
    }
    fn u64_at(s: &[u8], i: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(w)
    }
    match n {
        0 => true,
        1..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=8 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        9..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        17..=32 => {
            u64_at(a, 0) == u64_at(b, 0)
                && u64_at(a, 8) == u64_at(b, 8)
                && u64_at(a, n - 16) == u64_at(b, n - 16)
                && u64_at(a, n - 8) == u64_at(b, n - 8)
        }
        _ => a == b,
    }
}

/// The perfect hash of [`KeyId::from_name`] (found by search: no two protocol keys collide).
#[inline(always)]
const fn key_hash(b: &[u8]) -> usize {
    let n = b.len();
    (n.wrapping_mul(2)
        .wrapping_add((b[0] as usize) * 50)
        .wrapping_add(b[n - 1] as usize)
        .wrapping_add((b[n / 2] as usize) * 7))
        % 128
}

macro_rules! keys {
    ($($id:ident = $name:literal,)*) => {
        /// A field name the protocol knows (any schema's field, or an envelope field).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum KeyId { $($id,)* }

        impl KeyId {
            pub const ALL: &'static [KeyId] = &[$(KeyId::$id,)*];
            pub const COUNT: usize = [$($name,)*].len();

            pub fn name(self) -> &'static str {
                match self { $(KeyId::$id => $name,)* }
            }

            /// The key named `name`, by a perfect hash of (length, first, middle and last
            /// byte) checked at compile time, then one comparison.
            #[inline(always)]
            pub fn from_name(name: &str) -> Option<KeyId> {
                const NAMES: &[&str] = &[$($name,)*];
                static TABLE: [u8; 128] = {
                    let mut t = [u8::MAX; 128];
                    let mut i = 0;
                    while i < NAMES.len() {
                        let h = key_hash(NAMES[i].as_bytes());
                        assert!(t[h] == u8::MAX, "key hash collision");
                        t[h] = i as u8;
                        i += 1;
                    }
                    t
                };
                let b = name.as_bytes();
                if b.is_empty() {
                    return None;
                }
                let i = TABLE[key_hash(b)];
                if i == u8::MAX {
                    return None;
                }
                let i = i as usize;
                if short_eq(NAMES[i].as_bytes(), b) { Some(KeyId::ALL[i]) } else { None }
            }
        }
    };
}

keys! {
    V = "v",
    Seq = "seq",
    Type = "type",
    Run = "run",
    Timestamp = "timestamp",
    Summary = "summary",
    RunId = "run-id",
    Agent = "agent",
    RequestedCwd = "requested-cwd",
    Cwd = "cwd",
    PhysicalCwd = "physical-cwd",
    TransportTruncated = "transport-truncated?",
    Name = "name",
    Id = "id",
    Arguments = "arguments",
    ToolCallId = "tool-call-id",
    DurationSeconds = "duration-seconds",
    IsError = "is-error?",
    Result = "result",
    Final = "final?",
    ContentIndex = "content-index",
    Text = "text",
    Delta = "delta",
    Ref = "ref",
    Provider = "provider",
    Model = "model",
    StopReason = "stop-reason",
    Usage = "usage",
    Status = "status",
    Error = "error",
    Source = "source",
    Refs = "refs",
    Turn = "turn",
    Reason = "reason",
    FinalText = "final-text",
    Truncated = "truncated?",
    FinalTextPath = "final-text-path",
    Note = "note",
}

impl KeyId {
    /// Fields whose string value the validator needs to read (not just its kind).
    #[inline]
    pub fn keeps_text(self) -> bool {
        matches!(self, KeyId::Type | KeyId::Run | KeyId::Status)
    }
}

// `Fields::present` is a u64 bitmask over the keys.
const _: () = assert!(KeyId::COUNT <= 64);

/// Where a kept string's text sits in its [`Fields`]' arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextRef {
    start: u32,
    end: u32,
}

/// What the validator needs to know about a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Null,
    Bool(bool),
    Num(Number),
    /// A Python int outside the 64-bit ranges (only from `validate` of a Python dict); `text` is
    /// its decimal form when it was needed.
    BigInt {
        negative: bool,
        text: Option<TextRef>,
    },
    /// A string; its text is kept (in the [`Fields`] arena) only for [`KeyId::keeps_text`]
    /// fields. `None` there means the text could not be read as UTF-8 (a Python str with a lone
    /// surrogate).
    Str(Option<TextRef>),
    /// A list (the items of a top-level `refs` list are in [`Fields::ref_items`]).
    Array {
        empty: bool,
    },
    Object {
        empty: bool,
    },
    /// Anything else a Python dict may hold (not from JSON).
    Other,
}

impl Shape {
    fn is_number(&self) -> bool {
        matches!(self, Shape::Num(_) | Shape::BigInt { .. })
    }

    /// `_is_integral`: an int (never a bool), or a float with an integral value.
    fn is_integral(&self) -> bool {
        match self {
            Shape::Num(Number::Int(_) | Number::UInt(_)) | Shape::BigInt { .. } => true,
            Shape::Num(Number::Float(f)) => f.is_finite() && f.fract() == 0.0,
            _ => false,
        }
    }

    /// `_usable_seq` / `_ok_pos`: an integral number in 1..=MAX_SAFE_INTEGER, as an int.
    pub fn usable_pos(&self) -> Option<u64> {
        match *self {
            Shape::Num(Number::Int(i)) if (1..=MAX_SAFE_INTEGER as i64).contains(&i) => {
                Some(i as u64)
            }
            Shape::Num(Number::Float(f))
                if f.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER as f64).contains(&f) =>
            {
                Some(f as u64)
            }
            _ => None,
        }
    }

    /// `(below 1, above MAX_SAFE_INTEGER)` for a number.
    fn range(&self) -> (bool, bool) {
        let max = MAX_SAFE_INTEGER;
        match *self {
            Shape::Num(Number::Int(i)) => (i < 1, i > max as i64),
            Shape::Num(Number::UInt(u)) => (false, u > max),
            Shape::Num(Number::Float(f)) => (f < 1.0, f > max as f64),
            Shape::BigInt { negative, .. } => (negative, !negative),
            _ => (false, false),
        }
    }

    fn is_string(&self) -> bool {
        matches!(self, Shape::Str(_))
    }

    fn ok_object(&self) -> bool {
        matches!(self, Shape::Object { .. } | Shape::Array { empty: true })
    }

    fn ok_array(&self) -> bool {
        matches!(self, Shape::Array { .. } | Shape::Object { empty: true })
    }
}

/// The keys of a message's top-level object in order (`None`: an unknown key), up to the first
/// [`KeyOrder::MAX`]: a fixed array, copied whole (no allocation or capacity checks per key).
#[derive(Debug, Clone, Copy)]
struct KeyOrder {
    ids: [Option<KeyId>; KeyOrder::MAX],
    len: u8,
}

impl KeyOrder {
    const MAX: usize = 32;
    const EMPTY: KeyOrder = KeyOrder {
        ids: [None; KeyOrder::MAX],
        len: 0,
    };
}

/// The shapes of the known top-level fields of one message.
#[derive(Debug, Clone)]
pub struct Fields {
    /// Bit `id` is set when field `id` is present.
    present: u64,
    shapes: [Shape; KeyId::COUNT],
    /// The kept strings of this message, back to back (reused between messages: no allocation
    /// per message on the hot path).
    arena: String,
    /// The shapes of the items of a top-level `refs` list.
    pub ref_items: Vec<Shape>,
    /// The key order of the previous message, and of this one so far (`None`: an unknown key).
    prev_keys: KeyOrder,
    keys: KeyOrder,
    /// The key order last seen for each message type (index of `type_index`), used once this
    /// message's `type` is known: streams interleave types with different key orders.
    type_keys: Vec<KeyOrder>,
    current_type: Option<usize>,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            present: 0,
            shapes: [Shape::Null; KeyId::COUNT],
            arena: String::new(),
            ref_items: Vec::new(),
            prev_keys: KeyOrder::EMPTY,
            keys: KeyOrder::EMPTY,
            type_keys: Vec::new(),
            current_type: None,
        }
    }
}

impl Fields {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn clear(&mut self) {
        self.present = 0;
        self.arena.clear();
        if self.keys.len != 0 {
            if let Some(t) = self.current_type.take() {
                if self.type_keys.len() <= t {
                    self.type_keys.resize(t + 1, KeyOrder::EMPTY);
                }
                self.type_keys[t] = self.keys;
            }
            self.prev_keys = self.keys;
            self.keys.len = 0;
        }
        self.current_type = None;
    }

    /// The key the previous message had at position `index` of its top-level object.
    #[inline]
    pub fn predicted(&self, index: usize) -> Option<KeyId> {
        let order = match self.current_type.and_then(|t| self.type_keys.get(t)) {
            Some(order) if order.len != 0 => order,
            _ => &self.prev_keys,
        };
        if index < order.len as usize {
            order.ids[index]
        } else {
            None
        }
    }

    /// How many keys the previous message had.
    #[inline]
    pub fn predicted_len(&self) -> usize {
        self.prev_keys.len as usize
    }

    /// Record the key read at position `index` (a prediction for the next message).
    #[inline]
    pub fn saw_key(&mut self, index: usize, key: Option<KeyId>) {
        // Called once per key, with `index` counting from 0 after `clear`.
        if index < KeyOrder::MAX {
            self.keys.ids[index] = key;
            self.keys.len = index as u8 + 1;
        }
    }

    /// Keep a string's text; returns where it is.
    #[inline]
    pub fn push_text(&mut self, text: &str) -> TextRef {
        let start = self.arena.len() as u32;
        self.arena.push_str(text);
        TextRef {
            start,
            end: self.arena.len() as u32,
        }
    }

    #[inline]
    fn resolve(&self, r: TextRef) -> Option<&str> {
        self.arena.get(r.start as usize..r.end as usize)
    }

    /// The text of a string shape, when it was kept.
    #[inline]
    pub fn str_of(&self, shape: &Shape) -> Option<&str> {
        match *shape {
            Shape::Str(Some(r)) => self.resolve(r),
            _ => None,
        }
    }

    /// Record a field; a duplicate key replaces the earlier value, like a dict.
    #[inline]
    pub fn set(&mut self, id: KeyId, shape: Shape) {
        self.present |= 1 << id as u32;
        self.shapes[id as usize] = shape;
        if id == KeyId::Type {
            self.current_type = self.str_of(&shape).and_then(type_index);
        }
    }

    #[inline]
    pub fn get(&self, id: KeyId) -> Option<&Shape> {
        if self.has(id) {
            Some(&self.shapes[id as usize])
        } else {
            None
        }
    }

    #[inline]
    fn has(&self, id: KeyId) -> bool {
        self.present & (1 << id as u32) != 0
    }

    /// `_usable_seq(msg.get("seq"))`.
    pub fn usable_seq(&self) -> Option<u64> {
        self.get(KeyId::Seq).and_then(Shape::usable_pos)
    }

    fn text(&self, id: KeyId) -> Option<&str> {
        self.get(id).and_then(|shape| self.str_of(shape))
    }

    /// `msg.get("type")` when it is a string (and readable).
    pub fn type_text(&self) -> Option<&str> {
        self.text(KeyId::Type)
    }

    pub fn run_text(&self) -> Option<&str> {
        self.text(KeyId::Run)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Event,
    Control,
}

impl Direction {
    pub fn from_name(name: &str) -> Option<Direction> {
        match name {
            "event" => Some(Direction::Event),
            "control" => Some(Direction::Control),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::Event => "event",
            Direction::Control => "control",
        }
    }

    fn article(self) -> &'static str {
        match self {
            Direction::Event => "an event",
            Direction::Control => "a control",
        }
    }

    fn other(self) -> Direction {
        match self {
            Direction::Event => Direction::Control,
            Direction::Control => Direction::Event,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Malformed,
    TooLarge,
    Invalid,
    VersionMismatch,
    UnknownType,
    InvalidPayload,
    OutOfOrder,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Malformed => "malformed",
            Code::TooLarge => "too-large",
            Code::Invalid => "invalid",
            Code::VersionMismatch => "version-mismatch",
            Code::UnknownType => "unknown-type",
            Code::InvalidPayload => "invalid-payload",
            Code::OutOfOrder => "out-of-order",
        }
    }

    pub const ALL: [Code; 7] = [
        Code::Malformed,
        Code::TooLarge,
        Code::Invalid,
        Code::VersionMismatch,
        Code::UnknownType,
        Code::InvalidPayload,
        Code::OutOfOrder,
    ];
}

pub const R_NOT_LINE: &str = "line must be bytes or str";
pub const R_TOO_LARGE: &str = "line is 65536 bytes or more; the limit is 65535";
pub const R_NOT_UTF8: &str = "line is not valid UTF-8";
pub const R_NOT_JSON: &str = "line is not valid JSON";
pub const R_NOT_OBJECT: &str = "line is not a JSON object";
pub const R_DIRECTION: &str = "direction must be \"event\" or \"control\"";
pub const R_NOT_DICT: &str = "message must be a JSON object";
pub const R_V_REQUIRED: &str = "v is required";
pub const R_PAYLOAD_NOT_DICT: &str = "payload must be a JSON object";

pub type FieldErrors = Vec<(String, String)>;

/// A rejection as the pure backend builds it (`Rejection(code, reason, seq, type, run, errors)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub code: Code,
    pub reason: String,
    pub seq: Option<u64>,
    pub type_: Option<String>,
    pub run: Option<String>,
    pub errors: Option<FieldErrors>,
}

impl Rejection {
    /// A rejection that names nothing from the message.
    pub fn bare(code: Code, reason: &str) -> Self {
        Rejection {
            code,
            reason: reason.to_owned(),
            seq: None,
            type_: None,
            run: None,
            errors: None,
        }
    }

    /// `_rejection(code, reason, msg, errors)`: seq/type/run taken from the message's fields.
    pub fn from_fields(
        code: Code,
        reason: String,
        fields: &Fields,
        errors: Option<FieldErrors>,
    ) -> Self {
        Rejection {
            code,
            reason,
            seq: fields.usable_seq(),
            type_: fields.type_text().map(str::to_owned),
            run: fields.run_text().map(str::to_owned),
            errors,
        }
    }

    pub fn fatal(&self) -> bool {
        self.code == Code::VersionMismatch
    }
}

/// What `validate` decided, without the seq/type/run a [`Rejection`] copies from the message
/// (the caller takes those from wherever the message lives).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub code: Code,
    pub reason: String,
    pub errors: Option<FieldErrors>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
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

struct Schema {
    required: &'static [KeyId],
    fields: &'static [(KeyId, Kind)],
    is_ack: bool,
    /// Bits of the required keys, of the typed (not `any`) keys, and each key's kind: for the
    /// fast "is it valid at all" check.
    required_mask: u64,
    typed_mask: u64,
    kinds: [Kind; KeyId::COUNT],
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

fn event_schema(name: &str) -> Option<&'static Schema> {
    Some(match name {
        "assistant-text-delta" | "assistant-thinking-delta" => &DELTA,
        "tool-call" => &TOOL_CALL,
        "tool-result" => &TOOL_RESULT,
        "assistant-text" | "assistant-thinking" => &TEXT_BLOCK,
        "assistant-stream-end" => &STREAM_END,
        "user" => &USER,
        "steering-injected" | "follow-up-injected" => &INJECTED,
        "llm-start" | "agent-started" => &PROVIDER_MODEL,
        "llm-end" => &LLM_END,
        "agent-turn-complete" => &AGENT_TURN_COMPLETE,
        "error" => &ERROR,
        "info" => &INFO,
        "ready" => &EMPTY,
        "turn-started" => &TURN_STARTED,
        "turn-complete" => &TURN_COMPLETE,
        "control-ack" => &CONTROL_ACK,
        "result" => &RESULT,
        "exit" => &EXIT,
        _ => return None,
    })
}

fn control_schema(name: &str) -> Option<&'static Schema> {
    Some(match name {
        "prompt" | "steer" | "follow-up" => &TEXT_REQUIRED,
        "finalize" => &FINALIZE,
        "cancel" | "close" => &EMPTY,
        _ => return None,
    })
}

fn schema_for(direction: Direction, name: &str) -> Option<&'static Schema> {
    match direction {
        Direction::Event => event_schema(name),
        Direction::Control => control_schema(name),
    }
}

/// The 22 event types and 6 control types (for tests and the Python layer).
pub const EVENT_TYPES: [&str; 22] = [
    "agent-started",
    "user",
    "llm-start",
    "llm-end",
    "assistant-text",
    "assistant-text-delta",
    "assistant-thinking",
    "assistant-thinking-delta",
    "assistant-stream-end",
    "tool-call",
    "tool-result",
    "steering-injected",
    "follow-up-injected",
    "agent-turn-complete",
    "error",
    "info",
    "ready",
    "turn-started",
    "turn-complete",
    "control-ack",
    "result",
    "exit",
];
/// The index of a type name in `EVENT_TYPES` followed by `CONTROL_TYPES`.
#[inline]
pub fn type_index(name: &str) -> Option<usize> {
    Some(match name {
        "agent-started" => 0,
        "user" => 1,
        "llm-start" => 2,
        "llm-end" => 3,
        "assistant-text" => 4,
        "assistant-text-delta" => 5,
        "assistant-thinking" => 6,
        "assistant-thinking-delta" => 7,
        "assistant-stream-end" => 8,
        "tool-call" => 9,
        "tool-result" => 10,
        "steering-injected" => 11,
        "follow-up-injected" => 12,
        "agent-turn-complete" => 13,
        "error" => 14,
        "info" => 15,
        "ready" => 16,
        "turn-started" => 17,
        "turn-complete" => 18,
        "control-ack" => 19,
        "result" => 20,
        "exit" => 21,
        "prompt" => 22,
        "steer" => 23,
        "follow-up" => 24,
        "finalize" => 25,
        "cancel" => 26,
        "close" => 27,
        _ => return None,
    })
}

pub const CONTROL_TYPES: [&str; 6] = [
    "prompt",
    "steer",
    "follow-up",
    "finalize",
    "cancel",
    "close",
];

fn push(errors: &mut FieldErrors, field: &str, message: &str) {
    errors.push((field.to_owned(), message.to_owned()));
}

/// `_errors_pos`.
fn errors_pos(shape: &Shape, field: &str, errors: &mut FieldErrors) {
    if !shape.is_integral() {
        push(errors, field, "must be an integer");
    }
    if shape.is_number() {
        let (low, high) = shape.range();
        if low {
            push(errors, field, "must be at least 1");
        } else if high {
            push(errors, field, "must be at most 9007199254740991");
        }
    }
}

fn enum_ok(shape: &Shape, fields: &Fields, choices: &[&str]) -> bool {
    fields.str_of(shape).is_some_and(|s| choices.contains(&s))
}

const ACK_STATUSES: [&str; 3] = ["accepted", "rejected", "applied"];
const EXIT_STATUSES: [&str; 4] = ["done", "cancelled", "failed", "timed-out"];

/// The errors of one field of kind `kind` (the `lister` of `_KINDS`), appended to `errors`.
fn field_errors(kind: Kind, shape: &Shape, fields: &Fields, field: &str, errors: &mut FieldErrors) {
    let simple = |ok: bool, message: &str, errors: &mut FieldErrors| {
        if !ok {
            push(errors, field, message);
        }
    };
    match kind {
        Kind::String => simple(shape.is_string(), "must be a string", errors),
        Kind::Boolean => simple(matches!(shape, Shape::Bool(_)), "must be a boolean", errors),
        Kind::Number => simple(shape.is_number(), "must be a number", errors),
        Kind::Integer => simple(shape.is_integral(), "must be an integer", errors),
        Kind::Object => simple(shape.ok_object(), "must be an object", errors),
        Kind::Any => {}
        Kind::AckStatus => simple(
            enum_ok(shape, fields, &ACK_STATUSES),
            "must be one of accepted, rejected, applied",
            errors,
        ),
        Kind::ExitStatus => simple(
            enum_ok(shape, fields, &EXIT_STATUSES),
            "must be one of done, cancelled, failed, timed-out",
            errors,
        ),
        Kind::Pos => {
            if shape.usable_pos().is_none() {
                errors_pos(shape, field, errors);
            }
        }
        Kind::Refs => {
            if !shape.ok_array() {
                push(errors, field, "must be an array");
            } else if let Shape::Array { .. } = shape {
                for (i, item) in fields.ref_items.iter().enumerate() {
                    if item.usable_pos().is_none() {
                        errors_pos(item, &format!("{field}[{i}]"), errors);
                    }
                }
            }
        }
    }
}

fn join(errors: &FieldErrors) -> String {
    let mut out = String::new();
    for (i, (field, message)) in errors.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        out.push_str(field);
        out.push(' ');
        out.push_str(message);
    }
    out
}

/// `str(int(v))` for an integral float: its exact decimal value.
pub fn integral_float_text(f: f64) -> String {
    if f.abs() < 1e18 {
        return format!("{}", f as i64);
    }
    // f = mantissa * 2^exp exactly, with exp > 0 here; multiply out in base 10^9.
    let bits = f.to_bits();
    let negative = (bits >> 63) != 0;
    let exp_bits = ((bits >> 52) & 0x7FF) as i32;
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    let exp = exp_bits - 1075;
    let mut limbs: Vec<u64> = vec![mantissa % 1_000_000_000, mantissa / 1_000_000_000];
    for _ in 0..exp {
        let mut carry = 0u64;
        for limb in limbs.iter_mut() {
            let v = *limb * 2 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut iter = limbs.iter().rev();
    if let Some(first) = iter.next() {
        out.push_str(&first.to_string());
    }
    for limb in iter {
        out.push_str(&format!("{limb:09}"));
    }
    out
}

/// `_version_reason(v)` for a `v` that is not the number 1.
fn version_reason(v: &Shape, fields: &Fields) -> String {
    let integral = match v {
        Shape::Num(Number::Int(i)) => Some(i.to_string()),
        Shape::Num(Number::UInt(u)) => Some(u.to_string()),
        Shape::Num(Number::Float(f)) if f.is_finite() && f.fract() == 0.0 => {
            Some(integral_float_text(*f))
        }
        Shape::BigInt { text, negative } => Some(
            text.and_then(|t| fields.resolve(t))
                .map(str::to_owned)
                .unwrap_or_else(|| if *negative { "-?".into() } else { "?".into() }),
        ),
        _ => None,
    };
    if let Some(n) = integral {
        return format!("wire version {n} is not supported; expected {VERSION}");
    }
    let kind = match v {
        Shape::Null => "a null",
        Shape::Bool(_) => "a boolean",
        Shape::Num(_) => "a non-integral number",
        Shape::Str(_) => "a string",
        Shape::Array { .. } => "an array",
        Shape::Object { .. } => "an object",
        Shape::BigInt { .. } => "an integer",
        Shape::Other => "a non-JSON value",
    };
    format!("wire version must be the number {VERSION}, not {kind}")
}

fn is_version(v: &Shape) -> bool {
    matches!(v, Shape::Num(Number::Int(1)))
        || matches!(v, Shape::Num(Number::Float(f)) if *f == 1.0)
}

/// `_envelope_errors`.
fn envelope_errors(fields: &Fields) -> FieldErrors {
    let mut errors = FieldErrors::new();
    for id in [K::Seq, K::Type, K::Run] {
        if !fields.has(id) {
            push(&mut errors, id.name(), "is required");
        }
    }
    if let Some(seq) = fields.get(K::Seq) {
        field_errors(Kind::Pos, seq, fields, "seq", &mut errors);
    }
    for id in [K::Type, K::Run] {
        if let Some(shape) = fields.get(id) {
            field_errors(Kind::String, shape, fields, id.name(), &mut errors);
        }
    }
    errors
}

/// `_Checker.errors`: missing required fields, then each present field in schema order, then
/// the control-ack rule.
/// Whether a present value of kind `kind` passes (the `_KINDS` predicates).
#[inline]
fn kind_ok(kind: Kind, shape: &Shape, fields: &Fields) -> bool {
    match kind {
        Kind::String => shape.is_string(),
        Kind::Boolean => matches!(shape, Shape::Bool(_)),
        Kind::Number => shape.is_number(),
        Kind::Integer => shape.is_integral(),
        Kind::Object => shape.ok_object(),
        Kind::Any => true,
        Kind::AckStatus => enum_ok(shape, fields, &ACK_STATUSES),
        Kind::ExitStatus => enum_ok(shape, fields, &EXIT_STATUSES),
        Kind::Pos => shape.usable_pos().is_some(),
        Kind::Refs => match shape {
            Shape::Array { .. } => fields.ref_items.iter().all(|s| s.usable_pos().is_some()),
            _ => shape.ok_array(),
        },
    }
}

/// The happy path of [`payload_errors`]: true when it would find nothing.
#[inline]
fn payload_ok(schema: &Schema, fields: &Fields) -> bool {
    if schema.required_mask & !fields.present != 0 {
        return false;
    }
    let mut bits = fields.present & schema.typed_mask;
    while bits != 0 {
        let id = bits.trailing_zeros() as usize;
        if !kind_ok(schema.kinds[id], &fields.shapes[id], fields) {
            return false;
        }
        bits &= bits - 1;
    }
    if schema.is_ack && !fields.has(K::Ref) {
        return fields.get(K::Status).and_then(|s| fields.str_of(s)) == Some("rejected");
    }
    true
}

fn payload_errors(schema: &Schema, fields: &Fields) -> FieldErrors {
    if payload_ok(schema, fields) {
        return FieldErrors::new();
    }
    let mut errors = FieldErrors::new();
    for &id in schema.required {
        if !fields.has(id) {
            push(&mut errors, id.name(), "is required");
        }
    }
    for &(id, kind) in schema.fields {
        if let Some(shape) = fields.get(id) {
            field_errors(kind, shape, fields, id.name(), &mut errors);
        }
    }
    if schema.is_ack && !fields.has(K::Ref) {
        if let Some(status) = fields.get(K::Status) {
            if fields.str_of(status) != Some("rejected") {
                push(&mut errors, "ref", "is required unless status is rejected");
            }
        }
    }
    errors
}

/// Why the message's type is unknown to `direction` (the `unknown-type` reason).
pub fn unknown_type_reason(direction: Direction, type_name: &str) -> String {
    if schema_for(direction.other(), type_name).is_some() {
        format!(
            "{type_name} is {} type, not {} type",
            direction.other().article(),
            direction.article()
        )
    } else {
        format!("unknown {} type: {type_name}", direction.name())
    }
}

/// `validate` after the direction and dict checks: `Ok(())` when the message is valid.
///
/// A `type` string whose text is unreadable (a lone surrogate, only possible from a Python
/// dict) is reported as unknown with the reason `unknown <direction> type: ` followed by
/// nothing; the Python layer renders that reason from the object itself.
pub fn validate_fields(fields: &Fields, direction: Direction) -> Result<(), Verdict> {
    let v = match fields.get(K::V) {
        None | Some(Shape::Null) => {
            return Err(Verdict {
                code: Code::Invalid,
                reason: R_V_REQUIRED.into(),
                errors: None,
            })
        }
        Some(v) => v,
    };
    if !is_version(v) {
        return Err(Verdict {
            code: Code::VersionMismatch,
            reason: version_reason(v, fields),
            errors: None,
        });
    }
    let fast_ok = matches!(fields.get(K::Seq), Some(Shape::Num(Number::Int(i))) if (1..=MAX_SAFE_INTEGER as i64).contains(i))
        && matches!(fields.get(K::Type), Some(Shape::Str(_)))
        && matches!(fields.get(K::Run), Some(Shape::Str(_)));
    if !fast_ok {
        let errors = envelope_errors(fields);
        if !errors.is_empty() {
            return Err(Verdict {
                code: Code::Invalid,
                reason: join(&errors),
                errors: Some(errors),
            });
        }
    }
    let type_name = fields.type_text();
    let schema = type_name.and_then(|t| schema_for(direction, t));
    let Some(schema) = schema else {
        let reason = unknown_type_reason(direction, type_name.unwrap_or(""));
        return Err(Verdict {
            code: Code::UnknownType,
            reason,
            errors: None,
        });
    };
    let errors = payload_errors(schema, fields);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Verdict {
            code: Code::InvalidPayload,
            reason: join(&errors),
            errors: Some(errors),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_eq_agrees_with_slice_eq() {
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        for n in 0..text.len() {
            let a = &text[..n];
            assert!(short_eq(a, a));
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!short_eq(a, &b), "{n} {i}");
            }
            assert!(!short_eq(a, &text[..n + 1]));
        }
    }

    #[test]
    fn key_table_round_trips() {
        for &k in KeyId::ALL {
            assert_eq!(KeyId::from_name(k.name()), Some(k));
        }
        assert_eq!(KeyId::COUNT, KeyId::ALL.len());
    }

    #[test]
    fn type_index_matches_the_lists() {
        for (i, t) in EVENT_TYPES.iter().chain(CONTROL_TYPES.iter()).enumerate() {
            assert_eq!(type_index(t), Some(i), "{t}");
        }
        assert_eq!(type_index("nope"), None);
    }

    #[test]
    fn every_type_has_a_schema() {
        for t in EVENT_TYPES {
            assert!(event_schema(t).is_some(), "{t}");
            assert!(control_schema(t).is_none(), "{t}");
        }
        for t in CONTROL_TYPES {
            assert!(control_schema(t).is_some(), "{t}");
        }
    }

    #[test]
    fn integral_float_text_is_exact() {
        assert_eq!(integral_float_text(2.0), "2");
        assert_eq!(integral_float_text(-3.0), "-3");
        assert_eq!(integral_float_text(1e20), "100000000000000000000");
        assert_eq!(
            integral_float_text(18446744073709551616.0),
            "18446744073709551616"
        );
        assert_eq!(integral_float_text(1e300), "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160");
        assert_eq!(integral_float_text(-1.7976931348623157e308), "-179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368");
    }
}
