//! The text primitives (`text.rs`): `utf8_prefix_len` gives the longest prefix within the limit
//! that ends on a character boundary (of UTF-8, and of generalized UTF-8 with surrogates),
//! `truncate_plan` keeps within its limit, `code_points` inverts UTF-8 (and never panics on
//! other bytes), and `scrub_code_points` never returns more than `max_bytes` bytes nor an unsafe
//! character, and leaves safe text that fits unchanged.

#![no_main]

use fenwire_fast::text::{
    code_points, scrub_code_points, truncate_plan, utf8_len, utf8_prefix, utf8_prefix_len,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&limit, bytes)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit);
    // Any bytes: bounded, and never a panic.
    let cut = utf8_prefix_len(bytes, limit);
    assert!(cut <= bytes.len() && (cut <= limit || limit >= bytes.len()));
    let cps = code_points(bytes);
    assert!(cps.len() <= bytes.len());

    let text = String::from_utf8_lossy(bytes);
    let b = text.as_bytes();
    // The longest boundary within the limit.
    let want = if limit >= b.len() {
        b.len()
    } else {
        (0..=limit)
            .rev()
            .find(|&k| text.is_char_boundary(k))
            .unwrap()
    };
    assert_eq!(utf8_prefix_len(b, limit), want);
    assert_eq!(utf8_prefix(&text, limit), &text[..want]);

    // Generalized UTF-8: surrogates (what Python's surrogatepass gives) are 3 bytes each.
    let mut generalized = Vec::new();
    let mut want_cps = Vec::new();
    for (k, c) in text.chars().enumerate() {
        let code = if k % 5 == 4 {
            0xD800 | (u32::from(c) & 0x7FF)
        } else {
            u32::from(c)
        };
        want_cps.push(code);
        if (0xD800..0xE000).contains(&code) {
            generalized.extend_from_slice(&[
                0xE0 | (code >> 12) as u8,
                0x80 | ((code >> 6) & 0x3F) as u8,
                0x80 | (code & 0x3F) as u8,
            ]);
        } else {
            let c = char::from_u32(code).unwrap();
            generalized.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    assert_eq!(code_points(&generalized), want_cps);
    assert_eq!(utf8_len(&want_cps), generalized.len());
    let cut = utf8_prefix_len(&generalized, limit);
    assert!(cut == generalized.len() || (cut <= limit && (generalized[cut] & 0xC0) != 0x80));
    assert_eq!(
        code_points(&generalized[..cut]),
        want_cps[..code_points(&generalized[..cut]).len()]
    );

    for signed in [limit as i64, limit as i64 - 200] {
        match truncate_plan(&generalized, signed) {
            None => assert!(generalized.len() as i64 <= signed),
            Some((keep, ellipsis)) => {
                assert!((generalized.len() as i64) > signed);
                let room = keep as i64 + if ellipsis { 3 } else { 0 };
                assert!(room <= signed.max(0), "{keep} {ellipsis} {signed}");
            }
        }
        // scrub: the first max(0, max_bytes) + 1 code points, as `_pure` passes them.
        let take = (signed.max(0) as usize + 1).min(want_cps.len());
        let scanned = &want_cps[..take];
        let truncated = take < want_cps.len();
        match scrub_code_points(scanned, truncated, generalized.len(), signed) {
            None => {
                assert!(!truncated && !scanned.iter().any(|&c| unsafe_char(c)));
                assert!(utf8_len(scanned) as i64 <= signed.max(0));
            }
            Some(out) => {
                assert!(out.len() as i64 <= signed.max(0), "{out:?} over {signed}");
                assert!(!out.chars().any(|c| unsafe_char(u32::from(c))), "{out:?}");
            }
        }
    }
});

/// The characters `scrub` escapes: C0 controls but tab, newline and CR; DEL and C1; surrogates.
fn unsafe_char(c: u32) -> bool {
    matches!(c, 0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F..=0x9F | 0xD800..=0xDFFF)
}
