//! Checking a value without building or decoding it: [`Parser::skip_value`] accepts exactly
//! what [`Parser::value`] accepts (same grammar, depth limit, number typing and overflow, string
//! escapes and UTF-8 rules) but writes nothing: no decoded text, no recursion, no allocation.
//! Used when the sink builds nothing ([`super::NullSink`], `Receiver.scan`).
//!
//! Only acceptance has to agree with the building parser: a failed line is classified by
//! [`super::parser::classify`] as "not UTF-8" (the whole line is re-checked) or "not JSON",
//! whichever syntax error was found first. The tests below and `scripts/differential.py`
//! (scan against feed) hold the two to that.

use super::parser::Parser;
use super::scan::scan_plain;
use super::{SyntaxError, MAX_DEPTH};

type SResult = Result<(), SyntaxError>;

/// Open containers while skipping, one bit each (1: object), as deep as the parser allows.
struct Open {
    bits: [u64; MAX_DEPTH / 64 + 1],
    len: usize,
}

impl Open {
    fn push(&mut self, object: bool) {
        let (word, bit) = (self.len / 64, self.len % 64);
        if object {
            self.bits[word] |= 1 << bit;
        } else {
            self.bits[word] &= !(1 << bit);
        }
        self.len += 1;
    }

    /// Whether the innermost open container is an object.
    fn top_is_object(&self) -> bool {
        let i = self.len - 1;
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }
}

fn hex4(bytes: &[u8], at: usize) -> Result<u32, SyntaxError> {
    let digits = bytes.get(at..at + 4).ok_or(SyntaxError::UnexpectedEnd)?;
    let mut code = 0u32;
    for &d in digits {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return Err(SyntaxError::InvalidEscape(at)),
        };
        code = code * 16 + u32::from(v);
    }
    Ok(code)
}

impl Parser<'_> {
    /// Checks the string starting at the opening quote at `pos` and moves past it: control
    /// bytes, escapes (a high surrogate must be followed by an escaped low one, a low one must
    /// not come alone) and UTF-8, without decoding anything.
    #[inline]
    pub(crate) fn skip_string(&mut self) -> SResult {
        let bytes = self.bytes;
        let start = self.pos + 1;
        let mut i = start;
        let mut ascii = true;
        loop {
            // Jump to the next quote, backslash or control byte, 16 bytes at a time.
            let (j, plain_ascii) = scan_plain(bytes, i);
            ascii &= plain_ascii;
            match bytes.get(j) {
                Some(b'"') => {
                    // Escapes are ASCII, so the raw bytes are valid UTF-8 exactly when the runs
                    // between them are (what the decoding parser checks).
                    if !ascii && simdutf8::basic::from_utf8(&bytes[start..j]).is_err() {
                        return Err(SyntaxError::InvalidUtf8);
                    }
                    self.pos = j + 1;
                    return Ok(());
                }
                Some(b'\\') => i = skip_escape(bytes, j)?,
                Some(_) => return Err(SyntaxError::ControlInString(j)),
                None => return Err(SyntaxError::UnexpectedEnd),
            }
        }
    }

    /// Checks the value at `pos` (whitespace before it already skipped) and moves past it.
    pub(crate) fn skip_value(&mut self) -> SResult {
        let base = self.depth;
        let mut open = Open {
            bits: [0; MAX_DEPTH / 64 + 1],
            len: 0,
        };
        'value: loop {
            // One value starts at `pos`.
            match self.peek() {
                Some(b'"') => self.skip_string()?,
                Some(b'{') => {
                    self.enter::<()>().map_err(syntax_of)?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        self.depth -= 1;
                    } else {
                        open.push(true);
                        self.skip_key()?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.enter::<()>().map_err(syntax_of)?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.depth -= 1;
                    } else {
                        open.push(false);
                        continue 'value;
                    }
                }
                Some(b't') => self.literal::<()>(b"true").map_err(syntax_of)?,
                Some(b'f') => self.literal::<()>(b"false").map_err(syntax_of)?,
                Some(b'n') => self.literal::<()>(b"null").map_err(syntax_of)?,
                Some(b'-' | b'0'..=b'9') => {
                    self.number::<()>().map_err(syntax_of)?;
                }
                None => return Err(SyntaxError::UnexpectedEnd),
                Some(_) => return Err(SyntaxError::UnexpectedChar(self.pos)),
            }
            // A value ended: close the containers it ends, or go on to the next member.
            loop {
                if open.len == 0 {
                    debug_assert_eq!(self.depth, base);
                    return Ok(());
                }
                if open.top_is_object() {
                    if self.object_next::<()>().map_err(syntax_of)? {
                        open.len -= 1;
                        self.depth -= 1;
                        continue;
                    }
                    self.skip_key()?;
                    continue 'value;
                }
                self.skip_ws();
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        self.skip_ws();
                        if self.peek() == Some(b']') {
                            return Err(SyntaxError::TrailingComma(self.pos));
                        }
                        continue 'value;
                    }
                    Some(b']') => {
                        self.pos += 1;
                        open.len -= 1;
                        self.depth -= 1;
                    }
                    None => return Err(SyntaxError::UnexpectedEnd),
                    Some(_) => return Err(SyntaxError::UnexpectedChar(self.pos)),
                }
            }
        }
    }

    /// A member's `"key" :`, leaving `pos` at its value.
    fn skip_key(&mut self) -> SResult {
        match self.peek() {
            Some(b'"') => self.skip_string()?,
            None => return Err(SyntaxError::UnexpectedEnd),
            Some(_) => return Err(SyntaxError::UnexpectedChar(self.pos)),
        }
        self.colon::<()>().map_err(syntax_of)
    }
}

