//! The PyO3 layer: `fenwire_fast._native`, the same names and results as `fenwire_fast._pure`.
//!
//! Messages are built straight from the line's bytes by [`PySink`] (no intermediate tree), with
//! cached, interned key and type-name strings; validation runs in Rust on the field shapes the
//! parser recorded. Nothing here raises on bad input: every input the pure backend answers with
//! a rejection gets the same rejection.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};

use crate::codec::{decode_with, DecodeError, SeqState};
use crate::framer::Framer as CoreFramer;
use crate::json::{Number, Sink};
use crate::schema::{
    self, unknown_type_reason, validate_fields, Code, Direction, FieldErrors, Fields, KeyId, Shape,
    Verdict, MAX_LINE_BYTES, R_DIRECTION, R_NOT_DICT, R_NOT_LINE, R_NOT_UTF8, R_PAYLOAD_NOT_DICT,
    R_TOO_LARGE,
};
use crate::text;

/// Python objects made once per interpreter and reused.
struct Cache {
    keys: Vec<Py<PyString>>,
    event_types: Vec<Py<PyString>>,
    control_types: Vec<Py<PyString>>,
    codes: Vec<Py<PyString>>,
    rejection: Py<PyAny>,
}

static CACHE: PyOnceLock<Cache> = PyOnceLock::new();

fn cache(py: Python<'_>) -> PyResult<&Cache> {
    CACHE.get_or_try_init(py, || {
        let intern = |s: &str| PyString::intern(py, s).unbind();
        Ok(Cache {
            keys: KeyId::ALL.iter().map(|k| intern(k.name())).collect(),
            event_types: schema::EVENT_TYPES.iter().map(|t| intern(t)).collect(),
            control_types: schema::CONTROL_TYPES.iter().map(|t| intern(t)).collect(),
            codes: Code::ALL.iter().map(|c| intern(c.as_str())).collect(),
            rejection: py
                .import("fenwire_fast._types")?
                .getattr("Rejection")?
                .unbind(),
        })
    })
}

impl Cache {
    fn code<'py>(&self, py: Python<'py>, code: Code) -> Bound<'py, PyString> {
        let i = Code::ALL.iter().position(|&c| c == code).unwrap_or(0);
        self.codes[i].bind(py).clone()
    }

    /// The cached string for a message type name, if it is one.
    #[inline]
    fn type_name<'py>(&self, py: Python<'py>, name: &str) -> Option<Bound<'py, PyString>> {
        let i = schema::type_index(name)?;
        let n = schema::EVENT_TYPES.len();
        Some(if i < n {
            self.event_types[i].bind(py).clone()
        } else {
            self.control_types[i - n].bind(py).clone()
        })
    }
}

/// The last string value a receiver saw for each field whose values repeat from line to line
/// (`run`, `timestamp` at one-second precision, `provider`, ...): an equal value reuses the same
/// str object instead of building a new one.
#[derive(Default)]
struct RunCache {
    slots: [(String, Option<Py<PyString>>); REPEATING.len()],
    last_type: Option<(String, Py<PyString>)>,
    /// The last text-like field value (`delta`, `text`, `summary`, `error`).
    prev_text: (String, Option<Py<PyString>>),
    /// Keys that are not protocol fields (nested objects: `content`, `path`, ...), by a hash of
    /// their text: a direct-mapped cache, like orjson's key cache.
    other_keys: Vec<Option<(String, Py<PyString>)>>,
}

const OTHER_KEYS: usize = 256;

impl RunCache {
    #[inline]
    fn other_key<'py>(&mut self, py: Python<'py>, key: &str) -> Bound<'py, PyString> {
        if key.len() > 64 {
            return PyString::new(py, key);
        }
        // FNV-1a over the bytes.
        let mut h: u32 = 0x811c_9dc5;
        for &b in key.as_bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        if self.other_keys.is_empty() {
            self.other_keys.resize_with(OTHER_KEYS, || None);
        }
        let slot = &mut self.other_keys[h as usize % OTHER_KEYS];
        if let Some((text, obj)) = slot {
            if schema::short_eq(text.as_bytes(), key.as_bytes()) {
                return obj.bind(py).clone();
            }
        }
        let obj = PyString::intern(py, key);
        *slot = Some((key.to_owned(), obj.clone().unbind()));
        obj
    }
}

/// Fields whose string values tend to repeat on consecutive lines.
const REPEATING: [KeyId; 12] = [
    KeyId::Run,
    KeyId::Timestamp,
    KeyId::RunId,
    KeyId::Agent,
    KeyId::RequestedCwd,
    KeyId::Cwd,
    KeyId::PhysicalCwd,
    KeyId::Provider,
    KeyId::Model,
    KeyId::Name,
    KeyId::StopReason,
    KeyId::Source,
];

