//! The PyO3 binding, `fenwire_fast._native` (only with the `python` cargo feature): the same
//! names and results as `fenwire_fast._pure`.
//!
//! Messages are built straight from the line's bytes by [`sink::PySink`] (no intermediate
//! tree), with interned key and type-name strings and per-receiver caches of repeated values;
//! validation runs in Rust on the field shapes the parser recorded. Nothing here raises on bad
//! input: every input the pure backend answers with a rejection gets the same rejection.
//!
//! One module per concern: raw CPython calls in [`ffi`], cached objects in [`interned`] and
//! [`repeated`], object building in [`sink`] (dicts copied from per-key-order templates in
//! [`template`]), rejections in [`rejection`], the entry points in
//! [`decode`], [`validate`], [`encode`] and [`text`], and the classes in [`sender`],
//! [`receiver`] and [`framer`] (a receiver's run check in [`plain`]); `Receiver.scan`'s records are made in [`scanned`] and `Receiver.scan_batch`'s columns in [`batch`]; [`tables`]
//! exposes the protocol tables to the tests.

mod batch;
mod decode;
mod encode;
mod ffi;
mod framer;
mod interned;
mod plain;
mod receiver;
mod rejection;
mod repeated;
mod scanned;
mod sender;
mod sink;
mod tables;
mod template;
mod text;
mod validate;

use pyo3::prelude::*;
use pyo3::types::PyList;

use interned::interned;

#[pymodule]
pub fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    interned(py)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("IMPLEMENTATION", "rust")?;
    m.add_function(wrap_pyfunction!(decode::decode, m)?)?;
    m.add_function(wrap_pyfunction!(validate::validate, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode, m)?)?;
    m.add_function(wrap_pyfunction!(encode::message, m)?)?;
    m.add_function(wrap_pyfunction!(encode::rejection_ack, m)?)?;
    m.add_function(wrap_pyfunction!(text::utf8_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(text::truncate_line, m)?)?;
    m.add_function(wrap_pyfunction!(text::scrub, m)?)?;
    m.add_function(wrap_pyfunction!(tables::_tables, m)?)?;
    m.add_class::<sender::Sender>()?;
    m.add_class::<receiver::Receiver>()?;
    m.add_class::<framer::Framer>()?;
    m.add_class::<batch::ScanBatch>()?;
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
        "ScanBatch",
        "utf8_prefix",
        "truncate_line",
        "scrub",
    ];
    m.setattr("__all__", PyList::new(py, names)?)?;
    Ok(())
}
