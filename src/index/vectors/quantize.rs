//! The quantizer: a vector's `i8` codes (a stored tool vector) or `i16` codes (a query), scaled so its
//! largest magnitude is the code range, and the codes' inverse norm (see the [`super`] module docs).

/// The codes of `vector` scaled so its largest magnitude is `range`, rounded half away from zero
/// (all zero for a zero vector). Normalizing first does not change them (the scale is relative to
/// the maximum), so the codes are those of the L2-normalized vector. `f32` arithmetic and a
/// truncating conversion: no library call per value, the same result on every machine.
pub(in crate::index) fn quantize<T>(vector: &[f32], range: f32, cast: impl Fn(i32) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(vector.len());
    quantize_into(vector, range, cast, &mut out);
    out
}

/// [`quantize`] into `out` (cleared first).
pub(super) fn quantize_into<T>(
    vector: &[f32],
    range: f32,
    cast: impl Fn(i32) -> T,
    out: &mut Vec<T>,
) {
    let (magnify, scale) = scales(vector, range);
    out.clear();
    out.extend(vector.iter().map(|&x| {
        let scaled = (x * magnify * scale).clamp(-range, range);
        cast((scaled + 0.5f32.copysign(scaled)) as i32)
    }));
}

/// Below this largest magnitude `range / largest` may overflow `f32` (a vector of subnormal
/// values), which would turn every nonzero value into `+-range`.
const TINY: f32 = 1e-30;

/// `(magnify, scale)` for quantizing `vector` to `range`: `x * magnify * scale` maps the largest
/// magnitude to `range` (`scale` 0 for a zero vector). `magnify` is 1, or `2^100` for a vector whose
/// largest magnitude is below [`TINY`] (a power of two: exact, so it changes no direction; and
/// `x * 1` is `x`, so other vectors get the codes they always had).
pub(super) fn scales(vector: &[f32], range: f32) -> (f32, f32) {
    let largest = vector.iter().fold(0.0f32, |most, &x| most.max(x.abs()));
    let magnify = if largest < TINY {
        f32::from_bits((127 + 100) << 23)
    } else {
        1.0
    };
    let largest = largest * magnify;
    (magnify, if largest > 0.0 { range / largest } else { 0.0 })
}

/// The int8 codes of `vector` into `codes` (cleared first) and their inverse norm: what a
/// stored vector is.
pub(super) fn codes_of(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    quantize_into(vector, 127.0, |x| x as i8, codes);
    inverse_norm(codes.iter().map(|&c| i64::from(c))) as f32
}

/// `1 / ||codes||` (0 for all-zero codes).
pub(super) fn inverse_norm(codes: impl Iterator<Item = i64>) -> f64 {
    let squares: i64 = codes.map(|c| c * c).sum();
    if squares == 0 {
        0.0
    } else {
        1.0 / (squares as f64).sqrt()
    }
}

/// The query's code range at `dimensions`: the largest `r <= 32767` with
/// `r * 127 * dimensions < 2^31`, so the `i32` dot product cannot overflow.
pub(super) fn query_range(dimensions: usize) -> f32 {
    let limit = (i32::MAX as usize) / (127 * dimensions.max(1));
    limit.min(i16::MAX as usize) as f32
}