/// `REPEATING`'s index of each key, or `u8::MAX`.
const REPEATING_SLOT: [u8; KeyId::COUNT] = {
    let mut t = [u8::MAX; KeyId::COUNT];
    let mut i = 0;
    while i < REPEATING.len() {
        t[REPEATING[i] as usize] = i as u8;
        i += 1;
    }
    t
};

impl RunCache {
    #[inline]
    fn get<'py>(
        &mut self,
        py: Python<'py>,
        key: KeyId,
        value: &str,
        ascii: bool,
    ) -> Option<PyResult<Bound<'py, PyAny>>> {
        let i = REPEATING_SLOT[key as usize];
        if i == u8::MAX {
            return None;
        }
        let i = i as usize;
        let (text, object) = &mut self.slots[i];
        if let Some(obj) = object {
            if schema::short_eq(text.as_bytes(), value.as_bytes()) {
                return Some(Ok(obj.bind(py).clone().into_any()));
            }
        }
        let made = if ascii {
            ascii_string(py, value)
        } else {
            Ok(PyString::new(py, value).into_any())
        };
        if let Ok(obj) = &made {
            if let Ok(s) = obj.cast::<PyString>() {
                text.clear();
                text.push_str(value);
                *object = Some(s.clone().unbind());
            }
        }
        Some(made)
    }
}

/// A Python str from text the parser found to be pure ASCII, copied straight into a new compact
/// ASCII string object.
///
/// `PyString::new` would make CPython decode the UTF-8 again; this skips that re-validation,
/// which measured about 8 % of `Receiver.feed` time on the delta stream (`ascii_decode` +
/// `unicode_decode_utf8` in `perf`).
#[inline]
fn ascii_string<'py>(py: Python<'py>, value: &str) -> PyResult<Bound<'py, PyAny>> {
    debug_assert!(value.is_ascii());
    let len = value.len();
    // SAFETY: `PyUnicode_New(len, 127)` returns a new compact ASCII str (or NULL with an
    // exception set) whose 1-byte data buffer holds `len` characters plus a NUL that CPython has
    // already written; we copy exactly `len` bytes into it, all < 0x80 (the parser checked each
    // one, hence `ascii`), before anything else can see the object. `from_owned_ptr_or_err`
    // takes ownership of the new reference.
    unsafe {
        let obj = pyo3::ffi::PyUnicode_New(len as pyo3::ffi::Py_ssize_t, 127);
        if !obj.is_null() && len > 0 {
            std::ptr::copy_nonoverlapping(
                value.as_ptr(),
                pyo3::ffi::PyUnicode_1BYTE_DATA(obj),
                len,
            );
        }
        Bound::from_owned_ptr_or_err(py, obj)
    }
}

/// Builds Python objects for the JSON parser.
struct PySink<'a, 'py> {
    py: Python<'py>,
    cache: &'a Cache,
    run: &'a mut RunCache,
    /// Spare member buffers for objects being built (reused: no allocation per object).
    pool: &'a mut Vec<Members<'py>>,
}

type Members<'py> = Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>;

#[cfg(not(Py_3_13))]
extern "C" {
    /// `PyDict_New` sized for `minused` items, so filling it never resizes. Private but
    /// exported by CPython (and used by Cython) since 3.x; only a pre-sizing hint.
    fn _PyDict_NewPresized(minused: pyo3::ffi::Py_ssize_t) -> *mut pyo3::ffi::PyObject;
}

/// `dict[key] = value` straight through `PyDict_SetItem`.
///
/// PyO3's `set_item` goes through generic conversions and a non-inlined helper: about 1.5 % of
/// the instructions of `Receiver.feed` on the mixed stream (callgrind), for 8 calls a line.
#[inline(always)]
fn dict_set(
    dict: &Bound<'_, PyDict>,
    key: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: all three are live objects borrowed for the call; `PyDict_SetItem` does not steal
    // references and returns -1 with an exception set on failure.
    let rc = unsafe { pyo3::ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(dict.py()))
    }
}

