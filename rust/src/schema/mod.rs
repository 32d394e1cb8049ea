//! The protocol's rules: limits, rejection codes and their fixed reason texts, the message
//! types with their payload schemas, and the validator, mirroring
//! `python/fenwire_fast/_schema.py` and `_pure.validate` check for check and reason for reason.
//!
//! The validator works on [`Fields`]: the shapes of the known top-level fields of a message,
//! recorded by the message parser while it builds the message (or read off a Python dict), so
//! no dict lookups happen on the hot path.

mod fields;
mod keys;
mod types;
mod validate;

pub use fields::{Fields, Shape, TextRef};
pub use keys::{short_eq, KeyId};
pub use types::{
    schema_for, type_index, Kind, Schema, ACK_STATUSES, CONTROL_TYPES, EVENT_TYPES, EXIT_STATUSES,
};
pub use validate::{integral_float_text, unknown_type_reason, validate_fields};

/// `MAX_SAFE_INTEGER = 2**53 - 1`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
pub const VERSION: u64 = 1;
pub const MAX_LINE_BYTES: usize = 65536;

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

    pub(crate) fn article(self) -> &'static str {
        match self {
            Direction::Event => "an event",
            Direction::Control => "a control",
        }
    }

    pub(crate) fn other(self) -> Direction {
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
