//! The `Sender` class: numbers outgoing messages and encodes them.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::encode::{encode_impl, message};
use super::rejection::{make_rejection, ok_pair, rejected_pair};
use super::validate::checked_direction;
use crate::schema::{Code, R_PAYLOAD_NOT_DICT};

// ---------------------------------------------------------------------------------------------
// Sender

/// Stamps outgoing messages with strictly increasing ``seq`` values, starting at 1.
#[pyclass(module = "fenwire_fast._native")]
pub(super) struct Sender {
    /// The direction the messages are encoded in: ``"event"`` (a child's events) or ``"control"`` (a parent's controls).
    #[pyo3(get, set)]
    direction: Py<PyAny>,
    /// The ``run`` every message is stamped with (a ``str``).
    #[pyo3(get, set)]
    run: Py<PyAny>,
    /// The last ``seq`` stamped (an ``int``, 0 before any): :meth:`next` stamps ``seq + 1`` and
    /// stores it only when a line was produced. May be set by hand.
    #[pyo3(get, set)]
    seq: u64,
}

#[pymethods]
impl Sender {
    #[new]
    fn new(direction: &Bound<'_, PyAny>, run: Py<PyAny>) -> PyResult<Self> {
        checked_direction(direction)?;
        Ok(Sender {
            direction: direction.clone().unbind(),
            run,
            seq: 0,
        })
    }

    /// Build, validate and encode the next message; ``seq`` advances only when a line was
    /// produced. Returns ``(line_bytes, None)`` or ``(None, rejection)``.
    #[pyo3(signature = (r#type, payload = None))]
    fn next<'py>(
        &mut self,
        py: Python<'py>,
        r#type: &Bound<'py, PyAny>,
        payload: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let seq = self.seq.saturating_add(1);
        let run = self.run.bind(py);
        let payload = payload.filter(|p| !p.is_none());
        if let Some(p) = payload {
            if !p.is_instance_of::<PyDict>() {
                let str_or_none =
                    |v: &Bound<'py, PyAny>| v.is_instance_of::<PyString>().then(|| v.clone());
                let rej = make_rejection(
                    py,
                    Code::Invalid,
                    PyString::new(py, R_PAYLOAD_NOT_DICT),
                    Some(seq),
                    str_or_none(r#type),
                    str_or_none(run),
                    None,
                )?;
                return rejected_pair(py, rej);
            }
        }
        let seq_obj = seq.into_pyobject(py)?.into_any();
        let msg = message(py, r#type, run, &seq_obj, payload)?;
        match encode_impl(py, msg.as_any(), self.direction.bind(py))? {
            Ok(line) => {
                self.seq = seq;
                ok_pair(py, line.into_any())
            }
            Err(r) => rejected_pair(py, r),
        }
    }
}