/// A new dict (on 3.13+, where the pre-sizing constructor is internal, a plain one).
#[cfg(Py_3_13)]
#[inline]
fn presized_dict(py: Python<'_>, _n: usize) -> PyResult<Bound<'_, PyDict>> {
    Ok(PyDict::new(py))
}

/// A new dict with room for `n` items.
#[cfg(not(Py_3_13))]
#[inline]
fn presized_dict(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyDict>> {
    if n <= 5 {
        return Ok(PyDict::new(py));
    }
    // SAFETY: `_PyDict_NewPresized` returns a new reference to an empty dict, or NULL with an
    // exception set; `from_owned_ptr_or_err` takes ownership. Measured: dicts of the protocol's
    // size (6 to 12 keys) otherwise resize once while filling (`build_indices_unicode`,
    // `free_keys_object`: about 5 % of `Receiver.feed`).
    unsafe {
        let ptr = _PyDict_NewPresized(n as pyo3::ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyDict>())
    }
}

/// The sink's error: a boxed `PyErr`, so every `Result` the parser passes around is two words
/// and comes back in registers (a bare `PyErr` made each value-returning call go through memory).
type SinkError = Box<PyErr>;

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
        Ok(PyString::new(self.py, value).into_any())
    }

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
                if let Some((text, obj)) = &self.run.last_type {
                    if schema::short_eq(text.as_bytes(), value.as_bytes()) {
                        return Ok(obj.bind(self.py).clone().into_any());
                    }
                }
                if let Some(s) = self.cache.type_name(self.py, value) {
                    self.run.last_type = Some((value.to_owned(), s.clone().unbind()));
                    return Ok(s.into_any());
                }
            }
            KeyId::Delta | KeyId::Text | KeyId::Summary | KeyId::Error => {
                // A display event's `summary` is its text's first line cut to 160 bytes: for a
                // short one-line delta it is the same text, and gets the same str object.
                if let (text, Some(o)) = &self.run.prev_text {
                    if text.as_str() == value {
                        return Ok(o.bind(self.py).clone().into_any());
                    }
                }
                let made = self.string(value, ascii)?;
                if value.len() <= 4096 {
                    let (text, obj) = &mut self.run.prev_text;
                    text.clear();
                    text.push_str(value);
                    *obj = Some(
                        made.clone()
                            .cast_into::<PyString>()
                            .map_err(PyErr::from)?
                            .unbind(),
                    );
                }
                return Ok(made);
            }
            _ => {
                if let Some(made) = self.run.get(self.py, key, value, ascii) {
                    return Ok(made?);
                }
            }
        }
        self.string(value, ascii)
    }

    #[inline(always)]
    fn key(
        &mut self,
        value: &str,
        _ascii: bool,
        known: Option<KeyId>,
    ) -> Result<Self::Key, SinkError> {
        Ok(match known {
            Some(id) => self.cache.keys[id as usize].bind(self.py).clone(),
            None => self.run.other_key(self.py, value),
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

    type Top = Bound<'py, PyDict>;

    #[inline]
    fn top_begin(&mut self, hint: usize) -> Result<Self::Top, SinkError> {
        Ok(presized_dict(self.py, hint)?)
    }

    #[inline]
    fn top_insert(
        &mut self,
        object: &mut Self::Top,
        key: Self::Key,
        value: Self::Value,
    ) -> Result<(), SinkError> {
        Ok(dict_set(object, &key, &value)?)
    }

    #[inline]
    fn top_end(&mut self, object: Self::Top) -> Result<Self::Value, SinkError> {
        Ok(object.into_any())
    }

    #[inline]
    fn object_end(&mut self, mut object: Self::Object) -> Result<Self::Value, SinkError> {
        let dict = presized_dict(self.py, object.len()).map_err(Box::new);
        let result = dict.and_then(|dict| {
            // In order, with dict semantics: a repeated key keeps its first place and takes
            // the last value.
            for (k, v) in object.drain(..) {
                dict_set(&dict, &k, &v).map_err(Box::new)?;
            }
            Ok(dict.into_any())
        });
        object.clear();
        self.pool.push(object);
        result
    }
}

// ---------------------------------------------------------------------------------------------
// Rejections

fn errors_tuple<'py>(py: Python<'py>, errors: &FieldErrors) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyTuple>> = errors
        .iter()
        .map(|(f, m)| PyTuple::new(py, [PyString::new(py, f), PyString::new(py, m)]))
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

/// `Rejection(code, reason, seq, type, run, errors)` with Python objects for type and run.
fn make_rejection<'py>(
    py: Python<'py>,
    code: Code,
    reason: Bound<'py, PyString>,
    seq: Option<u64>,
    type_: Option<Bound<'py, PyAny>>,
    run: Option<Bound<'py, PyAny>>,
    errors: Option<&FieldErrors>,
) -> PyResult<Bound<'py, PyAny>> {
    let c = cache(py)?;
    let errors = match errors {
        Some(e) => errors_tuple(py, e)?.into_any(),
        None => py.None().into_bound(py),
    };
    let none = || py.None().into_bound(py);
    let seq = match seq {
        Some(s) => s.into_pyobject(py)?.into_any(),
        None => none(),
    };
    c.rejection.bind(py).call1((
        c.code(py, code),
        reason,
        seq,
        type_.unwrap_or_else(none),
        run.unwrap_or_else(none),
        errors,
    ))
}

/// A core rejection (from decoded bytes, so its strings are plain UTF-8) as a Python object.
fn rejection_to_py<'py>(py: Python<'py>, r: &schema::Rejection) -> PyResult<Bound<'py, PyAny>> {
    let c = cache(py)?;
    let text = |s: &Option<String>| -> Option<Bound<'py, PyAny>> {
        s.as_deref().map(|t| match c.type_name(py, t) {
            Some(cached) => cached.into_any(),
            None => PyString::new(py, t).into_any(),
        })
    };
    make_rejection(
        py,
        r.code,
        PyString::new(py, &r.reason),
        r.seq,
        text(&r.type_),
        text(&r.run),
        r.errors.as_ref(),
    )
}

