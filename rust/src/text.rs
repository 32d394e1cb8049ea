//! UTF-8-safe text bounds: `utf8_prefix`, `truncate_line` and `scrub`, as `_pure` defines them.
//!
//! Python strings may hold lone surrogates, so the byte-level functions work on "generalized"
//! UTF-8 (what `str.encode("utf-8", "surrogatepass")` gives: a surrogate is 3 bytes), and `scrub`
//! works on code points.

/// Length in bytes of the longest prefix of `bytes` (generalized UTF-8) that is at most `limit`
/// bytes and does not split a character.
pub fn utf8_prefix_len(bytes: &[u8], limit: usize) -> usize {
    if limit >= bytes.len() {
        return bytes.len();
    }
    let mut cut = limit;
    while cut > 0 && (bytes[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    cut
}

/// `utf8_prefix` for a `&str`.
pub fn utf8_prefix(text: &str, limit: usize) -> &str {
    &text[..utf8_prefix_len(text.as_bytes(), limit)]
}

pub const ELLIPSIS: &str = "\u{2026}";

/// `truncate_line` over generalized UTF-8 bytes: `None` when the text fits (return it as is),
/// else the byte length of the prefix to keep and whether to append `…`.
pub fn truncate_plan(bytes: &[u8], limit: i64) -> Option<(usize, bool)> {
    if (bytes.len() as i128) <= limit as i128 {
        return None;
    }
    if limit < 3 {
        return Some((utf8_prefix_len(bytes, limit.max(0) as usize), false));
    }
    Some((utf8_prefix_len(bytes, (limit - 3) as usize), true))
}

fn cp_len(c: u32) -> usize {
    match c {
        0..=0x7F => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    }
}

fn is_unsafe(c: u32) -> bool {
    matches!(c, 0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F..=0x9F | 0xD800..=0xDFFF)
}

fn scrub_note(escaped: usize, kept: Option<usize>, total: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    if escaped > 0 {
        let plural = if escaped != 1 { "s" } else { "" };
        parts.push(format!("{escaped} unsafe character{plural} escaped"));
    }
    if let Some(kept) = kept {
        parts.push(format!("kept {kept} of {total} bytes"));
    }
    format!("[fenwire: {}]", parts.join("; "))
}

/// `scrub` given the first `max(0, max_bytes) + 1` code points of the text (`scanned`), whether
/// the text is longer than that (`raw_truncated`) and its whole UTF-8 length (surrogates as 3
/// bytes). `None` means "unchanged": return the text itself and `False`.
pub fn scrub_code_points(
    scanned: &[u32],
    raw_truncated: bool,
    total: usize,
    max_bytes: i64,
) -> Option<String> {
    let limit = max_bytes.max(0) as usize;
    let mut escaped = 0usize;
    let mut sanitized = String::with_capacity(scanned.len());
    for &c in scanned {
        if is_unsafe(c) {
            escaped += 1;
            if c < 0x100 {
                sanitized.push_str(&format!("\\x{c:02X}"));
            } else {
                sanitized.push_str(&format!("\\u{c:04X}"));
            }
        } else if let Some(ch) = char::from_u32(c) {
            sanitized.push(ch);
        }
    }
    let size = sanitized.len();
    if escaped == 0 && !raw_truncated && size <= limit {
        return None;
    }
    if !raw_truncated && size <= limit {
        let note = scrub_note(escaped, None, total);
        if size + 2 + note.len() <= limit {
            sanitized.push_str("\n\n");
            sanitized.push_str(&note);
            return Some(sanitized);
        }
    }
    let widest = scrub_note(escaped, Some(limit), total).len();
    if limit < 2 + widest {
        return Some(utf8_prefix(&sanitized, limit).to_owned());
    }
    let room = limit - 2 - widest;
    let kept = utf8_prefix(&sanitized, room);
    let note = scrub_note(escaped, Some(kept.len()), total);
    if kept.is_empty() {
        return Some(note);
    }
    Some(format!("{kept}\n\n{note}"))
}

/// Decode generalized UTF-8 (as produced by `surrogatepass`) into code points. The input is
/// trusted to be well formed; a stray byte is taken as its own value.
pub fn code_points(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i] as u32;
        let (len, init) = match b {
            0..=0x7F => (1, b),
            0xC0..=0xDF => (2, b & 0x1F),
            0xE0..=0xEF => (3, b & 0x0F),
            0xF0..=0xF7 => (4, b & 0x07),
            _ => (1, b),
        };
        if len == 1 || i + len > bytes.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let mut c = init;
        for &cont in &bytes[i + 1..i + len] {
            c = (c << 6) | (cont as u32 & 0x3F);
        }
        out.push(c);
        i += len;
    }
    out
}

/// UTF-8 length of a code point sequence, surrogates counted as 3 bytes.
pub fn utf8_len(cps: &[u32]) -> usize {
    cps.iter().map(|&c| cp_len(c)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cps(s: &str) -> Vec<u32> {
        s.chars().map(|c| c as u32).collect()
    }

    #[test]
    fn prefix_never_splits_a_character() {
        let s = "aé😀b";
        assert_eq!(utf8_prefix(s, 0), "");
        assert_eq!(utf8_prefix(s, 1), "a");
        assert_eq!(utf8_prefix(s, 2), "a");
        assert_eq!(utf8_prefix(s, 3), "aé");
        assert_eq!(utf8_prefix(s, 6), "aé");
        assert_eq!(utf8_prefix(s, 7), "aé😀");
        assert_eq!(utf8_prefix(s, 100), s);
    }

    #[test]
    fn truncate_plan_matches_pure() {
        assert_eq!(truncate_plan(b"hello", 5), None);
        assert_eq!(truncate_plan(b"hello", 4), Some((1, true)));
        assert_eq!(truncate_plan(b"hello", 2), Some((2, false)));
        assert_eq!(truncate_plan(b"hello", -1), Some((0, false)));
    }

    #[test]
    fn scrub_examples() {
        assert_eq!(scrub_code_points(&cps("plain"), false, 5, 10), None);
        let out = scrub_code_points(&cps("a\u{1}b"), false, 3, 100).unwrap();
        assert_eq!(out, "a\\x01b\n\n[fenwire: 1 unsafe character escaped]");
        let text: String = "x".repeat(200);
        let scanned: Vec<u32> = text.chars().take(51).map(|c| c as u32).collect();
        let out = scrub_code_points(&scanned, true, 200, 50).unwrap();
        assert!(out.len() <= 50, "{out}");
        assert!(out.ends_with("[fenwire: kept 17 of 200 bytes]"), "{out}");
        assert_eq!(
            scrub_code_points(&cps("\u{0}\u{0}\u{0}"), false, 3, 3).unwrap(),
            "\\x0"
        );
        assert_eq!(
            scrub_code_points(&[0xD800], false, 3, 100).unwrap(),
            "\\uD800\n\n[fenwire: 1 unsafe character escaped]"
        );
    }

    #[test]
    fn code_points_round_trip() {
        let s = "aé😀\u{2028}";
        assert_eq!(code_points(s.as_bytes()), cps(s));
        assert_eq!(code_points(b"\xed\xa0\x80"), vec![0xD800]);
        assert_eq!(utf8_len(&[0xD800, 0x41]), 4);
    }
}
