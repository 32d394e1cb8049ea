//! Raw CPython calls on the hot path, where PyO3's safe wrappers measured slower: each `unsafe`
//! block says why it is sound and what it saved.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::ucs::{self, Width};

/// A Python str from text the parser found to be pure ASCII, copied straight into a new compact
/// ASCII string object.
///
/// `PyString::new` would make CPython decode the UTF-8 again; this skips that re-validation,
/// which measured about 8 % of `Receiver.feed` time on the delta stream (`ascii_decode` +
/// `unicode_decode_utf8` in `perf`).
#[inline]
pub(super) fn ascii_string<'py>(py: Python<'py>, value: &str) -> PyResult<Bound<'py, PyAny>> {
    debug_assert!(value.is_ascii());
    let len = value.len();
    // SAFETY: `PyUnicode_New(len, 127)` returns a new compact ASCII str (or NULL with an
    // exception set) whose 1-byte data buffer holds `len` characters plus a NUL that CPython has
    // already written; we copy exactly `len` bytes into it, all < 0x80 (the parser checked each
    // one, hence `ascii`), before anything else can see the object. `from_owned_ptr_or_err`
    // takes ownership of the new reference.
    unsafe {
        let obj = pyo3::ffi::PyUnicode_New(len as pyo3::ffi::Py_ssize_t, 127);
        if !obj.is_null() && len > 0 {
            std::ptr::copy_nonoverlapping(
                value.as_ptr(),
                pyo3::ffi::PyUnicode_1BYTE_DATA(obj),
                len,
            );
        }
        Bound::from_owned_ptr_or_err(py, obj)
    }
}

/// A Python str from text the parser has validated as UTF-8 (any characters): its length and
/// widest character are counted first, then it is written straight into a new str of the right
/// kind (1, 2 or 4 bytes per character), as orjson does.
///
/// `PyString::new` would make CPython validate and decode the UTF-8 again, in two passes with
/// a resize (`unicode_decode_utf8`, `_PyUnicodeWriter_*`, `resize_compact`).
///
/// Each non-ASCII str is counted in `counts`: written in one pass, or (a bug in [`ucs`]) made
/// by `PyString::new` after `fill` refused it.
#[inline]
pub(super) fn utf8_string<'py>(
    py: Python<'py>,
    value: &str,
    counts: &mut StrCounts,
) -> PyResult<Bound<'py, PyAny>> {
    let (chars, width) = ucs::measure(value);
    if width == Width::Ascii {
        return ascii_string(py, value);
    }
    let n = chars as pyo3::ffi::Py_ssize_t;
    // SAFETY: `PyUnicode_New(n, maxchar)` returns a new compact str (or NULL with an exception
    // set) of `n` characters whose kind is the narrowest that holds `maxchar`: 1 byte for
    // Latin-1, 2 for UCS-2, 4 for UCS-4, so the data pointer of that kind addresses `n` units,
    // aligned for them. `ucs::fill` writes inside the slice only, and `measure` picked `maxchar`
    // as the widest character actually present, so the str is canonical (its kind is what
    // CPython would have chosen). Nothing else sees the object before it is filled;
    // `from_owned_ptr_or_err` takes ownership of the new reference. Measured: on the non-English
    // stream CPython's decoding (`unicode_decode_utf8` and helpers) was 15 % of `Receiver.feed`.
    let (obj, filled) = unsafe {
        let obj = pyo3::ffi::PyUnicode_New(n, width.max_char() as pyo3::ffi::Py_UCS4);
        let filled = !obj.is_null()
            && match width {
                Width::Latin1 => ucs::fill(
                    value,
                    std::slice::from_raw_parts_mut(pyo3::ffi::PyUnicode_1BYTE_DATA(obj), chars),
                ),
                Width::Ucs2 => ucs::fill(
                    value,
                    std::slice::from_raw_parts_mut(pyo3::ffi::PyUnicode_2BYTE_DATA(obj), chars),
                ),
                _ => ucs::fill(
                    value,
                    std::slice::from_raw_parts_mut(pyo3::ffi::PyUnicode_4BYTE_DATA(obj), chars),
                ),
            };
        (Bound::from_owned_ptr_or_err(py, obj)?, filled)
    };
    if !filled {
        // Unreachable for valid UTF-8; keep the result right regardless.
        counts.fallbacks += 1;
        return Ok(PyString::new(py, value).into_any());
    }
    counts.hits += 1;
    Ok(obj)
}

/// Per-receiver counts of the non-ASCII strs [`utf8_string`] made (`Receiver.fast_path_counters`).
#[derive(Default, Clone, Copy)]
pub(super) struct StrCounts {
    /// Written in one pass by `ucs::fill`.
    pub(super) hits: u64,
    /// `fill` refused the text (a width or length `measure` got wrong), so CPython decoded it.
    pub(super) fallbacks: u64,
}

#[cfg(not(Py_3_13))]
extern "C" {
    /// `PyDict_New` sized for `minused` items, so filling it never resizes. Private but
    /// exported by CPython (and used by Cython) since 3.x; only a pre-sizing hint.
    fn _PyDict_NewPresized(minused: pyo3::ffi::Py_ssize_t) -> *mut pyo3::ffi::PyObject;
}

/// `dict[key] = value` straight through `PyDict_SetItem`.
///
/// PyO3's `set_item` goes through generic conversions and a non-inlined helper: about 1.5 % of
/// the instructions of `Receiver.feed` on the mixed stream (callgrind), for 8 calls a line.
#[inline(always)]
pub(super) fn dict_set(
    dict: &Bound<'_, PyDict>,
    key: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: all three are live objects borrowed for the call; `PyDict_SetItem` does not steal
    // references and returns -1 with an exception set on failure.
    let rc = unsafe { pyo3::ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(dict.py()))
    }
}

/// A new dict (on 3.13+, where the pre-sizing constructor is internal, a plain one).
#[cfg(Py_3_13)]
#[inline]
pub(super) fn presized_dict(py: Python<'_>, _n: usize) -> PyResult<Bound<'_, PyDict>> {
    Ok(PyDict::new(py))
}

/// A new dict with room for `n` items.
#[cfg(not(Py_3_13))]
#[inline]
pub(super) fn presized_dict(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyDict>> {
    if n <= 5 {
        return Ok(PyDict::new(py));
    }
    // SAFETY: `_PyDict_NewPresized` returns a new reference to an empty dict, or NULL with an
    // exception set; `from_owned_ptr_or_err` takes ownership. Measured: dicts of the protocol's
    // size (6 to 12 keys) otherwise resize once while filling (`build_indices_unicode`,
    // `free_keys_object`: about 5 % of `Receiver.feed`).
    unsafe {
        let ptr = _PyDict_NewPresized(n as pyo3::ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyDict>())
    }
}
