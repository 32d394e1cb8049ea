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
    /// Whether the CPU has AVX2 (for `build_masks_avx2`; always false off x86_64).
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
            #[cfg(target_arch = "x86_64")]
            avx2: is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            avx2: false,
        }
    }

    /// [`build_masks`] for `line` into `self.special`, with AVX2 when the CPU has it.
    #[inline(always)]
    fn masks(&mut self, line: &[u8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is true only when the CPU was found to support AVX2.
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

/// Where the fast path is in a line, with the line's [`build_masks`] bits.
struct Cursor<'a> {
    b: &'a [u8],
    special: &'a [u64],
    pos: usize,
}

/// Nesting the fast path follows (the exact check allows 1024).
const MAX_NEST: u32 = 60;

impl Cursor<'_> {
    #[inline(always)]
    fn byte(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips JSON whitespace.
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c > b' ' || !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
    }

    /// The key at the quote when the line goes on with exactly `"<name of predicted>":`
    /// (compared 16 bytes at once); `pos` is then after the colon.
    #[inline(always)]
    fn pattern_key(&mut self, patterns: &[KeyPattern], predicted: u8) -> Option<KeyId> {
        let pattern = patterns.get(predicted as usize)?;
        let next: [u8; 16] = self.b.get(self.pos..self.pos + 16)?.try_into().ok()?;
        if pattern.len == 0 || (u128::from_le_bytes(next) ^ pattern.bytes) & pattern.mask != 0 {
            return None;
        }
        self.pos += pattern.len;
        KeyId::ALL.get(predicted as usize).copied()
    }

    /// The key at the quote when it is exactly `"<name of predicted>"`.
    #[inline(always)]
    fn predicted_key(&mut self, predicted: u8) -> Option<KeyId> {
        let id = *KeyId::ALL.get(predicted as usize)?;
        let name = id.name().as_bytes();
        let start = self.pos + 1;
        let end = start + name.len();
        if self.b.get(end) != Some(&b'"') || !short_eq(&self.b[start..end], name) {
            return None;
        }
        self.pos = end + 1;
        Some(id)
    }

    /// A top-level key at the quote: `Some(id)` for a protocol key, `None` for another key.
    /// Not sure (the outer `None`) of keys with escapes.
    #[inline(always)]
    fn key(&mut self) -> Option<Option<KeyId>> {
        let start = self.pos + 1;
        let (end, escaped) = find_end(self.b, self.special, start)?;
        if escaped {
            return None;
        }
        self.pos = end + 1;
        Some(
            std::str::from_utf8(&self.b[start..end])
                .ok()
                .and_then(KeyId::from_name),
        )
    }

    /// Skips the string at the quote.
    #[inline(always)]
    fn string(&mut self) -> Option<()> {
        let (end, _) = find_end(self.b, self.special, self.pos + 1)?;
        self.pos = end + 1;
        Some(())
    }

    /// A number: the kinds it satisfies, and its value when it is a plain integer. Not sure of
    /// exponents and of more than 18 integer digits.
    #[inline(always)]
    fn number(&mut self) -> Option<(Sat, u64)> {
        let b = self.b;
        let mut i = self.pos;
        let negative = *b.get(i)? == b'-';
        if negative {
            i += 1;
        }
        let int_start = i;
        let mut n = 0u64;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while let Some(&d) = b.get(i) {
                    let v = d.wrapping_sub(b'0');
                    if v > 9 {
                        break;
                    }
                    n = n * 10 + u64::from(v);
                    i += 1;
                    if i - int_start > 18 {
                        return None;
                    }
                }
            }
            _ => return None,
        }
        let mut float = false;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let frac = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == frac {
                return None;
            }
            float = true;
        }
        match b.get(i) {
            Some(b'e' | b'E') => return None,
            // "01": a leading zero (the exact check refuses it).
            Some(b'0'..=b'9') => return None,
            _ => {}
        }
        self.pos = i;
        if float {
            // Integral or not is left to the exact check.
            return Some((S_NUMBER | S_ANY, 0));
        }
        let pos = !negative && (1..=MAX_SAFE_INTEGER).contains(&n);
        let sat = S_NUMBER | S_INTEGER | S_ANY | if pos { S_POS } else { 0 };
        Some((sat, n))
    }

    /// A top-level `refs` array at its `[`: [`S_REFS`] when every item is an integer in
    /// 1..=2^53-1 (anything else is left to the exact check).
    fn refs(&mut self) -> Option<Sat> {
        self.pos += 1;
        self.ws();
        if self.byte()? == b']' {
            self.pos += 1;
            return Some(S_REFS | S_OBJECT | S_ANY);
        }
        loop {
            match self.byte()? {
                b'-' | b'0'..=b'9' => {
                    let (sat, _) = self.number()?;
                    if sat & S_POS == 0 {
                        return None;
                    }
                }
                _ => return None,
            }
            self.ws();
            match self.byte()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b']' => {
                    self.pos += 1;
                    return Some(S_REFS | S_ANY);
                }
                _ => return None,
            }
        }
    }

    /// Any value, checked and skipped: the kinds it satisfies.
    #[inline(always)]
    fn value(&mut self) -> Option<Sat> {
        match self.byte()? {
            b'"' => {
                self.string()?;
                Some(S_STRING | S_ANY)
            }
            b'-' | b'0'..=b'9' => self.number().map(|(sat, _)| sat),
            b't' => self.literal(b"true", S_BOOL | S_ANY),
            b'f' => self.literal(b"false", S_BOOL | S_ANY),
            b'n' => self.literal(b"null", S_ANY),
            b'{' | b'[' => self.container(),
            _ => None,
        }
    }

    #[inline(always)]
    fn literal(&mut self, word: &[u8], sat: Sat) -> Option<Sat> {
        let end = self.pos + word.len();
        if self.b.get(self.pos..end)? != word {
            return None;
        }
        self.pos = end;
        Some(sat)
    }

    /// An object or array at its opening bracket, with everything in it.
    #[inline(never)]
    fn container(&mut self) -> Option<Sat> {
        let outer_is_object = self.b[self.pos] == b'{';
        // Open containers, one bit each (1: object), innermost lowest.
        let mut open: u64 = 0;
        let mut depth = 0u32;
        let mut is_object = outer_is_object;
        'open: loop {
            // At the opening bracket of a container of kind `is_object`.
            self.pos += 1;
            depth += 1;
            if depth > MAX_NEST {
                return None;
            }
            open = open << 1 | u64::from(is_object);
            self.ws();
            if self.byte()? == close_of(is_object) {
                self.pos += 1;
                if depth == 1 {
                    return Some(kinds(outer_is_object, true));
                }
                open >>= 1;
                depth -= 1;
                is_object = open & 1 != 0;
            } else if let Some(inner) = self.member(is_object)? {
                is_object = inner;
                continue 'open;
            }
            // After a member: `,` and the next member, or brackets that close.
            loop {
                self.ws();
                let c = self.byte()?;
                if c == b',' {
                    self.pos += 1;
                    self.ws();
                    if let Some(inner) = self.member(is_object)? {
                        is_object = inner;
                        continue 'open;
                    }
                    continue;
                }
                if c != close_of(is_object) {
                    return None;
                }
                self.pos += 1;
                open >>= 1;
                depth -= 1;
                if depth == 0 {
                    return Some(kinds(outer_is_object, false));
                }
                is_object = open & 1 != 0;
            }
        }
    }

    /// A member of a container (`"key": value` in an object) at `pos`: a scalar value is
    /// checked and skipped (`Some(None)`); at a container value, stops at its bracket and
    /// tells whether it is an object.
    #[inline(always)]
    fn member(&mut self, in_object: bool) -> Option<Option<bool>> {
        if in_object {
            if self.byte()? != b'"' {
                return None;
            }
            self.string()?;
            self.ws();
            if self.byte()? != b':' {
                return None;
            }
            self.pos += 1;
            self.ws();
        }
        match self.byte()? {
            b'{' => Some(Some(true)),
            b'[' => Some(Some(false)),
            _ => {
                self.value()?;
                Some(None)
            }
        }
    }
}

