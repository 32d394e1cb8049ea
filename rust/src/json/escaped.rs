//! Strings with escapes: [`Parser::string_escaped`] decodes them into the parser's `scratch`
//! buffer, copying the runs between escapes whole and decoding each escape through a table
//! (`\\uXXXX`, surrogate pairs included, without leaving the loop).

use super::parser::{syntax, Parser, StrLoc};
use super::scan::scan_plain;
#[cfg(target_arch = "x86_64")]
use super::scan::special_and_high;
use super::{ParseError, SyntaxError};

impl Parser<'_> {
    /// The path of [`Parser::string`] for a string with an escape at `i`: decodes it into
    /// `scratch`, copying each run between escapes whole and each escape through a table. Kept
    /// out of line and marked cold even though agent text is full of escapes: the common path of
    /// [`Parser::string`] stays small (measured: 0.8 % fewer instructions on the ASCII deltas
    /// stream, 0.5 % on realistic mixed).
    #[cold]
    #[inline(never)]
    pub(super) fn string_escaped<E>(
        &mut self,
        start: usize,
        i: usize,
        ascii: bool,
    ) -> Result<(StrLoc, bool), ParseError<E>> {
        #[cfg(target_arch = "x86_64")]
        return self.string_escaped_sse2(start, i, ascii);
        #[cfg(not(target_arch = "x86_64"))]
        return self.string_escaped_portable(start, i, ascii);
    }

    /// [`Parser::string_escaped`] with SSE2: after each escape the next 16 raw bytes are stored
    /// into `scratch` unconditionally and the output advanced only up to the first quote,
    /// backslash or control byte among them, so a short run between two escapes (a line of code
    /// between two `\\n`) costs one load, one store and a compare instead of a scan restart and
    /// a `memcpy` call.
    #[cfg(target_arch = "x86_64")]
    fn string_escaped_sse2<E>(
        &mut self,
        start: usize,
        mut i: usize,
        ascii: bool,
    ) -> Result<(StrLoc, bool), ParseError<E>> {
        use std::arch::x86_64::*;
        let bytes = self.bytes;
        let len = bytes.len();
        let scratch = &mut self.scratch;
        scratch.clear();
        // The decoded text is never longer than the raw one (an escape of n bytes decodes to
        // fewer than n), so the output position `o` stays <= `i - start` throughout.
        scratch.reserve(len - start);
        let out = scratch.as_mut_ptr();
        let mut o = i - start;
        let mut high = u32::from(!ascii);
        // SAFETY: SSE2 is part of the x86_64 baseline. Reads: each 16-byte load is at `i` with
        // `i + 16 <= len`. Writes: `scratch` has room for `len - start` bytes and `o <= i - start`
        // holds at every step (the first copy writes exactly `i - start` bytes; an escape of 2, 6
        // or 12 raw bytes writes 1, at most 3, or 4; runs advance both by the same amount), so
        // the blind 16-byte store at `o` (made only when `i + 16 <= len`) ends at or before
        // `len - start`, the escape writes likewise, and `set_len(o)` covers only written bytes.
        // Measured (callgrind, `Receiver.feed`): on the 732 lines over 2,000 bytes of the
        // realistic mixed stream's first 20,000 (tool results full of `\\n` and `\\"`) 37,847 ->
        // 29,997 instructions a line; on the whole 20,000, 6,854 -> 6,476.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(start), out, o);
            loop {
                // `bytes[i]` is a quote, a backslash or a control byte, or `i == len`.
                match bytes.get(i) {
                    Some(b'\\') => {
                        let Some(&e) = bytes.get(i + 1) else {
                            return syntax(SyntaxError::UnexpectedEnd);
                        };
                        let simple = ESCAPED[e as usize];
                        if simple != 0 {
                            *out.add(o) = simple;
                            o += 1;
                            i += 2;
                        } else if e == b'u' {
                            let (code, n) = unicode_escape(bytes, i)?;
                            let Some(c) = char::from_u32(code) else {
                                return syntax(SyntaxError::InvalidEscape(i));
                            };
                            high |= u32::from(code >= 0x80);
                            let mut buf = [0u8; 4];
                            let s = c.encode_utf8(&mut buf);
                            std::ptr::copy_nonoverlapping(s.as_ptr(), out.add(o), s.len());
                            o += s.len();
                            i += n;
                        } else {
                            return syntax(SyntaxError::InvalidEscape(i));
                        }
                    }
                    Some(b'"') => {
                        scratch.set_len(o);
                        // The escapes decode to valid UTF-8 and split no raw sequence (a
                        // backslash is ASCII), so `scratch` is valid exactly when the raw runs
                        // are.
                        if high != 0 && simdutf8::basic::from_utf8(scratch).is_err() {
                            return syntax(SyntaxError::InvalidUtf8);
                        }
                        self.pos = i + 1;
                        return Ok((StrLoc::Scratch, high == 0));
                    }
                    Some(_) => return syntax(SyntaxError::ControlInString(i)),
                    None => return syntax(SyntaxError::UnexpectedEnd),
                }
                // The run up to the next special byte.
                loop {
                    if i + 16 > len {
                        let (next, run_ascii) = scan_plain(bytes, i);
                        std::ptr::copy_nonoverlapping(bytes.as_ptr().add(i), out.add(o), next - i);
                        o += next - i;
                        high |= u32::from(!run_ascii);
                        i = next;
                        break;
                    }
                    let v = _mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i);
                    _mm_storeu_si128(out.add(o) as *mut __m128i, v);
                    let (mask, hi) = special_and_high(v);
                    if mask == 0 {
                        high |= hi;
                        i += 16;
                        o += 16;
                        continue;
                    }
                    let at = mask.trailing_zeros();
                    high |= hi & ((1u32 << at) - 1);
                    i += at as usize;
                    o += at as usize;
                    break;
                }
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn string_escaped_portable<E>(
        &mut self,
        start: usize,
        mut i: usize,
        mut ascii: bool,
    ) -> Result<(StrLoc, bool), ParseError<E>> {
        let bytes = self.bytes;
        let scratch = &mut self.scratch;
        scratch.clear();
        // The decoded text is never longer than the raw one: one reservation for the string.
        scratch.reserve(bytes.len() - start);
        let mut run_start = start;
        loop {
            match bytes.get(i) {
                Some(b'\\') => {
                    scratch.extend_from_slice(&bytes[run_start..i]);
                    let Some(&e) = bytes.get(i + 1) else {
                        return syntax(SyntaxError::UnexpectedEnd);
                    };
                    let simple = ESCAPED[e as usize];
                    if simple != 0 {
                        scratch.push(simple);
                        i += 2;
                    } else if e == b'u' {
                        let (code, len) = unicode_escape(bytes, i)?;
                        if code >= 0x80 {
                            ascii = false;
                        }
                        push_utf8(scratch, code);
                        i += len;
                    } else {
                        return syntax(SyntaxError::InvalidEscape(i));
                    }
                    run_start = i;
                    let (next, run_ascii) = scan_plain(bytes, i);
                    ascii &= run_ascii;
                    i = next;
                }
                Some(b'"') => {
                    scratch.extend_from_slice(&bytes[run_start..i]);
                    // The escapes decode to valid UTF-8 and split no raw sequence (a backslash
                    // is ASCII), so `scratch` is valid exactly when the raw runs are.
                    if !ascii && simdutf8::basic::from_utf8(scratch).is_err() {
                        return syntax(SyntaxError::InvalidUtf8);
                    }
                    self.pos = i + 1;
                    return Ok((StrLoc::Scratch, ascii));
                }
                Some(_) => return syntax(SyntaxError::ControlInString(i)),
                None => return syntax(SyntaxError::UnexpectedEnd),
            }
        }
    }
}

