//! `Receiver.scan_batch`'s result: a `ScanBatch` of columns (the accepted lines as one bytes,
//! their end offsets, seqs and type indices) built in Rust, with no Python object per line.

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyInt, PyList, PyTuple};

use super::rejection::rejection_to_py;
use crate::drain::{LineAt, Outcome, Scan};

/// One chunk's columns, filled with the GIL released; reused from call to call.
#[derive(Debug, Default)]
pub(super) struct Columns {
    /// The chunk's accepted lines are exactly the chunk itself (then `lines` is left empty).
    whole: bool,
    lines: Vec<u8>,
    ends: Vec<u64>,
    seqs: Vec<u64>,
    types: Vec<u8>,
    /// `(accepted lines before it, index in the scan's outcomes)` for each rejection.
    rejected: Vec<(usize, usize)>,
}

impl Columns {
    /// Fill the columns from `scan` (made from `input`); `base` is subtracted from each type
    /// index (the length of `EVENT_TYPES` for a control receiver).
    pub(super) fn fill(&mut self, scan: &Scan, input: &[u8], base: usize) {
        self.lines.clear();
        self.ends.clear();
        self.seqs.clear();
        self.types.clear();
        self.rejected.clear();
        // While `whole`, the accepted lines so far are `input[..next]` exactly, newlines
        // included, and nothing is copied.
        let mut whole = input.last() == Some(&b'\n');
        let mut next = 0usize;
        for (i, outcome) in scan.outcomes.iter().enumerate() {
            match outcome {
                Outcome::Accepted {
                    seq,
                    type_index,
                    line,
                } => {
                    if whole {
                        match *line {
                            LineAt::Input { start, end } if start == next => {
                                next = end + 1;
                                self.ends.push(next as u64);
                                self.seqs.push(*seq);
                                self.types.push(type_byte(*type_index, base));
                                continue;
                            }
                            _ => {
                                whole = false;
                                self.lines.extend_from_slice(&input[..next]);
                            }
                        }
                    }
                    self.lines.extend_from_slice(scan.line(input, *line));
                    self.lines.push(b'\n');
                    self.ends.push(self.lines.len() as u64);
                    self.seqs.push(*seq);
                    self.types.push(type_byte(*type_index, base));
                }
                Outcome::Rejected(_) => {
                    if whole {
                        whole = false;
                        self.lines.extend_from_slice(&input[..next]);
                    }
                    self.rejected.push((self.seqs.len(), i));
                }
            }
        }
        self.whole = whole && next == input.len();
        if whole && !self.whole {
            self.lines.extend_from_slice(&input[..next]);
        }
    }
}

/// A type's index in its direction's list (an accepted message always has one, below 256).
#[inline]
fn type_byte(type_index: usize, base: usize) -> u8 {
    u8::try_from(type_index.wrapping_sub(base)).unwrap_or(u8::MAX)
}

static ARRAY_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `array.array("Q", values)`.
fn array_q<'py>(py: Python<'py>, values: &[u64]) -> PyResult<Bound<'py, PyAny>> {
    let array = ARRAY_TYPE.get_or_try_init(py, || {
        py.import("array")?.getattr("array").map(Bound::unbind)
    })?;
    let raw = PyBytes::new_with(py, values.len() * 8, |buf| {
        for (chunk, v) in buf.chunks_exact_mut(8).zip(values) {
            chunk.copy_from_slice(&v.to_ne_bytes());
        }
        Ok(())
    })?;
    array.bind(py).call1(("Q", raw))
}

/// The accepted lines of one :meth:`Receiver.scan_batch` call, as columns, with no Python object
/// per line:
///
/// - ``lines``: the lines as one ``bytes``, each followed by ``b"\n"``;
/// - ``ends``: ``array("Q")``, each line's end offset in ``lines`` (after its newline);
/// - ``seqs``: ``array("Q")``, each line's seq;
/// - ``types``: ``bytes``, each line's type as its index in ``EVENT_TYPE_ORDER`` or
///   ``CONTROL_TYPE_ORDER`` (by the receiver's direction);
/// - ``rejections``: ``(n, rejection)`` pairs, ``n`` being the number of accepted lines before it.
///
/// ``len()`` is the number of accepted lines; :meth:`line` gives one of them.
#[pyclass(module = "fenwire_fast._native", frozen)]
pub(super) struct ScanBatch {
    #[pyo3(get)]
    lines: Py<PyBytes>,
    #[pyo3(get)]
    ends: Py<PyAny>,
    #[pyo3(get)]
    seqs: Py<PyAny>,
    #[pyo3(get)]
    types: Py<PyBytes>,
    #[pyo3(get)]
    rejections: Py<PyList>,
    /// A copy of `ends`, for `line` (the array can be changed from Python).
    offsets: Vec<u64>,
}

impl ScanBatch {
    /// The batch for `columns` (filled from `scan`, made from `data`).
    pub(super) fn new<'py>(
        py: Python<'py>,
        columns: &Columns,
        scan: &Scan,
        data: &Bound<'py, PyBytes>,
    ) -> PyResult<Bound<'py, ScanBatch>> {
        let lines = if columns.whole {
            data.clone()
        } else {
            PyBytes::new(py, &columns.lines)
        };
        let rejections = PyList::empty(py);
        for &(before, i) in &columns.rejected {
            if let Some(Outcome::Rejected(r)) = scan.outcomes.get(i) {
                let pair = PyTuple::new(
                    py,
                    [
                        before.into_pyobject(py)?.into_any(),
                        rejection_to_py(py, r)?,
                    ],
                )?;
                rejections.append(pair)?;
            }
        }
        Bound::new(
            py,
            ScanBatch {
                lines: lines.unbind(),
                ends: array_q(py, &columns.ends)?.unbind(),
                seqs: array_q(py, &columns.seqs)?.unbind(),
                types: PyBytes::new(py, &columns.types).unbind(),
                rejections: rejections.unbind(),
                offsets: columns.ends.clone(),
            },
        )
    }
}

#[pymethods]
impl ScanBatch {
    fn __len__(&self) -> usize {
        self.offsets.len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ScanBatch({} lines, {} bytes, {} rejections)",
            self.offsets.len(),
            self.offsets.last().copied().unwrap_or(0),
            self.rejections.bind(py).len()
        )
    }

    /// The ``i``-th accepted line's bytes, without its newline (``i`` may be negative, as for a list).
    fn line<'py>(&self, py: Python<'py>, i: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        if !i.is_instance_of::<PyInt>() || i.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err("line index must be an int"));
        }
        let n = self.offsets.len() as i128;
        let at = i
            .extract::<i128>()
            .ok()
            .map(|i| if i < 0 { i + n } else { i })
            .filter(|i| (0..n).contains(i))
            .ok_or_else(|| PyIndexError::new_err("line index out of range"))?;
        let at = at as usize;
        let start = if at == 0 { 0 } else { self.offsets[at - 1] } as usize;
        let end = self.offsets[at] as usize - 1;
        let lines = self.lines.bind(py).as_bytes();
        Ok(PyBytes::new(py, lines.get(start..end).unwrap_or_default()))
    }
}
