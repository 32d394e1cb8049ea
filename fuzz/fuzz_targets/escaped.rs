//! Strings (`json/escaped.rs`, and the plain path of `json/parser.rs` before it): the raw bytes
//! after the first one are a string's body, put in a document as an array's value or an
//! object's key after 0 to 31 spaces (so each escape lands at every place of a 16-byte block),
//! and the parser must decode it exactly as a plain reference decoder does, or refuse it
//! exactly when the reference does.

#![no_main]

use fenwire_fast::json::{parse, Number, ParseError, RustSink, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let pad = usize::from(mode & 31);
    let as_key = mode & 32 != 0;
    let mut doc = Vec::with_capacity(body.len() + 40);
    doc.push(if as_key { b'{' } else { b'[' });
    doc.extend(std::iter::repeat_n(b' ', pad));
    doc.push(b'"');
    doc.extend_from_slice(body);
    doc.push(b'"');
    doc.extend_from_slice(if as_key { b":0}" } else { b"]" });
    let got = match parse(&doc, &mut RustSink) {
        Ok(v) => Some(v),
        Err(ParseError::Syntax(_)) => None,
        Err(ParseError::Sink(never)) => match never {},
    };
    let start = 1 + pad + 1;
    match reference(&doc[start..]) {
        // The string ends at the quote put after the body: the document is valid.
        Some((text, end)) if end == body.len() => {
            let want = if as_key {
                Value::Object(vec![(text, Value::Number(Number::Int(0)))])
            } else {
                Value::Array(vec![Value::String(text)])
            };
            assert_eq!(got, Some(want), "{:?}", String::from_utf8_lossy(&doc));
        }
        // It ends at a quote inside the body: what follows decides, but the first string is
        // this one.
        Some((text, _)) => match got {
            Some(Value::Array(items)) => assert_eq!(items.first(), Some(&Value::String(text))),
            Some(Value::Object(entries)) => {
                assert!(
                    entries.iter().any(|(k, _)| *k == text),
                    "{entries:?} {text:?}"
                )
            }
            Some(other) => panic!("{other:?}"),
            None => {}
        },
        None => assert_eq!(got, None, "{:?}", String::from_utf8_lossy(&doc)),
    }
});

/// A JSON string body from its first byte (just after the opening quote) up to its closing
/// quote, decoded byte by byte: its text and the index of the closing quote, or `None` when it
/// is not a valid string (RFC 8259: no raw control byte, only the eight simple escapes and
/// `\uXXXX`, a surrogate only as a high-low pair of escapes, UTF-8 text).
fn reference(b: &[u8]) -> Option<(String, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match *b.get(i)? {
            b'"' => return Some((String::from_utf8(out).ok()?, i)),
            b'\\' => {
                let simple = match *b.get(i + 1)? {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        let hi = hex4(b, i + 2)?;
                        i += 6;
                        let code = match hi {
                            0xD800..=0xDBFF => {
                                if b.get(i..i + 2)? != b"\\u" {
                                    return None;
                                }
                                let lo = hex4(b, i + 2)?;
                                if !(0xDC00..=0xDFFF).contains(&lo) {
                                    return None;
                                }
                                i += 6;
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            }
                            0xDC00..=0xDFFF => return None,
                            _ => hi,
                        };
                        let c = char::from_u32(code)?;
                        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                        continue;
                    }
                    _ => return None,
                };
                out.push(simple);
                i += 2;
            }
            0..=0x1F => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
    if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}
