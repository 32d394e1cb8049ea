//! Which SIMD path the core takes where the CPU leaves it a choice, and a switch to force the
//! narrower one so that both are run by the tests and the fuzzers on a machine with AVX2.
//!
//! One place chooses at run time: the quick path's bitmap ([`crate::quick`]) is built with AVX2
//! when the CPU has it, else with SSE2. Everything else that is vectorized (the string scanner
//! and escaped strings of [`crate::json`], [`crate::ucs`]) uses SSE2 alone, which every x86_64
//! CPU has, so there is nothing to choose there (their portable loops are for other
//! architectures only).
//!
//! The switch: `FENWIRE_FORCE_SSE2=1` in the environment (read once, when the first
//! [`crate::quick::Quick`] is made; any value but empty and `0` counts), or [`force_sse2`], which
//! takes precedence over the variable from then on. A [`crate::quick::Quick`] takes the setting
//! in force when it is made and keeps it. The crate's own tests pick the path of each `Quick`
//! directly, so `cargo test` runs both whatever the environment says.

use std::sync::atomic::{AtomicU8, Ordering};

/// 0: not decided yet (read the environment); 1: as the CPU allows; 2: SSE2 forced.
static MODE: AtomicU8 = AtomicU8::new(0);
const AUTO: u8 = 1;
const FORCED: u8 = 2;

/// Force the SSE2 path (`true`) or go back to the widest the CPU has (`false`), for every
/// [`crate::quick::Quick`] made from now on; overrides `FENWIRE_FORCE_SSE2`.
pub fn force_sse2(on: bool) {
    MODE.store(if on { FORCED } else { AUTO }, Ordering::Relaxed);
}

/// Whether the SSE2 path is forced (by [`force_sse2`], else by `FENWIRE_FORCE_SSE2`).
pub fn sse2_forced() -> bool {
    match MODE.load(Ordering::Relaxed) {
        0 => {
            let forced =
                std::env::var_os("FENWIRE_FORCE_SSE2").is_some_and(|v| !v.is_empty() && v != "0");
            // A concurrent `force_sse2` wins over the environment.
            let mode = if forced { FORCED } else { AUTO };
            match MODE.compare_exchange(0, mode, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => forced,
                Err(now) => now == FORCED,
            }
        }
        mode => mode == FORCED,
    }
}

/// Whether the AVX2 path is taken: the CPU has AVX2 and SSE2 is not forced (always false off
/// x86_64).
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return !sse2_forced() && is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test that touches the switch (the others pick a `Quick`'s path directly), so
    /// tests running in parallel are not affected.
    #[test]
    fn the_switch_turns_avx2_off_and_back() {
        let auto = {
            force_sse2(false);
            avx2()
        };
        force_sse2(true);
        assert!(sse2_forced());
        assert!(!avx2());
        force_sse2(false);
        assert!(!sse2_forced());
        assert_eq!(avx2(), auto);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(auto, is_x86_feature_detected!("avx2"));
    }
}
