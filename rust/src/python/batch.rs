//! `Receiver.scan_batch`'s result: a `ScanBatch` of columns (the accepted lines as one bytes,
//! their end offsets, seqs and type indices) built in Rust, with no Python object per line.

use pyo3::exceptions::{PyAttributeError, PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyInt, PyList, PyTuple};

use super::rejection::rejection_to_py;
use crate::drain::{LineAt, Outcome, Scan};
use crate::framer::release;
use crate::own_run::RunMatch;

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
    /// The accepted lines (by index) whose run is not the receiver's.
    foreign: Vec<u64>,
}

impl Columns {
    /// Empties every column, keeping its memory.
    fn clear(&mut self) {
        self.lines.clear();
        self.ends.clear();
        self.seqs.clear();
        self.types.clear();
        self.rejected.clear();
        self.foreign.clear();
    }

    /// Forgets the columns (copied into the batch already) and gives back the memory of those
    /// that grew past [`crate::framer::RETAIN_BYTES`].
    pub(super) fn release(&mut self) {
        self.clear();
        release(&mut self.lines);
        release(&mut self.ends);
        release(&mut self.seqs);
        release(&mut self.types);
        release(&mut self.rejected);
        release(&mut self.foreign);
    }

    /// Fill the columns from `scan` (made from `input`); `base` is subtracted from each type
    /// index (the length of `EVENT_TYPES` for a control receiver). With `run`, the lines not of
    /// that run are listed in `foreign`.
    pub(super) fn fill(
        &mut self,
        scan: &Scan,
        input: &[u8],
        base: usize,
        mut run: Option<&mut RunMatch>,
    ) {
        self.clear();
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
                    quick,
                } => {
                    if let Some(run) = run.as_deref_mut() {
                        if !run.is_own(scan.line(input, *line), *quick) {
                            self.foreign.push(self.seqs.len() as u64);
                        }
                    }
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
/// - ``rejections``: ``(n, rejection)`` pairs, ``n`` being the number of accepted lines before it;
/// - ``foreign``: the indices of the accepted lines whose ``run`` is not the receiver's
///   :attr:`Receiver.run` (always empty when that is ``None``).
///
/// ``len()`` is the number of accepted lines; :meth:`line` gives one of them, :meth:`slice` a
/// run of them as a batch of its own.
#[pyclass(module = "fenwire_fast._native", frozen)]
pub(super) struct ScanBatch {
    /// The accepted lines as one ``bytes``, each followed by ``b"\n"``.
    #[pyo3(get)]
    lines: Py<PyBytes>,
    /// Each accepted line's end offset in ``lines``, in bytes, after its newline, as an
    /// ``array("Q")``.
    #[pyo3(get)]
    ends: Py<PyAny>,
    /// Each accepted line's ``seq``, as an ``array("Q")``.
    #[pyo3(get)]
    seqs: Py<PyAny>,
    /// Each accepted line's type, one byte per line: its index in ``EVENT_TYPE_ORDER`` or
    /// ``CONTROL_TYPE_ORDER`` (by the receiver's direction), as ``bytes``.
    #[pyo3(get)]
    types: Py<PyBytes>,
    /// The rejected lines, as a ``list`` of ``(n, rejection)`` pairs, ``n`` being the number of
    /// accepted lines before the rejection.
    #[pyo3(get)]
    rejections: Py<PyList>,
    /// A copy of `ends`, for `line` (the array can be changed from Python).
    offsets: Vec<u64>,
    /// Copies of `seqs` and `rejections`, for `slice`.
    seq_values: Vec<u64>,
    rejected: Vec<(usize, Py<PyAny>)>,
    foreign_at: Vec<u64>,
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
        let mut rejected = Vec::with_capacity(columns.rejected.len());
        for &(before, i) in &columns.rejected {
            if let Some(Outcome::Rejected(r)) = scan.outcomes.get(i) {
                rejected.push((before, rejection_to_py(py, r)?.unbind()));
            }
        }
        let rejections = pairs(py, &rejected)?;
        Bound::new(
            py,
            ScanBatch {
                lines: lines.unbind(),
                ends: array_q(py, &columns.ends)?.unbind(),
                seqs: array_q(py, &columns.seqs)?.unbind(),
                types: PyBytes::new(py, &columns.types).unbind(),
                rejections: rejections.unbind(),
                offsets: columns.ends.clone(),
                seq_values: columns.seqs.clone(),
                rejected,
                foreign_at: columns.foreign.clone(),
            },
        )
    }
}

/// `[(n, rejection), ...]`.
fn pairs<'py>(py: Python<'py>, rejected: &[(usize, Py<PyAny>)]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (before, r) in rejected {
        let pair = PyTuple::new(
            py,
            [before.into_pyobject(py)?.into_any(), r.bind(py).clone()],
        )?;
        list.append(pair)?;
    }
    Ok(list)
}

