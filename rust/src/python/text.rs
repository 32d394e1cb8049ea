//! The text primitives `utf8_prefix`, `truncate_line` and `scrub` over Python strs (lone
//! surrogates included, through their generalized UTF-8), on top of [`crate::text`].

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString, PyTuple};

use crate::text;

// ---------------------------------------------------------------------------------------------
// Text primitives

pub(super) fn text_arg<'a, 'py>(text: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    text.cast::<PyString>()
        .map_err(|_| PyTypeError::new_err("text must be str"))
}

/// An int argument, saturated to the i64 range (the pure backend takes any int).
pub(super) fn int_arg(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match value.extract::<i64>() {
        Ok(v) => Ok(v),
        Err(e) => {
            // What `__index__` gives, as the pure backend's `operator.index` takes it (its error
            // too), clamped: a limit past the 64-bit range behaves like the largest one.
            let index = if value.is_instance_of::<PyInt>() {
                value.clone()
            } else {
                value
                    .py()
                    .import("operator")?
                    .call_method1("index", (value,))?
            };
            if index.is_instance_of::<PyInt>() {
                Ok(if index.lt(0)? { i64::MIN } else { i64::MAX })
            } else {
                Err(e)
            }
        }
    }
}

/// Generalized UTF-8 of a str that holds lone surrogates.
pub(super) fn surrogatepass<'py>(s: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(s.call_method1("encode", ("utf-8", "surrogatepass"))?
        .cast_into::<PyBytes>()?)
}

pub(super) fn from_surrogatepass<'py>(
    py: Python<'py>,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyString>> {
    Ok(PyBytes::new(py, bytes)
        .call_method1("decode", ("utf-8", "surrogatepass"))?
        .cast_into::<PyString>()?)
}

/// A prefix of `s` of `n` bytes (n is at a character boundary).
pub(super) fn prefix_of<'py>(
    py: Python<'py>,
    s: &Bound<'py, PyString>,
    n: usize,
) -> PyResult<Bound<'py, PyString>> {
    match s.to_str() {
        Ok(text) => {
            if n >= text.len() {
                Ok(s.clone())
            } else {
                Ok(PyString::new(py, &text[..n]))
            }
        }
        Err(_) => {
            let bytes = surrogatepass(s)?;
            let b = bytes.as_bytes();
            if n >= b.len() {
                Ok(s.clone())
            } else {
                from_surrogatepass(py, &b[..n])
            }
        }
    }
}

/// Generalized UTF-8 of `s` (borrowed when it has no lone surrogate).
pub(super) fn with_wtf8<R>(s: &Bound<'_, PyString>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    match s.to_str() {
        Ok(text) => Ok(f(text.as_bytes())),
        Err(_) => {
            let bytes = surrogatepass(s)?;
            Ok(f(bytes.as_bytes()))
        }
    }
}

/// The longest prefix of ``text`` whose UTF-8 encoding is at most ``limit`` bytes; never
/// splits a character.
#[pyfunction]
pub(super) fn utf8_prefix<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    limit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    let s = text_arg(text)?;
    let limit = int_arg(limit)?;
    if limit <= 0 {
        return Ok(PyString::new(py, ""));
    }
    let n = with_wtf8(s, |b| text::utf8_prefix_len(b, limit as usize))?;
    prefix_of(py, s, n)
}

/// ``text`` when it fits ``limit`` UTF-8 bytes; else a prefix plus ``…``, ``<= limit`` bytes in
/// all (just a prefix when ``limit`` is under 3 bytes).
#[pyfunction]
pub(super) fn truncate_line<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    limit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    let s = text_arg(text)?;
    let limit = int_arg(limit)?;
    match with_wtf8(s, |b| text::truncate_plan(b, limit))? {
        None => Ok(s.clone()),
        Some((n, ellipsis)) => {
            let prefix = prefix_of(py, s, n)?;
            if ellipsis {
                Ok(prefix.add(text::ELLIPSIS)?.cast_into::<PyString>()?)
            } else {
                Ok(prefix)
            }
        }
    }
}

/// Make text safe to forward: escape control characters and lone surrogates, cut it at a
/// character boundary and add a note saying what was kept; the result is never over ``max_bytes``
/// UTF-8 bytes. Returns ``(text, changed)``.
#[pyfunction]
pub(super) fn scrub<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    max_bytes: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let s = text_arg(text)?;
    let max_bytes = int_arg(max_bytes)?;
    let limit = max_bytes.max(0) as usize;
    let take = limit.saturating_add(1);
    let chars = s.len()?;
    let raw_truncated = chars > take;
    let result = match s.to_str() {
        Ok(t) => {
            let scanned: Vec<u32> = t.chars().take(take).map(u32::from).collect();
            text::scrub_code_points(&scanned, raw_truncated, t.len(), max_bytes)
        }
        Err(_) => {
            let bytes = surrogatepass(s)?;
            let mut cps = text::code_points(bytes.as_bytes());
            cps.truncate(take);
            text::scrub_code_points(&cps, raw_truncated, bytes.as_bytes().len(), max_bytes)
        }
    };
    let (out, changed) = match result {
        None => (s.clone(), false),
        Some(t) => (PyString::new(py, &t), true),
    };
    PyTuple::new(
        py,
        [
            out.into_any(),
            PyBool::new(py, changed).to_owned().into_any(),
        ],
    )
}
