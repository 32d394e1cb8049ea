//! The fast path of `Receiver.scan`: one pass over a line that says "certainly a valid message
//! of this direction, with this seq and type", or "not sure". Only the first answer is used as
//! is; "not sure" sends the line through the exact check ([`crate::codec::decode_with`] with a
//! sink that builds nothing), which makes every decision and words every rejection. So this
//! module never has to classify a bad line, only to accept nothing that the exact check would
//! refuse, and it can give up on anything unusual: `\u` escapes, exponents, 19-digit numbers,
//! escaped or non-ASCII keys, a known key twice, nesting deeper than 60, a float where an
//! integer is wanted, the enum-valued `status` fields.
//!
//! What it checks, in one pass and without building anything:
//!
//! - the JSON grammar of the whole line (RFC 8259, whitespace anywhere it is allowed);
//! - every string: no control byte, only the escapes `\" \\ \/ \b \f \n \r \t`, and valid UTF-8
//!   (the whole line is validated once when it has a byte >= 0x80: in a valid line those are
//!   all inside strings). First one pass over the line (SSE2, or AVX2 when the CPU has it)
//!   marks every quote, backslash and control byte in a bitmap, one bit a byte; a string is then
//!   skipped by walking the set bits from its start (escapes included: no new load after each
//!   escape, and tool results carry one every 11 bytes);
//! - for each known top-level key, the kinds its value satisfies (`Sat`), then the envelope
//!   (`v` is the integer 1, `seq` an integer in 1..=2^53-1, `type` a type of the direction, `run`
//!   a string) and the type's payload schema (required fields present, typed fields of their
//!   kind).
//!
//! `tests` and `scripts/differential.py` hold it to the exact check.

use crate::schema::{
    schema_for, short_eq, Direction, KeyId, Kind, Schema, CONTROL_TYPES, EVENT_TYPES,
    MAX_LINE_BYTES, MAX_SAFE_INTEGER,
};

mod cursor;
mod masks;
#[cfg(test)]
mod tests;

use cursor::Cursor;
#[cfg(target_arch = "x86_64")]
use masks::build_masks_avx2;
use masks::{build_masks, find_end};

/// The kinds a value satisfies, one bit each (see [`need`]).
type Sat = u16;
const S_STRING: Sat = 1;
const S_BOOL: Sat = 1 << 1;
const S_NUMBER: Sat = 1 << 2;
const S_INTEGER: Sat = 1 << 3;
const S_OBJECT: Sat = 1 << 4;
const S_POS: Sat = 1 << 5;
const S_REFS: Sat = 1 << 6;
/// Satisfied by every value (`any`; fields of that kind are not in a schema's `typed_mask`, so
/// it is never actually asked for).
const S_ANY: Sat = 1 << 7;
/// Satisfied by no value here: kinds the fast path leaves to the exact check.
const S_NEVER: Sat = 1 << 15;

/// The bit a value of `kind` needs.
const fn need(kind: Kind) -> Sat {
    match kind {
        Kind::String => S_STRING,
        Kind::Boolean => S_BOOL,
        Kind::Number => S_NUMBER,
        Kind::Integer => S_INTEGER,
        Kind::Object => S_OBJECT,
        Kind::Pos => S_POS,
        Kind::Refs => S_REFS,
        Kind::Any => S_ANY,
        Kind::AckStatus | Kind::ExitStatus => S_NEVER,
    }
}

const TYPE_COUNT: usize = EVENT_TYPES.len() + CONTROL_TYPES.len();

/// What the fast path needs of one message type in one direction.
#[derive(Clone, Copy)]
struct TypeRule {
    /// False when the type is not of the direction, or its schema has a rule left to the exact
    /// check (the control-ack `ref` rule).
    known: bool,
    required_mask: u64,
    typed_mask: u64,
    needs: [Sat; KeyId::COUNT],
}

/// The type names, by [`crate::schema::type_index`].
const TYPE_NAMES: [&str; TYPE_COUNT] = {
    let mut names = [""; TYPE_COUNT];
    let mut i = 0;
    while i < TYPE_COUNT {
        names[i] = if i < EVENT_TYPES.len() {
            EVENT_TYPES[i]
        } else {
            CONTROL_TYPES[i - EVENT_TYPES.len()]
        };
        i += 1;
    }
    names
};

