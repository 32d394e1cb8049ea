//! Core tests that cut across modules: the JSON dialect (every fact measured against orjson),
//! decode's check order and reasons, and the receiver's seq rules.

use fenwire_fast::codec::{decode_with, DecodeError, SeqState};
use fenwire_fast::json::{parse, Number, ParseError, RustSink, Value};
use fenwire_fast::schema::{Code, Direction, Fields, Rejection};

fn loads(input: &[u8]) -> Option<Value> {
    match parse(input, &mut RustSink) {
        Ok(v) => Some(v),
        Err(ParseError::Syntax(_)) => None,
        Err(ParseError::Sink(never)) => match never {},
    }
}

fn num(input: &str) -> Option<Number> {
    match loads(input.as_bytes()) {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

#[test]
fn dialect_rejects_what_orjson_rejects() {
    let bad: &[&[u8]] = &[
        b"",
        b" ",
        b"\t\r\n",
        b"\xEF\xBB\xBF{}",
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"1.7976931348623159e308",
        b"-1e400",
        b"01",
        b"-01",
        b"1.",
        b".5",
        b"+1",
        b"1e",
        b"1e+",
        b"-",
        b"\"\\ud800\"",
        b"\"\\udc00\"",
        b"\"\\ud800\\u0041\"",
        b"\"a\x01\"",
        b"\"\x1f\"",
        b"\"\xed\xa0\x80\"",
        b"\"\xc0\x80\"",
        b"\"\xf4\x90\x80\x80\"",
        b"\"\xff\"",
        b"{} x",
        b"{}\x0c",
        b"[1,]",
        b"{\"a\":1,}",
        b"[1 2]",
        b"{\"a\" 1}",
        b"{1:2}",
        b"tru",
        b"nulll",
        b"\"\\x\"",
        b"\"\\U0041\"",
        b"\"abc",
        b"[",
        b"{\"a\":",
        b"\x00",
        b"{\"a\":1}\x00",
        b"\"\\u12\"",
        b"\"\\u12G4\"",
    ];
    for input in bad {
        assert_eq!(loads(input), None, "{:?}", String::from_utf8_lossy(input));
    }
    let big_int = format!("1{}", "0".repeat(400));
    assert_eq!(loads(big_int.as_bytes()), None);
}

#[test]
fn dialect_numbers_match_orjson() {
    assert_eq!(num("1e-400"), Some(Number::Float(0.0)));
    assert!(matches!(num("-1e-400"), Some(Number::Float(f)) if f == 0.0 && f.is_sign_negative()));
    assert_eq!(num("-9223372036854775808"), Some(Number::Int(i64::MIN)));
    assert_eq!(
        num("-9223372036854775809"),
        Some(Number::Float(-9.223372036854776e18))
    );
    assert_eq!(num("9223372036854775807"), Some(Number::Int(i64::MAX)));
    assert_eq!(num("9223372036854775808"), Some(Number::UInt(1 << 63)));
    assert_eq!(num("18446744073709551615"), Some(Number::UInt(u64::MAX)));
    assert_eq!(
        num("18446744073709551616"),
        Some(Number::Float(1.8446744073709552e19))
    );
    assert_eq!(num("-0"), Some(Number::Int(0)));
    assert!(matches!(num("-0.0"), Some(Number::Float(f)) if f == 0.0 && f.is_sign_negative()));
    assert_eq!(num("1E2"), Some(Number::Float(100.0)));
    assert_eq!(num("1e-0"), Some(Number::Float(1.0)));
    assert_eq!(num("1.0"), Some(Number::Float(1.0)));
    assert_eq!(num("1.7976931348623157e308"), Some(Number::Float(f64::MAX)));
    assert_eq!(num("4.9e-324"), Some(Number::Float(5e-324)));
    assert_eq!(num("2.4e-324"), Some(Number::Float(0.0)));
    assert_eq!(num("0.1"), Some(Number::Float(0.1)));
    assert_eq!(
        num("123456789012345678901234567890"),
        Some(Number::Float(1.2345678901234568e29))
    );
}

#[test]
fn dialect_strings_and_structure() {
    assert_eq!(loads(b"\"\\u0000\""), Some(Value::String("\0".into())));
    assert_eq!(
        loads(b"\"\\ud83d\\ude00\""),
        Some(Value::String("\u{1F600}".into()))
    );
    assert_eq!(
        loads(b"\"\\/\\b\\f\\n\\r\\t\\\"\\\\\""),
        Some(Value::String("/\x08\x0c\n\r\t\"\\".into()))
    );
    assert_eq!(
        loads(b"\"\x7f\xc3\xa9\""),
        Some(Value::String("\x7fé".into()))
    );
    assert_eq!(loads(b" {} \r\n\t"), Some(Value::Object(vec![])));
    assert_eq!(
        loads(b"{\"a\":1,\"b\":2,\"a\":3}"),
        Some(Value::Object(vec![
            ("a".into(), Value::Number(Number::Int(3))),
            ("b".into(), Value::Number(Number::Int(2))),
        ]))
    );
    let deep_ok = format!("{}{}", "[".repeat(1024), "]".repeat(1024));
    assert!(loads(deep_ok.as_bytes()).is_some());
    let deep_bad = format!("{}{}", "[".repeat(1025), "]".repeat(1025));
    assert!(loads(deep_bad.as_bytes()).is_none());
    let obj_ok = format!("{}1{}", "{\"a\":".repeat(1024), "}".repeat(1024));
    assert!(loads(obj_ok.as_bytes()).is_some());
    let obj_bad = format!("{}1{}", "{\"a\":".repeat(1025), "}".repeat(1025));
    assert!(loads(obj_bad.as_bytes()).is_none());
    // Long strings exercise the 8-byte scanner with a special byte at every offset.
    for at in 0..20 {
        let mut s = "x".repeat(20);
        s.replace_range(at..at + 1, "é");
        let doc = format!("\"{s}\"");
        assert_eq!(loads(doc.as_bytes()), Some(Value::String(s.clone())));
        let mut raw = doc.clone().into_bytes();
        raw[at + 1] = 0x01;
        assert_eq!(loads(&raw), None);
    }
}

fn decode(line: &[u8], dir: Direction) -> Result<Value, Rejection> {
    let mut fields = Fields::new();
    match decode_with(line, Some(dir), &mut RustSink, &mut fields) {
        Ok(v) => Ok(v),
        Err(DecodeError::Rejected(r)) => Err(r),
        Err(DecodeError::Sink(never)) => match never {},
    }
}

fn reason(line: &str, dir: Direction) -> (Code, String) {
    match decode(line.as_bytes(), dir) {
        Ok(_) => panic!("accepted {line}"),
        Err(r) => (r.code, r.reason),
    }
}

#[test]
fn decode_check_order_and_reasons() {
    use Direction::*;
    let big = vec![b' '; 65536];
    assert_eq!(decode(&big, Event).unwrap_err().code, Code::TooLarge);
    assert_eq!(
        reason("{\"a\":\"\u{0}\"}", Event).1,
        "line is not valid JSON"
    );
    assert_eq!(
        decode(b"{\"a\":\"\xff\"}", Event).unwrap_err().reason,
        "line is not valid UTF-8"
    );
    assert_eq!(reason("[]", Event).1, "line is not a JSON object");
    assert_eq!(reason("   ", Event).1, "line is not valid JSON");
    assert_eq!(
        reason("{\"seq\":1}", Event),
        (Code::Invalid, "v is required".into())
    );
    assert_eq!(
        reason("{\"v\":null}", Event),
        (Code::Invalid, "v is required".into())
    );
    assert_eq!(
        reason("{\"v\":2.0}", Event),
        (
            Code::VersionMismatch,
            "wire version 2 is not supported; expected 1".into()
        )
    );
    assert_eq!(
        reason("{\"v\":\"1\"}", Event).1,
        "wire version must be the number 1, not a string"
    );
    assert_eq!(
        reason("{\"v\":true}", Event).1,
        "wire version must be the number 1, not a boolean"
    );
    assert_eq!(
        reason("{\"v\":1.5}", Event).1,
        "wire version must be the number 1, not a non-integral number"
    );
    assert_eq!(
        reason("{\"v\":1}", Event),
        (
            Code::Invalid,
            "seq is required; type is required; run is required".into()
        )
    );
    assert_eq!(
        reason("{\"v\":1,\"seq\":0.5,\"type\":1,\"run\":\"r\"}", Event).1,
        "seq must be an integer; seq must be at least 1; type must be a string"
    );
    assert_eq!(
        reason(
            "{\"v\":1,\"seq\":1,\"type\":\"steer\",\"run\":\"r\"}",
            Event
        ),
        (
            Code::UnknownType,
            "steer is a control type, not an event type".into()
        )
    );
    assert_eq!(
        reason(
            "{\"v\":1,\"seq\":1,\"type\":\"ready\",\"run\":\"r\"}",
            Control
        )
        .1,
        "ready is an event type, not a control type"
    );
    assert_eq!(
        reason("{\"v\":1,\"seq\":1,\"type\":\"x\",\"run\":\"r\"}", Control).1,
        "unknown control type: x"
    );
    let rej = decode(
        b"{\"v\":1,\"seq\":3,\"type\":\"control-ack\",\"run\":\"r\",\"status\":\"ok\",\"reason\":5}",
        Event,
    )
    .unwrap_err();
    assert_eq!(rej.code, Code::InvalidPayload);
    assert_eq!(rej.seq, Some(3));
    assert_eq!(rej.type_.as_deref(), Some("control-ack"));
    assert_eq!(rej.run.as_deref(), Some("r"));
    assert_eq!(
        rej.reason,
        "status must be one of accepted, rejected, applied; reason must be a string; ref is required unless status is rejected"
    );
    assert_eq!(
        reason("{\"v\":1,\"seq\":1,\"type\":\"info\",\"run\":\"r\",\"refs\":[1,0,1.5,\"x\",9007199254740992]}", Event).1,
        "refs[1] must be at least 1; refs[2] must be an integer; refs[3] must be an integer; refs[4] must be at most 9007199254740991"
    );
    assert!(decode(
        b"{\"v\":1.0,\"seq\":1.0,\"type\":\"info\",\"run\":\"r\",\"refs\":{}}",
        Event
    )
    .is_ok());
    assert!(decode(
        b"{\"v\":1,\"seq\":1,\"type\":\"llm-end\",\"run\":\"r\",\"usage\":[]}",
        Event
    )
    .is_ok());
    assert_eq!(
        reason(
            "{\"v\":1,\"seq\":1,\"type\":\"llm-end\",\"run\":\"r\",\"usage\":[1]}",
            Event
        )
        .1,
        "usage must be an object"
    );
}

#[test]
fn receiver_seq_rules() {
    let mut rx = SeqState::default();
    let mut fields = Fields::new();
    let mut recv = |line: &str, rx: &mut SeqState| -> Result<(), Rejection> {
        match decode_with(
            line.as_bytes(),
            Some(Direction::Event),
            &mut RustSink,
            &mut fields,
        ) {
            Ok(_) => rx.accept(&fields),
            Err(DecodeError::Rejected(r)) => Err(rx.reject(r)),
            Err(DecodeError::Sink(never)) => match never {},
        }
    };
    assert!(recv(
        "{\"v\":1,\"seq\":1,\"type\":\"ready\",\"run\":\"r\"}",
        &mut rx
    )
    .is_ok());
    let r = recv(
        "{\"v\":1,\"seq\":1,\"type\":\"ready\",\"run\":\"r\"}",
        &mut rx,
    )
    .unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str(), r.seq),
        (Code::OutOfOrder, "seq 1 does not follow 1", None)
    );
    // A rejected line with a usable seq consumes it.
    let r = recv(
        "{\"v\":1,\"seq\":5.0,\"type\":\"nope\",\"run\":\"r\"}",
        &mut rx,
    )
    .unwrap_err();
    assert_eq!((r.code, r.seq), (Code::UnknownType, Some(5)));
    assert_eq!(rx.seq, 5);
    // Fatal: untouched, consumes nothing.
    let r = recv(
        "{\"v\":2,\"seq\":9,\"type\":\"ready\",\"run\":\"r\"}",
        &mut rx,
    )
    .unwrap_err();
    assert_eq!((r.code, r.seq), (Code::VersionMismatch, Some(9)));
    assert_eq!(rx.seq, 5);
    let r = recv(
        "{\"v\":1,\"seq\":4,\"type\":\"nope\",\"run\":\"r\"}",
        &mut rx,
    )
    .unwrap_err();
    assert_eq!(
        (r.code, r.reason.as_str(), r.type_.as_deref()),
        (Code::OutOfOrder, "seq 4 does not follow 5", Some("nope"))
    );
}

