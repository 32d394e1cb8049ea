//! `fenwire_fast._native`: the Rust backend of the Fen wire protocol codec.
//!
//! The pure-Rust core (`json`, `schema`, `codec`, `framer`, `text`) works on `&[u8]` and is
//! tested with `cargo test`, no Python needed; `py` (only with the `python` cargo feature) is the
//! thin PyO3 layer that builds Python objects straight from the parser.

pub mod codec;
pub mod framer;
pub mod json;
pub mod schema;
pub mod text;

#[cfg(test)]
mod tests;

#[cfg(feature = "python")]
pub mod py;
