//! A strict JSON parser over `&[u8]` that agrees with `orjson.loads` (3.10+) on every input:
//! RFC 8259 plus orjson's limits (depth 1024, ints in -2^63..2^64-1, floats that overflow are
//! errors, UTF-8 validated up front, a BOM is an error).
//!
//! The parser builds values through a [`Sink`], so the same code produces a plain Rust tree in
//! unit tests ([`RustSink`]) and Python objects in the extension, with no intermediate document.
//! [`parse_message`] additionally records the *shape* of every known top-level field of an
//! object, so the protocol validator can run in Rust without looking anything up in a dict.

use crate::schema::{Fields, KeyId, Shape};

/// Stack to keep free before descending into a container, and the size of a new segment.
pub(crate) const RED_ZONE: usize = 64 * 1024;
pub(crate) const STACK_SEGMENT: usize = 1024 * 1024;

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
    /// The string value of a known top-level field of a message (`type`, `run`, ...): sinks may
    /// return cached objects for the values they expect to repeat.
    #[inline]
    fn field_string(
        &mut self,
        key: KeyId,
        value: &str,
        ascii: bool,
    ) -> Result<Self::Value, Self::Error> {
        let _ = key;
        self.string(value, ascii)
    }
    /// An object key; `known` is set when it is one of the protocol's field names.
    fn key(
        &mut self,
        value: &str,
        ascii: bool,
        known: Option<KeyId>,
    ) -> Result<Self::Key, Self::Error>;
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

    /// The top-level object of a message, built like any object but with a hint of how many
    /// members it will have (the previous message's count), so a sink can build it in place.
    type Top;
    fn top_begin(&mut self, hint: usize) -> Result<Self::Top, Self::Error>;
    fn top_insert(
        &mut self,
        object: &mut Self::Top,
        key: Self::Key,
        value: Self::Value,
    ) -> Result<(), Self::Error>;
    fn top_end(&mut self, object: Self::Top) -> Result<Self::Value, Self::Error>;
}

/// Implements the `top_*` methods of a [`Sink`] with its `object_*` ones.
macro_rules! top_as_object {
    () => {
        type Top = Self::Object;
        fn top_begin(&mut self, _hint: usize) -> Result<Self::Top, Self::Error> {
            self.object_begin()
        }
        fn top_insert(
            &mut self,
            object: &mut Self::Top,
            key: Self::Key,
            value: Self::Value,
        ) -> Result<(), Self::Error> {
            self.object_insert(object, key, value)
        }
        fn top_end(&mut self, object: Self::Top) -> Result<Self::Value, Self::Error> {
            self.object_end(object)
        }
    };
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
    fn key(&mut self, _: &str, _: bool, _: Option<KeyId>) -> Result<(), Self::Error> {
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

    top_as_object!();
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
    fn key(&mut self, value: &str, _: bool, _: Option<KeyId>) -> Result<String, Self::Error> {
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

    top_as_object!();
}

// Byte classes inside a string: 0 plain ASCII, 1 quote, 2 backslash, 3 control, 4 non-ASCII.
const STR_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = if i < 0x20 {
            3
        } else if i == b'"' as usize {
            1
        } else if i == b'\\' as usize {
            2
        } else if i >= 0x80 {
            4
        } else {
            0
        };
        i += 1;
    }
    table
};

