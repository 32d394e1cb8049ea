//! Rejections as Python objects (`fenwire_fast._types.Rejection`) and the `(value, rejection)`
//! pairs every entry point returns.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::interned::interned;
use crate::schema::{self, Code, FieldErrors, Fields};

// ---------------------------------------------------------------------------------------------
// Rejections

pub(super) fn errors_tuple<'py>(
    py: Python<'py>,
    errors: &FieldErrors,
) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyTuple>> = errors
        .iter()
        .map(|(f, m)| PyTuple::new(py, [PyString::new(py, f), PyString::new(py, m)]))
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

/// `Rejection(code, reason, seq, type, run, errors)` with Python objects for type and run.
pub(super) fn make_rejection<'py>(
    py: Python<'py>,
    code: Code,
    reason: Bound<'py, PyString>,
    seq: Option<u64>,
    type_: Option<Bound<'py, PyAny>>,
    run: Option<Bound<'py, PyAny>>,
    errors: Option<&FieldErrors>,
) -> PyResult<Bound<'py, PyAny>> {
    let c = interned(py)?;
    let errors = match errors {
        Some(e) => errors_tuple(py, e)?.into_any(),
        None => py.None().into_bound(py),
    };
    let none = || py.None().into_bound(py);
    let seq = match seq {
        Some(s) => s.into_pyobject(py)?.into_any(),
        None => none(),
    };
    c.rejection.bind(py).call1((
        c.code(py, code),
        reason,
        seq,
        type_.unwrap_or_else(none),
        run.unwrap_or_else(none),
        errors,
    ))
}

/// A core rejection (from decoded bytes, so its strings are plain UTF-8) as a Python object.
pub(super) fn rejection_to_py<'py>(
    py: Python<'py>,
    r: &schema::Rejection,
) -> PyResult<Bound<'py, PyAny>> {
    let c = interned(py)?;
    let text = |s: &Option<String>| -> Option<Bound<'py, PyAny>> {
        s.as_deref().map(|t| match c.type_name(py, t) {
            Some((_, cached)) => cached.into_any(),
            None => PyString::new(py, t).into_any(),
        })
    };
    make_rejection(
        py,
        r.code,
        PyString::new(py, &r.reason),
        r.seq,
        text(&r.type_),
        text(&r.run),
        r.errors.as_ref(),
    )
}

pub(super) fn bare_rejection<'py>(
    py: Python<'py>,
    code: Code,
    reason: &str,
) -> PyResult<Bound<'py, PyAny>> {
    make_rejection(py, code, PyString::new(py, reason), None, None, None, None)
}

pub(super) fn pair<'py>(
    py: Python<'py>,
    value: Option<Bound<'py, PyAny>>,
    rejection: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let none = || py.None().into_bound(py);
    PyTuple::new(
        py,
        [value.unwrap_or_else(none), rejection.unwrap_or_else(none)],
    )
}

pub(super) fn ok_pair<'py>(
    py: Python<'py>,
    value: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    pair(py, Some(value), None)
}

pub(super) fn rejected_pair<'py>(
    py: Python<'py>,
    rej: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    pair(py, None, Some(rej))
}

pub(super) fn dict_str<'py>(dict: &Bound<'py, PyDict>, key: &str) -> Option<Bound<'py, PyAny>> {
    dict.get_item(key)
        .ok()
        .flatten()
        .filter(|v| v.is_instance_of::<PyString>())
}

/// `_rejection(code, reason, msg, errors)` for a Python dict.
pub(super) fn dict_rejection<'py>(
    py: Python<'py>,
    dict: &Bound<'py, PyDict>,
    fields: &Fields,
    code: Code,
    reason: Bound<'py, PyString>,
    errors: Option<&FieldErrors>,
) -> PyResult<Bound<'py, PyAny>> {
    make_rejection(
        py,
        code,
        reason,
        fields.usable_seq(),
        dict_str(dict, "type"),
        dict_str(dict, "run"),
        errors,
    )
}
