//! Walking a line in the fast path: values, containers and strings, with the kinds each top-level
//! value satisfies.

use super::masks::find_end;
use super::*;

/// Where the fast path is in a line, with the line's [`build_masks`] bits.
pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) special: &'a [u64],
    pub(super) pos: usize,
}

/// Nesting the fast path follows (the exact check allows 1024).
pub(super) const MAX_NEST: u32 = 60;

impl Cursor<'_> {
    #[inline(always)]
    pub(super) fn byte(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips JSON whitespace.
    #[inline(always)]
    pub(super) fn ws(&mut self) {
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
    pub(super) fn pattern_key(&mut self, patterns: &[KeyPattern], predicted: u8) -> Option<KeyId> {
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
    pub(super) fn predicted_key(&mut self, predicted: u8) -> Option<KeyId> {
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
    pub(super) fn key(&mut self) -> Option<Option<KeyId>> {
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
    pub(super) fn string(&mut self) -> Option<()> {
        let (end, _) = find_end(self.b, self.special, self.pos + 1)?;
        self.pos = end + 1;
        Some(())
    }

    /// A number: the kinds it satisfies, and its value when it is a plain integer. Not sure of
    /// exponents and of more than 18 integer digits.
    #[inline(always)]
    pub(super) fn number(&mut self) -> Option<(Sat, u64)> {
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
    pub(super) fn refs(&mut self) -> Option<Sat> {
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
    pub(super) fn value(&mut self) -> Option<Sat> {
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
    pub(super) fn literal(&mut self, word: &[u8], sat: Sat) -> Option<Sat> {
        let end = self.pos + word.len();
        if self.b.get(self.pos..end)? != word {
            return None;
        }
        self.pos = end;
        Some(sat)
    }

    /// An object or array at its opening bracket, with everything in it.
    #[inline(never)]
    pub(super) fn container(&mut self) -> Option<Sat> {
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
    pub(super) fn member(&mut self, in_object: bool) -> Option<Option<bool>> {
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

pub(super) fn close_of(object: bool) -> u8 {
    if object {
        b'}'
    } else {
        b']'
    }
}

/// The kinds a container satisfies: `ok_object` (an object, or an empty array) and `ok_array`
/// (an array, or an empty object; a non-empty array is left to the exact check for `refs`).
pub(super) fn kinds(object: bool, empty: bool) -> Sat {
    match (object, empty) {
        (true, false) => S_OBJECT | S_ANY,
        (true, true) | (false, true) => S_OBJECT | S_REFS | S_ANY,
        (false, false) => S_ANY,
    }
}