#[inline(always)]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// From `i`, skip bytes that need no attention inside a string: returns the index of the first
/// quote, backslash or control byte (or the end of `bytes`), and whether every skipped byte was
/// ASCII.
#[inline(always)]
pub(crate) fn scan_plain(bytes: &[u8], mut i: usize) -> (usize, bool) {
    let mut high = 0u64;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline, so its intrinsics are always available;
    // `i + 16 <= bytes.len()` keeps every unaligned 16-byte load inside `bytes`. Measured: the
    // 8-byte SWAR loop below, used alone, was the largest single item of `Receiver.feed` (15 %
    // of samples in `perf`); 16 bytes per step with SSE2 takes about a third of the instructions.
    unsafe {
        use std::arch::x86_64::*;
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control_max = _mm_set1_epi8(0x1F);
        while i + 16 <= bytes.len() {
            let v = _mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i);
            let special = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                // v <= 0x1F (unsigned) exactly when max(v, 0x1F) == 0x1F.
                _mm_cmpeq_epi8(_mm_max_epu8(v, control_max), control_max),
            );
            let mask = _mm_movemask_epi8(special) as u32;
            let hi = _mm_movemask_epi8(v) as u32;
            if mask == 0 {
                high |= u64::from(hi);
                i += 16;
                continue;
            }
            let at = mask.trailing_zeros();
            high |= u64::from(hi & ((1u32 << at) - 1));
            return (i + at as usize, high == 0);
        }
    }
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let word = u64::from_le_bytes(w);
        let special = special_mask(word);
        if special == 0 {
            high |= word & HI_BITS;
            i += 8;
            continue;
        }
        let at = (special.trailing_zeros() / 8) as usize;
        let before = if at == 0 {
            0
        } else {
            word & (u64::MAX >> (64 - 8 * at))
        };
        high |= before & HI_BITS;
        return (i + at, high == 0);
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        high |= u64::from(b & 0x80);
        i += 1;
    }
    (i, high == 0)
}

const LO_BITS: u64 = 0x0101_0101_0101_0101;
const HI_BITS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `word` that is a quote, a backslash or a control byte (< 0x20);
/// exact for the lowest such byte (borrows can only mark bytes above a real hit), which is all
/// the scanner uses. Non-ASCII bytes are never marked.
#[inline(always)]
fn special_mask(word: u64) -> u64 {
    let quote = word ^ (LO_BITS * b'"' as u64);
    let backslash = word ^ (LO_BITS * b'\\' as u64);
    let has_quote = quote.wrapping_sub(LO_BITS) & !quote;
    let has_backslash = backslash.wrapping_sub(LO_BITS) & !backslash;
    let has_control = word.wrapping_sub(LO_BITS * 0x20) & !word;
    (has_quote | has_backslash | has_control) & HI_BITS
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    /// The decoded text of the last string that had escapes.
    scratch: Vec<u8>,
}

/// orjson rejects a document that is not valid UTF-8 as a whole before anything else; the
/// parser only validates the strings it reads, so a failed parse is classified here.
#[cold]
fn classify(input: &[u8], e: SyntaxError) -> SyntaxError {
    if e != SyntaxError::InvalidUtf8 && simdutf8::basic::from_utf8(input).is_err() {
        return SyntaxError::InvalidUtf8;
    }
    e
}

/// Parse one complete JSON document with `sink`.
pub fn parse<S: Sink>(input: &[u8], sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
    parse_inner(input, sink).map_err(|e| match e {
        ParseError::Syntax(e) => ParseError::Syntax(classify(input, e)),
        other => other,
    })
}

fn parse_inner<S: Sink>(input: &[u8], sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
    let mut p = Parser::new(input)?;
    p.skip_ws();
    if p.pos >= p.bytes.len() {
        return Err(SyntaxError::Empty.into());
    }
    let value = p.value(sink)?;
    p.finish()?;
    Ok(value)
}

/// Why a line is not a protocol message at the JSON level.
#[derive(Debug)]
pub enum MessageError<E> {
    /// Not JSON at all.
    Syntax(SyntaxError),
    /// Valid JSON whose top-level value is not an object.
    NotObject,
    Sink(E),
}

