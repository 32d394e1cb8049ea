//! `ucs` (`ucs.rs`): for any text (the input if it is UTF-8, else its lossy decoding), and each
//! of its suffixes from the first 16 character boundaries (every place in a 16-byte block),
//! `measure` gives `str::chars()`'s count and the width of the widest character, and `fill`
//! writes exactly `chars()` into units of each width the text fits, refuses the widths it does
//! not fit, and refuses (without writing past it) a buffer one unit short or long.

#![no_main]

use fenwire_fast::ucs::{fill, measure, Unit, Width};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (at, _) in text.char_indices().take(16) {
        check(&text[at..]);
    }
    check("");
});

fn check(text: &str) {
    let codes: Vec<u32> = text.chars().map(u32::from).collect();
    let max = codes.iter().copied().max().unwrap_or(0);
    let (n, width) = measure(text);
    assert_eq!(n, codes.len(), "{text:?}");
    let want = match max {
        0..=0x7F => Width::Ascii,
        0x80..=0xFF => Width::Latin1,
        0x100..=0xFFFF => Width::Ucs2,
        _ => Width::Ucs4,
    };
    assert_eq!(width, want, "{text:?}");
    assert!(max <= width.max_char());
    units::<u8>(text, &codes, max <= 0xFF);
    units::<u16>(text, &codes, max <= 0xFFFF);
    units::<u32>(text, &codes, true);
}

fn units<U: Unit + Default + Into<u32>>(text: &str, codes: &[u32], fits: bool) {
    let n = codes.len();
    let mut out = vec![U::default(); n];
    assert_eq!(fill(text, &mut out), fits, "{text:?}");
    if fits {
        let got: Vec<u32> = out.into_iter().map(Into::into).collect();
        assert_eq!(got, codes, "{text:?}");
    }
    if n > 0 {
        let mut short = vec![U::default(); n - 1];
        assert!(!fill(text, &mut short), "{text:?}");
    }
    let mut long = vec![U::default(); n + 1];
    assert!(!fill(text, &mut long), "{text:?}");
}