/// What each simple escape (`\\n`, `\\"`, ...) decodes to; 0 for `u` and the invalid ones.
const ESCAPED: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0C;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t
};

/// The value of each hex digit; 0xFF for any other byte.
const HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// The four hex digits at `at`, or `None` when they are cut short or one is not hex.
#[inline(always)]
fn hex4_fast(bytes: &[u8], at: usize) -> Option<u32> {
    let d = bytes.get(at..at + 4)?;
    let (a, b, c, e) = (
        HEX[d[0] as usize],
        HEX[d[1] as usize],
        HEX[d[2] as usize],
        HEX[d[3] as usize],
    );
    if (a | b | c | e) & 0xF0 != 0 {
        return None;
    }
    Some(u32::from(a) << 12 | u32::from(b) << 8 | u32::from(c) << 4 | u32::from(e))
}

/// The `\\uXXXX` escape at `at` (a surrogate pair as one character): its code point and raw
/// length (6 or 12 bytes).
#[inline]
pub(crate) fn unicode_escape<E>(bytes: &[u8], at: usize) -> Result<(u32, usize), ParseError<E>> {
    let Some(hi) = hex4_fast(bytes, at + 2) else {
        return syntax(hex_error(bytes, at + 2));
    };
    if !(0xD800..0xE000).contains(&hi) {
        return Ok((hi, 6));
    }
    if hi >= 0xDC00 {
        return syntax(SyntaxError::LoneSurrogate(at));
    }
    // A high surrogate must be followed by an escaped low one.
    if bytes.get(at + 6) != Some(&b'\\') || bytes.get(at + 7) != Some(&b'u') {
        return syntax(SyntaxError::LoneSurrogate(at));
    }
    let Some(lo) = hex4_fast(bytes, at + 8) else {
        return syntax(hex_error(bytes, at + 8));
    };
    if !(0xDC00..0xE000).contains(&lo) {
        return syntax(SyntaxError::LoneSurrogate(at));
    }
    Ok((0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12))
}

