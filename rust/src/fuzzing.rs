//! Hooks for the fuzz targets (`fuzz/`), compiled only under `--cfg fuzzing` (which `cargo fuzz`
//! sets): internals that a property needs to see and the public API does not show. Not part of
//! the API; a normal build has none of it.

/// The quick path's bitmap of `line` (one bit per quote, backslash or control byte, 64 to a
/// word) and whether it has a byte >= 0x80, by the AVX2 loop (`avx2`, and the CPU has AVX2)
/// or the SSE2 one. `None` when AVX2 is asked for and the CPU lacks it.
pub fn quick_masks(line: &[u8], avx2: bool) -> Option<(Vec<u64>, bool)> {
    crate::quick::masks_for_fuzzing(line, avx2)
}
