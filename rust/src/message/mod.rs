//! Reading one line as a protocol message: a JSON object parsed with [`crate::json`]'s parser,
//! recording as it goes the [`Shape`] of every known top-level field into [`Fields`], so the
//! validator never looks anything up in the built object.
//!
//! Lines of a stream repeat their key order, so the key the previous message of the same type
//! had at each position is tried first (one comparison instead of a hash lookup).

use crate::json::parser::{classify, is_empty_container, syntax, PResult, Parser};
use crate::json::{parse, NullSink, ParseError, RustSink, Sink, SyntaxError};
use crate::schema::{short_eq, Fields, KeyId, Shape};

/// A [`Sink`] that can build a protocol message's top-level object: told which known field a
/// key or string value is, so it may reuse objects it expects to repeat.
pub trait MessageSink: Sink {
    /// False for a sink that builds nothing ([`NullSink`]): the values the validator does not
    /// read are then checked without being decoded ([`Parser::skip_value`]).
    const BUILDS: bool = true;

    /// A key of the top-level object; `known` is set when it is one of the protocol's names.
    #[inline]
    fn field_key(
        &mut self,
        value: &str,
        ascii: bool,
        known: Option<KeyId>,
    ) -> Result<Self::Key, Self::Error> {
        let _ = known;
        self.key(value, ascii)
    }

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

/// Implements the `top_*` methods of a [`MessageSink`] with its `object_*` ones.
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

impl MessageSink for RustSink {
    top_as_object!();
}

/// Validation without objects (`Receiver.scan`): the shapes are recorded, no value is built.
impl MessageSink for NullSink {
    const BUILDS: bool = false;
    top_as_object!();
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
// Inlined into its caller (decode_with): as a separate call it cost about 40 instructions a
// line on `Receiver.feed` (callgrind).
#[inline(always)]
pub fn parse_message<S: MessageSink>(
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
    p.scratch = std::mem::take(&mut fields.scratch);
    let result = p.top_object(sink, fields).and_then(|v| {
        p.finish()?;
        Ok(v)
    });
    fields.scratch = std::mem::take(&mut p.scratch);
    match result {
        Ok(v) => Ok(v),
        Err(ParseError::Syntax(e)) => Err(MessageError::Syntax(classify(input, e))),
        Err(ParseError::Sink(e)) => Err(MessageError::Sink(e)),
    }
}

/// A key read from the input, and which protocol key it is.
type KeyHit<S> = (<S as Sink>::Key, Option<KeyId>);

impl Parser<'_> {
    /// Reads a top-level `"key" :`, telling which protocol key it is; leaves `pos` at the value.
    fn message_key<S: MessageSink>(&mut self, sink: &mut S) -> PResult<KeyHit<S>, S> {
        let (loc, ascii) = self.key_string()?;
        let s = self.resolve(loc);
        let known = KeyId::from_name(s);
        let key = sink.field_key(s, ascii, known).map_err(ParseError::Sink)?;
        self.colon()?;
        Ok((key, known))
    }

    /// If the input at `pos` is exactly `"<name of predicted>"` then `:`, read it as that key.
    #[inline]
    fn predicted_key<S: MessageSink>(
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
            || !short_eq(&self.bytes[start..end], name)
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
            .field_key(id.name(), true, Some(id))
            .map_err(ParseError::Sink)?;
        Ok(Some((key, Some(id))))
    }

    /// The top-level object of a message: like `object`, but records the shape of each known
    /// field's value as it goes.
    fn top_object<S: MessageSink>(
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
        let mut hit = self.next_key(sink, fields.predicted(0))?;
        loop {
            let (key, known) = hit;
            fields.saw_key(index, known);
            index += 1;
            let v = match known {
                None if !S::BUILDS => {
                    self.skip_value()?;
                    sink.null().map_err(ParseError::Sink)?
                }
                None => self.value(sink)?,
                Some(id) => {
                    let (v, shape) = self.shaped_value(sink, id, true, fields)?;
                    fields.set(id, shape);
                    v
                }
            };
            sink.top_insert(&mut object, key, v)
                .map_err(ParseError::Sink)?;
            let predicted = fields.predicted(index);
            hit = match self.predicted_separator(sink, predicted)? {
                Some(next) => next,
                None if self.object_next()? => break,
                None => self.next_key(sink, predicted)?,
            };
        }
        self.depth -= 1;
        sink.top_end(object).map_err(ParseError::Sink)
    }

    /// The next key of the top-level object, at `pos`: the key the previous message of this
    /// type had at this place (lines of a stream repeat their key order), else any key.
    #[inline(always)]
    fn next_key<S: MessageSink>(
        &mut self,
        sink: &mut S,
        predicted: Option<KeyId>,
    ) -> PResult<KeyHit<S>, S> {
        match self.predicted_key(sink, predicted)? {
            Some(hit) => Ok(hit),
            None => self.message_key(sink),
        }
    }

    /// Right after a value: if the input at `pos` is exactly `,"<name of predicted>":` (compact
    /// JSON, as every sender writes it), read it as that key, in one comparison instead of
    /// [`Parser::object_next`] then [`Parser::predicted_key`] byte by byte. Anything else
    /// (whitespace, another key, the end of the object) is left to the general path.
    #[inline(always)]
    fn predicted_separator<S: MessageSink>(
        &mut self,
        sink: &mut S,
        predicted: Option<KeyId>,
    ) -> PResult<Option<KeyHit<S>>, S> {
        let Some(id) = predicted else {
            return Ok(None);
        };
        // Within the last bytes of a line the general path reads it.
        let Some(window) = self.bytes.get(self.pos..).and_then(<[u8]>::first_chunk) else {
            return Ok(None);
        };
        let Some(len) = id.separator_at(window) else {
            return Ok(None);
        };
        self.pos += len;
        self.skip_ws();
        let key = sink
            .field_key(id.name(), true, Some(id))
            .map_err(ParseError::Sink)?;
        Ok(Some((key, Some(id))))
    }

    /// A value plus its [`Shape`]. At the top level (`top`), an array also records the shapes of
    /// its items (for `refs`); deeper containers only record their emptiness.
    #[inline(always)]
    fn shaped_value<S: MessageSink>(
        &mut self,
        sink: &mut S,
        id: KeyId,
        top: bool,
        fields: &mut Fields,
    ) -> Result<(S::Value, Shape), ParseError<S::Error>> {
        match self.peek() {
            Some(b'"' | b'{' | b'[') if !(S::BUILDS || top && id.keeps_text()) => {
                self.skipped_shape(sink, id, top, fields)
            }
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

    /// [`Parser::shaped_value`] of a string or container for a sink that builds nothing: checked
    /// without decoding (a top-level array still records its items' shapes, for `refs`).
    #[inline]
    fn skipped_shape<S: MessageSink>(
        &mut self,
        sink: &mut S,
        id: KeyId,
        top: bool,
        fields: &mut Fields,
    ) -> Result<(S::Value, Shape), ParseError<S::Error>> {
        let start = self.pos;
        let shape = match self.bytes[start] {
            b'"' => {
                self.skip_string()?;
                Shape::Str(None)
            }
            b'[' if top => return self.shaped_array(sink, id, fields),
            open => {
                self.skip_value()?;
                let empty = is_empty_container(&self.bytes[start..self.pos]);
                if open == b'{' {
                    Shape::Object { empty }
                } else {
                    Shape::Array { empty }
                }
            }
        };
        Ok((sink.null().map_err(ParseError::Sink)?, shape))
    }

    fn shaped_array<S: MessageSink>(
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
}
