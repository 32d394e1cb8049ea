//! The recursive-descent parser behind [`super::parse`]: values, containers (with the depth
//! limit and stack growth), strings (UTF-8 checked, escapes decoded) and numbers (typed as
//! orjson types them). Its building blocks are `pub(crate)` so that [`crate::message`] can read
//! a message's top-level object with them.

use super::scan::{is_ws, scan_plain};
use super::{Number, ParseError, Sink, SyntaxError, MAX_DEPTH, RED_ZONE, STACK_SEGMENT};

pub(crate) struct Parser<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) depth: usize,
    /// The decoded text of the last string that had escapes.
    pub(crate) scratch: Vec<u8>,
}

/// orjson rejects a document that is not valid UTF-8 as a whole before anything else; the
/// parser only validates the strings it reads, so a failed parse is classified here.
#[cold]
pub(crate) fn classify(input: &[u8], e: SyntaxError) -> SyntaxError {
    if e != SyntaxError::InvalidUtf8 && simdutf8::basic::from_utf8(input).is_err() {
        return SyntaxError::InvalidUtf8;
    }
    e
}

pub(crate) fn parse_inner<S: Sink>(
    input: &[u8],
    sink: &mut S,
) -> Result<S::Value, ParseError<S::Error>> {
    let mut p = Parser::new(input)?;
    p.skip_ws();
    if p.pos >= p.bytes.len() {
        return Err(SyntaxError::Empty.into());
    }
    let value = p.value(sink)?;
    p.finish()?;
    Ok(value)
}

pub(crate) type PResult<T, S> = Result<T, ParseError<<S as Sink>::Error>>;

pub(crate) fn syntax<T, E>(e: SyntaxError) -> Result<T, ParseError<E>> {
    Err(ParseError::Syntax(e))
}

impl<'a> Parser<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Result<Self, SyntaxError> {
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
    pub(crate) fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            // Every whitespace byte is <= b' ': one compare for the usual non-space byte.
            if b > b' ' || !is_ws(b) {
                break;
            }
            self.pos += 1;
        }
    }

    pub(crate) fn finish<E>(&mut self) -> Result<(), ParseError<E>> {
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return syntax(SyntaxError::TrailingContent(self.pos));
        }
        Ok(())
    }

    #[inline(always)]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(crate) fn value<S: Sink>(
        &mut self,
        sink: &mut S,
    ) -> Result<S::Value, ParseError<S::Error>> {
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

    pub(crate) fn literal<E>(&mut self, word: &[u8]) -> Result<(), ParseError<E>> {
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

    pub(crate) fn enter<E>(&mut self) -> Result<(), ParseError<E>> {
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
    pub(crate) fn array<S: Sink>(
        &mut self,
        sink: &mut S,
    ) -> Result<S::Value, ParseError<S::Error>> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.array_inner(sink))
    }

    pub(crate) fn object<S: Sink>(
        &mut self,
        sink: &mut S,
    ) -> Result<S::Value, ParseError<S::Error>> {
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

    /// Reads the quoted key at `pos` (its text is then [`Parser::resolve`]d).
    #[inline(always)]
    pub(crate) fn key_string<E>(&mut self) -> Result<(StrLoc, bool), ParseError<E>> {
        match self.peek() {
            Some(b'"') => {}
            None => return syntax(SyntaxError::UnexpectedEnd),
            Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
        self.string()
    }

    /// After a key: the `:` with the whitespace around it; leaves `pos` at the value.
    #[inline(always)]
    pub(crate) fn colon<E>(&mut self) -> Result<(), ParseError<E>> {
        self.skip_ws();
        match self.peek() {
            Some(b':') => self.pos += 1,
            None => return syntax(SyntaxError::UnexpectedEnd),
            Some(_) => return syntax(SyntaxError::UnexpectedChar(self.pos)),
        }
        self.skip_ws();
        Ok(())
    }

    /// Reads `"key" :` and leaves `pos` at the value.
    fn object_key<S: Sink>(&mut self, sink: &mut S) -> PResult<S::Key, S> {
        let (loc, ascii) = self.key_string()?;
        let s = self.resolve(loc);
        let key = sink.key(s, ascii).map_err(ParseError::Sink)?;
        self.colon()?;
        Ok(key)
    }

    /// After a member: `,` (then the next key) or `}`. Returns true at the end.
    pub(crate) fn object_next<E>(&mut self) -> Result<bool, ParseError<E>> {
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
            let key = self.object_key(sink)?;
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

    /// The decoded text of a string read by [`Parser::string`].
    #[inline(always)]
    pub(crate) fn resolve(&self, loc: StrLoc) -> &str {
        match loc {
            // SAFETY: `string` returns a `Slice` only after it found every byte of it ASCII, or
            // checked it with `simdutf8`. Measured: validating each whole line up front instead
            // (to get a `&str` safely) was 3.3 % of `Receiver.feed`.
            StrLoc::Slice(start, end) => unsafe {
                std::str::from_utf8_unchecked(&self.bytes[start..end])
            },
            // SAFETY: `string_escaped` returns `Scratch` only after it found every copied byte
            // ASCII or checked `scratch` with `simdutf8`; the characters it decodes from escapes
            // are written with `char::encode_utf8`, which is always valid UTF-8.
            StrLoc::Scratch => unsafe { std::str::from_utf8_unchecked(&self.scratch) },
        }
    }

    /// Reads a string starting at the opening quote. Returns where its decoded text is and
    /// whether it is pure ASCII.
    #[inline(always)]
    pub(crate) fn string<E>(&mut self) -> Result<(StrLoc, bool), ParseError<E>> {
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

    /// Reads a number with RFC 8259's grammar and types it as orjson does.
    #[inline(always)]
    pub(crate) fn number<E>(&mut self) -> Result<Number, ParseError<E>> {
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
pub(crate) enum StrLoc {
    Slice(usize, usize),
    Scratch,
}

pub(crate) fn is_empty_container(raw: &[u8]) -> bool {
    // `raw` is a complete container: empty when only whitespace sits between the brackets.
    raw[1..raw.len() - 1].iter().all(|&b| is_ws(b))
}