fn bare_rejection<'py>(py: Python<'py>, code: Code, reason: &str) -> PyResult<Bound<'py, PyAny>> {
    make_rejection(py, code, PyString::new(py, reason), None, None, None, None)
}

fn pair<'py>(
    py: Python<'py>,
    value: Option<Bound<'py, PyAny>>,
    rejection: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let none = || py.None().into_bound(py);
    PyTuple::new(
        py,
        [value.unwrap_or_else(none), rejection.unwrap_or_else(none)],
    )
}

fn ok_pair<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    pair(py, Some(value), None)
}

fn rejected_pair<'py>(py: Python<'py>, rej: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    pair(py, None, Some(rej))
}

// ---------------------------------------------------------------------------------------------
// Shapes of Python values (for validate / encode of dicts)

fn shape_of(value: &Bound<'_, PyAny>, id: Option<KeyId>, top: bool, fields: &mut Fields) -> Shape {
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

fn fields_of_dict(dict: &Bound<'_, PyDict>, fields: &mut Fields) {
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

fn parse_direction(direction: &Bound<'_, PyAny>) -> Option<Direction> {
    direction
        .cast::<PyString>()
        .ok()?
        .to_str()
        .ok()
        .and_then(Direction::from_name)
}

fn dict_str<'py>(dict: &Bound<'py, PyDict>, key: &str) -> Option<Bound<'py, PyAny>> {
    dict.get_item(key)
        .ok()
        .flatten()
        .filter(|v| v.is_instance_of::<PyString>())
}

/// `_rejection(code, reason, msg, errors)` for a Python dict.
fn dict_rejection<'py>(
    py: Python<'py>,
    dict: &Bound<'py, PyDict>,
    fields: &Fields,
    code: Code,
    reason: Bound<'py, PyString>,
    errors: Option<&FieldErrors>,
) -> PyResult<Bound<'py, PyAny>> {
    make_rejection(
        py,
        code,
        reason,
        fields.usable_seq(),
        dict_str(dict, "type"),
        dict_str(dict, "run"),
        errors,
    )
}

/// `validate` for a dict: `Ok(())` or the Python rejection.
fn validate_dict<'py>(
    py: Python<'py>,
    dict: &Bound<'py, PyDict>,
    direction: Direction,
    fields: &mut Fields,
) -> PyResult<Result<(), Bound<'py, PyAny>>> {
    fields_of_dict(dict, fields);
    check_fields(py, dict, direction, fields)
}

/// The validation verdict on `fields` (read off `dict`), as the Python rejection.
fn check_fields<'py>(
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

// ---------------------------------------------------------------------------------------------
// decode / validate

enum LineBytes<'a, 'py> {
    Bytes(&'a [u8]),
    Rejected(Bound<'py, PyAny>),
}

/// The bytes of a `line` argument, or the rejection `_pure.decode` gives before parsing.
fn line_bytes<'a, 'py>(
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
fn decode_bytes<'py>(
    py: Python<'py>,
    c: &Cache,
    run: &mut RunCache,
    line: &[u8],
    direction: Option<Direction>,
    fields: &mut Fields,
    pool: &mut Vec<Members<'py>>,
) -> PyResult<Result<Bound<'py, PyAny>, schema::Rejection>> {
    let mut sink = PySink {
        py,
        cache: c,
        run,
        pool,
    };
    match decode_with(line, direction, &mut sink, fields) {
        Ok(v) => Ok(Ok(v)),
        Err(DecodeError::Rejected(r)) => Ok(Err(r)),
        Err(DecodeError::Sink(e)) => Err(*e),
    }
}

#[pyfunction]
fn decode<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = match line_bytes(py, line)? {
        LineBytes::Bytes(b) => b,
        LineBytes::Rejected(r) => return rejected_pair(py, r),
    };
    let c = cache(py)?;
    let mut fields = Fields::new();
    let mut run = RunCache::default();
    match decode_bytes(
        py,
        c,
        &mut run,
        bytes,
        parse_direction(direction),
        &mut fields,
        &mut Vec::new(),
    )? {
        Ok(msg) => ok_pair(py, msg),
        Err(r) => rejected_pair(py, rejection_to_py(py, &r)?),
    }
}

#[pyfunction]
fn validate<'py>(
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

// ---------------------------------------------------------------------------------------------
// encode

const MAX_ENCODE_DEPTH: usize = 254;

enum PathPart {
    Key(String),
    Index(usize),
}

enum EncodeError {
    /// Something JSON cannot carry: the problem text (path in the encoder's `path`).
    Problem(String),
    Py(PyErr),
}

impl From<PyErr> for EncodeError {
    fn from(e: PyErr) -> Self {
        EncodeError::Py(e)
    }
}

