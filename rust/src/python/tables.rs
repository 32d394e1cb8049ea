//! `_native._tables()`: the Rust copies of the protocol's tables (types, schemas, enums, codes,
//! reason texts, limits) as plain Python data, so the test suite can check them equal to the
//! Python ones (`_schema.py`, `_types.py`, `_pure.py`). Private; not on the hot path.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::encode::MAX_ENCODE_DEPTH;
use crate::schema::{
    schema_for, Code, Direction, KeyId, ACK_STATUSES, CONTROL_TYPES, EVENT_TYPES, EXIT_STATUSES,
    MAX_LINE_BYTES, MAX_SAFE_INTEGER, R_DIRECTION, R_NOT_DICT, R_NOT_JSON, R_NOT_LINE,
    R_NOT_OBJECT, R_NOT_UTF8, R_PAYLOAD_NOT_DICT, R_TOO_LARGE, R_V_REQUIRED, VERSION,
};

/// `{type name: (required, ((field, kind), ...))}` for the types of `direction`.
fn schemas<'py>(
    py: Python<'py>,
    direction: Direction,
    names: &[&str],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for &name in names {
        let Some(schema) = schema_for(direction, name) else {
            continue;
        };
        let required = PyTuple::new(py, schema.required())?;
        let fields = PyTuple::new(py, schema.fields().map(|(f, k)| (f, k.name())))?;
        out.set_item(name, (required, fields))?;
    }
    Ok(out)
}

#[pyfunction]
pub(super) fn _tables(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let t = PyDict::new(py);
    t.set_item("event_types", PyTuple::new(py, EVENT_TYPES)?)?;
    t.set_item("control_types", PyTuple::new(py, CONTROL_TYPES)?)?;
    t.set_item(
        "event_schemas",
        schemas(py, Direction::Event, &EVENT_TYPES)?,
    )?;
    t.set_item(
        "control_schemas",
        schemas(py, Direction::Control, &CONTROL_TYPES)?,
    )?;
    let enums = PyDict::new(py);
    enums.set_item("ack-status", PyTuple::new(py, ACK_STATUSES)?)?;
    enums.set_item("exit-status", PyTuple::new(py, EXIT_STATUSES)?)?;
    t.set_item("enums", enums)?;
    t.set_item(
        "codes",
        PyTuple::new(py, Code::ALL.iter().map(|c| c.as_str()))?,
    )?;
    t.set_item(
        "keys",
        PyTuple::new(py, KeyId::ALL.iter().map(|k| k.name()))?,
    )?;
    let reasons = PyDict::new(py);
    for (name, text) in [
        ("R_NOT_LINE", R_NOT_LINE),
        ("R_TOO_LARGE", R_TOO_LARGE),
        ("R_NOT_UTF8", R_NOT_UTF8),
        ("R_NOT_JSON", R_NOT_JSON),
        ("R_NOT_OBJECT", R_NOT_OBJECT),
        ("R_DIRECTION", R_DIRECTION),
        ("R_NOT_DICT", R_NOT_DICT),
        ("R_V_REQUIRED", R_V_REQUIRED),
        ("R_PAYLOAD_NOT_DICT", R_PAYLOAD_NOT_DICT),
    ] {
        reasons.set_item(name, text)?;
    }
    t.set_item("reasons", reasons)?;
    t.set_item("VERSION", VERSION)?;
    t.set_item("MAX_LINE_BYTES", MAX_LINE_BYTES)?;
    t.set_item("MAX_SAFE_INTEGER", MAX_SAFE_INTEGER)?;
    t.set_item("MAX_ENCODE_DEPTH", MAX_ENCODE_DEPTH)?;
    Ok(t)
}
