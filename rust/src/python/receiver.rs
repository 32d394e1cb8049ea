//! The `Receiver` class: frames incoming bytes, decodes each line and applies the sequence
//! rules; `feed` is the hot drain loop, with no Python-level loop per line, and `scan` the same
//! drain without dicts, its checking done with the GIL released.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::batch::{Columns, ScanBatch};
use super::decode::{decode_bytes, line_bytes, LineBytes};
use super::framer::feed_bytes;
use super::interned::{interned, Interned};
use super::plain::RunCheck;
use super::rejection::{ok_pair, rejected_pair, rejection_to_py};
use super::repeated::RepeatedValues;
use super::scanned::{rejections_list, scanned_list};
use super::template::Members;
use super::validate::{checked_direction, parse_direction};
use crate::codec::SeqState;
use crate::drain::{scan_into, ReceiverState, Scan};
use crate::framer::Framer as CoreFramer;
use crate::schema::{Direction, Fields, EVENT_TYPES, MAX_LINE_BYTES};

/// Decodes incoming lines and enforces strictly increasing ``seq`` (a line that does not increase it is ``out-of-order``).
#[pyclass(module = "fenwire_fast._native")]
pub(super) struct Receiver {
    direction_obj: Py<PyAny>,
    direction: Option<Direction>,
    state: SeqState,
    framer: CoreFramer,
    fields: Fields,
    repeated: RepeatedValues,
    /// `scan`'s outcomes, reused from call to call.
    scan: Scan,
    /// `scan_batch`'s columns, reused from call to call.
    columns: Columns,
    /// The run whose messages a plain batch holds (`None`: no batch is plain), as given and as
    /// checked.
    run_obj: Option<Py<PyAny>>,
    run: RunCheck,
    /// The last `feed` brought only plain messages (see `plain`).
    plain: bool,
}

/// Chunks at least this long are checked with the GIL released; shorter ones take less time
/// than handing the GIL over and back.
const DETACH_MIN_BYTES: usize = 4096;

impl Receiver {
    /// Receive one line's bytes: the message, or the rejection after the seq rules.
    /// Decode one line and check its ``seq``. Returns ``(msg, None)`` or ``(None, rejection)``.
    ///
    /// A fatal rejection is returned untouched and consumes nothing; a usable ``seq`` that does not
    /// increase gives ``out-of-order`` (with no ``seq``); otherwise a usable ``seq`` is consumed,
    /// even when the line is rejected.
    fn receive_bytes<'py>(
        &mut self,
        py: Python<'py>,
        c: &Interned,
        line: &[u8],
        pool: &mut Vec<Members<'py>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match decode_bytes(
            py,
            c,
            &mut self.repeated,
            line,
            self.direction,
            &mut self.fields,
            pool,
        )? {
            Ok(msg) => match self.state.accept(&self.fields) {
                Ok(()) => {
                    self.plain = self.plain && self.run.admits(&self.fields);
                    Ok(msg)
                }
                Err(r) => {
                    self.plain = false;
                    rejection_to_py(py, &r)
                }
            },
            Err(r) => {
                self.plain = false;
                let r = self.state.reject(r);
                rejection_to_py(py, &r)
            }
        }
    }
}

