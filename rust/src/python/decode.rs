//! `decode`: a line (bytes or str) to a message dict or a rejection, through the core's
//! [`decode_with`] and [`PySink`].

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use super::interned::{interned, Interned};
use super::rejection::{bare_rejection, ok_pair, rejected_pair, rejection_to_py};
use super::repeated::RepeatedValues;
use super::sink::PySink;
use super::template::Members;
use super::validate::parse_direction;
use crate::codec::{decode_with, DecodeError};
use crate::schema::{
    self, Code, Direction, Fields, MAX_LINE_BYTES, R_NOT_LINE, R_NOT_UTF8, R_TOO_LARGE,
};

// ---------------------------------------------------------------------------------------------
// decode / validate

pub(super) enum LineBytes<'a, 'py> {
    Bytes(&'a [u8]),
    Rejected(Bound<'py, PyAny>),
}

/// The bytes of a `line` argument, or the rejection `_pure.decode` gives before parsing.
pub(super) fn line_bytes<'a, 'py>(
    py: Python<'py>,
    line: &'a Bound<'py, PyAny>,
) -> PyResult<LineBytes<'a, 'py>> {
    if let Ok(b) = line.cast::<PyBytes>() {
        return Ok(LineBytes::Bytes(b.as_bytes()));
    }
    if let Ok(s) = line.cast::<PyString>() {
        return Ok(match s.to_str() {
            Ok(text) => LineBytes::Bytes(text.as_bytes()),
            Err(_) => {
                // Lone surrogates: too large if it would be, else not UTF-8.
                let chars = s.len()?;
                let too_large = chars >= MAX_LINE_BYTES || {
                    let wide = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
                    wide.len()? >= MAX_LINE_BYTES
                };
                LineBytes::Rejected(if too_large {
                    bare_rejection(py, Code::TooLarge, R_TOO_LARGE)?
                } else {
                    bare_rejection(py, Code::Malformed, R_NOT_UTF8)?
                })
            }
        });
    }
    Ok(LineBytes::Rejected(bare_rejection(
        py,
        Code::Malformed,
        R_NOT_LINE,
    )?))
}

/// Decode bytes into a message (a dict) or a Python rejection, recording fields.
#[inline(always)]
pub(super) fn decode_bytes<'py>(
    py: Python<'py>,
    c: &Interned,
    repeated: &mut RepeatedValues,
    line: &[u8],
    direction: Option<Direction>,
    fields: &mut Fields,
    pool: &mut Vec<Members<'py>>,
) -> PyResult<Result<Bound<'py, PyAny>, schema::Rejection>> {
    let mut sink = PySink {
        py,
        interned: c,
        repeated,
        pool,
    };
    match decode_with(line, direction, &mut sink, fields) {
        Ok(v) => Ok(Ok(v)),
        Err(DecodeError::Rejected(r)) => Ok(Err(r)),
        Err(DecodeError::Sink(e)) => Err(*e),
    }
}

/// Decode and validate one line (``bytes`` or ``str``, without its newline).
///
/// Check order: not a line, too large, not UTF-8, not JSON, not an object, then ``validate``.
/// Returns ``(msg, None)`` or ``(None, rejection)``; never raises.
#[pyfunction]
pub(super) fn decode<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = match line_bytes(py, line)? {
        LineBytes::Bytes(b) => b,
        LineBytes::Rejected(r) => return rejected_pair(py, r),
    };
    let c = interned(py)?;
    let mut fields = Fields::new();
    let mut repeated = RepeatedValues::default();
    match decode_bytes(
        py,
        c,
        &mut repeated,
        bytes,
        parse_direction(direction),
        &mut fields,
        &mut Vec::new(),
    )? {
        Ok(msg) => ok_pair(py, msg),
        Err(r) => rejected_pair(py, rejection_to_py(py, &r)?),
    }
}
