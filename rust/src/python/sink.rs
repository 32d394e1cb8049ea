//! [`PySink`]: builds the Python objects of a message straight from the parser (dicts, lists,
//! strs, ints, floats), reusing interned keys and repeated values.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyList, PyString};

use super::ffi::{ascii_string, utf8_string};
use super::interned::{Interned, SMALL_INTS};
use super::repeated::RepeatedValues;
use super::template::Members;
use crate::json::{Number, Sink};
use crate::message::MessageSink;
use crate::schema::{short_eq, KeyId};

/// Builds Python objects for the JSON parser.
pub(super) struct PySink<'a, 'py> {
    pub(super) py: Python<'py>,
    pub(super) interned: &'a Interned,
    pub(super) repeated: &'a mut RepeatedValues,
    /// Spare member buffers for objects being built (reused: no allocation per object).
    pub(super) pool: &'a mut Vec<Members<'py>>,
}

/// The sink's error: a boxed `PyErr`, so every `Result` the parser passes around is two words
/// and comes back in registers (a bare `PyErr` made each value-returning call go through memory).
pub(super) type SinkError = Box<PyErr>;

impl<'py> Sink for PySink<'_, 'py> {
    type Value = Bound<'py, PyAny>;
    type Key = Bound<'py, PyString>;
    type Array = Vec<Bound<'py, PyAny>>;
    type Object = Members<'py>;
    type Error = SinkError;

    #[inline]
    fn null(&mut self) -> Result<Self::Value, SinkError> {
        Ok(self.py.None().into_bound(self.py))
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<Self::Value, SinkError> {
        Ok(PyBool::new(self.py, value).to_owned().into_any())
    }

    #[inline]
    fn number(&mut self, value: Number) -> Result<Self::Value, SinkError> {
        Ok(match value {
            // The int a small value always is, without a call into `PyLong_FromLong`.
            Number::Int(i) if (0..SMALL_INTS).contains(&i) => {
                self.interned.small_ints[i as usize].bind(self.py).clone()
            }
            Number::Int(i) => i
                .into_pyobject(self.py)
                .map_err(|e| -> SinkError { match e {} })?
                .into_any(),
            Number::UInt(u) => u
                .into_pyobject(self.py)
                .map_err(|e| -> SinkError { match e {} })?
                .into_any(),
            Number::Float(f) => PyFloat::new(self.py, f).into_any(),
        })
    }

    #[inline]
    fn string(&mut self, value: &str, ascii: bool) -> Result<Self::Value, SinkError> {
        if ascii {
            return Ok(ascii_string(self.py, value)?);
        }
        Ok(utf8_string(self.py, value, &mut self.repeated.strs)?)
    }

    /// A key of a nested object: a protocol field name gets its interned string, any other
    /// key the per-receiver key cache.
    #[inline(always)]
    fn key(&mut self, value: &str, _ascii: bool) -> Result<Self::Key, SinkError> {
        Ok(match KeyId::from_name(value) {
            Some(id) => self.interned.keys[id as usize].bind(self.py).clone(),
            None => self.repeated.other_key(self.py, value),
        })
    }

    #[inline]
    fn array_begin(&mut self) -> Result<Self::Array, SinkError> {
        Ok(Vec::new())
    }

    #[inline]
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value) -> Result<(), SinkError> {
        array.push(value);
        Ok(())
    }

    #[inline]
    fn array_end(&mut self, array: Self::Array) -> Result<Self::Value, SinkError> {
        Ok(PyList::new(self.py, array)?.into_any())
    }

    #[inline]
    fn object_begin(&mut self) -> Result<Self::Object, SinkError> {
        Ok(self.pool.pop().unwrap_or_default())
    }

    #[inline]
    fn object_insert(
        &mut self,
        object: &mut Self::Object,
        key: Self::Key,
        value: Self::Value,
    ) -> Result<(), SinkError> {
        object.push((key, value));
        Ok(())
    }

    #[inline]
    fn object_end(&mut self, mut object: Self::Object) -> Result<Self::Value, SinkError> {
        let result = self.repeated.templates.build(self.py, &mut object);
        object.clear();
        self.pool.push(object);
        Ok(result?.into_any())
    }
}

impl<'py> MessageSink for PySink<'_, 'py> {
    #[inline(always)]
    fn field_string(
        &mut self,
        key: KeyId,
        value: &str,
        ascii: bool,
    ) -> Result<Self::Value, SinkError> {
        match key {
            KeyId::Type => {
                // Consecutive lines mostly share a type: try the last one first.
                if let Some((text, obj)) = &self.repeated.last_type {
                    if short_eq(text.as_bytes(), value.as_bytes()) {
                        return Ok(obj.bind(self.py).clone().into_any());
                    }
                }
                if let Some((name, s)) = self.interned.type_name(self.py, value) {
                    // The table's own name: no allocation when the type changes.
                    self.repeated.last_type = Some((name, s.clone().unbind()));
                    return Ok(s.into_any());
                }
            }
            KeyId::Delta | KeyId::Text | KeyId::Summary | KeyId::Error => {
                // A display event's `summary` is its text's first line cut to 160 bytes: for a
                // short one-line delta it is the same text, and gets the same str object.
                if let (text, Some(o)) = &self.repeated.prev_text {
                    if text.as_str() == value {
                        return Ok(o.bind(self.py).clone().into_any());
                    }
                }
                let made = self.string(value, ascii)?;
                if value.len() <= 4096 {
                    let (text, obj) = &mut self.repeated.prev_text;
                    text.clear();
                    text.push_str(value);
                    let new = made
                        .clone()
                        .cast_into::<PyString>()
                        .map_err(PyErr::from)?
                        .unbind();
                    // Released as a `Bound` (a plain decref): dropping a `Py` first asks
                    // whether this thread holds the GIL.
                    if let Some(old) = obj.replace(new) {
                        drop(old.into_bound(self.py));
                    }
                }
                return Ok(made);
            }
            _ => {
                if let Some(made) = self.repeated.get(self.py, key, value, ascii) {
                    return Ok(made?);
                }
            }
        }
        self.string(value, ascii)
    }

    #[inline(always)]
    fn field_key(
        &mut self,
        value: &str,
        _ascii: bool,
        known: Option<KeyId>,
    ) -> Result<Self::Key, SinkError> {
        Ok(match known {
            Some(id) => self.interned.keys[id as usize].bind(self.py).clone(),
            None => self.repeated.other_key(self.py, value),
        })
    }

    type Top = Members<'py>;

    #[inline]
    fn top_begin(&mut self, _hint: usize) -> Result<Self::Top, SinkError> {
        self.object_begin()
    }

    #[inline]
    fn top_insert(
        &mut self,
        object: &mut Self::Top,
        key: Self::Key,
        value: Self::Value,
    ) -> Result<(), SinkError> {
        object.push((key, value));
        Ok(())
    }

    #[inline]
    fn top_end(&mut self, object: Self::Top) -> Result<Self::Value, SinkError> {
        self.object_end(object)
    }
}
