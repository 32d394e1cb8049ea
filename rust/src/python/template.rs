//! [`DictTemplates`]: dicts built by copying a template with the same keys in the same order.
//!
//! The messages of one type carry the same keys in the same order nearly always (and so do the
//! nested objects of one tool), and the keys are the same str objects from line to line (interned
//! protocol names, the key cache). Inserting the keys one by one makes CPython hash-probe, fill
//! and account for each of them; a dict copied from a template whose keys are already placed
//! (`PyDict_Copy`: one allocation, one `memcpy` of the key table) only needs its values written.
//!
//! Writing the values goes into CPython's private dict layout, which is the same in 3.11, 3.12 and
//! 3.13 with the GIL (`Include/internal/pycore_dict.h`: the key table's header and its entries;
//! 3.13 adds a mutex to the header only in free-threaded builds). So it is compiled for those
//! three, and checks at run time that every key sits where the template put it before writing
//! anything; on any other version or build (or if a check fails) the dict is built with
//! `PyDict_SetItem`.
//!
//! Measured (callgrind, `Receiver.feed`, first 20,000 lines of each stream, instructions per
//! line): realistic mixed 7,837 -> 6,854 (-12.5 %), realistic deltas 6,197 -> 5,285 (-14.7 %),
//! non-English 10,022 -> 9,087, ASCII mixed 6,445 -> 5,472, ASCII deltas 5,937 -> 5,015.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::ffi::{dict_set, presized_dict};

/// The members of an object being built, in the line's order: what a template is matched
/// against and what the parser's sink fills.
pub(super) type Members<'py> = Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>;

/// Key sequences remembered: each may sit in one of four neighbouring slots chosen by a hash of
/// its keys.
const SLOTS: usize = 256;
/// Objects with more members than this are built key by key.
const MAX_KEYS: usize = 24;

struct Slot {
    /// The keys' addresses, in order.
    keys: Vec<usize>,
    /// The keys themselves, held so that no address above is reused by another object.
    _keys_alive: Vec<Py<PyAny>>,
    /// A dict with exactly these keys in this order (values `None`), made the second time the
    /// sequence is seen.
    dict: Option<Py<PyDict>>,
}

/// Per-receiver templates for the key sequences its dicts repeat.
#[derive(Default)]
pub(super) struct DictTemplates {
    slots: Vec<Option<Box<Slot>>>,
    /// Set if a copy was ever not laid out as expected: templates are then not used again.
    off: bool,
    /// The slot of the last template copied: consecutive dicts (lines of one type) mostly have
    /// the same keys, so it is tried before the keys are hashed.
    last: usize,
    /// How the dicts were built (`Receiver.fast_path_counters`).
    pub(super) counts: DictCounts,
}

/// Per-receiver counts of the ways [`DictTemplates::build`] made its dicts: every dict counts
/// once, in exactly one of them.
#[derive(Default, Clone, Copy)]
pub(super) struct DictCounts {
    /// Copied from the template of their key sequence.
    pub(super) hits: u64,
    /// 2 to [`MAX_KEYS`] keys, built by insert: no template for the sequence (yet): its first or
    /// second sighting, a repeated key (no template is ever made), or a slot taken over.
    pub(super) misses: u64,
    /// 2 to [`MAX_KEYS`] keys, built by insert because the template path failed: a copy was not
    /// laid out as expected (which sets `off`), or `off` was already set. So `off` is set
    /// exactly when this is nonzero.
    pub(super) fallbacks: u64,
    /// Fewer than 2 or more than [`MAX_KEYS`] members: always built by insert.
    pub(super) unfit: u64,
}

