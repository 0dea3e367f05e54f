//! How a tool vector's `i8` codes are held: split into a *sign plane* and the packed low bits.
//!
//! A code `c` in two's complement is `-128 * s + l`, with `s` its top bit (`c < 0`) and `l` its
//! low 7 bits. Per vector of `d` dimensions the index keeps
//!
//! * the sign plane: `words(d) = ceil(d / 64)` `u64`s, bit `i % 64` of word `i / 64` is `s_i`
//!   (`8 * words(d)` bytes, 48 B at 384 dimensions); every sign plane of the index is one
//!   contiguous array, which the prefilter ([`super::prefilter`]) reads alone;
//! * the low bits: `7 * ceil(d / 8)` bytes (336 B at 384 dimensions), eight 7-bit values per 7
//!   bytes, little-endian (value `t` of a group at bits `7t..7t + 7`).
//!
//! That is 8 bits per code, as many as the `i8` codes themselves: the split costs no memory and
//! [`decode`] gives back exactly the codes [`encode`] was given, so cosines computed from decoded
//! codes are the cosines of the codes.

/// `u64` words of the sign plane of a vector of `dimensions`.
pub(super) const fn sign_words(dimensions: usize) -> usize {
    dimensions.div_ceil(64)
}

/// Bytes of packed low bits of a vector of `dimensions` (7 per group of 8 codes).
pub(super) const fn low_bytes(dimensions: usize) -> usize {
    7 * dimensions.div_ceil(8)
}

/// Codes a decoded vector occupies (`dimensions` rounded up to whole groups of 8; the padding
/// decodes as 0).
pub(super) const fn padded(dimensions: usize) -> usize {
    8 * dimensions.div_ceil(8)
}

/// `SPREAD_SIGNS[b]`: byte `t` is `0x80` where bit `t` of `b` is set (the top bits of 8 codes).
const SPREAD_SIGNS: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut t = 0;
        while t < 8 {
            if b >> t & 1 == 1 {
                table[b] |= 0x80 << (8 * t);
            }
            t += 1;
        }
        b += 1;
    }
    table
};

/// Eight 7-bit values at bits `7t..7t + 7` of `x` spread to one per byte (byte `t`), by halving
/// the field groups three times (4 + 4, then 2 + 2, then 1 + 1 per lane).
#[inline]
const fn spread7(x: u64) -> u64 {
    let x = (x & 0x0FFF_FFFF) | ((x & 0x00FF_FFFF_F000_0000) << 4);
    let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x0FFF_C000_0FFF_C000) << 2);
    (x & 0x007F_007F_007F_007F) | ((x & 0x3F80_3F80_3F80_3F80) << 1)
}

/// The inverse of [`spread7`]: the low 7 bits of each byte of `x`, packed into 56 bits.
#[inline]
const fn pack7(x: u64) -> u64 {
    let x = x & 0x7F7F_7F7F_7F7F_7F7F;
    let x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) >> 1);
    let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) >> 2);
    (x & 0x0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) >> 4)
}

/// Writes the sign plane (`signs`, [`sign_words`] long) and the low bits (`low`, [`low_bytes`]
/// long) of `codes`.
pub(super) fn encode(codes: &[i8], signs: &mut [u64], low: &mut [u8]) {
    debug_assert_eq!(signs.len(), sign_words(codes.len()));
    debug_assert_eq!(low.len(), low_bytes(codes.len()));
    signs.fill(0);
    for (group, chunk) in codes.chunks(8).enumerate() {
        let mut bytes = [0u8; 8];
        for (byte, &code) in bytes.iter_mut().zip(chunk) {
            *byte = code as u8;
        }
        let word = u64::from_le_bytes(bytes);
        // The top bit of byte `t` to bit `t`: one multiplication gathers the eight bits.
        let sign_byte =
            (((word & 0x8080_8080_8080_8080) >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56;
        signs[group / 8] |= sign_byte << (8 * (group % 8));
        let packed = pack7(word).to_le_bytes();
        low[7 * group..7 * group + 7].copy_from_slice(&packed[..7]);
    }
}

/// The codes of one vector back from its sign plane and low bits, into `out` ([`padded`] long:
/// the padding is 0).
#[inline]
pub(super) fn decode(signs: &[u64], low: &[u8], out: &mut [i8]) {
    debug_assert_eq!(out.len(), 8 * (low.len() / 7));
    for (group, (out, packed)) in out.chunks_exact_mut(8).zip(low.chunks_exact(7)).enumerate() {
        let mut bytes = [0u8; 8];
        bytes[..7].copy_from_slice(packed);
        let sign_byte = (signs[group / 8] >> (8 * (group % 8))) & 0xFF;
        let codes = spread7(u64::from_le_bytes(bytes)) | SPREAD_SIGNS[sign_byte as usize];
        for (out, byte) in out.iter_mut().zip(codes.to_le_bytes()) {
            *out = byte as i8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreading_inverts_packing() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bytes = state & 0x7F7F_7F7F_7F7F_7F7F;
            assert_eq!(spread7(pack7(bytes)), bytes);
            assert_eq!(pack7(bytes) >> 56, 0);
            for t in 0..8 {
                assert_eq!((pack7(bytes) >> (7 * t)) & 0x7F, (bytes >> (8 * t)) & 0x7F);
            }
        }
        for (b, spread) in SPREAD_SIGNS.iter().enumerate() {
            for t in 0..8 {
                let expected = if b >> t & 1 == 1 { 0x80 } else { 0 };
                assert_eq!((spread >> (8 * t)) & 0xFF, expected);
            }
        }
    }

    #[test]
    fn decoding_gives_back_every_code() {
        for dimensions in [1usize, 7, 8, 9, 63, 64, 65, 384, 389] {
            let codes: Vec<i8> = (0..dimensions)
                .map(|i| ((i * 37 + dimensions) % 256) as u8 as i8)
                .collect();
            let mut signs = vec![u64::MAX; sign_words(dimensions)];
            let mut low = vec![0xFF; low_bytes(dimensions)];
            encode(&codes, &mut signs, &mut low);
            let mut out = vec![1i8; padded(dimensions)];
            decode(&signs, &low, &mut out);
            assert_eq!(&out[..dimensions], &codes[..], "{dimensions}");
            assert!(out[dimensions..].iter().all(|&c| c == 0));
            for (i, &code) in codes.iter().enumerate() {
                assert_eq!(signs[i / 64] >> (i % 64) & 1 == 1, code < 0);
            }
            assert!(
                codes.len().is_multiple_of(64)
                    || signs[codes.len() / 64] >> (codes.len() % 64) == 0
            );
        }
        let every: Vec<i8> = (-128..=127).collect();
        let (mut signs, mut low) = (vec![0; 4], vec![0; low_bytes(256)]);
        encode(&every, &mut signs, &mut low);
        let mut out = vec![0i8; 256];
        decode(&signs, &low, &mut out);
        assert_eq!(out, every);
    }
}
