//! The quick path (`quick/`): a stream of lines through one `Quick` per direction, each line
//! held to the exact check (`decode_with` then the seq rule): the quick path may say "not sure"
//! of anything, but what it accepts the exact check must accept, with the same seq and type.
//! Its bitmap, by the SSE2 loop and (when the CPU has it) the AVX2 one, must equal a
//! byte-by-byte bitmap; and when the AVX2 path is on, a second `Quick` forced to SSE2 must give
//! the same verdicts. `FENWIRE_FORCE_SSE2=1` runs the first `Quick` on SSE2 (docs/fuzzing.md).
//!
//! Input: a first byte with its low bit clear, then lines separated by `\n`; or with the low
//! bit set, a typical line (chosen by the second byte) with the rest of the input spliced into
//! it, so that lines the quick path accepts are common from the start.

#![no_main]

use fenwire_fast::codec::{decode_with, SeqState};
use fenwire_fast::fuzzing::quick_masks;
use fenwire_fast::json::NullSink;
use fenwire_fast::quick::Quick;
use fenwire_fast::schema::{Direction, Fields};
use fenwire_fast::simd;
use libfuzzer_sys::fuzz_target;

#[rustfmt::skip]
const LINES: &[&[u8]] = &[
    br#"{"v":1,"seq":1,"type":"assistant-text-delta","run":"run-7f3a9c","timestamp":"2026-11-30T00:53:20Z","content-index":0,"delta":"Call \"config\" s","summary":"Call \"config\" s"}"#,
    br#"{"v":1,"seq":3,"type":"llm-start","run":"run-7f3a9c","timestamp":"2026-11-30T00:53:20Z","provider":"anthropic","model":"claude-sonnet-4"}"#,
    br#"{"v":1,"seq":40,"type":"tool-result","run":"r","timestamp":"2026-11-30T00:53:20Z","name":"bash","id":"t1","tool-call-id":"t1","duration-seconds":1.404,"is-error?":false,"result":{"output":"a\\b\n\tc \/","lines":[1,2,{"x":[]},null,true,-3.5]},"summary":"ok"}"#,
    br#"{"v":1,"seq":5,"type":"tool-call","run":"r","name":"bash","id":"t1","arguments":{"command":"cd src && grep -rn \"in\" --include=\"*.py\" | head -n 20"},"summary":"x"}"#,
    br#"{"v":1,"seq":6,"type":"info","run":"r","refs":[3,4],"summary":"s"}"#,
    br#"{"v":1,"seq":8,"type":"llm-end","run":"r","stop-reason":"end","usage":{"input":1000,"output":200}}"#,
    br#"{"v":1,"seq":9,"type":"turn-complete","run":"r","turn":2,"stop-reason":"end","usage":{}}"#,
    br#"{"v":1,"seq":10,"type":"turn-started","run":"r","turn":1}"#,
    br#"{"v":1,"seq":11,"type":"assistant-stream-end","run":"r","final?":true}"#,
    br#"{"v":1,"seq":12,"type":"ready","run":"r","extra":{"deep":[[[[{"a":"b"}]]]],"n":-0.5}}"#,
    br#" { "v" : 1 , "seq" : 13 , "type" : "ready" , "run" : "r" } "#,
    br#"{"v":1,"seq":14,"type":"exit","run":"r","status":"done"}"#,
    br#"{"v":1,"seq":15,"type":"control-ack","run":"r","status":"rejected"}"#,
    br#"{"v":1,"seq":16,"type":"prompt","run":"r","text":"hi"}"#,
    b"{\"v\":1,\"seq\":17,\"type\":\"user\",\"run\":\"r\",\"text\":\"caf\\u00e9 \\ud83d\\ude00 \xc3\xa9\"}",
    br#"{"v":1,"seq":18,"type":"assistant-text","run":"r","final?":false,"content-index":1,"text":"x\/y"}"#,
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let spliced;
    let input: &[u8] = if mode & 1 == 0 {
        rest
    } else {
        let Some((&pick, patch)) = rest.split_first() else {
            return;
        };
        let line = LINES[usize::from(pick) % LINES.len()];
        // The patch: where (a fraction of the line), how many bytes it replaces, its bytes.
        let (at, cut, bytes) = match patch {
            [a, c, bytes @ ..] => (
                usize::from(*a) * line.len() / 256,
                usize::from(c % 8),
                bytes,
            ),
            _ => (line.len(), 0, &[][..]),
        };
        spliced = [&line[..at], bytes, &line[(at + cut).min(line.len())..]].concat();
        &spliced
    };
    let avx2 = simd::avx2();
    for direction in [Direction::Event, Direction::Control] {
        let mut quick = Quick::new(direction);
        // On SSE2 when the first one is on AVX2 (the switch is per `Quick`, when it is made).
        let mut sse2 = avx2.then(|| {
            simd::force_sse2(true);
            let q = Quick::new(direction);
            simd::force_sse2(false);
            q
        });
        // Twice: the second time, each line is read with the key orders and the `type`/`run`
        // memo left by the lines before it.
        for line in input
            .split(|&b| b == b'\n')
            .chain(input.split(|&b| b == b'\n'))
        {
            let got = quick.check(line);
            if let Some(sse2) = &mut sse2 {
                assert_eq!(sse2.check(line), got, "{}", String::from_utf8_lossy(line));
            }
            if got.is_some() {
                assert_eq!(
                    got,
                    exact(line, direction),
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
        }
    }
    for line in input.split(|&b| b == b'\n').take(4) {
        let want = plain_masks(line);
        assert_eq!(quick_masks(line, false), Some(want.clone()));
        if let Some(got) = quick_masks(line, true) {
            assert_eq!(got, want);
        }
    }
});

/// What the exact check says of a line: `Some((seq, type_index))` when it accepts it.
fn exact(line: &[u8], direction: Direction) -> Option<(u64, usize)> {
    let mut fields = Fields::new();
    decode_with(line, Some(direction), &mut NullSink, &mut fields).ok()?;
    let mut seq = SeqState::default();
    seq.accept(&fields).ok()?;
    Some((seq.seq, fields.type_index()?))
}

/// The quick path's bitmap byte by byte (bits past the line clear) and whether a byte is high.
fn plain_masks(line: &[u8]) -> (Vec<u64>, bool) {
    let mut words = vec![0u64; line.len().div_ceil(64)];
    for (i, &c) in line.iter().enumerate() {
        if c == b'"' || c == b'\\' || c < 0x20 {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    (words, line.iter().any(|&c| c >= 0x80))
}
