//! The bitmap of a line's quotes, backslashes and control bytes, and skipping a string by it.

/// Escapes the fast path takes as they are (`\u` is left to the exact check).
pub(super) static SIMPLE_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'/' as usize] = true;
    t[b'b' as usize] = true;
    t[b'f' as usize] = true;
    t[b'n' as usize] = true;
    t[b'r' as usize] = true;
    t[b't' as usize] = true;
    t
};

/// Fills `special` with one bit per byte of `line` (bit `i % 64` of word `i / 64`) set for the
/// bytes a string must stop at (quote, backslash, byte < 0x20); returns whether any byte is
/// >= 0x80. The last word's bits past the line are clear.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn build_masks(line: &[u8], special: &mut Vec<u64>) -> bool {
    use std::arch::x86_64::*;

    /// The special bits of 64 bytes at `p`, OR-ing the bytes into `high`.
    ///
    /// # Safety
    /// `p` must be valid for reading 64 bytes.
    #[inline(always)]
    unsafe fn block(p: *const u8, high: &mut __m128i) -> u64 {
        // SAFETY: the caller makes `p..p + 64` readable and each load reads 16 bytes at
        // `p + k * 16`, `k < 4`; the other intrinsics are SSE2 arithmetic (x86_64 baseline).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control_max = _mm_set1_epi8(0x1F);
            let mut bits = 0u64;
            for k in 0..4 {
                let v = _mm_loadu_si128(p.add(k * 16) as *const __m128i);
                let s = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    // v <= 0x1F (unsigned) exactly when max(v, 0x1F) == 0x1F.
                    _mm_cmpeq_epi8(_mm_max_epu8(v, control_max), control_max),
                );
                *high = _mm_or_si128(*high, v);
                bits |= u64::from(_mm_movemask_epi8(s) as u16) << (k * 16);
            }
            bits
        }
    }

    let n = line.len();
    special.clear();
    special.reserve(n / 64 + 1);
    // SAFETY: SSE2 arithmetic, part of the x86_64 baseline.
    let mut high = unsafe { _mm_setzero_si128() };
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: `i + 64 <= n`: the 64 bytes at `i` are inside `line`. SSE2 is part of the
        // x86_64 baseline. Measured: see the module's notes (BENCHMARKS.md).
        special.push(unsafe { block(line.as_ptr().add(i), &mut high) });
        i += 64;
    }
    if i < n {
        // The last bytes, padded with spaces (not special, not high).
        let mut pad = [b' '; 64];
        pad[..n - i].copy_from_slice(&line[i..]);
        // SAFETY: `pad` is 64 bytes.
        special.push(unsafe { block(pad.as_ptr(), &mut high) });
    }
    // SAFETY: as above.
    unsafe { _mm_movemask_epi8(high) != 0 }
}

/// [`build_masks`] 32 bytes per step (the CPU has AVX2: [`Quick::new`] checked).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn build_masks_avx2(line: &[u8], special: &mut Vec<u64>) -> bool {
    use std::arch::x86_64::*;

    let space = _mm256_set1_epi8(0x20);
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let mut high = _mm256_setzero_si256();
    // The special bits of 32 bytes, OR-ing them into `high` (a macro: a helper function is
    // not inlined across the target feature, and passing vectors through memory tripled the
    // cost).
    macro_rules! half {
        ($v:expr) => {{
            let v = $v;
            let s = _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
                // v < 0x20 (unsigned): below 0x20 as a signed byte, and not >= 0x80 (only
                // the top bit of each byte counts). (`max_epu8` + `cmpeq`, as in the SSE2
                // loop, made LLVM scalarize the whole block here.)
                _mm256_andnot_si256(v, _mm256_cmpgt_epi8(space, v)),
            );
            high = _mm256_or_si256(high, v);
            // `black_box`: LLVM otherwise reads the two 32-bit masks as 64 booleans and
            // rebuilds them one byte at a time (228 instructions per 64 bytes, callgrind).
            u64::from(std::hint::black_box(_mm256_movemask_epi8(s)) as u32)
        }};
    }

    let n = line.len();
    special.clear();
    special.reserve(n / 64 + 1);
    let mut i = 0;
    let p = line.as_ptr();
    while i + 64 <= n {
        // SAFETY: `i + 64 <= n`: both 32-byte loads are inside `line`. Measured: 0.4
        // instructions a byte against 0.7 for the SSE2 loop (callgrind, realistic mixed).
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p.add(i) as *const __m256i),
                _mm256_loadu_si256(p.add(i + 32) as *const __m256i),
            )
        };
        special.push(half!(lo) | half!(hi) << 32);
        i += 64;
    }
    if i < n && n >= 64 {
        // The last bytes: the line's last 64, with the bits of those already done shifted out
        // (no copy into a padded buffer: that was 60 instructions a line).
        // SAFETY: `n >= 64`: both 32-byte loads at `n - 64` are inside `line`.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p.add(n - 64) as *const __m256i),
                _mm256_loadu_si256(p.add(n - 32) as *const __m256i),
            )
        };
        special.push((half!(lo) | half!(hi) << 32) >> (64 - (n - i)));
    } else if i < n {
        // A line shorter than 64 bytes, padded with spaces (not special, not high).
        let mut pad = [b' '; 64];
        pad[..n - i].copy_from_slice(&line[i..]);
        // SAFETY: `pad` is 64 bytes.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(pad.as_ptr() as *const __m256i),
                _mm256_loadu_si256(pad.as_ptr().add(32) as *const __m256i),
            )
        };
        special.push(half!(lo) | half!(hi) << 32);
    }
    _mm256_movemask_epi8(high) != 0
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn build_masks(line: &[u8], special: &mut Vec<u64>) -> bool {
    special.clear();
    let mut high = false;
    for chunk in line.chunks(64) {
        let mut bits = 0u64;
        for (k, &c) in chunk.iter().enumerate() {
            if c == b'"' || c == b'\\' || c < 0x20 {
                bits |= 1 << k;
            }
            high |= c >= 0x80;
        }
        special.push(bits);
    }
    high
}

/// From `start` (just after an opening quote): the index of the closing quote and whether an
/// escape came before it, when every escape is one [`SIMPLE_ESCAPE`] and no control byte comes
/// first; `None` otherwise.
#[inline(always)]
pub(super) fn find_end(b: &[u8], special: &[u64], start: usize) -> Option<(usize, bool)> {
    let mut w = start / 64;
    let mut bits = *special.get(w)? & (u64::MAX << (start % 64));
    let mut escaped = false;
    loop {
        while bits != 0 {
            let k = bits.trailing_zeros();
            let j = w * 64 + k as usize;
            match b[j] {
                b'"' => return Some((j, escaped)),
                b'\\' => {
                    let e = *b.get(j + 1)?;
                    if !SIMPLE_ESCAPE[e as usize] {
                        return None;
                    }
                    escaped = true;
                    bits &= bits - 1;
                    if k == 63 {
                        // The escaped byte is the first of the next word.
                        w += 1;
                        bits = *special.get(w)? & !1;
                        continue;
                    }
                    // The escaped byte is no quote or backslash of its own.
                    bits &= !(2u64 << k);
                }
                _ => return None,
            }
        }
        w += 1;
        bits = *special.get(w)?;
    }
}
