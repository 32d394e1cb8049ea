//! [`RepeatedValues`]: per-receiver caches of the string values and object keys that repeat from
//! line to line, so an equal value reuses the str object made for the previous line.

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::ffi::{ascii_string, utf8_string, StrCounts};
use super::template::DictTemplates;
use crate::schema::{short_eq, KeyId};

/// The last string value a receiver saw for each field whose values repeat from line to line
/// (`run`, `timestamp` at one-second precision, `provider`, ...): an equal value reuses the same
/// str object instead of building a new one.
#[derive(Default)]
pub(super) struct RepeatedValues {
    slots: [(String, Option<Py<PyString>>); REPEATING.len()],
    pub(super) last_type: Option<(&'static str, Py<PyString>)>,
    /// The last text-like field value (`delta`, `text`, `summary`, `error`).
    pub(super) prev_text: (String, Option<Py<PyString>>),
    /// Keys that are not protocol fields (nested objects: `content`, `path`, ...), by a hash of
    /// their text: a four-way set-associative cache, most recent first in each set, so that the
    /// few keys of one stream whose hashes share a set do not evict each other on every line
    /// (each eviction makes a new str, and a dict with a new key object is not copied from its
    /// template).
    other_keys: Vec<Option<(Box<str>, Py<PyString>)>>,
    /// Templates of the dicts built, by key sequence.
    pub(super) templates: DictTemplates,
    /// How the non-ASCII strs were built.
    pub(super) strs: StrCounts,
}

pub(super) const OTHER_KEYS: usize = 1024;
const WAYS: usize = 4;

impl RepeatedValues {
    #[inline]
    pub(super) fn other_key<'py>(&mut self, py: Python<'py>, key: &str) -> Bound<'py, PyString> {
        if key.len() > 64 {
            return PyString::new(py, key);
        }
        // FNV-1a over the bytes, then a multiplicative mix: FNV's low bits alone put short keys
        // that differ in their last bytes (`x5`, `x10`) in one set.
        let mut h: u32 = 0x811c_9dc5;
        for &b in key.as_bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        let first = (h.wrapping_mul(0x9E37_79B1) >> 24) as usize * WAYS;
        if self.other_keys.is_empty() {
            self.other_keys.resize_with(OTHER_KEYS, || None);
        }
        let set = &mut self.other_keys[first..first + WAYS];
        for way in 0..WAYS {
            if let Some((text, obj)) = &set[way] {
                if short_eq(text.as_bytes(), key.as_bytes()) {
                    let obj = obj.bind(py).clone();
                    // Most recent first: the least recent is the one a new key replaces.
                    set[..=way].rotate_right(1);
                    return obj;
                }
            }
        }
        // Not interned: the interpreter's table of interned strings only ever grows, and a
        // child names as many keys as it likes. This cache is what makes a repeated key one object.
        let obj = PyString::new(py, key);
        // Its hash computed now, as interning would have: the dict templates pick a key
        // sequence's slot by the keys' cached hashes, so a key must hash the same from its
        // first sighting on. (Hashing an exact str cannot fail.)
        let _ = obj.hash();
        set.rotate_right(1);
        set[0] = Some((key.into(), obj.clone().unbind()));
        obj
    }
}

/// Fields whose string values tend to repeat on consecutive lines.
pub(super) const REPEATING: [KeyId; 12] = [
    KeyId::Run,
    KeyId::Timestamp,
    KeyId::RunId,
    KeyId::Agent,
    KeyId::RequestedCwd,
    KeyId::Cwd,
    KeyId::PhysicalCwd,
    KeyId::Provider,
    KeyId::Model,
    KeyId::Name,
    KeyId::StopReason,
    KeyId::Source,
];

/// `REPEATING`'s index of each key, or `u8::MAX`.
pub(super) const REPEATING_SLOT: [u8; KeyId::COUNT] = {
    let mut t = [u8::MAX; KeyId::COUNT];
    let mut i = 0;
    while i < REPEATING.len() {
        t[REPEATING[i] as usize] = i as u8;
        i += 1;
    }
    t
};

impl RepeatedValues {
    #[inline]
    pub(super) fn get<'py>(
        &mut self,
        py: Python<'py>,
        key: KeyId,
        value: &str,
        ascii: bool,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let i = REPEATING_SLOT[key as usize];
        if i == u8::MAX {
            return None;
        }
        let i = i as usize;
        let (text, object) = &mut self.slots[i];
        if let Some(obj) = object {
            if short_eq(text.as_bytes(), value.as_bytes()) {
                return Some(Ok(obj.bind(py).clone().into_any()));
            }
        }
        let made = if ascii {
            ascii_string(py, value)
        } else {
            utf8_string(py, value, &mut self.strs)
        };
        if let Ok(obj) = &made {
            if let Ok(s) = obj.cast::<PyString>() {
                text.clear();
                text.push_str(value);
                *object = Some(s.clone().unbind());
            }
        }
        Some(made)
    }
}
