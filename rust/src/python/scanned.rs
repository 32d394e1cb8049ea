//! `Receiver.scan`'s results as Python objects: `fenwire_fast._types.Scanned(type, seq, line)`
//! records for accepted lines and `Rejection`s, made from a [`Scan`] after the GIL is back.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple, PyType};

use super::rejection::rejection_to_py;
use crate::drain::{Outcome, Scan};
use crate::schema::{CONTROL_TYPES, EVENT_TYPES};

/// Objects made once per interpreter: the `Scanned` class and the interned type names by
/// [`crate::schema::type_index`] (the same str objects the decoder puts in dicts).
struct ScanObjects {
    scanned: Py<PyType>,
    type_names: Vec<Py<PyString>>,
}

static SCAN_OBJECTS: PyOnceLock<ScanObjects> = PyOnceLock::new();

fn scan_objects(py: Python<'_>) -> PyResult<&ScanObjects> {
    SCAN_OBJECTS.get_or_try_init(py, || {
        let scanned = py
            .import("fenwire_fast._types")?
            .getattr("Scanned")?
            .cast_into::<PyType>()?;
        check_layout(&scanned)?;
        let type_names = EVENT_TYPES
            .iter()
            .chain(CONTROL_TYPES.iter())
            .map(|t| PyString::intern(py, t).unbind())
            .collect();
        Ok(ScanObjects {
            scanned: scanned.unbind(),
            type_names,
        })
    })
}

/// `Scanned` must be a tuple subclass with exactly a tuple's layout (no `__dict__`, no extra
/// slots) for [`record`] to fill it like a tuple.
fn check_layout(scanned: &Bound<'_, PyType>) -> PyResult<()> {
    let tp = scanned.as_type_ptr();
    // SAFETY: `tp` is a live type object (held by `scanned`) and `PyTuple_Type` a static; we only
    // read their size fields and call `PyType_IsSubtype`, which needs no GIL beyond ours.
    let ok = unsafe {
        let tuple = std::ptr::addr_of_mut!(ffi::PyTuple_Type);
        ffi::PyType_IsSubtype(tp, tuple) != 0
            && (*tp).tp_basicsize == (*tuple).tp_basicsize
            && (*tp).tp_itemsize == (*tuple).tp_itemsize
            && (*tp).tp_dictoffset == 0
    };
    if ok {
        Ok(())
    } else {
        Err(PyTypeError::new_err(
            "fenwire_fast._types.Scanned must be a NamedTuple of (type, seq, line)",
        ))
    }
}

/// A new `Scanned(type_name, seq, line)`.
#[inline]
fn record<'py>(
    py: Python<'py>,
    scanned: &Bound<'py, PyType>,
    type_name: &Bound<'py, PyString>,
    seq: u64,
    line: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let seq = seq.into_pyobject(py)?;
    let line = PyBytes::new(py, line);
    let items = [
        type_name.clone().into_any(),
        seq.into_any(),
        line.into_any(),
    ];
    new_record(py, scanned, items)
}

/// `tuple.__new__(Scanned, items)`, without the Python-level `__new__` of a NamedTuple (a
/// Python function call per line: measured about 3 times the cost of the rest of a record).
#[cfg(not(Py_3_14))]
#[inline]
fn new_record<'py>(
    py: Python<'py>,
    scanned: &Bound<'py, PyType>,
    items: [Bound<'py, PyAny>; 3],
) -> PyResult<Bound<'py, PyAny>> {
    let tp = scanned.as_type_ptr();
    // SAFETY: `check_layout` found `Scanned` a tuple subclass with a tuple's exact layout, so
    // `tp_alloc(tp, 3)` (PyType_GenericAlloc, inherited from tuple) returns a zero-filled,
    // GC-tracked instance with room for 3 items, or NULL with an exception set. This is what
    // CPython's own `tuple_subtype_new` does before 3.14; each slot is filled at once, with a
    // reference we own (`into_ptr`), before anything else can run.
    unsafe {
        let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        let obj = alloc(tp, 3);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        for (i, item) in items.into_iter().enumerate() {
            ffi::PyTuple_SET_ITEM(obj, i as ffi::Py_ssize_t, item.into_ptr());
        }
        // A str, an int and a bytes hold no references: the record can be in no cycle, and
        // CPython's collector would untrack it at its first pass (`_PyTuple_MaybeUntrack`).
        // Untracked now, no collection walks it.
        ffi::PyObject_GC_UnTrack(obj.cast());
        Ok(Bound::from_owned_ptr(py, obj))
    }
}

/// From 3.14 a tuple caches its hash in a field `tp_alloc` does not set: go through
/// `tuple.__new__` itself.
#[cfg(Py_3_14)]
#[inline]
fn new_record<'py>(
    py: Python<'py>,
    scanned: &Bound<'py, PyType>,
    items: [Bound<'py, PyAny>; 3],
) -> PyResult<Bound<'py, PyAny>> {
    let items = pyo3::types::PyTuple::new(py, items)?;
    py.get_type::<pyo3::types::PyTuple>()
        .call_method1("__new__", (scanned, items))
}

/// The list `Receiver.scan` returns for the outcomes in `scan` (made from `input`).
pub(super) fn scanned_list<'py>(
    py: Python<'py>,
    scan: &Scan,
    input: &[u8],
) -> PyResult<Bound<'py, PyList>> {
    let objects = scan_objects(py)?;
    let scanned = objects.scanned.bind(py);
    let mut out: Vec<Bound<'py, PyAny>> = Vec::with_capacity(scan.outcomes.len());
    for outcome in &scan.outcomes {
        out.push(match outcome {
            Outcome::Accepted {
                seq,
                type_index,
                line,
                ..
            } => {
                let Some(type_name) = objects.type_names.get(*type_index) else {
                    // Unreachable: an accepted message's type has a schema, hence an index.
                    return Err(PyTypeError::new_err("accepted a message of no known type"));
                };
                record(
                    py,
                    scanned,
                    type_name.bind(py),
                    *seq,
                    scan.line(input, *line),
                )?
            }
            Outcome::Rejected(r) => rejection_to_py(py, r)?,
        });
    }
    PyList::new(py, out)
}

/// The list `Receiver.scan_rejections` returns: `(index, rejection)` for each rejection among
/// the outcomes in `scan`, `index` being its place in what `scan` would have returned.
pub(super) fn rejections_list<'py>(py: Python<'py>, scan: &Scan) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (i, outcome) in scan.outcomes.iter().enumerate() {
        if let Outcome::Rejected(r) = outcome {
            let pair = PyTuple::new(
                py,
                [i.into_pyobject(py)?.into_any(), rejection_to_py(py, r)?],
            )?;
            out.append(pair)?;
        }
    }
    Ok(out)
}
