//! The `Framer` class (splits a byte stream into lines, refusing lines over the cap) and the
//! byte-argument check it shares with `Receiver.feed`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyList, PyMemoryView};

use crate::framer::Framer as CoreFramer;
use crate::schema::MAX_LINE_BYTES;

// ---------------------------------------------------------------------------------------------
// Framer and Receiver

/// The bytes of a `feed` argument (bytes, bytearray or memoryview), else TypeError.
pub(super) fn feed_bytes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if data.is_instance_of::<PyByteArray>() || data.is_instance_of::<PyMemoryView>() {
        return Ok(py
            .get_type::<PyBytes>()
            .call1((data,))?
            .cast_into::<PyBytes>()?);
    }
    Err(PyTypeError::new_err("data must be bytes"))
}

/// Sans-IO line framing over bytes fed in pieces of any size.
///
/// Splits on ``b"\n"`` only; ``\r`` is kept; empty lines come out as ``b""``. A line that reaches
/// ``max_line_bytes`` without a newline comes out once, as its first ``max_line_bytes`` bytes, and
/// the rest of it up to its newline is skipped; so the output never depends on how the input was
/// split.
#[pyclass(module = "fenwire_fast._native")]
pub(super) struct Framer {
    inner: CoreFramer,
}

pub(super) fn positive_cap(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let err = || PyValueError::new_err("max_line_bytes must be a positive integer");
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(err());
    }
    if value.lt(1)? {
        return Err(err());
    }
    Ok(value.extract::<usize>().unwrap_or(usize::MAX))
}

/// A `max_line_bytes` argument as given (checked by the constructor, so a bad value raises
/// `ValueError` like the pure backend rather than PyO3's `TypeError`).
pub(super) struct CapArg(Option<usize>);

impl CapArg {
    const DEFAULT: CapArg = CapArg(Some(MAX_LINE_BYTES));
}

impl<'a, 'py> FromPyObject<'a, 'py> for CapArg {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(CapArg(positive_cap(&obj).ok()))
    }
}

#[pymethods]
impl Framer {
    #[new]
    #[pyo3(signature = (max_line_bytes = CapArg::DEFAULT), text_signature = "(max_line_bytes=65536)")]
    fn new(max_line_bytes: CapArg) -> PyResult<Self> {
        let Some(cap) = max_line_bytes.0 else {
            return Err(PyValueError::new_err(
                "max_line_bytes must be a positive integer",
            ));
        };
        Ok(Framer {
            inner: CoreFramer::new(cap),
        })
    }

    /// The line cap, in bytes (a positive ``int``, 65536 by default): a line that reaches it
    /// without a newline comes out once, as its first ``max_line_bytes`` bytes, and the rest of it
    /// up to its newline is skipped.
    #[getter]
    fn max_line_bytes(&self) -> usize {
        self.inner.max_line_bytes()
    }

    /// Bytes of an unterminated line held for the next feed.
    #[getter]
    fn buffered(&self) -> usize {
        self.inner.buffered()
    }

    /// Frame ``data``; return the complete lines it finishes, in order.
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let data = feed_bytes(py, data)?;
        let mut lines: Vec<Bound<'py, PyBytes>> = Vec::new();
        let _ = self.inner.feed::<()>(data.as_bytes(), |line| {
            lines.push(PyBytes::new(py, line));
            Ok(())
        });
        PyList::new(py, lines)
    }
}