/// A perfect hash of the type names (checked at compile time), then one comparison.
const fn type_hash(b: &[u8]) -> usize {
    let n = b.len();
    (n * 3 + b[n - 1] as usize * 6 + b[n / 3] as usize) % 64
}

static TYPE_TABLE: [u8; 64] = {
    let mut t = [u8::MAX; 64];
    let mut i = 0;
    while i < TYPE_COUNT {
        let h = type_hash(TYPE_NAMES[i].as_bytes());
        assert!(t[h] == u8::MAX, "type hash collision");
        t[h] = i as u8;
        i += 1;
    }
    t
};

/// The index of the type named `name` (see [`crate::schema::type_index`]), if it is one.
#[inline(always)]
fn type_by_name(name: &[u8]) -> Option<usize> {
    if name.is_empty() {
        return None;
    }
    let i = TYPE_TABLE[type_hash(name)] as usize;
    let known = TYPE_NAMES.get(i)?;
    short_eq(known.as_bytes(), name).then_some(i)
}

/// A key as the line should spell it, `"name":`, as 16 little-endian bytes and the mask of
/// those that count (`len` 0: the key is too long for 16 bytes).
#[derive(Clone, Copy)]
struct KeyPattern {
    bytes: u128,
    mask: u128,
    len: usize,
}

fn key_patterns() -> [KeyPattern; KeyId::COUNT] {
    let mut patterns = [KeyPattern {
        bytes: 0,
        mask: 0,
        len: 0,
    }; KeyId::COUNT];
    for (pattern, id) in patterns.iter_mut().zip(KeyId::ALL) {
        let spelled = format!("\"{}\":", id.name());
        if spelled.len() <= 16 {
            let mut bytes = [0u8; 16];
            bytes[..spelled.len()].copy_from_slice(spelled.as_bytes());
            *pattern = KeyPattern {
                bytes: u128::from_le_bytes(bytes),
                mask: u128::MAX >> (128 - 8 * spelled.len()),
                len: spelled.len(),
            };
        }
    }
    patterns
}

/// `{"v":1,"seq":`, the start of nearly every line.
const ENVELOPE_START: &[u8] = b"{\"v\":1,\"seq\":";

/// Keys remembered per line, for the predictions.
const ORDER: usize = 24;
/// "No prediction" in a key order.
const NO_KEY: u8 = u8::MAX;

/// The per-receiver state of the fast path: the rules of its direction's types, the key orders
/// last seen (per type, and of the last line: lines of a stream repeat them, so a key is first
/// compared with the predicted one), and a reused buffer.
pub struct Quick {
    direction: Direction,
    rules: [TypeRule; TYPE_COUNT],
    last_order: [u8; ORDER],
    orders: [[u8; ORDER]; TYPE_COUNT],
    patterns: [KeyPattern; KeyId::COUNT],
    /// Per type, the `"type":"T","run":"R"` segment of the last line of that type read in full
    /// (empty: none yet).
    memos: Vec<Vec<u8>>,
    special: Vec<u64>,
    /// Whether to build the bitmap with `build_masks_avx2`: the CPU has AVX2 and SSE2 is not
    /// forced ([`crate::simd`]; always false off x86_64).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    avx2: bool,
}

impl std::fmt::Debug for Quick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quick")
            .field("direction", &self.direction)
            .finish_non_exhaustive()
    }
}

impl Quick {
    pub fn new(direction: Direction) -> Self {
        let mut rules = [TypeRule {
            known: false,
            required_mask: 0,
            typed_mask: 0,
            needs: [S_ANY; KeyId::COUNT],
        }; TYPE_COUNT];
        for (rule, name) in rules.iter_mut().zip(TYPE_NAMES) {
            if let Some(schema) = schema_for(direction, name) {
                *rule = rule_of(schema);
            }
        }
        Quick {
            direction,
            rules,
            last_order: [NO_KEY; ORDER],
            orders: [[NO_KEY; ORDER]; TYPE_COUNT],
            patterns: key_patterns(),
            memos: vec![Vec::new(); TYPE_COUNT],
            special: Vec::new(),
            avx2: crate::simd::avx2(),
        }
    }

