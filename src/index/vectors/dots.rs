//! Exact integer dot products of a query's `i16` codes with stored tool codes, decoded from their
//! sign plane and packed low bits ([`super::codes`]).
//!
//! Three implementations give the same integers: the portable loop (decode each slot's codes,
//! then an auto-vectorized multiply-add), the same loop compiled with AVX2, and `AVX-512VBMI`,
//! which unpacks 64 codes at a time in registers (`vpermb` puts each group's 7 bytes in a 64-bit
//! lane, `vpmultishiftqb` cuts the eight 7-bit values out, the sign plane's bits set the top bits
//! by a byte mask) and multiplies them with `vpmaddwd`. Chosen at run time;
//! `TOOLPROXY_PORTABLE_SIMD=1` forces the portable loop, for tests.

use super::codes::{self, padded};
#[cfg(target_arch = "x86_64")]
use super::simd::{simd, Simd};

/// The stored codes of every slot at one dimensionality: `words` sign words and `bytes` bytes of
/// low bits per slot.
#[derive(Clone, Copy)]
pub(super) struct Planes<'a> {
    pub(super) signs: &'a [u64],
    pub(super) low: &'a [u8],
    pub(super) words: usize,
    pub(super) bytes: usize,
}

impl Planes<'_> {
    #[inline]
    fn decode(&self, slot: usize, out: &mut [i8]) {
        codes::decode(
            &self.signs[slot * self.words..(slot + 1) * self.words],
            &self.low[slot * self.bytes..(slot + 1) * self.bytes],
            out,
        );
    }
}

/// The exact integer dot product of a query's codes with a tool's (an auto-vectorized loop).
#[inline]
pub(super) fn dot(query: &[i16], codes: &[i8]) -> i32 {
    query
        .iter()
        .zip(codes)
        .map(|(&q, &c)| i32::from(q) * i32::from(c))
        .sum()
}

/// The dot products of `query` with the codes of `slots` into `out`: each slot's codes decoded
/// into a scratch buffer, then [`dot`]. Compiled once for the baseline target and once with AVX2
/// (see [`dots`]).
#[allow(clippy::inline_always)] // inlined into `dots_avx2`, so compiled again with AVX2 there
#[inline(always)]
pub(super) fn dots_portable(query: &[i16], planes: Planes<'_>, slots: &[u32], out: &mut [i32]) {
    let mut scratch = vec![0i8; padded(query.len())];
    for (&slot, out) in slots.iter().zip(out) {
        planes.decode(slot as usize, &mut scratch);
        *out = dot(query, &scratch);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn dots_avx2(query: &[i16], planes: Planes<'_>, slots: &[u32], out: &mut [i32]) {
    dots_portable(query, planes, slots, out);
}

/// [`dots_portable`] by `AVX-512VBMI` (see the module docs).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub(super) fn dots_avx512(query: &[i16], planes: Planes<'_>, slots: &[u32], out: &mut [i32]) {
    use std::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_and_si512, _mm512_castsi512_si256, _mm512_cvtepi8_epi16,
        _mm512_extracti64x4_epi64, _mm512_loadu_si512, _mm512_madd_epi16, _mm512_mask_sub_epi8,
        _mm512_maskz_loadu_epi8, _mm512_multishift_epi64_epi8, _mm512_permutexvar_epi8,
        _mm512_reduce_add_epi32, _mm512_set1_epi64, _mm512_set1_epi8, _mm512_setzero_si512,
    };
    let chunks = planes.words;
    // The query, zero-padded to whole chunks of 64 codes.
    let mut padded_query = vec![0i16; 64 * chunks];
    padded_query[..query.len()].copy_from_slice(query);
    // Output byte `8g + t` takes input byte `7g + min(t, 6)` (byte 7 of a lane is cut away).
    let mut gather = [0u8; 64];
    for (j, byte) in gather.iter_mut().enumerate() {
        *byte = (7 * (j / 8) + (j % 8).min(6)) as u8;
    }
    // SAFETY: `gather` holds 64 bytes.
    let gather: __m512i = unsafe { _mm512_loadu_si512(gather.as_ptr().cast()) };
    // Bit offsets of the eight 7-bit values in each lane: 0, 7, ..., 49.
    let shifts = _mm512_set1_epi64(0x312A_231C_150E_0700);
    let low7 = _mm512_set1_epi8(0x7F);
    let top = _mm512_set1_epi8(-128);
    for (at, (&slot, out)) in slots.iter().zip(out).enumerate() {
        if let Some(&ahead) = slots.get(at + PREFETCH_AHEAD) {
            prefetch(planes, ahead as usize);
        }
        let slot = slot as usize;
        let signs = &planes.signs[slot * planes.words..(slot + 1) * planes.words];
        let low = &planes.low[slot * planes.bytes..(slot + 1) * planes.bytes];
        let mut sums = _mm512_setzero_si512();
        for (chunk, &sign_bits) in signs.iter().enumerate() {
            let start = 56 * chunk;
            let length = (low.len() - start).min(56);
            let mask = (1u64 << length) - 1;
            // SAFETY: the masked load reads `length` bytes from `start`, all inside `low`.
            let packed = unsafe { _mm512_maskz_loadu_epi8(mask, low.as_ptr().add(start).cast()) };
            let lanes = _mm512_permutexvar_epi8(gather, packed);
            let values = _mm512_and_si512(_mm512_multishift_epi64_epi8(shifts, lanes), low7);
            // A set sign bit subtracts 128: `-128 * s + l`.
            let codes = _mm512_mask_sub_epi8(values, sign_bits, values, top);
            let query = &padded_query[64 * chunk..64 * chunk + 64];
            // SAFETY: `query` holds 64 `i16`s, two unaligned 64-byte loads.
            let (first, second) = unsafe {
                (
                    _mm512_loadu_si512(query.as_ptr().cast()),
                    _mm512_loadu_si512(query.as_ptr().add(32).cast()),
                )
            };
            let low_half = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(codes));
            let high_half = _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64::<1>(codes));
            sums = _mm512_add_epi32(sums, _mm512_madd_epi16(low_half, first));
            sums = _mm512_add_epi32(sums, _mm512_madd_epi16(high_half, second));
        }
        *out = _mm512_reduce_add_epi32(sums);
    }
}

/// Slots ahead whose codes [`dots_avx512`] asks the memory for (the pool's slots are far apart:
/// each is a fresh cache miss).
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 8;

/// Asks for the cache lines of `slot`'s codes.
#[cfg(target_arch = "x86_64")]
#[inline]
fn prefetch(planes: Planes<'_>, slot: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let low = &planes.low[slot * planes.bytes..(slot + 1) * planes.bytes];
    for line in (0..low.len()).step_by(64) {
        // SAFETY: a prefetch does not access memory; the address is inside `low`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(low.as_ptr().add(line).cast()) };
    }
    let signs = &planes.signs[slot * planes.words..(slot + 1) * planes.words];
    // SAFETY: as above.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(signs.as_ptr().cast()) };
}

/// [`dots_portable`], by the fastest implementation the CPU has.
pub(super) fn dots(query: &[i16], planes: Planes<'_>, slots: &[u32], out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        match simd(true) {
            Simd::Avx512 => {
                // SAFETY: the CPU supports AVX-512F, BW and VBMI (checked at run time).
                unsafe { dots_avx512(query, planes, slots, out) };
                return;
            }
            Simd::Avx2 => {
                // SAFETY: the CPU supports AVX2 (checked at run time).
                unsafe { dots_avx2(query, planes, slots, out) };
                return;
            }
            Simd::None => {}
        }
    }
    dots_portable(query, planes, slots, out);
}