#[test]
fn utf8_is_classified_like_orjson_then_decode() {
    use Direction::*;
    let not_utf8 = "line is not valid UTF-8";
    let not_json = "line is not valid JSON";
    let cases: &[(&[u8], &str)] = &[
        (b"\xEF\xBB\xBF{}", not_json),
        (b"\xEF\xBB\xBF{\"a\":\"\xff\"}", not_utf8),
        (b"{\"a\":1}\xff", not_utf8),
        (b"{\"a\":1,\xc3\xa9}", not_json),
        (b"{\"a\" \xff:1}", not_utf8),
        (b"[\"\xed\xa0\x80\"]", not_utf8),
        (
            b"{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\\n\xe2\x80\xa8\",\"x\":}",
            not_json,
        ),
        (b"{\"a\\n\xff\":1}", not_utf8),
        (b"[1,", not_json),
        (b"[1,\xff", not_utf8),
    ];
    for (line, want) in cases {
        let got = decode(line, Event).unwrap_err();
        assert_eq!(got.reason, *want, "{:?}", String::from_utf8_lossy(line));
    }
    let ok = decode(
        "{\"v\":1,\"seq\":1,\"type\":\"user\",\"run\":\"r\",\"é\\n\":\"x\\u00e9😀\\ud83d\\ude00\"}"
            .as_bytes(),
        Event,
    )
    .unwrap();
    let Value::Object(items) = ok else { panic!() };
    assert_eq!(items[4], ("é\n".into(), Value::String("xé😀😀".into())));
}