    /// [`build_masks`] for `line` into `self.special`, with AVX2 when the CPU has it.
    #[inline(always)]
    fn masks(&mut self, line: &[u8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is true only when the CPU was found to support AVX2 (by
            // `simd::avx2`, or by the tests' own `is_x86_feature_detected!`).
            return unsafe { build_masks_avx2(line, &mut self.special) };
        }
        build_masks(line, &mut self.special)
    }

    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// `Some((seq, type_index))` when `line` is certainly a valid message of the direction
    /// (what `decode_with` would accept, `seq` being its seq); `None` when not sure.
    #[inline]
    pub fn check(&mut self, line: &[u8]) -> Option<(u64, usize)> {
        if line.len() >= MAX_LINE_BYTES {
            return None;
        }
        // Strings hold the only bytes >= 0x80 of a valid line, and escapes are ASCII: its
        // strings are valid UTF-8 exactly when the line is.
        if self.masks(line) && simdutf8::basic::from_utf8(line).is_err() {
            return None;
        }
        let mut p = Cursor {
            b: line,
            special: &self.special,
            pos: 0,
        };
        let mut present = 0u64;
        let mut sat = [0 as Sat; KeyId::COUNT];
        let mut seq = 0u64;
        let mut type_index = usize::MAX;
        let mut order = [NO_KEY; ORDER];
        let mut index = 0;
        if line.get(..ENVELOPE_START.len()) == Some(ENVELOPE_START) {
            // How every writer starts a line: `v` and `seq` read in one comparison, then the
            // seq's digits, as the general path below would read them.
            p.pos = ENVELOPE_START.len();
            let (s, n) = p.number()?;
            if s & S_POS == 0 {
                return None;
            }
            seq = n;
            present = 1 << KeyId::V as u32 | 1 << KeyId::Seq as u32;
            order[0] = KeyId::V as u8;
            order[1] = KeyId::Seq as u8;
            index = 2;
            p.ws();
            if p.byte()? != b',' {
                return None;
            }
            p.pos += 1;
        } else {
            p.ws();
            if p.byte()? != b'{' {
                return None;
            }
            p.pos += 1;
        }
        p.ws();
        // The segment `"type":"T","run":"R"` at the third key, when it is byte for byte the one
        // an earlier line of type T had there (then read exactly as it was read then).
        const TYPE_RUN: u64 = 1 << KeyId::Type as u32 | 1 << KeyId::Run as u32;
        const V_SEQ: u64 = 1 << KeyId::V as u32 | 1 << KeyId::Seq as u32;
        let mut resume = false;
        let mut memo_from = usize::MAX;
        let mut memo_to = usize::MAX;
        if index == 2 && present == V_SEQ {
            match self.memo_at(&p) {
                Some((t, len)) => {
                    present |= TYPE_RUN;
                    sat[KeyId::Run as usize] = S_STRING | S_ANY;
                    type_index = t;
                    order[2] = KeyId::Type as u8;
                    order[3] = KeyId::Run as u8;
                    index = 4;
                    p.pos += len;
                    resume = true;
                }
                None => memo_from = p.pos,
            }
        }
        loop {
            'member: {
                if resume {
                    resume = false;
                    break 'member;
                }
                if p.byte()? != b'"' {
                    return None;
                }
                let predicted = if index < ORDER {
                    match self.orders.get(type_index) {
                        Some(o) => o[index],
                        None => self.last_order[index],
                    }
                } else {
                    NO_KEY
                };
                let key = match p.pattern_key(&self.patterns, predicted) {
                    Some(id) => Some(id),
                    None => {
                        let key = match p.predicted_key(predicted) {
                            Some(id) => Some(id),
                            None => p.key()?,
                        };
                        p.ws();
                        if p.byte()? != b':' {
                            return None;
                        }
                        p.pos += 1;
                        key
                    }
                };
                if index < ORDER {
                    order[index] = key.map_or(NO_KEY, |id| id as u8);
                }
                index += 1;
                p.ws();
                match key {
                    None => {
                        p.value()?;
                    }
                    Some(id) => {
                        let bit = 1u64 << id as u32;
                        if present & bit != 0 {
                            return None; // a duplicate: the exact check knows which value wins
                        }
                        present |= bit;
                        sat[id as usize] = match id {
                            KeyId::V => {
                                // Exactly the integer 1.
                                if p.byte()? != b'1'
                                    || p.b.get(p.pos + 1).is_some_and(u8::is_ascii_digit)
                                {
                                    return None;
                                }
                                p.pos += 1;
                                0
                            }
                            KeyId::Seq => {
                                let (s, n) = p.number()?;
                                if s & S_POS == 0 {
                                    return None;
                                }
                                seq = n;
                                0
                            }
                            KeyId::Type => {
                                if p.byte()? != b'"' {
                                    return None;
                                }
                                let start = p.pos + 1;
                                let (end, escaped) = find_end(p.b, p.special, start)?;
                                if escaped {
                                    return None;
                                }
                                let t = type_by_name(&p.b[start..end])?;
                                if !self.rules[t].known {
                                    return None;
                                }
                                type_index = t;
                                p.pos = end + 1;
                                0
                            }
                            KeyId::Refs if p.byte()? == b'[' => p.refs()?,
                            _ => p.value()?,
                        };
                    }
                }
                if index == 4 && memo_from != usize::MAX {
                    memo_to = p.pos;
                }
            }
            p.ws();
            match p.byte()? {
                b',' => {
                    p.pos += 1;
                    p.ws();
                }
                b'}' => break,
                _ => return None,
            }
        }
        p.pos += 1;
        p.ws();
        if p.pos != line.len() {
            return None;
        }
        // The envelope: v, seq, type (already checked as read) and run (a string).
        const ENVELOPE: u64 =
            1 << KeyId::V as u32 | 1 << KeyId::Seq as u32 | 1 << KeyId::Type as u32;
        if present & ENVELOPE != ENVELOPE || sat[KeyId::Run as usize] & S_STRING == 0 {
            return None;
        }
        let rule = &self.rules[type_index];
        if rule.required_mask & !present != 0 {
            return None;
        }
        let mut bits = present & rule.typed_mask;
        while bits != 0 {
            let id = bits.trailing_zeros() as usize;
            if sat[id] & rule.needs[id] == 0 {
                return None;
            }
            bits &= bits - 1;
        }
        self.last_order = order;
        self.orders[type_index] = order;
        if memo_to != usize::MAX && order[2] == KeyId::Type as u8 && order[3] == KeyId::Run as u8 {
            let memo = &mut self.memos[type_index];
            memo.clear();
            memo.extend_from_slice(&line[memo_from..memo_to]);
        }
        Some((seq, type_index))
    }

