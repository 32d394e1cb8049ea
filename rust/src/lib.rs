use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Until the backend boundary is complete, refuse to import so that `fenwire_fast` falls back
    // to the pure backend instead of failing on a missing name.
    Err(PyImportError::new_err("fenwire_fast._native is not complete yet"))
}