/// A hash of the key sequence, from the keys' own str hashes (cached in every interned str, so
/// the slots do not depend on where the keys happen to be allocated), else their addresses.
#[inline(always)]
fn hash_keys(members: &Members<'_>) -> usize {
    let mut h: u64 = members.len() as u64;
    for (k, _) in members {
        // SAFETY: `k` is a live exact str (keys are made by the sink), so it starts with a
        // `PyASCIIObject` header whose `hash` field is its cached hash, or -1 if not computed yet.
        let cached = unsafe { (*(k.as_ptr() as *const ffi::PyASCIIObject)).hash };
        let word = if cached == -1 {
            k.as_ptr() as u64 >> 4
        } else {
            cached as u64
        };
        h = (h ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    (h >> 56) as usize % SLOTS
}

#[inline(always)]
fn same_keys(keys: &[usize], members: &Members<'_>) -> bool {
    keys.len() == members.len()
        && keys
            .iter()
            .zip(members.iter())
            .all(|(&a, (k, _))| a == k.as_ptr() as usize)
}

impl DictTemplates {
    /// The dict of `members` (drained), in order, with dict semantics for a repeated key.
    #[inline]
    pub(super) fn build<'py>(
        &mut self,
        py: Python<'py>,
        members: &mut Members<'py>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let n = members.len();
        if !(2..=MAX_KEYS).contains(&n) {
            self.counts.unfit += 1;
            return build_by_insert(py, members);
        }
        if self.off {
            self.counts.fallbacks += 1;
            return build_by_insert(py, members);
        }
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        if let Some(Some(s)) = self.slots.get(self.last) {
            if let (Some(template), true) = (&s.dict, same_keys(&s.keys, members)) {
                if let Some(dict) = copy_filled(py, template.bind(py), members)? {
                    self.counts.hits += 1;
                    return Ok(dict);
                }
                self.off = true;
                self.counts.fallbacks += 1;
                return build_by_insert(py, members);
            }
        }
        let first = hash_keys(members);
        let ways = [first, first ^ 1, first ^ 2, first ^ 3];
        let found = ways.into_iter().find(|&i| {
            self.slots[i]
                .as_ref()
                .is_some_and(|s| same_keys(&s.keys, members))
        });
        let Some(i) = found else {
            // New here: take a free slot of the four, else one that holds no template yet, else
            // the first. (A free slot comes before a once-seen order: two orders that share
            // slots and alternate, a message's and its nested object's, would otherwise evict
            // each other before either had a template. Four ways, not two: with two, three of a
            // stream's dozen or so key orders landing on one pair of slots, which happened for
            // about one str hash seed in 40, evicted each other on every line.)
            let untemplated = |i: &usize| self.slots[*i].as_ref().is_none_or(|s| s.dict.is_none());
            let i = ways
                .iter()
                .copied()
                .find(|&i| self.slots[i].is_none())
                .or_else(|| ways.iter().copied().find(untemplated))
                .unwrap_or(first);
            self.slots[i] = Some(Box::new(Slot {
                keys: members.iter().map(|(k, _)| k.as_ptr() as usize).collect(),
                _keys_alive: members
                    .iter()
                    .map(|(k, _)| k.clone().into_any().unbind())
                    .collect(),
                dict: None,
            }));
            self.counts.misses += 1;
            return build_by_insert(py, members);
        };
        let Some(s) = self.slots[i].as_mut() else {
            self.counts.misses += 1;
            return build_by_insert(py, members);
        };
        if let Some(template) = &s.dict {
            if let Some(dict) = copy_filled(py, template.bind(py), members)? {
                self.last = i;
                self.counts.hits += 1;
                return Ok(dict);
            }
            self.off = true;
            self.counts.fallbacks += 1;
            return build_by_insert(py, members);
        }
        // Second sighting: make the template now (only when the keys are distinct).
        let template = presized_dict(py, n)?;
        for (k, _) in members.iter() {
            dict_set(&template, k, &py.None().into_bound(py))?;
        }
        if template.len() == n {
            s.dict = Some(template.unbind());
        }
        self.counts.misses += 1;
        build_by_insert(py, members)
    }
}

/// The dict built key by key (`PyDict_SetItem`, pre-sized).
#[inline]
pub(super) fn build_by_insert<'py>(
    py: Python<'py>,
    members: &mut Members<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = presized_dict(py, members.len())?;
    // In order, with dict semantics: a repeated key keeps its first place and takes the last
    // value.
    for (k, v) in members.drain(..) {
        dict_set(&dict, &k, &v)?;
    }
    Ok(dict)
}

/// CPython 3.11-3.13's `PyDictKeysObject` header (`Include/internal/pycore_dict.h`, the build
/// with the GIL); the index table
/// (`1 << dk_log2_index_bytes` bytes) and then the entries follow it.
#[cfg(all(Py_3_11, not(Py_3_14), not(Py_GIL_DISABLED)))]
#[repr(C)]
struct DictKeysHeader {
    dk_refcnt: ffi::Py_ssize_t,
    dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    dk_version: u32,
    dk_usable: ffi::Py_ssize_t,
    dk_nentries: ffi::Py_ssize_t,
}

/// `DICT_KEYS_GENERAL`: entries of (hash, key, value), as `_PyDict_NewPresized` makes them.
#[cfg(all(Py_3_11, not(Py_3_14), not(Py_GIL_DISABLED)))]
const DICT_KEYS_GENERAL: u8 = 0;
/// `DICT_KEYS_UNICODE`: every key an exact str, entries of (key, value) without the hash.
#[cfg(all(Py_3_11, not(Py_3_14), not(Py_GIL_DISABLED)))]
const DICT_KEYS_UNICODE: u8 = 1;