/// Why the four bytes at `at` are not a hex escape: the input ends inside it, or a non-hex byte
/// comes first.
#[cold]
fn hex_error(bytes: &[u8], at: usize) -> SyntaxError {
    let rest = &bytes[at.min(bytes.len())..];
    let rest = &rest[..rest.len().min(4)];
    if rest.len() < 4 && rest.iter().all(u8::is_ascii_hexdigit) {
        SyntaxError::UnexpectedEnd
    } else {
        SyntaxError::InvalidEscape(at)
    }
}

/// Appends the UTF-8 of `code` (a scalar value: never a surrogate).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn push_utf8(out: &mut Vec<u8>, code: u32) {
    if code < 0x80 {
        out.push(code as u8);
    } else if code < 0x800 {
        out.extend_from_slice(&[0xC0 | (code >> 6) as u8, 0x80 | (code & 0x3F) as u8]);
    } else if code < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3F) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    }
}

#[cfg(test)]
mod tests {
    use crate::json::{parse, ParseError, RustSink, SyntaxError, Value};

    /// Every piece (raw text, simple escapes, `\u` escapes of every UTF-8 length and surrogate
    /// pairs) after runs of 0 to 40 plain bytes, with 0 to 20 bytes after the string, so each
    /// escape falls at every place of a 16-byte block and near the end of the input.
    #[test]
    fn escapes_at_every_offset() {
        let pieces: [(&str, &str); 12] = [
            ("\\n", "\n"),
            ("\\\"", "\""),
            ("\\\\", "\\"),
            ("\\/", "/"),
            ("\\t", "\t"),
            ("\\u0041", "A"),
            ("\\u00e9", "é"),
            ("\\u65e5", "日"),
            ("\\ud83d\\ude00", "😀"),
            ("é", "é"),
            ("日本", "日本"),
            ("😀x", "😀x"),
        ];
        for (raw1, dec1) in pieces {
            for (raw2, dec2) in pieces {
                for pad in 0..=40 {
                    for mid in [0, 1, 15, 16, 17, 33] {
                        for after in [0, 1, 5, 16, 20] {
                            let run = "r".repeat(pad);
                            let gap = "g".repeat(mid);
                            let json =
                                format!("[\"{run}{raw1}{gap}{raw2}{run}\"{}]", " ".repeat(after));
                            let want = format!("{run}{dec1}{gap}{dec2}{run}");
                            match parse(json.as_bytes(), &mut RustSink) {
                                Ok(Value::Array(items)) => match &items[..] {
                                    [Value::String(s)] => assert_eq!(s, &want, "{json}"),
                                    other => panic!("{json}: {other:?}"),
                                },
                                other => panic!("{json}: {other:?}"),
                            }
                        }
                    }
                }
            }
        }
    }