/// orjson's string escaping: `"`, `\`, and control bytes; everything else raw UTF-8. Runs of
/// plain bytes are found with the parser's 16-byte scanner (it stops at exactly those bytes).
fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let (i, _) = crate::json::scan_plain(bytes, start);
        out.extend_from_slice(&bytes[start..i]);
        let Some(&b) = bytes.get(i) else { break };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xF) as usize]);
            }
        }
        start = i + 1;
    }
    out.push(b'"');
}

struct Encoder {
    out: Vec<u8>,
    path: Vec<PathPart>,
}

impl Encoder {
    /// The message dict: record the shape of every known field (like `fields_of_dict`) and
    /// serialise it, remembering the first thing JSON cannot carry (serialising stops there,
    /// recording shapes does not).
    fn top(&mut self, dict: &Bound<'_, PyDict>, fields: &mut Fields) -> PyResult<Option<String>> {
        fields.clear();
        let mut problem: Option<String> = None;
        self.out.push(b'{');
        for (i, (k, v)) in dict.iter().enumerate() {
            let key = k.cast::<PyString>().ok().map(|ks| ks.to_str());
            if let Some(Ok(name)) = key {
                if let Some(id) = KeyId::from_name(name) {
                    let shape = shape_of(&v, Some(id), true, fields);
                    fields.set(id, shape);
                }
            }
            if problem.is_some() {
                continue;
            }
            let name = match key {
                None => {
                    problem = Some("non-string key".into());
                    continue;
                }
                Some(Err(_)) => {
                    problem = Some("key with a lone surrogate".into());
                    continue;
                }
                Some(Ok(name)) => name,
            };
            if i > 0 {
                self.out.push(b',');
            }
            write_str(&mut self.out, name);
            self.out.push(b':');
            match self.value(&v, 1) {
                Ok(()) => {}
                Err(EncodeError::Py(e)) => return Err(e),
                Err(EncodeError::Problem(p)) => {
                    self.path.push(PathPart::Key(name.to_owned()));
                    problem = Some(p);
                }
            }
        }
        self.out.push(b'}');
        Ok(problem)
    }