/// A copy of `template` with `members`' values (drained on success), or `None` (members left
/// untouched) when the copy is not laid out as expected.
#[cfg(all(Py_3_11, not(Py_3_14), not(Py_GIL_DISABLED)))]
#[inline]
fn copy_filled<'py>(
    py: Python<'py>,
    template: &Bound<'py, PyDict>,
    members: &mut Members<'py>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let n = members.len();
    // SAFETY: `PyDict_Copy` returns a new reference to a new dict (or NULL with an exception
    // set); `from_owned_ptr_or_err` takes ownership.
    let copy = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyDict_Copy(template.as_ptr()))? };
    // SAFETY: `copy` is an exact dict that nothing else has seen. For a combined-table template
    // with no deleted entries, `PyDict_Copy` (3.11 to 3.13) clones the key table (`clone_combined_dict_keys`:
    // a private table of refcount 1 owned by the copy, with the template's entries, each key and
    // value incref'd). Before writing, every assumption is checked: no split values, a kind
    // whose entries we know, `n` entries, and each entry's key the very object expected in that
    // place (which fails unless the header layout is the one above). Each value slot then holds a
    // reference to `None` owned by the copy: it is replaced by the reference `members` owned
    // and the `None` released, exactly as `insertdict` replaces a value. The reference `members`
    // owned to each key is released (the copy holds its own), and `members` is then emptied with
    // `set_len(0)`, so that no reference it held is released twice or kept. No code runs in
    // between that could see the dict (a key's release cannot free it: the template and the
    // copy hold it too). Measured: see the module's documentation.
    unsafe {
        let mp = copy.as_ptr() as *mut ffi::PyDictObject;
        if !(*mp).ma_values.is_null() || (*mp).ma_used != n as ffi::Py_ssize_t {
            return Ok(None);
        }
        let keys = (*mp).ma_keys as *mut DictKeysHeader;
        // Entries are (key, value) for the unicode kind, (hash, key, value) for the general one.
        let (stride, key_at) = match (*keys).dk_kind {
            DICT_KEYS_UNICODE => (2, 0),
            DICT_KEYS_GENERAL => (3, 1),
            _ => return Ok(None),
        };
        if (*keys).dk_nentries != n as ffi::Py_ssize_t || (*keys).dk_refcnt != 1 {
            return Ok(None);
        }
        let entries = (keys as *mut u8)
            .add(std::mem::size_of::<DictKeysHeader>() + (1usize << (*keys).dk_log2_index_bytes))
            as *mut *mut ffi::PyObject;
        for (i, (k, _)) in members.iter().enumerate() {
            if *entries.add(i * stride + key_at) != k.as_ptr() {
                return Ok(None);
            }
        }
        let mut track = false;
        for (i, (k, v)) in members.iter().enumerate() {
            let slot = &mut *entries.add(i * stride + key_at + 1);
            let old = *slot;
            let v = v.as_ptr();
            // `MAINTAIN_TRACKING` of `insertdict`: a container value makes the dict tracked
            // (the type flag first: the strs and numbers most values are never containers).
            track |= ffi::PyType_HasFeature(ffi::Py_TYPE(v), ffi::Py_TPFLAGS_HAVE_GC) != 0
                && ffi::PyObject_IS_GC(v) != 0
                && (ffi::PyTuple_CheckExact(v) == 0 || ffi::PyObject_GC_IsTracked(v) != 0);
            *slot = v;
            ffi::Py_DECREF(old);
            // The copy holds a reference of its own to the key: the one `members` holds is
            // released here.
            ffi::Py_DECREF(k.as_ptr());
        }
        // Every reference `members` held is accounted for: each value's moved into the copy,
        // each key's released above. Forgotten, not dropped, so none is released twice.
        members.set_len(0);
        if track && ffi::PyObject_GC_IsTracked(copy.as_ptr()) == 0 {
            ffi::PyObject_GC_Track(copy.as_ptr() as *mut std::ffi::c_void);
        }
        Ok(Some(copy.cast_into_unchecked::<PyDict>()))
    }
}

/// Other versions and free-threaded builds: no template copies (the layout written to above is
/// that of 3.11 to 3.13 with the GIL).
#[cfg(not(all(Py_3_11, not(Py_3_14), not(Py_GIL_DISABLED))))]
#[inline]
fn copy_filled<'py>(
    _py: Python<'py>,
    _template: &Bound<'py, PyDict>,
    _members: &mut Members<'py>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    Ok(None)
}