#[test]
fn string_scanner_finds_every_special_byte_at_every_offset() {
    for len in [1usize, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47] {
        for at in 0..len {
            for (special, ok) in [
                ("\\n", true),
                ("\\\"", true),
                ("\x01", false),
                ("\x1f", false),
                ("é", true),
            ] {
                let mut s = "a".repeat(len);
                s.replace_range(at..at + 1, special);
                let doc = format!("[\"{s}\",1]");
                let parsed = loads(doc.as_bytes());
                assert_eq!(parsed.is_some(), ok, "{doc:?}");
                if let Some(Value::Array(items)) = parsed {
                    let Value::String(got) = &items[0] else {
                        panic!()
                    };
                    let want = s.replace("\\n", "\n").replace("\\\"", "\"");
                    assert_eq!(got, &want, "{doc:?}");
                }
            }
        }
    }
}

/// Raw JSON string pieces and what they decode to: plain runs, every escape, `\u` escapes of
/// every UTF-8 length (surrogate pairs included) and raw characters of 1-4 bytes.
const STRING_PIECES: &[(&str, &str)] = &[
    ("a", "a"),
    ("0123456789abcdef", "0123456789abcdef"),
    ("\\n", "\n"),
    ("\\\"", "\""),
    ("\\\\", "\\"),
    ("\\/", "/"),
    ("\\b", "\u{8}"),
    ("\\f", "\u{c}"),
    ("\\r", "\r"),
    ("\\t", "\t"),
    ("\\u0000", "\u{0}"),
    ("\\u0041", "A"),
    ("\\u007F", "\u{7f}"),
    ("\\u0080", "\u{80}"),
    ("\\u00e9", "é"),
    ("\\u07FF", "\u{7ff}"),
    ("\\u0800", "\u{800}"),
    ("\\u2028", "\u{2028}"),
    ("\\uffff", "\u{ffff}"),
    ("\\ud83d\\ude00", "😀"),
    ("\\uD800\\uDC00", "\u{10000}"),
    ("\\udbff\\udfff", "\u{10ffff}"),
    ("é", "é"),
    ("\u{7ff}", "\u{7ff}"),
    ("日", "日"),
    ("\u{ffff}", "\u{ffff}"),
    ("😀", "😀"),
    ("\u{10ffff}", "\u{10ffff}"),
];