    /// Serialise `value` like `orjson.dumps`, stopping at the first thing `_unencodable` names.
    fn value(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<(), EncodeError> {
        stacker::maybe_grow(crate::json::RED_ZONE, crate::json::STACK_SEGMENT, || {
            self.value_inner(value, depth)
        })
    }

    fn value_inner(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<(), EncodeError> {
        if value.is_none() {
            self.out.extend_from_slice(b"null");
            return Ok(());
        }
        if let Ok(b) = value.cast::<PyBool>() {
            self.out
                .extend_from_slice(if b.is_true() { b"true" } else { b"false" });
            return Ok(());
        }
        if value.is_instance_of::<PyInt>() {
            let mut buf = itoa::Buffer::new();
            if let Ok(i) = value.extract::<i64>() {
                self.out.extend_from_slice(buf.format(i).as_bytes());
            } else if let Ok(u) = value.extract::<u64>() {
                self.out.extend_from_slice(buf.format(u).as_bytes());
            } else {
                return Err(EncodeError::Problem(
                    "integer outside the 64-bit range".into(),
                ));
            }
            return Ok(());
        }
        if let Ok(f) = value.cast::<PyFloat>() {
            let f = f.value();
            if !f.is_finite() {
                return Err(EncodeError::Problem("NaN or infinite number".into()));
            }
            let mut buf = zmij::Buffer::new();
            self.out.extend_from_slice(buf.format_finite(f).as_bytes());
            return Ok(());
        }
        if let Ok(s) = value.cast::<PyString>() {
            match s.to_str() {
                Ok(text) => write_str(&mut self.out, text),
                Err(_) => return Err(EncodeError::Problem("string with a lone surrogate".into())),
            }
            return Ok(());
        }
        if let Ok(dict) = value.cast::<PyDict>() {
            if depth >= MAX_ENCODE_DEPTH {
                return Err(EncodeError::Problem(format!(
                    "nesting deeper than {MAX_ENCODE_DEPTH}"
                )));
            }
            self.out.push(b'{');
            for (i, (k, v)) in dict.iter().enumerate() {
                let Ok(ks) = k.cast::<PyString>() else {
                    return Err(EncodeError::Problem("non-string key".into()));
                };
                let Ok(key) = ks.to_str() else {
                    return Err(EncodeError::Problem("key with a lone surrogate".into()));
                };
                if i > 0 {
                    self.out.push(b',');
                }
                write_str(&mut self.out, key);
                self.out.push(b':');
                if let Err(e) = self.value(&v, depth + 1) {
                    if matches!(e, EncodeError::Problem(_)) {
                        self.path.push(PathPart::Key(key.to_owned()));
                    }
                    return Err(e);
                }
            }
            self.out.push(b'}');
            return Ok(());
        }
        if let Ok(list) = value.cast::<PyList>() {
            if depth >= MAX_ENCODE_DEPTH {
                return Err(EncodeError::Problem(format!(
                    "nesting deeper than {MAX_ENCODE_DEPTH}"
                )));
            }
            self.out.push(b'[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                if let Err(e) = self.value(&item, depth + 1) {
                    if matches!(e, EncodeError::Problem(_)) {
                        self.path.push(PathPart::Index(i));
                    }
                    return Err(e);
                }
            }
            self.out.push(b']');
            return Ok(());
        }
        let name = value.get_type().name()?;
        Err(EncodeError::Problem(format!(
            "unsupported value of type {name}"
        )))
    }

    /// `_path_str`: outermost first, `.key` / `[i]`, `message` when empty.
    fn path_str(&self) -> String {
        let mut out = String::new();
        for part in self.path.iter().rev() {
            match part {
                PathPart::Index(i) => out.push_str(&format!("[{i}]")),
                PathPart::Key(k) if !out.is_empty() => {
                    out.push('.');
                    out.push_str(k);
                }
                PathPart::Key(k) => out = k.clone(),
            }
        }
        if out.is_empty() {
            "message".into()
        } else {
            out
        }
    }
}

/// `encode`: `Ok(bytes)` or `Err(rejection)`.
fn encode_impl<'py>(
    py: Python<'py>,
    msg: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Result<Bound<'py, PyBytes>, Bound<'py, PyAny>>> {
    let Some(direction) = parse_direction(direction) else {
        return Ok(Err(bare_rejection(py, Code::Invalid, R_DIRECTION)?));
    };
    let Ok(dict) = msg.cast::<PyDict>() else {
        return Ok(Err(bare_rejection(py, Code::Invalid, R_NOT_DICT)?));
    };
    // One walk of the top level both records the field shapes for validation and serialises;
    // validation still decides first, as in `_pure.encode`.
    let mut fields = Fields::new();
    let mut enc = Encoder {
        out: Vec::with_capacity(256),
        path: Vec::new(),
    };
    let problem = enc.top(dict, &mut fields)?;
    if let Err(r) = check_fields(py, dict, direction, &fields)? {
        return Ok(Err(r));
    }
    match problem {
        None => {}
        Some(problem) => {
            let reason = format!("{} cannot be encoded: {problem}", enc.path_str());
            let reason = PyString::new(py, &reason);
            return Ok(Err(dict_rejection(
                py,
                dict,
                &fields,
                Code::Invalid,
                reason,
                None,
            )?));
        }
    }
    if enc.out.len() >= MAX_LINE_BYTES {
        let reason = format!(
            "encoded line is {} bytes; the limit is {}",
            enc.out.len(),
            MAX_LINE_BYTES - 1
        );
        let reason = PyString::new(py, &reason);
        return Ok(Err(dict_rejection(
            py,
            dict,
            &fields,
            Code::TooLarge,
            reason,
            None,
        )?));
    }
    Ok(Ok(PyBytes::new(py, &enc.out)))
}

#[pyfunction]
fn encode<'py>(
    py: Python<'py>,
    msg: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    match encode_impl(py, msg, direction)? {
        Ok(b) => ok_pair(py, b.into_any()),
        Err(r) => rejected_pair(py, r),
    }
}

#[pyfunction]
#[pyo3(signature = (r#type, run, seq, payload = None))]
fn message<'py>(
    py: Python<'py>,
    r#type: &Bound<'py, PyAny>,
    run: &Bound<'py, PyAny>,
    seq: &Bound<'py, PyAny>,
    payload: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let c = cache(py)?;
    let msg = PyDict::new(py);
    let key = |id: KeyId| c.keys[id as usize].bind(py);
    msg.set_item(key(KeyId::V), schema::VERSION)?;
    msg.set_item(key(KeyId::Seq), seq)?;
    msg.set_item(key(KeyId::Type), r#type)?;
    msg.set_item(key(KeyId::Run), run)?;
    if let Some(payload) = payload {
        if let Ok(d) = payload.cast::<PyDict>() {
            for (k, v) in d.iter() {
                // `key not in msg`: msg holds the envelope and the payload's own (distinct)
                // keys so far, so only an envelope name can already be there.
                let envelope = match k.cast::<PyString>() {
                    Ok(ks) => match ks.to_str() {
                        Ok(name) => matches!(name, "v" | "seq" | "type" | "run"),
                        Err(_) => false,
                    },
                    Err(_) => msg.contains(&k)?,
                };
                if !envelope {
                    msg.set_item(k, v)?;
                }
            }
        } else if payload.is_truthy()? {
            for item in payload.call_method0("items")?.try_iter()? {
                let (k, v): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
                if !msg.contains(&k)? {
                    msg.set_item(k, v)?;
                }
            }
        }
    }
    Ok(msg)
}