fn close_of(object: bool) -> u8 {
    if object {
        b'}'
    } else {
        b']'
    }
}

/// The kinds a container satisfies: `ok_object` (an object, or an empty array) and `ok_array`
/// (an array, or an empty object; a non-empty array is left to the exact check for `refs`).
fn kinds(object: bool, empty: bool) -> Sat {
    match (object, empty) {
        (true, false) => S_OBJECT | S_ANY,
        (true, true) | (false, true) => S_OBJECT | S_REFS | S_ANY,
        (false, false) => S_ANY,
    }
}

/// Escapes the fast path takes as they are (`\u` is left to the exact check).
static SIMPLE_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'/' as usize] = true;
    t[b'b' as usize] = true;
    t[b'f' as usize] = true;
    t[b'n' as usize] = true;
    t[b'r' as usize] = true;
    t[b't' as usize] = true;
    t
};

/// Fills `special` with one bit per byte of `line` (bit `i % 64` of word `i / 64`) set for the
/// bytes a string must stop at (quote, backslash, byte < 0x20); returns whether any byte is
/// >= 0x80. The last word's bits past the line are clear.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn build_masks(line: &[u8], special: &mut Vec<u64>) -> bool {
    use std::arch::x86_64::*;

    /// The special bits of 64 bytes at `p`, OR-ing the bytes into `high`.
    ///
    /// # Safety
    /// `p` must be valid for reading 64 bytes.
    #[inline(always)]
    unsafe fn block(p: *const u8, high: &mut __m128i) -> u64 {
        // SAFETY: the caller makes `p..p + 64` readable and each load reads 16 bytes at
        // `p + k * 16`, `k < 4`; the other intrinsics are SSE2 arithmetic (x86_64 baseline).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control_max = _mm_set1_epi8(0x1F);
            let mut bits = 0u64;
            for k in 0..4 {
                let v = _mm_loadu_si128(p.add(k * 16) as *const __m128i);
                let s = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    // v <= 0x1F (unsigned) exactly when max(v, 0x1F) == 0x1F.
                    _mm_cmpeq_epi8(_mm_max_epu8(v, control_max), control_max),
                );
                *high = _mm_or_si128(*high, v);
                bits |= u64::from(_mm_movemask_epi8(s) as u16) << (k * 16);
            }
            bits
        }
    }

    let n = line.len();
    special.clear();
    special.reserve(n / 64 + 1);
    // SAFETY: SSE2 arithmetic, part of the x86_64 baseline.
    let mut high = unsafe { _mm_setzero_si128() };
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: `i + 64 <= n`: the 64 bytes at `i` are inside `line`. SSE2 is part of the
        // x86_64 baseline. Measured: see the module's notes (BENCHMARKS.md).
        special.push(unsafe { block(line.as_ptr().add(i), &mut high) });
        i += 64;
    }
    if i < n {
        // The last bytes, padded with spaces (not special, not high).
        let mut pad = [b' '; 64];
        pad[..n - i].copy_from_slice(&line[i..]);
        // SAFETY: `pad` is 64 bytes.
        special.push(unsafe { block(pad.as_ptr(), &mut high) });
    }
    // SAFETY: as above.
    unsafe { _mm_movemask_epi8(high) != 0 }
}