/// Parse a line that should hold one JSON object. On success returns the built object and the
/// shapes of its known top-level fields.
pub fn parse_message<S: Sink>(
    input: &[u8],
    sink: &mut S,
    fields: &mut Fields,
) -> Result<S::Value, MessageError<S::Error>> {
    fields.clear();
    let mut p = match Parser::new(input) {
        Ok(p) => p,
        Err(e) => return Err(MessageError::Syntax(classify(input, e))),
    };
    p.skip_ws();
    if p.pos >= p.bytes.len() {
        return Err(MessageError::Syntax(classify(input, SyntaxError::Empty)));
    }
    if p.bytes[p.pos] != b'{' {
        // Tell "valid JSON, not an object" from "not JSON".
        return match parse(input, &mut NullSink) {
            Ok(()) => Err(MessageError::NotObject),
            Err(ParseError::Syntax(e)) => Err(MessageError::Syntax(e)),
            Err(ParseError::Sink(never)) => match never {},
        };
    }
    let result = p.top_object(sink, fields).and_then(|v| {
        p.finish()?;
        Ok(v)
    });
    match result {
        Ok(v) => Ok(v),
        Err(ParseError::Syntax(e)) => Err(MessageError::Syntax(classify(input, e))),
        Err(ParseError::Sink(e)) => Err(MessageError::Sink(e)),
    }
}

/// A key read from the input, and which protocol key it is.
type KeyHit<S> = (<S as Sink>::Key, Option<KeyId>);

type PResult<T, S> = Result<T, ParseError<<S as Sink>::Error>>;

fn syntax<T, E>(e: SyntaxError) -> Result<T, ParseError<E>> {
    Err(ParseError::Syntax(e))
}