#[pyfunction]
fn rejection_ack<'py>(
    py: Python<'py>,
    rejection: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let payload = PyDict::new(py);
    let seq = rejection.getattr("seq")?;
    if !seq.is_none() {
        payload.set_item("ref", seq)?;
    }
    payload.set_item("status", "rejected")?;
    payload.set_item("reason", rejection.getattr("reason")?)?;
    Ok(payload)
}

// ---------------------------------------------------------------------------------------------
// Sender

#[pyclass(module = "fenwire_fast._native")]
struct Sender {
    #[pyo3(get, set)]
    direction: Py<PyAny>,
    #[pyo3(get, set)]
    run: Py<PyAny>,
    #[pyo3(get, set)]
    seq: u64,
}

#[pymethods]
impl Sender {
    #[new]
    fn new(direction: Py<PyAny>, run: Py<PyAny>) -> Self {
        Sender {
            direction,
            run,
            seq: 0,
        }
    }

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

// ---------------------------------------------------------------------------------------------
// Framer and Receiver

/// The bytes of a `feed` argument (bytes, bytearray or memoryview), else TypeError.
fn feed_bytes<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
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

#[pyclass(module = "fenwire_fast._native")]
struct Framer {
    inner: CoreFramer,
}

fn positive_cap(value: &Bound<'_, PyAny>) -> PyResult<usize> {
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
struct CapArg(Option<usize>);

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

    #[getter]
    fn max_line_bytes(&self) -> usize {
        self.inner.max_line_bytes()
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.inner.buffered()
    }

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

#[pyclass(module = "fenwire_fast._native")]
struct Receiver {
    direction_obj: Py<PyAny>,
    direction: Option<Direction>,
    state: SeqState,
    framer: CoreFramer,
    fields: Fields,
    run: RunCache,
}

impl Receiver {
    /// Receive one line's bytes: the message, or the rejection after the seq rules.
    fn receive_bytes<'py>(
        &mut self,
        py: Python<'py>,
        c: &Cache,
        line: &[u8],
        pool: &mut Vec<Members<'py>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match decode_bytes(
            py,
            c,
            &mut self.run,
            line,
            self.direction,
            &mut self.fields,
            pool,
        )? {
            Ok(msg) => match self.state.accept(&self.fields) {
                Ok(()) => Ok(msg),
                Err(r) => rejection_to_py(py, &r),
            },
            Err(r) => {
                let r = self.state.reject(r);
                rejection_to_py(py, &r)
            }
        }
    }
}

#[pymethods]
impl Receiver {
    #[new]
    fn new(direction: &Bound<'_, PyAny>) -> Self {
        Receiver {
            direction_obj: direction.clone().unbind(),
            direction: parse_direction(direction),
            state: SeqState::default(),
            framer: CoreFramer::new(MAX_LINE_BYTES),
            fields: Fields::new(),
            run: RunCache::default(),
        }
    }

    #[getter]
    fn direction(&self, py: Python<'_>) -> Py<PyAny> {
        self.direction_obj.clone_ref(py)
    }

    #[setter]
    fn set_direction(&mut self, direction: &Bound<'_, PyAny>) {
        self.direction = parse_direction(direction);
        self.direction_obj = direction.clone().unbind();
    }

    #[getter]
    fn seq(&self) -> u64 {
        self.state.seq
    }

    #[setter]
    fn set_seq(&mut self, seq: u64) {
        self.state.seq = seq;
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    fn receive<'py>(
        &mut self,
        py: Python<'py>,
        line: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let bytes = match line_bytes(py, line)? {
            LineBytes::Bytes(b) => b,
            LineBytes::Rejected(r) => return rejected_pair(py, r),
        };
        let c = cache(py)?;
        match decode_bytes(
            py,
            c,
            &mut self.run,
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

    /// Frame `data`, receive every complete non-empty line, return messages and rejections in
    /// order: the hot drain loop, with no Python-level loop per line.
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let data = feed_bytes(py, data)?;
        let c = cache(py)?;
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
}

// ---------------------------------------------------------------------------------------------
// Text primitives

fn text_arg<'a, 'py>(text: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    text.cast::<PyString>()
        .map_err(|_| PyTypeError::new_err("text must be str"))
}

/// An int argument, saturated to the i64 range (the pure backend takes any int).
fn int_arg(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match value.extract::<i64>() {
        Ok(v) => Ok(v),
        Err(e) => {
            if value.is_instance_of::<PyInt>() {
                Ok(if value.lt(0)? { i64::MIN } else { i64::MAX })
            } else {
                Err(e)
            }
        }
    }
}

/// Generalized UTF-8 of a str that holds lone surrogates.
fn surrogatepass<'py>(s: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(s.call_method1("encode", ("utf-8", "surrogatepass"))?
        .cast_into::<PyBytes>()?)
}

