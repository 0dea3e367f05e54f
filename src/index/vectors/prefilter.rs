//! The prefilter of the nearest-vector search: an asymmetric distance from the query to each
//! tool's sign plane ([`super::codes`]), and the pool of the closest slots that
//! [`super::nearest`] then reranks by their exact cosine.
//!
//! The query is quantized to 8 bits, `u_i = round(127 * q_i / max |q|) + 127` in `0..=254`, and a
//! tool is reduced to the signs `s_i` of its codes. The distance
//! `X = sum_i (s_i ? u_i : 254 - u_i)` equals `127 * d - sum_i q'_i * (s_i ? -1 : 1)` with
//! `q'_i = u_i - 127`, so a smaller `X` is a larger approximate dot product. It reads 48 bytes a
//! tool at 384 dimensions instead of the 384 of the codes: at 100,000 tools the sign planes
//! (4.8 MB) stay in the CPU's last-level cache, where the codes (38 MB) do not.
//!
//! Three implementations compute the same integers: a byte lookup table per query (portable),
//! AVX2 and `AVX-512BW` (a blend of `u` and `254 - u` by the sign bits, summed by `vpsadbw`), chosen
//! at run time (`TOOLPROXY_PORTABLE_SIMD=1` forces the portable one, `=avx2` stops at AVX2).
//!
//! The pool ([`pool`]): the selected slots whose distance is at most the distance bucket that
//! completes `size` slots, in slot order, so at least `size` (all when fewer are selected) and
//! deterministic for equal inputs. The pool size is chosen on real all-MiniLM-L6-v2 vectors of
//! the BFCL tools replicated to 100,000 (`bench_hybrid.rs`): see [`super::PREFILTER_POOL`].

use super::codes::sign_words;
#[cfg(target_arch = "x86_64")]
use super::simd::{simd, Simd};

/// The largest query byte: `u` is in `0..=PEAK` and a padded dimension holds `PEAK` (its sign is
/// 0, so it adds `PEAK - PEAK = 0`).
const PEAK: u8 = 254;
/// Most buckets of the distance histogram.
const BUCKETS: usize = 4096;

/// A query vector quantized for the prefilter.
#[derive(Debug, Clone)]
pub(super) struct ScanQuery {
    /// `u`, [`sign_words`] `* 64` bytes (the padding is [`PEAK`]).
    up: Vec<u8>,
    /// `PEAK - u`.
    down: Vec<u8>,
}

impl ScanQuery {
    /// Quantizes `vector` (finite values; a zero vector gives every tool the same distance).
    pub(super) fn new(vector: &[f32]) -> Self {
        let words = sign_words(vector.len());
        let (magnify, scale) = super::quantize::scales(vector, 127.0);
        let mut up = vec![PEAK; 64 * words];
        for (u, &x) in up.iter_mut().zip(vector) {
            let scaled = (x * magnify * scale).clamp(-127.0, 127.0);
            *u = ((scaled + 0.5f32.copysign(scaled)) as i32 + 127) as u8;
        }
        let down = up.iter().map(|&u| PEAK - u).collect();
        Self { up, down }
    }

    fn words(&self) -> usize {
        self.up.len() / 64
    }
}

/// The distance of `query` to each sign plane of `signs` (row-major, [`ScanQuery`]'s words per
/// row) into `out` (one per row).
pub(super) fn distances(query: &ScanQuery, signs: &[u64], out: &mut [u32]) {
    debug_assert_eq!(signs.len(), out.len() * query.words());
    #[cfg(target_arch = "x86_64")]
    {
        match simd(false) {
            Simd::Avx512 => {
                // SAFETY: the CPU supports AVX-512F and AVX-512BW (checked at run time).
                unsafe { distances_avx512(query, signs, out) };
                return;
            }
            Simd::Avx2 => {
                // SAFETY: the CPU supports AVX2 (checked at run time).
                unsafe { distances_avx2(query, signs, out) };
                return;
            }
            Simd::None => {}
        }
    }
    distances_portable(query, signs, out);
}