#[pymethods]
impl Receiver {
    #[new]
    #[pyo3(signature = (direction, *, run = None))]
    fn new(direction: &Bound<'_, PyAny>, run: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut receiver = Receiver {
            direction_obj: direction.clone().unbind(),
            direction: Some(checked_direction(direction)?),
            state: SeqState::default(),
            framer: CoreFramer::new(MAX_LINE_BYTES),
            fields: Fields::new(),
            repeated: RepeatedValues::default(),
            scan: Scan::default(),
            columns: Columns::default(),
            run_obj: None,
            run: RunCheck::Unset,
            plain: false,
        };
        receiver.set_run(run)?;
        Ok(receiver)
    }

    /// The run a plain batch belongs to (``None``: no batch is plain); see :attr:`plain`.
    #[getter]
    fn run(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.run_obj.as_ref().map(|r| r.clone_ref(py))
    }

    #[setter]
    fn set_run(&mut self, run: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let run = run.filter(|r| !r.is_none());
        self.run = RunCheck::new(run)?;
        self.run_obj = run.map(|r| r.clone().unbind());
        Ok(())
    }

    /// The last :meth:`feed` returned only messages (no rejection) of :attr:`run`, none of a
    /// type that changes a run's mirrored state (``ready``, ``control-ack``, ``turn-started``,
    /// ``turn-complete``, ``result``, ``exit``); true for an empty result. Always false while
    /// :attr:`run` is ``None`` (so a receiver that does not ask pays nothing for it), before the
    /// first :meth:`feed`, and after :meth:`receive`, :meth:`scan` or :meth:`scan_rejections`.
    #[getter]
    fn plain(&self) -> bool {
        self.plain
    }

    /// The direction the lines are decoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls).
    #[getter]
    fn direction(&self, py: Python<'_>) -> Py<PyAny> {
        self.direction_obj.clone_ref(py)
    }

    #[setter]
    fn set_direction(&mut self, direction: &Bound<'_, PyAny>) {
        self.direction = parse_direction(direction);
        self.direction_obj = direction.clone().unbind();
    }

    /// The last ``seq`` consumed (0 before any); a line must carry a greater one, else it is ``out-of-order``.
    #[getter]
    fn seq(&self) -> u64 {
        self.state.seq
    }

    #[setter]
    fn set_seq(&mut self, seq: u64) {
        self.state.seq = seq;
    }

    /// Bytes of an unterminated line held by :meth:`feed` for the next call.
    #[getter]
    fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    /// Decode one line and check its ``seq``. Returns ``(msg, None)`` or ``(None, rejection)``.
    ///
    /// A fatal rejection is returned untouched and consumes nothing; a usable ``seq`` that does not
    /// increase gives ``out-of-order`` (with no ``seq``); otherwise a usable ``seq`` is consumed,
    /// even when the line is rejected.
    fn receive<'py>(
        &mut self,
        py: Python<'py>,
        line: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.plain = false;
        let bytes = match line_bytes(py, line)? {
            LineBytes::Bytes(b) => b,
            LineBytes::Rejected(r) => return rejected_pair(py, r),
        };
        let c = interned(py)?;
        match decode_bytes(
            py,
            c,
            &mut self.repeated,
            bytes,
            self.direction,
            &mut self.fields,
            &mut Vec::new(),
        )? {
            Ok(msg) => match self.state.accept(&self.fields) {
                Ok(()) => ok_pair(py, msg),
                Err(r) => rejected_pair(py, rejection_to_py(py, &r)?),
            },
            Err(r) => {
                let r = self.state.reject(r);
                rejected_pair(py, rejection_to_py(py, &r)?)
            }
        }
    }

    /// Frame ``data``, receive every complete non-empty line, and return the messages and
    /// rejections in order. An unterminated tail waits for the next call.
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let data = feed_bytes(py, data)?;
        let c = interned(py)?;
        self.plain = !matches!(self.run, RunCheck::Unset);
        let mut out: Vec<Bound<'py, PyAny>> = Vec::new();
        let mut pool = Vec::new();
        let mut framer = std::mem::replace(&mut self.framer, CoreFramer::new(1));
        let result = framer.feed(data.as_bytes(), |line| {
            if !line.is_empty() {
                out.push(self.receive_bytes(py, c, line, &mut pool)?);
            }
            Ok::<(), PyErr>(())
        });
        self.framer = framer;
        result?;
        PyList::new(py, out)
    }

    /// :meth:`feed` without dicts: the same framing, checks, seq rules and rejections, but each
    /// accepted line comes back as ``Scanned(type, seq, line)``, ``line`` being its exact bytes
    /// (no newline). Shares the framer buffer and ``seq`` with :meth:`feed`.
    ///
    /// On the Rust backend the framing and checking run with the GIL released (chunks of 4096
    /// bytes or more), so threads draining their own receivers use several cores; a
    /// ``bytearray`` or ``memoryview`` is copied first. A receiver is for one thread at a time.
    fn scan<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let data = feed_bytes(py, data)?;
        let input = data.as_bytes();
        let scan = self.scan_chunk(py, input);
        let result = scanned_list(py, &scan, input);
        self.scan = scan;
        self.scan.release();
        result
    }

    /// :meth:`scan` for a checker that only wants the rejections: the same framing, checks and
    /// seq rules, but returns only ``(index, rejection)`` pairs, ``index`` being the rejection's
    /// place in the list :meth:`scan` would have returned (0 for the first complete non-empty
    /// line of ``data``).
    fn scan_rejections<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let data = feed_bytes(py, data)?;
        let scan = self.scan_chunk(py, data.as_bytes());
        let result = rejections_list(py, &scan);
        self.scan = scan;
        self.scan.release();
        result
    }

    /// :meth:`scan` without a Python object per line: the same framing, checks, seq rules and
    /// rejections (sharing the framer buffer and ``seq``), returned as one :class:`ScanBatch` of
    /// columns. Each rejection comes with the number of accepted lines before it, so the order of
    /// :meth:`scan`'s list can be rebuilt.
    ///
    /// On the Rust backend the columns are built with the GIL released too (chunks of 4096 bytes
    /// or more), and when every line of ``data`` is accepted and it ends at a line boundary with
    /// nothing buffered before, ``lines`` is ``data`` itself.
    fn scan_batch<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, ScanBatch>> {
        let data = feed_bytes(py, data)?;
        let input = data.as_bytes();
        let mut columns = std::mem::take(&mut self.columns);
        let base = match self.direction {
            Some(Direction::Control) => EVENT_TYPES.len(),
            _ => 0,
        };
        let mut run = self.run.matcher(self.direction);
        let scan = self.scan_chunk_then(py, input, |scan| {
            columns.fill(scan, input, base, run.as_mut())
        });
        let result = ScanBatch::new(py, &columns, &scan, &data);
        self.scan = scan;
        self.scan.release();
        self.columns = columns;
        self.columns.release();
        result
    }

    /// Diagnostic counts of this receiver's fast paths (totals since it was made), as a dict of
    /// ints with these keys, always in this order:
    ///
    /// - ``dict_template_hits``: dicts (messages and nested objects) copied from a template of
    ///   their key order;
    /// - ``dict_template_misses``: dicts of 2 to 24 keys built key by key because their key order
    ///   has no template yet (its first or second sighting) or can have none (a repeated key);
    /// - ``dict_template_fallbacks``: dicts of 2 to 24 keys built key by key because a template
    ///   copy was not laid out as expected, which turns templates off for the receiver (so any
    ///   later dict counts here too); on CPython other than 3.11 (no template copies) every dict
    ///   from the third sighting of a key order on counts here;
    /// - ``dict_unfit``: dicts of fewer than 2 or more than 24 keys (never templated);
    /// - ``str_one_pass_hits``: non-ASCII strs written in one pass from the line's UTF-8;
    /// - ``str_one_pass_fallbacks``: non-ASCII strs that one pass refused, decoded by CPython;
    /// - ``scan_quick_accepted``: lines :meth:`scan` or :meth:`scan_rejections` accepted by the
    ///   one-pass check alone;
    /// - ``scan_quick_deferred``: lines they handed to the exact check (the one-pass check was not
    ///   sure, or the seq did not increase): unusual lines and every rejection.
    ///
    /// Only the Rust backend has these paths; the pure backend returns the same keys, all 0.
    /// The fallbacks are 0 unless something is wrong: the output stays right either way, slower.
    fn fast_path_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dicts = &self.repeated.templates.counts;
        let strs = &self.repeated.strs;
        let quick = &self.scan.counts;
        let dict = PyDict::new(py);
        for (key, count) in [
            ("dict_template_hits", dicts.hits),
            ("dict_template_misses", dicts.misses),
            ("dict_template_fallbacks", dicts.fallbacks),
            ("dict_unfit", dicts.unfit),
            ("str_one_pass_hits", strs.hits),
            ("str_one_pass_fallbacks", strs.fallbacks),
            ("scan_quick_accepted", quick.accepted),
            ("scan_quick_deferred", quick.deferred),
        ] {
            dict.set_item(key, count)?;
        }
        Ok(dict)
    }
}