fn from_surrogatepass<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    Ok(PyBytes::new(py, bytes)
        .call_method1("decode", ("utf-8", "surrogatepass"))?
        .cast_into::<PyString>()?)
}

/// A prefix of `s` of `n` bytes (n is at a character boundary).
fn prefix_of<'py>(
    py: Python<'py>,
    s: &Bound<'py, PyString>,
    n: usize,
) -> PyResult<Bound<'py, PyString>> {
    match s.to_str() {
        Ok(text) => {
            if n >= text.len() {
                Ok(s.clone())
            } else {
                Ok(PyString::new(py, &text[..n]))
            }
        }
        Err(_) => {
            let bytes = surrogatepass(s)?;
            let b = bytes.as_bytes();
            if n >= b.len() {
                Ok(s.clone())
            } else {
                from_surrogatepass(py, &b[..n])
            }
        }
    }
}

/// Generalized UTF-8 of `s` (borrowed when it has no lone surrogate).
fn with_wtf8<R>(s: &Bound<'_, PyString>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    match s.to_str() {
        Ok(text) => Ok(f(text.as_bytes())),
        Err(_) => {
            let bytes = surrogatepass(s)?;
            Ok(f(bytes.as_bytes()))
        }
    }
}

#[pyfunction]
fn utf8_prefix<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    limit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    let s = text_arg(text)?;
    let limit = int_arg(limit)?;
    if limit <= 0 {
        return Ok(PyString::new(py, ""));
    }
    let n = with_wtf8(s, |b| text::utf8_prefix_len(b, limit as usize))?;
    prefix_of(py, s, n)
}

#[pyfunction]
fn truncate_line<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    limit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    let s = text_arg(text)?;
    let limit = int_arg(limit)?;
    match with_wtf8(s, |b| text::truncate_plan(b, limit))? {
        None => Ok(s.clone()),
        Some((n, ellipsis)) => {
            let prefix = prefix_of(py, s, n)?;
            if ellipsis {
                Ok(prefix.add(text::ELLIPSIS)?.cast_into::<PyString>()?)
            } else {
                Ok(prefix)
            }
        }
    }
}

#[pyfunction]
fn scrub<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyAny>,
    max_bytes: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let s = text_arg(text)?;
    let max_bytes = int_arg(max_bytes)?;
    let limit = max_bytes.max(0) as usize;
    let take = limit.saturating_add(1);
    let chars = s.len()?;
    let raw_truncated = chars > take;
    let result = match s.to_str() {
        Ok(t) => {
            let scanned: Vec<u32> = t.chars().take(take).map(u32::from).collect();
            text::scrub_code_points(&scanned, raw_truncated, t.len(), max_bytes)
        }
        Err(_) => {
            let bytes = surrogatepass(s)?;
            let mut cps = text::code_points(bytes.as_bytes());
            cps.truncate(take);
            text::scrub_code_points(&cps, raw_truncated, bytes.as_bytes().len(), max_bytes)
        }
    };
    let (out, changed) = match result {
        None => (s.clone(), false),
        Some(t) => (PyString::new(py, &t), true),
    };
    PyTuple::new(
        py,
        [
            out.into_any(),
            PyBool::new(py, changed).to_owned().into_any(),
        ],
    )
}

// ---------------------------------------------------------------------------------------------

#[pymodule]
pub fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    cache(py)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("IMPLEMENTATION", "rust")?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(message, m)?)?;
    m.add_function(wrap_pyfunction!(rejection_ack, m)?)?;
    m.add_function(wrap_pyfunction!(utf8_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(truncate_line, m)?)?;
    m.add_function(wrap_pyfunction!(scrub, m)?)?;
    m.add_class::<Sender>()?;
    m.add_class::<Receiver>()?;
    m.add_class::<Framer>()?;
    // Exactly the boundary's names, like `_pure.__all__` (PyO3 would also list `__version__`).
    let names = [
        "IMPLEMENTATION",
        "decode",
        "validate",
        "encode",
        "message",
        "rejection_ack",
        "Sender",
        "Receiver",
        "Framer",
        "utf8_prefix",
        "truncate_line",
        "scrub",
    ];
    m.setattr("__all__", PyList::new(py, names)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::write_str;

    #[test]
    fn write_str_escapes_like_orjson() {
        let cases = [
            ("", "\"\""),
            ("plain text", "\"plain text\""),
            ("a\"b\\c", "\"a\\\"b\\\\c\""),
            (
                "\u{0}\u{1}\u{8}\t\n\u{c}\r\u{1f}\u{7f}",
                "\"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\u{7f}\"",
            ),
            ("é\u{2028}😀/", "\"é\u{2028}😀/\""),
            (
                "a long string of more than sixteen bytes \" with a quote",
                "\"a long string of more than sixteen bytes \\\" with a quote\"",
            ),
        ];
        for (input, want) in cases {
            let mut out = Vec::new();
            write_str(&mut out, input);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{input:?}");
        }
    }
}