    /// Records each string and key with the `ascii` flag the parser gave it.
    #[derive(Default)]
    struct Flags(Vec<(String, bool)>);

    impl crate::json::Sink for Flags {
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
        fn number(&mut self, _: crate::json::Number) -> Result<(), Self::Error> {
            Ok(())
        }
        fn string(&mut self, value: &str, ascii: bool) -> Result<(), Self::Error> {
            self.0.push((value.to_owned(), ascii));
            Ok(())
        }
        fn key(&mut self, value: &str, ascii: bool) -> Result<(), Self::Error> {
            self.0.push((value.to_owned(), ascii));
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

    /// The characters at the UTF-8 length and str width boundaries, as `\u` escapes and raw,
    /// each the only non-ASCII character of its string (or, for U+007F, none is), at every
    /// offset of a 16-byte block, in plain and escaped strings, values and keys: the decoded
    /// text and its `ascii` flag (which picks the str the extension builds: a wrong `true`
    /// makes a corrupt ASCII str) are right.
    #[test]
    fn ascii_flag_at_the_boundaries() {
        let chars: [(&str, &str); 11] = [
            ("\\u007F", "\u{7f}"),
            ("\\u0080", "\u{80}"),
            ("\\u00FF", "\u{ff}"),
            ("\\u0100", "\u{100}"),
            ("\\u07FF", "\u{7ff}"),
            ("\\u0800", "\u{800}"),
            ("\\uD7FF", "\u{d7ff}"),
            ("\\uE000", "\u{e000}"),
            ("\\uFFFF", "\u{ffff}"),
            ("\\uD800\\uDC00", "\u{10000}"),
            ("\\uDBFF\\uDFFF", "\u{10ffff}"),
        ];
        for (escape, char) in chars {
            for written in [escape, char] {
                for lead in ["", "\\n"] {
                    for pad in 0..=40 {
                        for tail in [0, 1, 16, 17] {
                            let (run, rest) = ("r".repeat(pad), "t".repeat(tail));
                            let text = format!("{lead}{run}{written}{rest}");
                            let json = format!("{{\"{text}\":[\"{text}\"]}}");
                            let want = format!(
                                "{}{run}{char}{rest}",
                                if lead.is_empty() { "" } else { "\n" }
                            );
                            let mut flags = Flags::default();
                            assert!(parse(json.as_bytes(), &mut flags).is_ok(), "{json}");
                            let expected = vec![(want.clone(), want.is_ascii()); 2];
                            assert_eq!(flags.0, expected, "{json}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn refused_at_every_offset() {
        let bad: [(&[u8], SyntaxError); 5] = [
            (b"\\ud800", SyntaxError::LoneSurrogate(0)),
            (b"\\udc00", SyntaxError::LoneSurrogate(0)),
            (b"\\x", SyntaxError::InvalidEscape(0)),
            (b"\x01", SyntaxError::ControlInString(0)),
            (b"\xff", SyntaxError::InvalidUtf8),
        ];
        for (piece, kind) in bad {
            for pad in 0..=40 {
                let mut json = b"[\"\\n".to_vec();
                json.extend(std::iter::repeat_n(b'r', pad));
                json.extend_from_slice(piece);
                json.extend_from_slice(b"tail\"]");
                let Err(ParseError::Syntax(e)) = parse(&json, &mut RustSink) else {
                    panic!("{:?} accepted", String::from_utf8_lossy(&json));
                };
                assert_eq!(
                    std::mem::discriminant(&e),
                    std::mem::discriminant(&kind),
                    "{:?}: {e:?}",
                    String::from_utf8_lossy(&json)
                );
            }
            // Cut short inside the string, at every length.
            let json = [b"[\"\\n".as_slice(), &[b'r'; 20], piece].concat();
            for end in 1..json.len() {
                assert!(parse(&json[..end], &mut RustSink).is_err());
            }
        }
    }
}
