//! The fast path held to the exact check: it may say "not sure" of anything, but must never
//! accept a line the exact check refuses, nor accept one with another seq or type.

use super::*;
use crate::codec::{decode_with, SeqState};
use crate::json::NullSink;
use crate::schema::Fields;

/// A `Quick` on the AVX2 path (`avx2`, when the CPU has it) or the SSE2 one, whatever
/// `crate::simd`'s switch says (its test flips it while these run).
fn on_path(direction: Direction, avx2: bool) -> Quick {
    let mut quick = Quick::new(direction);
    #[cfg(target_arch = "x86_64")]
    {
        quick.avx2 = avx2 && is_x86_feature_detected!("avx2");
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = avx2;
    quick
}

/// What the exact check says of a line: `Some((seq, type_index))` when it accepts it.
fn exact(line: &[u8], direction: Direction) -> Option<(u64, usize)> {
    let mut fields = Fields::new();
    decode_with(line, Some(direction), &mut NullSink, &mut fields).ok()?;
    let mut seq = SeqState::default();
    seq.accept(&fields).ok()?;
    Some((seq.seq, fields.type_index()?))
}

#[rustfmt::skip]
const LINES: &[&[u8]] = &[
    br#"{"v":1,"seq":1,"type":"assistant-text-delta","run":"run-7f3a9c","timestamp":"2026-11-30T00:53:20Z","content-index":0,"delta":"Call \"config\" s","summary":"Call \"config\" s"}"#,
    br#"{"v":1,"seq":3,"type":"llm-start","run":"run-7f3a9c","timestamp":"2026-11-30T00:53:20Z","provider":"anthropic","model":"claude-sonnet-4"}"#,
    br#"{"v":1,"seq":40,"type":"tool-result","run":"r","timestamp":"2026-11-30T00:53:20Z","name":"bash","id":"t1","tool-call-id":"t1","duration-seconds":1.404,"is-error?":false,"result":{"output":"a\\b\n\tc \/","lines":[1,2,{"x":[]},null,true,-3.5]},"summary":"ok"}"#,
    br#"{"v":1,"seq":5,"type":"tool-call","run":"r","name":"bash","id":"t1","arguments":{"command":"cd src && grep -rn \"in\" --include=\"*.py\" | head -n 20"},"summary":"x"}"#,
    br#"{"v":1,"seq":6,"type":"info","run":"r","refs":[3,4],"summary":"s"}"#,
    br#"{"v":1,"seq":7,"type":"info","run":"r","refs":[]}"#,
    br#"{"v":1,"seq":8,"type":"llm-end","run":"r","stop-reason":"end","usage":{"input":1000,"output":200}}"#,
    br#"{"v":1,"seq":9,"type":"turn-complete","run":"r","turn":2,"stop-reason":"end","usage":{}}"#,
    br#"{"v":1,"seq":10,"type":"turn-started","run":"r","turn":1}"#,
    br#"{"v":1,"seq":11,"type":"assistant-stream-end","run":"r","final?":true}"#,
    br#"{"v":1,"seq":12,"type":"ready","run":"r","extra":{"deep":[[[[{"a":"b"}]]]],"n":-0.5}}"#,
    br#" { "v" : 1 , "seq" : 13 , "type" : "ready" , "run" : "r" } "#,
    br#"{"v":1,"seq":14,"type":"exit","run":"r","status":"done"}"#,
    br#"{"v":1,"seq":15,"type":"control-ack","run":"r","status":"rejected"}"#,
    br#"{"v":1,"seq":16,"type":"prompt","run":"r","text":"hi"}"#,
    br#"{"v":1,"seq":17,"type":"user","run":"r","text":"\ud83d\ude00"}"#,
    br#"{"v":1,"seq":18,"type":"assistant-text","run":"r","final?":false,"content-index":1,"text":"x\/y"}"#,
];

/// Bytes that make interesting mutations.
const ALPHABET: &[u8] = b"{}[]:,\" \\\t\nabnrtufe0123456789-.+Ex\x01\x7f\xc3\xa9\xff";

#[test]
fn accepts_typical_lines_and_only_what_the_exact_check_accepts() {
    for (direction, avx2) in [
        (Direction::Event, true),
        (Direction::Control, true),
        (Direction::Event, false),
        (Direction::Control, false),
    ] {
        // The SSE2 masks too, on a CPU with AVX2.
        let mut quick = on_path(direction, avx2);
        for line in LINES {
            let got = quick.check(line);
            let want = exact(line, direction);
            if got.is_some() {
                assert_eq!(got, want, "{}", String::from_utf8_lossy(line));
            }
        }
    }
    // The common shapes do take the fast path, by either bitmap.
    for avx2 in [true, false] {
        let mut quick = on_path(Direction::Event, avx2);
        for line in &LINES[..12] {
            assert!(
                quick.check(line).is_some(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

#[test]
fn mutated_lines_are_never_accepted_wrongly() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accepted = 0;
    for (direction, avx2) in [
        (Direction::Event, true),
        (Direction::Control, true),
        (Direction::Event, false),
        (Direction::Control, false),
    ] {
        // The SSE2 masks too, on a CPU with AVX2.
        let mut quick = on_path(direction, avx2);
        for round in 0..300_000 {
            let mut line = LINES[round % LINES.len()].to_vec();
            if round % 7 == 0 {
                // Cut short anywhere.
                let at = (next() as usize) % (line.len() + 1);
                line.truncate(at);
            }
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % (line.len() + 1);
                let c = ALPHABET[(next() as usize) % ALPHABET.len()];
                match next() % 3 {
                    0 => line.insert(at, c),
                    1 if at < line.len() => {
                        line.remove(at);
                    }
                    _ if at < line.len() => line[at] = c,
                    _ => line.push(c),
                }
            }
            if let Some(got) = quick.check(&line) {
                accepted += 1;
                assert_eq!(
                    Some(got),
                    exact(&line, direction),
                    "{}",
                    String::from_utf8_lossy(&line)
                );
            }
        }
    }
    assert!(accepted > 10_000, "{accepted}");
}

#[test]
fn type_names_hash_to_their_index() {
    for (i, name) in TYPE_NAMES.iter().enumerate() {
        assert_eq!(type_by_name(name.as_bytes()), Some(i));
        assert_eq!(crate::schema::type_index(name), Some(i));
        assert_eq!(type_by_name(&name.as_bytes()[1..]), None);
    }
    assert_eq!(type_by_name(b""), None);
    assert_eq!(type_by_name(b"nope"), None);
}

#[test]
fn strings_crossing_words_and_escapes_at_word_ends() {
    for avx2 in [true, false] {
        let mut quick = on_path(Direction::Event, avx2);
        strings_crossing_words(&mut quick);
    }
}

fn strings_crossing_words(quick: &mut Quick) {
    for pad in 0..140 {
        for tail in [
            &b"\\\\"[..],
            b"\\\"",
            b"\\n",
            b"\\\\\\\"",
            b"\xc3\xa9",
            b"\\u0041",
            b"\x01",
        ] {
            let mut line = br#"{"v":1,"seq":1,"type":"ready","run":""#.to_vec();
            line.extend(std::iter::repeat_n(b'a', pad));
            line.extend_from_slice(tail);
            line.extend_from_slice(br#"x"}"#);
            let got = quick.check(&line);
            let want = exact(&line, Direction::Event);
            if got.is_some() {
                assert_eq!(got, want, "{}", String::from_utf8_lossy(&line));
            }
            if !tail.starts_with(b"\\u") && tail != b"\x01" {
                assert_eq!(got, want, "{}", String::from_utf8_lossy(&line));
            }
        }
    }
}

/// The two bitmaps agree bit for bit with a byte-by-byte one, at every length around the
/// 64-byte words (AVX2's last partial word is a shifted overlapping load).
#[test]
fn sse2_and_avx2_masks_agree_with_a_plain_loop() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for len in 0..300usize {
        for _ in 0..20 {
            let line: Vec<u8> = (0..len)
                .map(|_| ALPHABET[(next() as usize) % ALPHABET.len()])
                .collect();
            let mut want = vec![0u64; len.div_ceil(64)];
            for (i, &c) in line.iter().enumerate() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    want[i / 64] |= 1 << (i % 64);
                }
            }
            let high = line.iter().any(|&c| c >= 0x80);
            let mut sse2 = Vec::new();
            assert_eq!(build_masks(&line, &mut sse2), high);
            assert_eq!(sse2, want, "{line:?}");
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx2") {
                let mut avx2 = Vec::new();
                // SAFETY: the CPU has AVX2 (checked just above).
                assert_eq!(unsafe { build_masks_avx2(&line, &mut avx2) }, high);
                assert_eq!(avx2, want, "{line:?}");
            }
        }
    }
}