/// The escape at `at` (a backslash) checked; returns the index after it.
#[inline]
fn skip_escape(bytes: &[u8], at: usize) -> Result<usize, SyntaxError> {
    match bytes.get(at + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 2),
        Some(b'u') => {
            let hi = hex4(bytes, at + 2)?;
            let next = at + 6;
            if (0xD800..0xDC00).contains(&hi) {
                if bytes.get(next) != Some(&b'\\') || bytes.get(next + 1) != Some(&b'u') {
                    return Err(SyntaxError::LoneSurrogate(at));
                }
                let lo = hex4(bytes, next + 2)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return Err(SyntaxError::LoneSurrogate(at));
                }
                Ok(next + 6)
            } else if (0xDC00..0xE000).contains(&hi) {
                Err(SyntaxError::LoneSurrogate(at))
            } else {
                Ok(next)
            }
        }
        None => Err(SyntaxError::UnexpectedEnd),
        Some(_) => Err(SyntaxError::InvalidEscape(at)),
    }
}

/// The parser's building blocks report `ParseError<()>`; with no sink they only ever fail with
/// a syntax error.
fn syntax_of(e: super::ParseError<()>) -> SyntaxError {
    match e {
        super::ParseError::Syntax(e) => e,
        super::ParseError::Sink(()) => SyntaxError::UnexpectedEnd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{parse, NullSink};

    /// Whether `skip_value` accepts the document, like `parse` does.
    fn skips(input: &[u8]) -> bool {
        let Ok(mut p) = Parser::new(input) else {
            return false;
        };
        p.skip_ws();
        if p.pos >= input.len() {
            return false;
        }
        p.skip_value().is_ok() && p.finish::<()>().is_ok()
    }

    fn parses(input: &[u8]) -> bool {
        parse(input, &mut NullSink).is_ok()
    }

    #[rustfmt::skip]
    const PIECES: &[&[u8]] = &[
        b"{", b"}", b"[", b"]", b",", b":", b" ", b"\t", b"\n", b"\"", b"\\", b"\\u", b"d83d",
        b"de00", b"dc00", b"00e9", b"0041", b"zz", b"n", b"t", b"\\n", b"\\x", b"\\\"", b"a", b"1",
        b"-", b"0", b".5", b"e9", b"1e400", b"true", b"fals", b"null", b"\x01", b"\xc3\xa9",
        b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\"k\":",
    ];

    #[test]
    fn skip_accepts_exactly_what_parse_accepts() {
        // Every document of up to 3 pieces, then pseudo-random longer ones.
        let n = PIECES.len();
        let mut doc = Vec::new();
        for a in 0..n {
            for b in 0..n {
                for c in 0..=n {
                    {
                        doc.clear();
                        for &i in &[a, b, c] {
                            if i < n {
                                doc.extend_from_slice(PIECES[i]);
                            }
                        }
                        assert_eq!(
                            skips(&doc),
                            parses(&doc),
                            "{:?}",
                            String::from_utf8_lossy(&doc)
                        );
                        doc.insert(0, b'[');
                        doc.push(b']');
                        assert_eq!(
                            skips(&doc),
                            parses(&doc),
                            "{:?}",
                            String::from_utf8_lossy(&doc)
                        );
                    }
                }
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            doc.clear();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = 1 + (state % 12) as usize;
            let mut s = state;
            for _ in 0..len {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                doc.extend_from_slice(PIECES[(s >> 33) as usize % n]);
            }
            assert_eq!(
                skips(&doc),
                parses(&doc),
                "{:?}",
                String::from_utf8_lossy(&doc)
            );
        }
    }

    #[test]
    fn skip_respects_the_depth_limit() {
        for depth in [1023, 1024, 1025, 3000] {
            let doc = [vec![b'['; depth], vec![b']'; depth]].concat();
            assert_eq!(skips(&doc), parses(&doc), "depth {depth}");
            let doc = [b"{\"a\":".repeat(depth), b"1".to_vec(), vec![b'}'; depth]].concat();
            assert_eq!(skips(&doc), parses(&doc), "object depth {depth}");
        }
    }

    #[test]
    fn skip_checks_strings_like_the_decoder() {
        for s in [
            &b"\"plain\""[..],
            b"\"\\ud83d\\ude00\"",
            b"\"\\ud83d\"",
            b"\"\\ud83dx\"",
            b"\"\\ud83d\\u0041\"",
            b"\"\\ude00\"",
            b"\"\\u12\"",
            b"\"\\u12g4\"",
            b"\"a\\",
            b"\"\xc3\xa9\\n\xe2\x80\x94\"",
            b"\"\xc3\\n\"",
            b"\"\xed\xa0\x80\"",
            b"\"tab\there\"",
            b"\"x",
        ] {
            assert_eq!(skips(s), parses(s), "{:?}", String::from_utf8_lossy(s));
        }
    }
}
