//! The protocol's field names as a compact [`KeyId`], found from a key's text by a perfect
//! hash checked at compile time, and the short-slice comparison used to confirm a hit.

/// Byte equality for short slices without a call into libc's `memcmp` (which showed up at 4 %
/// of `Receiver.feed` time comparing keys and cached values): overlapping 4- or 8-byte loads.
#[inline(always)]
pub fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn u32_at(s: &[u8], i: usize) -> u32 {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[i..i + 4]);
        u32::from_le_bytes(w)
    }
    fn u64_at(s: &[u8], i: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        u64::from_le_bytes(w)
    }
    match n {
        0 => true,
        1..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=8 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        9..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        17..=32 => {
            u64_at(a, 0) == u64_at(b, 0)
                && u64_at(a, 8) == u64_at(b, 8)
                && u64_at(a, n - 16) == u64_at(b, n - 16)
                && u64_at(a, n - 8) == u64_at(b, n - 8)
        }
        _ => a == b,
    }
}

/// How many input bytes [`KeyId::separator_at`] reads: the longest separator
/// (`,"transport-truncated?":`).
pub const SEPARATOR_WINDOW: usize = 24;

/// A key's separator `,"name":` as little-endian words, with masks of its bytes.
struct Separator {
    words: [u64; 3],
    masks: [u64; 3],
    len: u8,
}

impl Separator {
    const fn new(name: &[u8]) -> Separator {
        let len = name.len() + 4;
        assert!(len <= SEPARATOR_WINDOW, "separator longer than the window");
        let mut bytes = [0u8; SEPARATOR_WINDOW];
        let mut mask = [0u8; SEPARATOR_WINDOW];
        bytes[0] = b',';
        bytes[1] = b'"';
        let mut i = 0;
        while i < name.len() {
            bytes[2 + i] = name[i];
            i += 1;
        }
        bytes[len - 2] = b'"';
        bytes[len - 1] = b':';
        let mut i = 0;
        while i < len {
            mask[i] = 0xFF;
            i += 1;
        }
        let mut words = [0u64; 3];
        let mut masks = [0u64; 3];
        let mut w = 0;
        while w < 3 {
            let mut k = 8;
            while k > 0 {
                k -= 1;
                words[w] = (words[w] << 8) | bytes[8 * w + k] as u64;
                masks[w] = (masks[w] << 8) | mask[8 * w + k] as u64;
            }
            w += 1;
        }
        Separator {
            words,
            masks,
            len: len as u8,
        }
    }
}

/// The perfect hash of [`KeyId::from_name`] (found by search: no two protocol keys collide).
#[inline(always)]
const fn key_hash(b: &[u8]) -> usize {
    let n = b.len();
    (n.wrapping_mul(2)
        .wrapping_add((b[0] as usize) * 50)
        .wrapping_add(b[n - 1] as usize)
        .wrapping_add((b[n / 2] as usize) * 7))
        % 128
}

