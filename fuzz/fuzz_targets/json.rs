//! The JSON parser (`json/parser.rs`, `json/scan.rs`): held to serde_json on every input (same
//! verdict, same value), every `ascii` flag it hands a sink true exactly for ASCII text, an
//! accepted document written back out and parsed again gives the same value, a line the message
//! layer accepts is a JSON object, and `scan_plain` from every offset of a 16-byte block agrees
//! with a byte-by-byte scan.

#![no_main]

use fenwire_fast::codec::decode_with;
use fenwire_fast::json::{parse, scan_plain, Number, ParseError, RustSink, Sink, Value};
use fenwire_fast::schema::{Direction, Fields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ours = match parse(data, &mut Checking) {
        Ok(v) => Some(v),
        Err(ParseError::Syntax(_)) => None,
        Err(ParseError::Sink(never)) => match never {},
    };
    match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(theirs) => {
            let ours = ours
                .as_ref()
                .unwrap_or_else(|| panic!("refused, serde_json accepts"));
            assert!(same(ours, &theirs), "{ours:?} != {theirs:?}");
        }
        // serde_json stops at 128 levels, the parser (like orjson) at 1024.
        Err(e) if e.to_string().contains("recursion limit") => {}
        Err(e) => assert!(ours.is_none(), "accepted {ours:?}, serde_json: {e}"),
    }
    if let Some(value) = &ours {
        let mut text = String::new();
        write(value, &mut text);
        let again = parse(text.as_bytes(), &mut RustSink).expect("written back out");
        assert!(identical(value, &again), "{value:?} -> {text} -> {again:?}");
    }
    // The message layer reads the same grammar with the same parser.
    for direction in [Direction::Event, Direction::Control] {
        let mut fields = Fields::new();
        if decode_with(data, Some(direction), &mut RustSink, &mut fields).is_ok() {
            assert!(matches!(ours, Some(Value::Object(_))));
        }
    }
    for start in (0..data.len().min(48)).chain([data.len()]) {
        assert_eq!(
            scan_plain(data, start),
            plain_reference(data, start),
            "from {start}"
        );
    }
});

/// `scan_plain` byte by byte.
fn plain_reference(bytes: &[u8], start: usize) -> (usize, bool) {
    let mut i = start;
    while i < bytes.len() && !matches!(bytes[i], b'"' | b'\\' | 0..=0x1F) {
        i += 1;
    }
    (i, bytes[start.min(i)..i].is_ascii())
}

/// [`RustSink`], checking each `ascii` flag on the way.
struct Checking;

impl Sink for Checking {
    type Value = Value;
    type Key = String;
    type Array = Vec<Value>;
    type Object = Vec<(String, Value)>;
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<Value, Self::Error> {
        RustSink.null()
    }
    fn boolean(&mut self, value: bool) -> Result<Value, Self::Error> {
        RustSink.boolean(value)
    }
    fn number(&mut self, value: Number) -> Result<Value, Self::Error> {
        RustSink.number(value)
    }
    fn string(&mut self, value: &str, ascii: bool) -> Result<Value, Self::Error> {
        assert_eq!(ascii, value.is_ascii(), "{value:?}");
        RustSink.string(value, ascii)
    }
    fn key(&mut self, value: &str, ascii: bool) -> Result<String, Self::Error> {
        assert_eq!(ascii, value.is_ascii(), "{value:?}");
        RustSink.key(value, ascii)
    }
    fn array_begin(&mut self) -> Result<Vec<Value>, Self::Error> {
        RustSink.array_begin()
    }
    fn array_push(&mut self, array: &mut Vec<Value>, value: Value) -> Result<(), Self::Error> {
        RustSink.array_push(array, value)
    }
    fn array_end(&mut self, array: Vec<Value>) -> Result<Value, Self::Error> {
        RustSink.array_end(array)
    }
    fn object_begin(&mut self) -> Result<Vec<(String, Value)>, Self::Error> {
        RustSink.object_begin()
    }
    fn object_insert(
        &mut self,
        object: &mut Vec<(String, Value)>,
        key: String,
        value: Value,
    ) -> Result<(), Self::Error> {
        RustSink.object_insert(object, key, value)
    }
    fn object_end(&mut self, object: Vec<(String, Value)>) -> Result<Value, Self::Error> {
        RustSink.object_end(object)
    }
}

/// The same value, with the dialect's differences from serde_json: `-0` is the integer 0
/// (orjson) where serde_json reads the float -0.0; serde_json's objects are sorted maps.
fn same(ours: &Value, theirs: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (ours, theirs) {
        (Value::Null, J::Null) => true,
        (Value::Bool(a), J::Bool(b)) => a == b,
        (Value::String(a), J::String(b)) => a == b,
        (Value::Number(n), J::Number(m)) => match *n {
            Number::Int(i) => {
                m.as_i64() == Some(i)
                    || (i == 0
                        && m.as_f64()
                            .is_some_and(|f| f.to_bits() == (-0.0f64).to_bits()))
            }
            Number::UInt(u) => !m.is_i64() && m.as_u64() == Some(u),
            Number::Float(f) => m.is_f64() && m.as_f64().map(f64::to_bits) == Some(f.to_bits()),
        },
        (Value::Array(a), J::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), J::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

/// Equal, floats bit for bit (so -0.0 is not 0.0).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, p), (l, q))| k == l && identical(p, q))
        }
        _ => a == b,
    }
}

/// `value` as JSON text (floats in Rust's shortest round-trip form, which is valid JSON).
fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(Number::Int(i)) => out.push_str(&i.to_string()),
        Value::Number(Number::UInt(u)) => out.push_str(&u.to_string()),
        Value::Number(Number::Float(f)) => out.push_str(&format!("{f:?}")),
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap()),
        Value::Array(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(entries) => {
            out.push('{');
            for (k, (key, item)) in entries.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).unwrap());
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}
