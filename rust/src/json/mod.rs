//! A strict JSON parser over `&[u8]` that agrees with `orjson.loads` (3.10+) on every input:
//! RFC 8259 plus orjson's limits (depth 1024, ints in -2^63..2^64-1, floats that overflow are
//! errors, UTF-8 validated up front, a BOM is an error).
//!
//! The parser builds values through a [`Sink`], so the same code produces a plain Rust tree
//! ([`RustSink`]) or Python objects in the extension, with no intermediate document. It knows
//! nothing of the protocol: reading a line as a protocol message (known keys, field shapes) is
//! [`crate::message`]'s job, on top of the same [`parser::Parser`].

mod escaped;
pub(crate) mod parser;
mod scan;
mod skip;

pub use scan::scan_plain;

/// Stack to keep free before descending into a container, and the size of a new segment.
pub const RED_ZONE: usize = 64 * 1024;
pub const STACK_SEGMENT: usize = 1024 * 1024;

/// Maximum container nesting orjson accepts (1024 `[` are fine, 1025 are not).
pub const MAX_DEPTH: usize = 1024;

/// A JSON number as orjson would type it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// An integer in -2^63..2^63-1.
    Int(i64),
    /// An integer in 2^63..2^64-1.
    UInt(u64),
    /// Anything with a fraction or exponent, or an integer outside the 64-bit ranges.
    Float(f64),
}

/// Why a document is not JSON (the messages are for humans and tests, not part of the contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyntaxError {
    Empty,
    InvalidUtf8,
    Bom,
    UnexpectedEnd,
    UnexpectedChar(usize),
    TrailingContent(usize),
    TrailingComma(usize),
    LeadingZero(usize),
    InvalidNumber(usize),
    NumberOverflow(usize),
    ControlInString(usize),
    InvalidEscape(usize),
    LoneSurrogate(usize),
    TooDeep(usize),
}

/// The outcome of a failed parse: the input was not JSON, or building a value failed.
#[derive(Debug)]
pub enum ParseError<E> {
    Syntax(SyntaxError),
    Sink(E),
}

impl<E> From<SyntaxError> for ParseError<E> {
    fn from(e: SyntaxError) -> Self {
        ParseError::Syntax(e)
    }
}

/// Receives the values of a document as the parser reads them, innermost first.
pub trait Sink {
    type Value;
    type Key;
    type Array;
    type Object;
    type Error;

    fn null(&mut self) -> Result<Self::Value, Self::Error>;
    fn boolean(&mut self, value: bool) -> Result<Self::Value, Self::Error>;
    fn number(&mut self, value: Number) -> Result<Self::Value, Self::Error>;
    /// `ascii` is true when every byte of `value` is < 0x80.
    fn string(&mut self, value: &str, ascii: bool) -> Result<Self::Value, Self::Error>;
    /// An object key (`ascii` as for [`Sink::string`]).
    fn key(&mut self, value: &str, ascii: bool) -> Result<Self::Key, Self::Error>;
    fn array_begin(&mut self) -> Result<Self::Array, Self::Error>;
    fn array_push(
        &mut self,
        array: &mut Self::Array,
        value: Self::Value,
    ) -> Result<(), Self::Error>;
    fn array_end(&mut self, array: Self::Array) -> Result<Self::Value, Self::Error>;
    fn object_begin(&mut self) -> Result<Self::Object, Self::Error>;
    /// Insert with Python dict semantics: a duplicate key keeps its first position and takes
    /// the last value.
    fn object_insert(
        &mut self,
        object: &mut Self::Object,
        key: Self::Key,
        value: Self::Value,
    ) -> Result<(), Self::Error>;
    fn object_end(&mut self, object: Self::Object) -> Result<Self::Value, Self::Error>;
}

/// A sink that builds nothing: used to tell "valid JSON but not an object" from "not JSON".
pub struct NullSink;

impl Sink for NullSink {
    type Value = ();
    type Key = ();
    type Array = ();
    type Object = ();
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    fn boolean(&mut self, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
    fn number(&mut self, _: Number) -> Result<(), Self::Error> {
        Ok(())
    }
    fn string(&mut self, _: &str, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
    fn key(&mut self, _: &str, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
    fn array_begin(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    fn array_push(&mut self, _: &mut (), _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    fn array_end(&mut self, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    fn object_begin(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    fn object_insert(&mut self, _: &mut (), _: (), _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    fn object_end(&mut self, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A plain Rust JSON value, for tests and for callers that need no Python.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    /// Entries in first-insertion order, duplicates resolved like a Python dict.
    Object(Vec<(String, Value)>),
}

/// Builds [`Value`]s.
pub struct RustSink;

impl Sink for RustSink {
    type Value = Value;
    type Key = String;
    type Array = Vec<Value>;
    type Object = Vec<(String, Value)>;
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<Value, Self::Error> {
        Ok(Value::Null)
    }
    fn boolean(&mut self, value: bool) -> Result<Value, Self::Error> {
        Ok(Value::Bool(value))
    }
    fn number(&mut self, value: Number) -> Result<Value, Self::Error> {
        Ok(Value::Number(value))
    }
    fn string(&mut self, value: &str, _: bool) -> Result<Value, Self::Error> {
        Ok(Value::String(value.to_owned()))
    }
    fn key(&mut self, value: &str, _: bool) -> Result<String, Self::Error> {
        Ok(value.to_owned())
    }
    fn array_begin(&mut self) -> Result<Vec<Value>, Self::Error> {
        Ok(Vec::new())
    }
    fn array_push(&mut self, array: &mut Vec<Value>, value: Value) -> Result<(), Self::Error> {
        array.push(value);
        Ok(())
    }
    fn array_end(&mut self, array: Vec<Value>) -> Result<Value, Self::Error> {
        Ok(Value::Array(array))
    }
    fn object_begin(&mut self) -> Result<Vec<(String, Value)>, Self::Error> {
        Ok(Vec::new())
    }
    fn object_insert(
        &mut self,
        object: &mut Vec<(String, Value)>,
        key: String,
        value: Value,
    ) -> Result<(), Self::Error> {
        if let Some(slot) = object.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            object.push((key, value));
        }
        Ok(())
    }
    fn object_end(&mut self, object: Vec<(String, Value)>) -> Result<Value, Self::Error> {
        Ok(Value::Object(object))
    }
}

/// Parse one complete JSON document with `sink`.
pub fn parse<S: Sink>(input: &[u8], sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
    parser::parse_inner(input, sink).map_err(|e| match e {
        ParseError::Syntax(e) => ParseError::Syntax(parser::classify(input, e)),
        other => other,
    })
}
