//! Which SIMD kernels the vector search runs ([`super::prefilter`], [`super::dots`]),
//! chosen once per process from what the CPU has. Every kernel computes the same integers as the
//! portable loop, so the choice changes speed, never a ranking.

/// A family of kernels.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Simd {
    Avx512,
    Avx2,
    None,
}

/// The widest kernels this CPU runs: for the prefilter scan (`vbmi` false: AVX-512F and BW) or for
/// the decoding dot products (`vbmi` true: AVX-512VBMI too). `TOOLPROXY_PORTABLE_SIMD=1` forces
/// the portable loops and `TOOLPROXY_PORTABLE_SIMD=avx2` stops at AVX2 (tests, and timing what a
/// CPU without AVX-512 gets).
pub(super) fn simd(vbmi: bool) -> Simd {
    static LEVELS: std::sync::OnceLock<(Simd, Simd)> = std::sync::OnceLock::new();
    let (scan, dots) = *LEVELS.get_or_init(|| {
        let limit = std::env::var("TOOLPROXY_PORTABLE_SIMD").ok();
        if limit.as_deref().is_some_and(|limit| limit != "avx2") {
            return (Simd::None, Simd::None);
        }
        let narrow = if is_x86_feature_detected!("avx2") {
            Simd::Avx2
        } else {
            Simd::None
        };
        let wide = limit.is_none()
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw");
        let pick = |wide: bool| if wide { Simd::Avx512 } else { narrow };
        (
            pick(wide),
            pick(wide && is_x86_feature_detected!("avx512vbmi")),
        )
    });
    if vbmi {
        dots
    } else {
        scan
    }
}