/// [`build_masks`] 32 bytes per step (the CPU has AVX2: [`Quick::new`] checked).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn build_masks_avx2(line: &[u8], special: &mut Vec<u64>) -> bool {
    use std::arch::x86_64::*;

    let space = _mm256_set1_epi8(0x20);
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let mut high = _mm256_setzero_si256();
    // The special bits of 32 bytes, OR-ing them into `high` (a macro: a helper function is
    // not inlined across the target feature, and passing vectors through memory tripled the
    // cost).
    macro_rules! half {
        ($v:expr) => {{
            let v = $v;
            let s = _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
                // v < 0x20 (unsigned): below 0x20 as a signed byte, and not >= 0x80 (only
                // the top bit of each byte counts). (`max_epu8` + `cmpeq`, as in the SSE2
                // loop, made LLVM scalarize the whole block here.)
                _mm256_andnot_si256(v, _mm256_cmpgt_epi8(space, v)),
            );
            high = _mm256_or_si256(high, v);
            // `black_box`: LLVM otherwise reads the two 32-bit masks as 64 booleans and
            // rebuilds them one byte at a time (228 instructions per 64 bytes, callgrind).
            u64::from(std::hint::black_box(_mm256_movemask_epi8(s)) as u32)
        }};
    }

    let n = line.len();
    special.clear();
    special.reserve(n / 64 + 1);
    let mut i = 0;
    let p = line.as_ptr();
    while i + 64 <= n {
        // SAFETY: `i + 64 <= n`: both 32-byte loads are inside `line`. Measured: 0.4
        // instructions a byte against 0.7 for the SSE2 loop (callgrind, realistic mixed).
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p.add(i) as *const __m256i),
                _mm256_loadu_si256(p.add(i + 32) as *const __m256i),
            )
        };
        special.push(half!(lo) | half!(hi) << 32);
        i += 64;
    }
    if i < n && n >= 64 {
        // The last bytes: the line's last 64, with the bits of those already done shifted out
        // (no copy into a padded buffer: that was 60 instructions a line).
        // SAFETY: `n >= 64`: both 32-byte loads at `n - 64` are inside `line`.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p.add(n - 64) as *const __m256i),
                _mm256_loadu_si256(p.add(n - 32) as *const __m256i),
            )
        };
        special.push((half!(lo) | half!(hi) << 32) >> (64 - (n - i)));
    } else if i < n {
        // A line shorter than 64 bytes, padded with spaces (not special, not high).
        let mut pad = [b' '; 64];
        pad[..n - i].copy_from_slice(&line[i..]);
        // SAFETY: `pad` is 64 bytes.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(pad.as_ptr() as *const __m256i),
                _mm256_loadu_si256(pad.as_ptr().add(32) as *const __m256i),
            )
        };
        special.push(half!(lo) | half!(hi) << 32);
    }
    _mm256_movemask_epi8(high) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn build_masks(line: &[u8], special: &mut Vec<u64>) -> bool {
    special.clear();
    let mut high = false;
    for chunk in line.chunks(64) {
        let mut bits = 0u64;
        for (k, &c) in chunk.iter().enumerate() {
            if c == b'"' || c == b'\\' || c < 0x20 {
                bits |= 1 << k;
            }
            high |= c >= 0x80;
        }
        special.push(bits);
    }
    high
}