/// [`distances`] by AVX2: each 32 sign bits spread to 32 byte masks (a broadcast, `vpshufb`, a
/// bit test), `u` or `254 - u` picked by `vpblendvb`, summed by `vpsadbw`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn distances_avx2(query: &ScanQuery, signs: &[u64], out: &mut [u32]) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_blendv_epi8, _mm256_castsi256_si128,
        _mm256_cmpeq_epi8, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_sad_epu8,
        _mm256_set1_epi32, _mm256_set1_epi64x, _mm256_setr_epi8, _mm256_setzero_si256,
        _mm256_shuffle_epi8, _mm_add_epi64, _mm_cvtsi128_si64, _mm_unpackhi_epi64,
    };
    let words = query.words();
    if words == 0 {
        return;
    }
    let load = |bytes: &[u8], chunk: usize| -> __m256i {
        let part = &bytes[32 * chunk..32 * chunk + 32];
        // SAFETY: `part` holds 32 bytes; the load is unaligned.
        unsafe { _mm256_loadu_si256(part.as_ptr().cast()) }
    };
    // Output byte `k` takes byte `k / 8` of the broadcast 32 bits (bytes 0-1 in the low lane, 2-3
    // in the high one: `vpshufb` works within 128-bit lanes), then tests bit `k % 8`.
    let spread = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    );
    let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
    let zero = _mm256_setzero_si256();
    for (row, out) in signs.chunks_exact(words).zip(out) {
        let mut sums = zero;
        for (w, &word) in row.iter().enumerate() {
            for half in 0..2 {
                let chunk = 2 * w + half;
                let broadcast = _mm256_set1_epi32((word >> (32 * half)) as u32 as i32);
                let spread = _mm256_shuffle_epi8(broadcast, spread);
                let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits);
                let picked =
                    _mm256_blendv_epi8(load(&query.down, chunk), load(&query.up, chunk), set);
                sums = _mm256_add_epi64(sums, _mm256_sad_epu8(picked, zero));
            }
        }
        let halves = _mm_add_epi64(
            _mm256_castsi256_si128(sums),
            _mm256_extracti128_si256::<1>(sums),
        );
        let total = _mm_add_epi64(halves, _mm_unpackhi_epi64(halves, halves));
        *out = _mm_cvtsi128_si64(total) as u32;
    }
}

/// [`distances`] by a table of the 256 sign bytes' sums per byte position of the plane.
fn distances_portable(query: &ScanQuery, signs: &[u64], out: &mut [u32]) {
    let words = query.words();
    if words == 0 {
        return;
    }
    let mut table = vec![0u32; 8 * words * 256];
    for (position, sums) in table.chunks_exact_mut(256).enumerate() {
        for (byte, sum) in sums.iter_mut().enumerate() {
            *sum = (0..8)
                .map(|t| {
                    let i = 8 * position + t;
                    u32::from(if byte >> t & 1 == 1 {
                        query.up[i]
                    } else {
                        query.down[i]
                    })
                })
                .sum();
        }
    }
    for (row, out) in signs.chunks_exact(words).zip(out) {
        let mut sum = 0u32;
        for (w, &word) in row.iter().enumerate() {
            for (b, byte) in word.to_le_bytes().into_iter().enumerate() {
                sum += table[(8 * w + b) * 256 + usize::from(byte)];
            }
        }
        *out = sum;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn distances_avx512(query: &ScanQuery, signs: &[u64], out: &mut [u32]) {
    // The common dimensionalities with the query held in registers; any other one, loaded per row.
    match query.words() {
        0 => {}
        6 => distances_avx512_of::<6>(query, signs, out), // 384
        12 => distances_avx512_of::<12>(query, signs, out), // 768
        16 => distances_avx512_of::<16>(query, signs, out), // 1,024
        24 => distances_avx512_of::<24>(query, signs, out), // 1,536
        words => {
            for (row, out) in signs.chunks_exact(words).zip(out) {
                let mut sums = std::arch::x86_64::_mm512_setzero_si512();
                for (w, &mask) in row.iter().enumerate() {
                    sums = add_word(sums, mask, load(&query.down, w), load(&query.up, w));
                }
                *out = std::arch::x86_64::_mm512_reduce_add_epi64(sums) as u32;
            }
        }
    }
}

/// Bytes `64 w..64 w + 64` of `bytes` (at least that long).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn load(bytes: &[u8], w: usize) -> std::arch::x86_64::__m512i {
    let chunk = &bytes[64 * w..64 * w + 64];
    // SAFETY: `chunk` holds 64 bytes; the load is unaligned.
    unsafe { std::arch::x86_64::_mm512_loadu_si512(chunk.as_ptr().cast()) }
}

/// `sums` plus the 64 bytes of `up` where `mask` has a bit and of `down` where it has none,
/// summed in 8 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn add_word(
    sums: std::arch::x86_64::__m512i,
    mask: u64,
    down: std::arch::x86_64::__m512i,
    up: std::arch::x86_64::__m512i,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{
        _mm512_add_epi64, _mm512_mask_blend_epi8, _mm512_sad_epu8, _mm512_setzero_si512,
    };
    let picked = _mm512_mask_blend_epi8(mask, down, up);
    _mm512_add_epi64(sums, _mm512_sad_epu8(picked, _mm512_setzero_si512()))
}

/// [`distances_avx512`] at `W` words a row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn distances_avx512_of<const W: usize>(query: &ScanQuery, signs: &[u64], out: &mut [u32]) {
    use std::arch::x86_64::{_mm512_reduce_add_epi64, _mm512_setzero_si512};
    let down: [_; W] = std::array::from_fn(|w| load(&query.down, w));
    let up: [_; W] = std::array::from_fn(|w| load(&query.up, w));
    for (row, out) in signs.chunks_exact(W).zip(out) {
        let mut sums = _mm512_setzero_si512();
        for w in 0..W {
            sums = add_word(sums, row[w], down[w], up[w]);
        }
        *out = _mm512_reduce_add_epi64(sums) as u32;
    }
}

