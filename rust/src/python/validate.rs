//! `validate` of a Python dict: the shapes of its known fields are read off the dict into
//! [`Fields`] and judged by the same validator as decoded lines.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::rejection::{bare_rejection, dict_rejection, dict_str, ok_pair, rejected_pair};
use crate::json::Number;
use crate::schema::{
    unknown_type_reason, validate_fields, Code, Direction, Fields, KeyId, Shape, Verdict,
    R_DIRECTION, R_NOT_DICT,
};

// ---------------------------------------------------------------------------------------------
// Shapes of Python values (for validate / encode of dicts)

pub(super) fn shape_of(
    value: &Bound<'_, PyAny>,
    id: Option<KeyId>,
    top: bool,
    fields: &mut Fields,
) -> Shape {
    if value.is_none() {
        return Shape::Null;
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Shape::Bool(b.is_true());
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(i) = value.extract::<i64>() {
            return Shape::Num(Number::Int(i));
        }
        if let Ok(u) = value.extract::<u64>() {
            return Shape::Num(Number::UInt(u));
        }
        let negative = value.lt(0).unwrap_or(false);
        let text = if id == Some(KeyId::V) {
            value
                .str()
                .ok()
                .map(|s| fields.push_text(&s.to_string_lossy()))
        } else {
            None
        };
        return Shape::BigInt { negative, text };
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Shape::Num(Number::Float(f.value()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        let keep = top && id.is_some_and(KeyId::keeps_text);
        return Shape::Str(if keep {
            s.to_str().ok().map(|t| fields.push_text(t))
        } else {
            None
        });
    }
    if let Ok(list) = value.cast::<PyList>() {
        if top && id == Some(KeyId::Refs) {
            fields.ref_items.clear();
            for item in list.iter() {
                let shape = shape_of(&item, id, false, fields);
                fields.ref_items.push(shape);
            }
        }
        return Shape::Array {
            empty: list.is_empty(),
        };
    }
    if let Ok(d) = value.cast::<PyDict>() {
        return Shape::Object {
            empty: d.is_empty(),
        };
    }
    Shape::Other
}

pub(super) fn fields_of_dict(dict: &Bound<'_, PyDict>, fields: &mut Fields) {
    fields.clear();
    for (k, v) in dict.iter() {
        let Ok(ks) = k.cast::<PyString>() else {
            continue;
        };
        let Ok(name) = ks.to_str() else { continue };
        if let Some(id) = KeyId::from_name(name) {
            let shape = shape_of(&v, Some(id), true, fields);
            fields.set(id, shape);
        }
    }
}

/// The direction of a `Sender` or `Receiver` being built: a `ValueError` where the mistake is
/// made (one built with a typo would otherwise reject every line).
pub(super) fn checked_direction(direction: &Bound<'_, PyAny>) -> PyResult<Direction> {
    match parse_direction(direction) {
        Some(d) => Ok(d),
        None => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "direction must be \"event\" or \"control\", not {}",
            direction.repr()?
        ))),
    }
}

pub(super) fn parse_direction(direction: &Bound<'_, PyAny>) -> Option<Direction> {
    direction
        .cast::<PyString>()
        .ok()?
        .to_str()
        .ok()
        .and_then(Direction::from_name)
}

/// `validate` for a dict: `Ok(())` or the Python rejection.
pub(super) fn validate_dict<'py>(
    py: Python<'py>,
    dict: &Bound<'py, PyDict>,
    direction: Direction,
    fields: &mut Fields,
) -> PyResult<Result<(), Bound<'py, PyAny>>> {
    fields_of_dict(dict, fields);
    check_fields(py, dict, direction, fields)
}

/// The validation verdict on `fields` (read off `dict`), as the Python rejection.
pub(super) fn check_fields<'py>(
    py: Python<'py>,
    dict: &Bound<'py, PyDict>,
    direction: Direction,
    fields: &Fields,
) -> PyResult<Result<(), Bound<'py, PyAny>>> {
    let Err(Verdict {
        code,
        reason,
        errors,
    }) = validate_fields(fields, direction)
    else {
        return Ok(Ok(()));
    };
    let reason = if code == Code::UnknownType && fields.type_text().is_none() {
        // A type string the core could not read (a lone surrogate): word it from the object.
        let t = dict_str(dict, "type").map(|t| t.str()).transpose()?;
        let prefix = PyString::new(py, &unknown_type_reason(direction, ""));
        match t {
            Some(t) => prefix.add(t)?.cast_into::<PyString>()?,
            None => prefix,
        }
    } else {
        PyString::new(py, &reason)
    };
    Ok(Err(dict_rejection(
        py,
        dict,
        fields,
        code,
        reason,
        errors.as_ref(),
    )?))
}

/// Check a message (a dict) against the envelope and its type's schema.
///
/// Returns ``(msg, None)`` (the same object) or ``(None, rejection)``; never raises.
#[pyfunction]
pub(super) fn validate<'py>(
    py: Python<'py>,
    msg: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let Some(direction) = parse_direction(direction) else {
        return rejected_pair(py, bare_rejection(py, Code::Invalid, R_DIRECTION)?);
    };
    let Ok(dict) = msg.cast::<PyDict>() else {
        return rejected_pair(py, bare_rejection(py, Code::Invalid, R_NOT_DICT)?);
    };
    let mut fields = Fields::new();
    match validate_dict(py, dict, direction, &mut fields)? {
        Ok(()) => ok_pair(py, msg.clone()),
        Err(r) => rejected_pair(py, r),
    }
}
