//! With the `python` feature, emit PyO3's `Py_3_*` cfgs for the interpreter being built for, so
//! the extension uses CPython's pre-sizing dict constructor only where it is known to be
//! exported. Without it (the pure-Rust core) there is nothing to configure.

fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
