//! `fenwire_fast`: the Rust side of the Fen wire protocol codec.
//!
//! The core works on `&[u8]`, needs no Python, and is tested with `cargo test`. Its modules follow
//! the stages a line goes through:
//!
//! - [`framer`]: a byte stream split into lines, refusing lines over the cap;
//! - [`json`]: a strict JSON parser (orjson's dialect) that builds values through a sink and
//!   knows nothing of the protocol;
//! - [`message`]: one line read as a protocol message, recording the shape of each known field;
//! - [`schema`]: the protocol's tables (keys, types, payload schemas, codes, reasons) and the
//!   validator;
//! - [`codec`]: decode (bytes to a validated message or a rejection) and the receiver's seq rules;
//! - [`drain`]: a chunk framed, validated and seq-checked with no value built (`Receiver.scan`);
//! - [`text`]: the text primitives (UTF-8 prefixes, line truncation, scrubbing);
//! - [`ucs`]: valid UTF-8 to the 1/2/4-byte code units CPython stores a str in;
//! - [`simd`]: which SIMD path runs, and the switch that forces SSE2 (`FENWIRE_FORCE_SSE2=1`).
//!
//! With the `python` cargo feature (turned on by maturin), [`python`] is the PyO3 binding,
//! `fenwire_fast._native`, which builds Python objects straight from the parser.

pub mod codec;
pub mod drain;
pub mod framer;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
pub mod json;
pub mod message;
pub mod own_run;
pub mod quick;
pub mod schema;
pub mod simd;
pub mod text;
pub mod ucs;

#[cfg(feature = "python")]
pub mod python;