/// A slice bound: an int (not a bool), else a `TypeError`; `None` when it is not within `0..=n`
/// (both bounds' types are checked before either's range, as the pure backend does).
fn bound(i: &Bound<'_, PyAny>, n: usize) -> PyResult<Option<usize>> {
    if !i.is_instance_of::<PyInt>() || i.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err("slice bounds must be ints"));
    }
    Ok(i.extract::<i128>()
        .ok()
        .filter(|i| (0..=n as i128).contains(i))
        .map(|i| i as usize))
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

    /// A batch is read-only: every attribute assignment is refused, worded alike on both backends.
    fn __setattr__(&self, name: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyAttributeError::new_err(format!(
            "ScanBatch objects are read-only (cannot set {})",
            name.repr()?
        )))
    }

    fn __delattr__(&self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyAttributeError::new_err(format!(
            "ScanBatch objects are read-only (cannot delete {})",
            name.repr()?
        )))
    }

    /// The indices of the accepted lines whose ``run`` is not the receiver's :attr:`Receiver.run`
    /// (always empty when that is ``None``), as a new ``list`` of ``int``.
    #[getter]
    fn foreign(&self) -> Vec<u64> {
        self.foreign_at.clone()
    }

    /// Lines ``start`` to ``stop`` (not included) as a batch of their own: their bytes, ends
    /// counted from the slice's start, seqs, types and foreign lines, and the rejections whose
    /// ``n`` is ``start`` to ``stop - 1`` (to ``stop`` for a slice that ends the batch), ``n``
    /// counted from the slice's start. ``0 <= start <= stop <= len(batch)``; unlike a Python
    /// slice's, negative bounds and ``None`` are refused: a bound that is not an ``int`` (or is a
    /// ``bool``) raises ``TypeError``, an ``int`` out of that range ``IndexError`` (the types of
    /// both bounds are checked first).
    fn slice<'py>(
        &self,
        py: Python<'py>,
        start: &Bound<'py, PyAny>,
        stop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, ScanBatch>> {
        let n = self.offsets.len();
        let (start, stop) = match (bound(start, n)?, bound(stop, n)?) {
            (Some(start), Some(stop)) if start <= stop => (start, stop),
            _ => return Err(PyIndexError::new_err("slice bounds out of range")),
        };
        let base = if start == 0 {
            0
        } else {
            self.offsets[start - 1]
        };
        let end = if stop == 0 { 0 } else { self.offsets[stop - 1] };
        let lines = if start == 0 && stop == n {
            self.lines.clone_ref(py).into_bound(py)
        } else {
            let all = self.lines.bind(py).as_bytes();
            PyBytes::new(py, all.get(base as usize..end as usize).unwrap_or_default())
        };
        let offsets: Vec<u64> = self.offsets[start..stop].iter().map(|e| e - base).collect();
        let rejected: Vec<(usize, Py<PyAny>)> = self
            .rejected
            .iter()
            .filter(|(before, _)| *before >= start && (*before < stop || *before == n && stop == n))
            .map(|(before, r)| (before - start, r.clone_ref(py)))
            .collect();
        let rejections = pairs(py, &rejected)?;
        let types = self.types.bind(py).as_bytes();
        let seq_values = self.seq_values[start..stop].to_vec();
        let foreign_at = self
            .foreign_at
            .iter()
            .filter(|&&i| (start as u64..stop as u64).contains(&i))
            .map(|i| i - start as u64)
            .collect();
        Bound::new(
            py,
            ScanBatch {
                lines: lines.unbind(),
                ends: array_q(py, &offsets)?.unbind(),
                seqs: array_q(py, &seq_values)?.unbind(),
                types: PyBytes::new(py, types.get(start..stop).unwrap_or_default()).unbind(),
                rejections: rejections.unbind(),
                offsets,
                seq_values,
                rejected,
                foreign_at,
            },
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