impl<'a> Parser<'a> {
    fn new(input: &'a [u8]) -> Result<Self, SyntaxError> {
        if input.is_empty() {
            return Err(SyntaxError::Empty);
        }
        if input.starts_with(b"\xEF\xBB\xBF") {
            return Err(SyntaxError::Bom);
        }
        Ok(Parser {
            bytes: input,
            pos: 0,
            depth: 0,
            scratch: Vec::new(),
        })
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            // Every whitespace byte is <= b' ': one compare for the usual non-space byte.
            if b > b' ' || !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    fn finish<E>(&mut self) -> Result<(), ParseError<E>> {
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return syntax(SyntaxError::TrailingContent(self.pos));
        }
        Ok(())
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn value<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
        match self.peek() {
            None => syntax(SyntaxError::UnexpectedEnd),
            Some(b'"') => {
                let (loc, ascii) = self.string()?;
                let s = self.resolve(loc);
                sink.string(s, ascii).map_err(ParseError::Sink)
            }
            Some(b'{') => self.object(sink),
            Some(b'[') => self.array(sink),
            Some(b't') => {
                self.literal(b"true")?;
                sink.boolean(true).map_err(ParseError::Sink)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                sink.boolean(false).map_err(ParseError::Sink)
            }
            Some(b'n') => {
                self.literal(b"null")?;
                sink.null().map_err(ParseError::Sink)
            }
            Some(b'-' | b'0'..=b'9') => {
                let n = self.number()?;
                sink.number(n).map_err(ParseError::Sink)
            }
            Some(_) => syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
    }

    fn literal<E>(&mut self, word: &[u8]) -> Result<(), ParseError<E>> {
        let end = self.pos + word.len();
        if end > self.bytes.len() {
            // A prefix of the word at the end of input, or a wrong character.
            let rest = &self.bytes[self.pos..];
            if word.starts_with(rest) {
                return syntax(SyntaxError::UnexpectedEnd);
            }
            return syntax(SyntaxError::UnexpectedChar(self.pos));
        }
        if &self.bytes[self.pos..end] != word {
            return syntax(SyntaxError::UnexpectedChar(self.pos));
        }
        self.pos = end;
        Ok(())
    }

    fn enter<E>(&mut self) -> Result<(), ParseError<E>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return syntax(SyntaxError::TooDeep(self.pos));
        }
        Ok(())
    }

    /// Containers recurse; on a thread with a small stack (musl's 128 KiB default, or a
    /// `threading.stack_size` set low) 1024 levels would overflow it, while orjson, which does
    /// not recurse, reads them. `stacker` moves the recursion to a heap segment when the stack
    /// runs low (a cheap check per container).
    fn array<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.array_inner(sink))
    }

    fn object<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.object_inner(sink))
    }

    fn array_inner<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
        self.enter()?;
        self.pos += 1; // '['
        let mut array = sink.array_begin().map_err(ParseError::Sink)?;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return sink.array_end(array).map_err(ParseError::Sink);
        }
        loop {
            self.skip_ws();
            let v = self.value(sink)?;
            sink.array_push(&mut array, v).map_err(ParseError::Sink)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        return syntax(SyntaxError::TrailingComma(self.pos));
                    }
                }
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                None => return syntax(SyntaxError::UnexpectedEnd),
                Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
            }
        }
        self.depth -= 1;
        sink.array_end(array).map_err(ParseError::Sink)
    }

    /// Reads `"key" :` and leaves `pos` at the value.
    fn object_key<S: Sink>(&mut self, sink: &mut S) -> PResult<(S::Key, Option<KeyId>), S> {
        match self.peek() {
            Some(b'"') => {}
            None => return syntax(SyntaxError::UnexpectedEnd),
            Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
        let (loc, ascii) = self.string()?;
        let s = self.resolve(loc);
        let known = KeyId::from_name(s);
        let key = sink.key(s, ascii, known).map_err(ParseError::Sink)?;
        self.skip_ws();
        match self.peek() {
            Some(b':') => self.pos += 1,
            None => return syntax(SyntaxError::UnexpectedEnd),
            Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
        self.skip_ws();
        Ok((key, known))
    }

    /// If the input at `pos` is exactly `"<name of predicted>"` then `:`, read it as that key.
    #[inline]
    fn predicted_key<S: Sink>(
        &mut self,
        sink: &mut S,
        predicted: Option<KeyId>,
    ) -> PResult<Option<KeyHit<S>>, S> {
        let Some(id) = predicted else {
            return Ok(None);
        };
        let name = id.name().as_bytes();
        let start = self.pos + 1;
        let end = start + name.len();
        if self.bytes.get(self.pos) != Some(&b'"')
            || self.bytes.get(end) != Some(&b'"')
            || !crate::schema::short_eq(&self.bytes[start..end], name)
        {
            return Ok(None);
        }
        self.pos = end + 1;
        self.skip_ws();
        if self.peek() != Some(b':') {
            // Let the general path report it.
            self.pos = start - 1;
            return Ok(None);
        }
        self.pos += 1;
        self.skip_ws();
        let key = sink
            .key(id.name(), true, Some(id))
            .map_err(ParseError::Sink)?;
        Ok(Some((key, Some(id))))
    }

    /// After a member: `,` (then the next key) or `}`. Returns true at the end.
    fn object_next<E>(&mut self) -> Result<bool, ParseError<E>> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.skip_ws();
                if self.peek() == Some(b'}') {
                    return syntax(SyntaxError::TrailingComma(self.pos));
                }
                Ok(false)
            }
            Some(b'}') => {
                self.pos += 1;
                Ok(true)
            }
            None => syntax(SyntaxError::UnexpectedEnd),
            Some(_) => syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
    }

    fn object_inner<S: Sink>(&mut self, sink: &mut S) -> Result<S::Value, ParseError<S::Error>> {
        self.enter()?;
        self.pos += 1; // '{'
        let mut object = sink.object_begin().map_err(ParseError::Sink)?;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return sink.object_end(object).map_err(ParseError::Sink);
        }
        loop {
            let (key, _) = self.object_key(sink)?;
            let v = self.value(sink)?;
            sink.object_insert(&mut object, key, v)
                .map_err(ParseError::Sink)?;
            if self.object_next()? {
                break;
            }
        }
        self.depth -= 1;
        sink.object_end(object).map_err(ParseError::Sink)
    }

    /// The top-level object of a message: like `object`, but records the shape of each known
    /// field's value as it goes.
    fn top_object<S: Sink>(
        &mut self,
        sink: &mut S,
        fields: &mut Fields,
    ) -> Result<S::Value, ParseError<S::Error>> {
        self.enter()?;
        self.pos += 1; // '{'
        let mut object = sink
            .top_begin(fields.predicted_len())
            .map_err(ParseError::Sink)?;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return sink.top_end(object).map_err(ParseError::Sink);
        }
        let mut index = 0;
        loop {
            // Lines of a stream repeat their key order: try the key the previous message had
            // at this place before reading a key in general.
            let (key, known) = match self.predicted_key(sink, fields.predicted(index))? {
                Some(hit) => hit,
                None => self.object_key(sink)?,
            };
            fields.saw_key(index, known);
            index += 1;
            let v = match known {
                None => self.value(sink)?,
                Some(id) => {
                    let (v, shape) = self.shaped_value(sink, id, true, fields)?;
                    fields.set(id, shape);
                    v
                }
            };
            sink.top_insert(&mut object, key, v)
                .map_err(ParseError::Sink)?;
            if self.object_next()? {
                break;
            }
        }
        self.depth -= 1;
        sink.top_end(object).map_err(ParseError::Sink)
    }

    /// A value plus its [`Shape`]. At the top level (`top`), an array also records the shapes of
    /// its items (for `refs`); deeper containers only record their emptiness.
    #[inline(always)]
    fn shaped_value<S: Sink>(
        &mut self,
        sink: &mut S,
        id: KeyId,
        top: bool,
        fields: &mut Fields,
    ) -> Result<(S::Value, Shape), ParseError<S::Error>> {
        match self.peek() {
            Some(b'"') => {
                let (loc, ascii) = self.string()?;
                let s = self.resolve(loc);
                let (shape, v) = if top {
                    let shape = if id.keeps_text() {
                        Shape::Str(Some(fields.push_text(s)))
                    } else {
                        Shape::Str(None)
                    };
                    (shape, sink.field_string(id, s, ascii))
                } else {
                    (Shape::Str(None), sink.string(s, ascii))
                };
                let v = v.map_err(ParseError::Sink)?;
                Ok((v, shape))
            }
            Some(b'-' | b'0'..=b'9') => {
                let n = self.number()?;
                let v = sink.number(n).map_err(ParseError::Sink)?;
                Ok((v, Shape::Num(n)))
            }
            Some(b't') => {
                self.literal(b"true")?;
                Ok((
                    sink.boolean(true).map_err(ParseError::Sink)?,
                    Shape::Bool(true),
                ))
            }
            Some(b'f') => {
                self.literal(b"false")?;
                Ok((
                    sink.boolean(false).map_err(ParseError::Sink)?,
                    Shape::Bool(false),
                ))
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Ok((sink.null().map_err(ParseError::Sink)?, Shape::Null))
            }
            Some(b'{') => {
                let start = self.pos;
                let v = self.object(sink)?;
                let empty = is_empty_container(&self.bytes[start..self.pos]);
                Ok((v, Shape::Object { empty }))
            }
            Some(b'[') if top => self.shaped_array(sink, id, fields),
            Some(b'[') => {
                let start = self.pos;
                let v = self.array(sink)?;
                let empty = is_empty_container(&self.bytes[start..self.pos]);
                Ok((v, Shape::Array { empty }))
            }
            None => syntax(SyntaxError::UnexpectedEnd),
            Some(_) => syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
    }

    fn shaped_array<S: Sink>(
        &mut self,
        sink: &mut S,
        id: KeyId,
        fields: &mut Fields,
    ) -> Result<(S::Value, Shape), ParseError<S::Error>> {
        self.enter()?;
        self.pos += 1; // '['
        let refs = id == KeyId::Refs;
        if refs {
            fields.ref_items.clear();
        }
        let mut array = sink.array_begin().map_err(ParseError::Sink)?;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            let v = sink.array_end(array).map_err(ParseError::Sink)?;
            return Ok((v, Shape::Array { empty: true }));
        }
        loop {
            self.skip_ws();
            let (v, shape) = self.shaped_value(sink, id, false, fields)?;
            if refs {
                fields.ref_items.push(shape);
            }
            sink.array_push(&mut array, v).map_err(ParseError::Sink)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        return syntax(SyntaxError::TrailingComma(self.pos));
                    }
                }
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                None => return syntax(SyntaxError::UnexpectedEnd),
                Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
            }
        }
        self.depth -= 1;
        let v = sink.array_end(array).map_err(ParseError::Sink)?;
        Ok((v, Shape::Array { empty: false }))
    }

    /// The decoded text of a string read by [`Parser::string`].
    #[inline(always)]
    fn resolve(&self, loc: StrLoc) -> &str {
        match loc {
            // SAFETY: `string` returns a `Slice` only after it found every byte of it ASCII, or
            // checked it with `simdutf8`; `string_escaped` validates `scratch` the same way
            // before returning `Scratch`. Measured: validating each whole line up front instead
            // (to get a `&str` safely) was 3.3 % of `Receiver.feed`.
            StrLoc::Slice(start, end) => unsafe {
                std::str::from_utf8_unchecked(&self.bytes[start..end])
            },
            StrLoc::Scratch => unsafe { std::str::from_utf8_unchecked(&self.scratch) },
        }
    }

    /// Reads a string starting at the opening quote. Returns where its decoded text is and
    /// whether it is pure ASCII.
    #[inline(always)]
    fn string<E>(&mut self) -> Result<(StrLoc, bool), ParseError<E>> {
        let start = self.pos + 1;
        let bytes = self.bytes;
        // Jump straight to the first quote, backslash or control byte, 16 bytes at a time.
        let (i, ascii) = scan_plain(bytes, start);
        match bytes.get(i) {
            Some(b'"') => {
                // Non-ASCII text is checked here, once: the line as a whole is only validated
                // when it fails to parse (to tell "not UTF-8" from "not JSON").
                if !ascii && simdutf8::basic::from_utf8(&bytes[start..i]).is_err() {
                    return syntax(SyntaxError::InvalidUtf8);
                }
                self.pos = i + 1;
                Ok((StrLoc::Slice(start, i), ascii))
            }
            Some(b'\\') => self.string_escaped(start, i, ascii),
            Some(_) => syntax(SyntaxError::ControlInString(i)),
            None => syntax(SyntaxError::UnexpectedEnd),
        }
    }

    /// The slow path of [`Parser::string`]: the string has an escape at `i`; decode it into
    /// `scratch`.
    #[cold]
    fn string_escaped<E>(
        &mut self,
        start: usize,
        mut i: usize,
        mut ascii: bool,
    ) -> Result<(StrLoc, bool), ParseError<E>> {
        let bytes = self.bytes;
        self.scratch.clear();
        let mut run_start = start;
        loop {
            let Some(&b) = bytes.get(i) else {
                return syntax(SyntaxError::UnexpectedEnd);
            };
            match STR_CLASS[b as usize] {
                0 => i += 1,
                1 => {
                    self.scratch.extend_from_slice(&bytes[run_start..i]);
                    if !ascii && simdutf8::basic::from_utf8(&self.scratch).is_err() {
                        return syntax(SyntaxError::InvalidUtf8);
                    }
                    self.pos = i + 1;
                    return Ok((StrLoc::Scratch, ascii));
                }
                2 => {
                    self.scratch.extend_from_slice(&bytes[run_start..i]);
                    let esc_at = i;
                    let Some(&e) = bytes.get(i + 1) else {
                        return syntax(SyntaxError::UnexpectedEnd);
                    };
                    i += 2;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4(i)?;
                            i += 4;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                // A high surrogate must be followed by an escaped low one.
                                if bytes.get(i) != Some(&b'\\') || bytes.get(i + 1) != Some(&b'u') {
                                    return syntax(SyntaxError::LoneSurrogate(esc_at));
                                }
                                let lo = self.hex4(i + 2)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return syntax(SyntaxError::LoneSurrogate(esc_at));
                                }
                                i += 6;
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return syntax(SyntaxError::LoneSurrogate(esc_at));
                            } else {
                                hi
                            };
                            match char::from_u32(code) {
                                Some(c) => c,
                                None => return syntax(SyntaxError::InvalidEscape(esc_at)),
                            }
                        }
                        _ => return syntax(SyntaxError::InvalidEscape(esc_at)),
                    };
                    if !c.is_ascii() {
                        ascii = false;
                    }
                    let mut utf8 = [0u8; 4];
                    self.scratch
                        .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    run_start = i;
                }
                3 => return syntax(SyntaxError::ControlInString(i)),
                _ => {
                    ascii = false;
                    i += 1;
                }
            }
        }
    }

    fn hex4<E>(&self, at: usize) -> Result<u32, ParseError<E>> {
        let Some(digits) = self.bytes.get(at..at + 4) else {
            // Either the input ends inside the escape or a non-hex byte comes first.
            let rest = &self.bytes[at.min(self.bytes.len())..];
            if rest.iter().all(u8::is_ascii_hexdigit) {
                return syntax(SyntaxError::UnexpectedEnd);
            }
            return syntax(SyntaxError::InvalidEscape(at));
        };
        let mut code = 0u32;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return syntax(SyntaxError::InvalidEscape(at)),
            };
            code = code * 16 + u32::from(v);
        }
        Ok(code)
    }

    /// Reads a number with RFC 8259's grammar and types it as orjson does.
    #[inline(always)]
    fn number<E>(&mut self) -> Result<Number, ParseError<E>> {
        let bytes = self.bytes;
        let start = self.pos;
        let mut i = start;
        let negative = bytes[i] == b'-';
        if negative {
            i += 1;
        }
        // Integer part, accumulated as it is read (19 digits always fit a u64).
        let int_start = i;
        let mut acc: u64 = 0;
        match bytes.get(i) {
            Some(b'0') => {
                i += 1;
                if matches!(bytes.get(i), Some(b'0'..=b'9')) {
                    return syntax(SyntaxError::LeadingZero(start));
                }
            }
            Some(b'1'..=b'9') => {
                while let Some(&d) = bytes.get(i) {
                    let v = d.wrapping_sub(b'0');
                    if v > 9 {
                        break;
                    }
                    acc = acc.wrapping_mul(10).wrapping_add(u64::from(v));
                    i += 1;
                }
            }
            None => return syntax(SyntaxError::UnexpectedEnd),
            Some(_) => return syntax(SyntaxError::InvalidNumber(start)),
        }
        let int_end = i;
        let mut is_float = false;
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            let frac_start = i;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == frac_start {
                return syntax(if i >= bytes.len() {
                    SyntaxError::UnexpectedEnd
                } else {
                    SyntaxError::InvalidNumber(start)
                });
            }
            is_float = true;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp_start = i;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == exp_start {
                return syntax(if i >= bytes.len() {
                    SyntaxError::UnexpectedEnd
                } else {
                    SyntaxError::InvalidNumber(start)
                });
            }
            is_float = true;
        }
        self.pos = i;
        if !is_float {
            let n_digits = int_end - int_start;
            let exact = if n_digits <= 19 {
                Some(acc)
            } else if n_digits == 20 {
                // Redo with overflow checks: 20 digits may or may not fit.
                bytes[int_start..int_end].iter().try_fold(0u64, |a, &d| {
                    a.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                })
            } else {
                None
            };
            if let Some(acc) = exact {
                if !negative {
                    return Ok(match i64::try_from(acc) {
                        Ok(v) => Number::Int(v),
                        Err(_) => Number::UInt(acc),
                    });
                }
                if acc <= (1u64 << 63) {
                    // -(2^63) fits exactly; wrapping_neg handles it.
                    return Ok(Number::Int((acc as i64).wrapping_neg()));
                }
            }
        }
        // A float, or an integer outside the 64-bit ranges: correctly rounded by std's parser.
        // The grammar above admits only ASCII digits, signs, '.', 'e' and 'E'.
        let text = std::str::from_utf8(&bytes[start..i]).unwrap_or("");
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Number::Float(f)),
            _ => syntax(SyntaxError::NumberOverflow(start)),
        }
    }
}

#[derive(Clone, Copy)]
enum StrLoc {
    Slice(usize, usize),
    Scratch,
}

fn is_empty_container(raw: &[u8]) -> bool {
    // `raw` is a complete container: empty when only whitespace sits between the brackets.
    raw[1..raw.len() - 1].iter().all(|&b| is_ws(b))
}