fn string_of(raw: &[u8]) -> Option<String> {
    let mut doc = b"\"".to_vec();
    doc.extend_from_slice(raw);
    doc.push(b'"');
    match loads(&doc) {
        Some(Value::String(s)) => Some(s),
        Some(other) => panic!("a string decoded as {other:?}"),
        None => None,
    }
}

#[test]
fn string_decoder_every_piece_pair_at_every_offset() {
    // Each pair of pieces after 0..=40 plain bytes (every place relative to the 16- and 8-byte
    // scan steps), with a tail after them too.
    for (raw1, dec1) in STRING_PIECES {
        for (raw2, dec2) in STRING_PIECES {
            for pad in 0..=40 {
                for tail in ["", "z", "0123456789abcdefg"] {
                    let lead = "p".repeat(pad);
                    let raw = format!("{lead}{raw1}{raw2}{tail}");
                    let expected = format!("{lead}{dec1}{dec2}{tail}");
                    assert_eq!(
                        string_of(raw.as_bytes()).as_deref(),
                        Some(expected.as_str()),
                        "{raw:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn string_decoder_rejects_bad_escapes_and_utf8_at_every_offset() {
    let bad: &[&[u8]] = &[
        b"\\ud800",
        b"\\udc00",
        b"\\udfff\\ud800",
        b"\\ud800\\u0041",
        b"\\ud800\\ud800",
        b"\\ud800x",
        b"\\x",
        b"\\U0041",
        b"\\u12g4",
        b"\x01",
        b"\x1f",
        b"\n",
        b"\xff",
        b"\xc3",
        b"\xc3(",
        b"\xe6\x97",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\xf0\x9f\x98",
        b"\x80",
    ];
    // Cut-short escapes, tested at the end of the string only (a piece after them could
    // complete them).
    let cut: &[&[u8]] = &[b"\\ud800\\", b"\\ud800\\u12", b"\\u12", b"\\u", b"\\"];
    for b in bad.iter().chain(cut) {
        for (raw_ok, _) in STRING_PIECES {
            for pad in 0..=20 {
                for before in [true, false] {
                    if !before && cut.contains(b) {
                        continue;
                    }
                    let mut raw = "p".repeat(pad).into_bytes();
                    if before {
                        raw.extend_from_slice(raw_ok.as_bytes());
                        raw.extend_from_slice(b);
                    } else {
                        raw.extend_from_slice(b);
                        raw.extend_from_slice(raw_ok.as_bytes());
                    }
                    assert_eq!(string_of(&raw), None, "{:?}", String::from_utf8_lossy(&raw));
                }
            }
        }
    }
}