/// From `start` (just after an opening quote): the index of the closing quote and whether an
/// escape came before it, when every escape is one [`SIMPLE_ESCAPE`] and no control byte comes
/// first; `None` otherwise.
#[inline(always)]
fn find_end(b: &[u8], special: &[u64], start: usize) -> Option<(usize, bool)> {
    let mut w = start / 64;
    let mut bits = *special.get(w)? & (u64::MAX << (start % 64));
    let mut escaped = false;
    loop {
        while bits != 0 {
            let k = bits.trailing_zeros();
            let j = w * 64 + k as usize;
            match b[j] {
                b'"' => return Some((j, escaped)),
                b'\\' => {
                    let e = *b.get(j + 1)?;
                    if !SIMPLE_ESCAPE[e as usize] {
                        return None;
                    }
                    escaped = true;
                    bits &= bits - 1;
                    if k == 63 {
                        // The escaped byte is the first of the next word.
                        w += 1;
                        bits = *special.get(w)? & !1;
                        continue;
                    }
                    // The escaped byte is no quote or backslash of its own.
                    bits &= !(2u64 << k);
                }
                _ => return None,
            }
        }
        w += 1;
        bits = *special.get(w)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_with, SeqState};
    use crate::json::NullSink;
    use crate::schema::Fields;

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
        for direction in [Direction::Event, Direction::Control] {
            let mut quick = Quick::new(direction);
            for line in LINES {
                let got = quick.check(line);
                let want = exact(line, direction);
                if got.is_some() {
                    assert_eq!(got, want, "{}", String::from_utf8_lossy(line));
                }
            }
        }
        // The common shapes do take the fast path.
        let mut quick = Quick::new(Direction::Event);
        for line in &LINES[..12] {
            assert!(
                quick.check(line).is_some(),
                "{}",
                String::from_utf8_lossy(line)
            );
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
        ] {
            let mut quick = Quick::new(direction);
            // The SSE2 masks too, on a CPU with AVX2.
            quick.avx2 &= avx2;
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
            let mut quick = Quick::new(Direction::Event);
            quick.avx2 &= avx2;
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
}
