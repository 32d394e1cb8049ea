//! `encode`, `message` and `rejection_ack`: a message dict to one JSON line exactly as
//! `orjson.dumps` writes it, validated first, with the same rejections as the pure backend.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::interned::interned;
use super::rejection::{bare_rejection, dict_rejection, ok_pair, rejected_pair};
use super::validate::{check_fields, parse_direction, shape_of};
use crate::json::{scan_plain, RED_ZONE, STACK_SEGMENT};
use crate::schema::{self, Code, Fields, KeyId, MAX_LINE_BYTES, R_DIRECTION, R_NOT_DICT};

// ---------------------------------------------------------------------------------------------
// encode

pub(super) const MAX_ENCODE_DEPTH: usize = 254;

pub(super) enum PathPart {
    Key(String),
    Index(usize),
}

pub(super) enum EncodeError {
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
pub(super) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let (i, _) = scan_plain(bytes, start);
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

pub(super) struct Encoder {
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
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.value_inner(value, depth))
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
pub(super) fn encode_impl<'py>(
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

/// Validate a message and serialise it compactly (orjson's bytes, no newline).
///
/// Returns ``(line_bytes, None)`` or ``(None, rejection)``: the validation rejection unchanged,
/// ``invalid`` for what JSON cannot carry, ``too-large`` when the line would reach
/// ``MAX_LINE_BYTES``. Never raises.
#[pyfunction]
pub(super) fn encode<'py>(
    py: Python<'py>,
    msg: &Bound<'py, PyAny>,
    direction: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    match encode_impl(py, msg, direction)? {
        Ok(b) => ok_pair(py, b.into_any()),
        Err(r) => rejected_pair(py, r),
    }
}

/// Build a message: ``v``, ``seq``, ``type``, ``run`` first, then the payload's other fields in
/// their order (a payload's own envelope fields never win).
#[pyfunction]
#[pyo3(signature = (r#type, run, seq, payload = None))]
pub(super) fn message<'py>(
    py: Python<'py>,
    r#type: &Bound<'py, PyAny>,
    run: &Bound<'py, PyAny>,
    seq: &Bound<'py, PyAny>,
    payload: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let c = interned(py)?;
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

/// The ``control-ack`` payload answering a rejected control line: ``{ref?, status, reason}``.
#[pyfunction]
pub(super) fn rejection_ack<'py>(
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