macro_rules! keys {
    ($($id:ident = $name:literal,)*) => {
        /// A field name the protocol knows (any schema's field, or an envelope field).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum KeyId { $($id,)* }

        impl KeyId {
            pub const ALL: &'static [KeyId] = &[$(KeyId::$id,)*];
            pub const COUNT: usize = [$($name,)*].len();

            pub fn name(self) -> &'static str {
                match self { $(KeyId::$id => $name,)* }
            }

            /// Whether `window` starts with `,"name":` (the bytes between a value and this
            /// key's value in compact JSON): three masked 8-byte compares, no branch on the
            /// length. Returns the separator's length.
            #[inline(always)]
            pub fn separator_at(self, window: &[u8; SEPARATOR_WINDOW]) -> Option<usize> {
                static WORDS: [Separator; KeyId::COUNT] = [$(Separator::new($name.as_bytes()),)*];
                let sep = &WORDS[self as usize];
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&window[8 * i..8 * i + 8]);
                    u64::from_le_bytes(w)
                };
                let diff = ((word(0) ^ sep.words[0]) & sep.masks[0])
                    | ((word(1) ^ sep.words[1]) & sep.masks[1])
                    | ((word(2) ^ sep.words[2]) & sep.masks[2]);
                (diff == 0).then_some(sep.len as usize)
            }

            /// The key named `name`, by a perfect hash of (length, first, middle and last
            /// byte) checked at compile time, then one comparison.
            #[inline(always)]
            pub fn from_name(name: &str) -> Option<KeyId> {
                const NAMES: &[&str] = &[$($name,)*];
                static TABLE: [u8; 128] = {
                    let mut t = [u8::MAX; 128];
                    let mut i = 0;
                    while i < NAMES.len() {
                        let h = key_hash(NAMES[i].as_bytes());
                        assert!(t[h] == u8::MAX, "key hash collision");
                        t[h] = i as u8;
                        i += 1;
                    }
                    t
                };
                let b = name.as_bytes();
                if b.is_empty() {
                    return None;
                }
                let i = TABLE[key_hash(b)];
                if i == u8::MAX {
                    return None;
                }
                let i = i as usize;
                if short_eq(NAMES[i].as_bytes(), b) { Some(KeyId::ALL[i]) } else { None }
            }
        }
    };
}

keys! {
    V = "v",
    Seq = "seq",
    Type = "type",
    Run = "run",
    Timestamp = "timestamp",
    Summary = "summary",
    RunId = "run-id",
    Agent = "agent",
    RequestedCwd = "requested-cwd",
    Cwd = "cwd",
    PhysicalCwd = "physical-cwd",
    TransportTruncated = "transport-truncated?",
    Name = "name",
    Id = "id",
    Arguments = "arguments",
    ToolCallId = "tool-call-id",
    DurationSeconds = "duration-seconds",
    IsError = "is-error?",
    Result = "result",
    Final = "final?",
    ContentIndex = "content-index",
    Text = "text",
    Delta = "delta",
    Ref = "ref",
    Provider = "provider",
    Model = "model",
    StopReason = "stop-reason",
    Usage = "usage",
    Status = "status",
    Error = "error",
    Source = "source",
    Refs = "refs",
    Turn = "turn",
    Reason = "reason",
    FinalText = "final-text",
    Truncated = "truncated?",
    FinalTextPath = "final-text-path",
    Note = "note",
}

impl KeyId {
    /// Fields whose string value the validator needs to read (not just its kind).
    #[inline]
    pub fn keeps_text(self) -> bool {
        matches!(self, KeyId::Type | KeyId::Run | KeyId::Status)
    }
}

// `Fields::present` is a u64 bitmask over the keys.
const _: () = assert!(KeyId::COUNT <= 64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_eq_agrees_with_slice_eq() {
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        for n in 0..text.len() {
            let a = &text[..n];
            assert!(short_eq(a, a));
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 1;
                assert!(!short_eq(a, &b), "{n} {i}");
            }
            assert!(!short_eq(a, &text[..n + 1]));
        }
    }

    #[test]
    fn key_table_round_trips() {
        for &k in KeyId::ALL {
            assert_eq!(KeyId::from_name(k.name()), Some(k));
            let sep = format!(",\"{}\":", k.name());
            // Found at the start of a window whatever follows it; a change of any of its
            // bytes is refused.
            for fill in [b' ', b'"', 0xFF] {
                let mut window = [fill; SEPARATOR_WINDOW];
                window[..sep.len()].copy_from_slice(sep.as_bytes());
                assert_eq!(k.separator_at(&window), Some(sep.len()), "{sep}");
                for i in 0..sep.len() {
                    let mut bad = window;
                    bad[i] ^= 0x20;
                    assert_eq!(k.separator_at(&bad), None, "{sep} {i}");
                }
            }
        }
        assert_eq!(KeyId::COUNT, KeyId::ALL.len());
    }
}