impl Receiver {
    /// Frame and check `input` (with the GIL released for a large chunk): the outcomes, in the
    /// receiver's reused [`Scan`], which the caller puts back in `self.scan`.
    fn scan_chunk(&mut self, py: Python<'_>, input: &[u8]) -> Scan {
        self.scan_chunk_then(py, input, |_| ())
    }

    /// [`Self::scan_chunk`], then `then` on its outcomes, both with the GIL released for a large
    /// chunk.
    fn scan_chunk_then(
        &mut self,
        py: Python<'_>,
        input: &[u8],
        then: impl FnOnce(&Scan) + Send,
    ) -> Scan {
        // A bytes object is immutable and held by the caller for the whole call: its buffer can
        // be read without the GIL. A bytearray or memoryview (which another thread could change
        // meanwhile) is copied into a new bytes first (`feed_bytes`), as `feed` does.
        self.plain = false;
        let mut scan = std::mem::take(&mut self.scan);
        scan.clear();
        let state = ReceiverState {
            framer: &mut self.framer,
            seq: &mut self.state,
            fields: &mut self.fields,
            direction: self.direction,
        };
        if input.len() >= DETACH_MIN_BYTES {
            py.detach(|| {
                scan_into(state, input, &mut scan);
                then(&scan);
            });
        } else {
            scan_into(state, input, &mut scan);
            then(&scan);
        }
        scan
    }
}
