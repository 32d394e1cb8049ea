//! [`Interned`]: the Python objects made once per interpreter and reused by every call: the
//! interned protocol key names, type names and rejection codes, and the `Rejection` class.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use crate::schema::{self, Code, KeyId};

/// Python objects made once per interpreter and reused.
pub(super) struct Interned {
    pub(super) keys: Vec<Py<PyString>>,
    event_types: Vec<Py<PyString>>,
    control_types: Vec<Py<PyString>>,
    codes: Vec<Py<PyString>>,
    /// The ints `0..SMALL_INTS` (CPython's own cached small ints, so the very same objects
    /// `PyLong_FromLong` returns): `v`, `content-index`, `turn` and the like without a call.
    pub(super) small_ints: Vec<Py<PyAny>>,
    pub(super) rejection: Py<PyAny>,
}

/// How many small ints [`Interned::small_ints`] holds (CPython caches -5 to 256).
pub(super) const SMALL_INTS: i64 = 256;

pub(super) static INTERNED: PyOnceLock<Interned> = PyOnceLock::new();

pub(super) fn interned(py: Python<'_>) -> PyResult<&Interned> {
    INTERNED.get_or_try_init(py, || {
        let intern = |s: &str| PyString::intern(py, s).unbind();
        Ok(Interned {
            keys: KeyId::ALL.iter().map(|k| intern(k.name())).collect(),
            event_types: schema::EVENT_TYPES.iter().map(|t| intern(t)).collect(),
            control_types: schema::CONTROL_TYPES.iter().map(|t| intern(t)).collect(),
            codes: Code::ALL.iter().map(|c| intern(c.as_str())).collect(),
            small_ints: (0..SMALL_INTS)
                .map(|i| Ok(i.into_pyobject(py)?.into_any().unbind()))
                .collect::<PyResult<_>>()?,
            rejection: py
                .import("fenwire_fast._types")?
                .getattr("Rejection")?
                .unbind(),
        })
    })
}

impl Interned {
    pub(super) fn code<'py>(&self, py: Python<'py>, code: Code) -> Bound<'py, PyString> {
        let i = Code::ALL.iter().position(|&c| c == code).unwrap_or(0);
        self.codes[i].bind(py).clone()
    }

    /// The cached string for a message type name, if it is one, with the name as the schema
    /// tables spell it.
    #[inline]
    pub(super) fn type_name<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> Option<(&'static str, Bound<'py, PyString>)> {
        let i = schema::type_index(name)?;
        let n = schema::EVENT_TYPES.len();
        Some(if i < n {
            (schema::EVENT_TYPES[i], self.event_types[i].bind(py).clone())
        } else {
            (
                schema::CONTROL_TYPES[i - n],
                self.control_types[i - n].bind(py).clone(),
            )
        })
    }
}