/// The slots to rerank: the `selected` slots (`None`: every slot) whose distance is within the
/// histogram bucket that completes `size` of them, in slot order (every selected slot when at
/// most `size` are selected); and how many slots were selected. `words` is the sign plane's
/// length.
pub(super) fn pool(
    distances: &[u32],
    words: usize,
    size: usize,
    selected: Option<&dyn Fn(usize) -> bool>,
) -> (Vec<u32>, usize) {
    let largest = u32::from(PEAK) * 64 * words as u32;
    let mut shift = 0;
    while (largest >> shift) as usize >= BUCKETS {
        shift += 1;
    }
    let mut histogram = vec![0u32; ((largest >> shift) as usize) + 1];
    let count = match selected {
        None => {
            for &distance in distances {
                histogram[(distance >> shift) as usize] += 1;
            }
            distances.len()
        }
        Some(selected) => {
            let mut count = 0;
            for (slot, &distance) in distances.iter().enumerate() {
                if selected(slot) {
                    histogram[(distance >> shift) as usize] += 1;
                    count += 1;
                }
            }
            count
        }
    };
    let mut cut = histogram.len();
    let mut seen = 0usize;
    for (bucket, &n) in histogram.iter().enumerate() {
        seen += n as usize;
        if seen >= size {
            cut = bucket;
            break;
        }
    }
    let within = |distance: u32| (distance >> shift) as usize <= cut;
    let slots = distances
        .iter()
        .enumerate()
        .filter(|&(slot, &distance)| within(distance) && selected.is_none_or(|keep| keep(slot)))
        .map(|(slot, _)| slot as u32)
        .collect();
    (slots, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(count: usize, words: usize) -> Vec<u64> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        (0..count * words)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            })
            .collect()
    }

    /// The distance by its definition.
    fn by_definition(vector: &[f32], signs: &[u64]) -> u32 {
        let query = ScanQuery::new(vector);
        (0..vector.len())
            .map(|i| {
                let s = signs[i / 64] >> (i % 64) & 1 == 1;
                u32::from(if s { query.up[i] } else { PEAK - query.up[i] })
            })
            .sum()
    }

    #[test]
    fn both_scans_give_the_distances_by_definition() {
        for dimensions in [1usize, 5, 64, 100, 384] {
            let words = sign_words(dimensions);
            let mut signs = rows(53, words);
            // Bits past the dimensions are 0 in a real plane.
            if dimensions % 64 != 0 {
                for row in signs.chunks_exact_mut(words) {
                    row[words - 1] &= (1u64 << (dimensions % 64)) - 1;
                }
            }
            let vector: Vec<f32> = (0..dimensions)
                .map(|i| ((i * 7919) % 201) as f32 / 100.0 - 1.0)
                .collect();
            let query = ScanQuery::new(&vector);
            let expected: Vec<u32> = signs
                .chunks_exact(words)
                .map(|row| by_definition(&vector, row))
                .collect();
            let mut portable = vec![0u32; 53];
            distances_portable(&query, &signs, &mut portable);
            assert_eq!(portable, expected, "{dimensions}");
            let mut dispatched = vec![0u32; 53];
            distances(&query, &signs, &mut dispatched);
            assert_eq!(dispatched, expected, "{dimensions}");
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx2") {
                let mut avx2 = vec![0u32; 53];
                // SAFETY: checked just above.
                unsafe { distances_avx2(&query, &signs, &mut avx2) };
                assert_eq!(avx2, expected, "{dimensions}");
            }
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                let mut wide = vec![0u32; 53];
                // SAFETY: checked just above.
                unsafe { distances_avx512(&query, &signs, &mut wide) };
                assert_eq!(wide, expected, "{dimensions}");
            }
        }
    }

    #[test]
    fn the_pool_holds_the_closest_selected_slots_in_slot_order() {
        let distances: Vec<u32> = (0..1000u32).map(|i| (i * 7919) % 20_000).collect();
        let selected = |slot: usize| !slot.is_multiple_of(3);
        let (pool, count) = pool(&distances, 6, 50, Some(&selected));
        assert_eq!(count, (0..1000).filter(|&s| selected(s)).count());
        assert!(pool.len() >= 50);
        assert!(pool.windows(2).all(|w| w[0] < w[1]));
        assert!(pool.iter().all(|&s| selected(s as usize)));
        let worst = pool.iter().map(|&s| distances[s as usize]).max().unwrap();
        let mut closest: Vec<u32> = (0..1000)
            .filter(|&s| selected(s))
            .map(|s| distances[s])
            .collect();
        closest.sort_unstable();
        // Every slot closer than the pool's worst is in it.
        assert!((0..1000)
            .filter(|&s| selected(s) && distances[s] < worst)
            .all(|s| pool.contains(&(s as u32))));
        assert!(worst >= closest[49]);
        // Fewer selected than the size: all of them.
        let (all, selected_count) = super::pool(&distances, 6, 5000, Some(&selected));
        assert_eq!(all.len(), selected_count);
        assert_eq!(super::pool(&distances, 6, 5000, None).0.len(), 1000);
        let (unfiltered, count) = super::pool(&distances, 6, 50, None);
        assert_eq!(count, 1000);
        assert!(unfiltered.len() >= 50 && unfiltered.len() < 1000);
    }
}