    /// At the third key of a line: the type and length of the remembered `"type":...,"run":...`
    /// segment the line goes on with, if any.
    #[inline(always)]
    fn memo_at(&self, p: &Cursor<'_>) -> Option<(usize, usize)> {
        const TYPE_KEY: &[u8] = b"\"type\":\"";
        let rest = &p.b[p.pos..];
        if rest.get(..TYPE_KEY.len())? != TYPE_KEY {
            return None;
        }
        let start = p.pos + TYPE_KEY.len();
        let (end, escaped) = find_end(p.b, p.special, start)?;
        if escaped {
            return None;
        }
        let t = type_by_name(&p.b[start..end])?;
        let memo = &self.memos[t];
        if memo.is_empty() || !rest.starts_with(memo) {
            return None;
        }
        Some((t, memo.len()))
    }
}

/// [`crate::fuzzing::quick_masks`].
#[cfg(fuzzing)]
pub(crate) fn masks_for_fuzzing(line: &[u8], avx2: bool) -> Option<(Vec<u64>, bool)> {
    let mut special = Vec::new();
    if !avx2 {
        let high = build_masks(line, &mut special);
        return Some((special, high));
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        let high = unsafe { build_masks_avx2(line, &mut special) };
        return Some((special, high));
    }
    None
}

fn rule_of(schema: &Schema) -> TypeRule {
    let mut needs = [S_ANY; KeyId::COUNT];
    for (id, kind) in needs.iter_mut().zip(schema.kinds.iter()) {
        *id = need(*kind);
    }
    TypeRule {
        known: !schema.is_ack,
        required_mask: schema.required_mask,
        typed_mask: schema.typed_mask,
        needs,
    }
}
