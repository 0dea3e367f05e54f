//! Tests of the tool vectors: row checks, quantization, slots, the prefilter and the nearest.

use super::codes::{self, low_bytes, sign_words};
use super::dots::{dot, dots, dots_portable, Planes};
#[cfg(target_arch = "x86_64")]
use super::dots::{dots_avx2, dots_avx512};
use super::nearest::Neighbor;
use super::prefilter;
use super::quantize::quantize;
use super::slots::NONE;
use super::*;

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn rows_are_checked() {
    assert_eq!(
        parse_rows(&bytes(&[1.0, 2.0]), 1, 2).unwrap(),
        vec![1.0, 2.0]
    );
    assert!(parse_rows(&bytes(&[1.0, 2.0]), 1, 3).is_err());
    assert!(parse_rows(&bytes(&[1.0, 2.0, 3.0]), 2, 1).is_err());
    assert!(parse_rows(&[0, 0, 0], 1, 1).is_err());
    assert!(parse_rows(&[], 0, 0).is_err());
    assert!(parse_rows(&bytes(&[1.0, f32::NAN]), 1, 2)
        .unwrap_err()
        .message()
        .contains("non-finite"));
    assert!(parse_rows(&bytes(&[f32::INFINITY]), 1, 1).is_err());
    assert!(parse_rows(&[], usize::MAX, 2).is_err());
    assert_eq!(parse_rows(&[], 0, 3).unwrap(), Vec::<f32>::new());
}

#[test]
fn cosines_are_close_to_exact_and_zero_for_zero_vectors() {
    let mut vectors = Vectors::default();
    let a = [0.3f32, -0.2, 0.9, 0.05];
    let b = [0.1f32, 0.4, -0.3, 0.8];
    vectors.set(0, &a);
    vectors.set(1, &b);
    vectors.set(2, &[0.0; 4]);
    let exact = |x: &[f32], y: &[f32]| {
        let dot: f32 = x.iter().zip(y).map(|(a, b)| a * b).sum();
        let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>().sqrt();
        dot / (norm(x) * norm(y))
    };
    let query = Vectors::query(&a);
    assert!((vectors.cosine(&query, 0).unwrap() - 1.0).abs() < 1e-3);
    assert!((vectors.cosine(&query, 1).unwrap() - exact(&a, &b)).abs() < 1e-2);
    assert!(vectors.cosine(&query, 2).unwrap().abs() < f32::EPSILON);
    assert_eq!(vectors.cosine(&query, 3), None);
    // Scaling a vector does not change its codes.
    let scaled: Vec<f32> = b.iter().map(|x| x * 1000.0).collect();
    vectors.set(1, &scaled);
    assert!((vectors.cosine(&query, 1).unwrap() - exact(&a, &b)).abs() < 1e-2);
    let zero = Vectors::query(&[0.0; 4]);
    assert!(vectors.cosine(&zero, 0).unwrap().abs() < f32::EPSILON);
}

#[test]
fn slots_stay_dense_through_drops_moves_and_remaps() {
    let mut vectors = Vectors::default();
    for doc in 0..5u32 {
        vectors.set(doc, &[doc as f32 + 1.0, 1.0]);
    }
    vectors.drop_doc(1);
    vectors.drop_doc(1);
    assert_eq!(vectors.docs(), [0, 2, 3, 4]);
    vectors.move_doc(4, 7);
    assert_eq!(vectors.docs(), [0, 2, 3, 7]);
    let query = Vectors::query(&[5.0, 1.0]);
    assert!(vectors.cosine(&query, 7).unwrap() > 0.999);
    assert_eq!(vectors.cosine(&query, 4), None);
    // Documents 1, 3 and 5 go: 0 -> 0, 2 -> 1, 4 -> 2, 6 -> 3, 7 -> 4.
    let remap = [0, NONE, 1, NONE, 2, NONE, 3, 4];
    vectors.remap(&remap);
    assert_eq!(vectors.docs(), [0, 1, 4]);
    assert!(vectors.cosine(&query, 4).unwrap() > 0.999);
    let (nearest, scanned) = vectors.nearest(&query, 2, None);
    assert_eq!(scanned, 3);
    assert_eq!(nearest.iter().map(|n| n.doc).collect::<Vec<_>>(), [4, 1]);
    let (nearest, scanned) = vectors.nearest(&query, 5, Some(&|doc| doc != 4));
    assert_eq!((nearest.len(), scanned), (2, 2));
    vectors.clear();
    assert_eq!((vectors.len(), vectors.dimensions()), (0, None));
}

#[test]
fn the_portable_and_the_avx2_scan_agree() {
    let dimensions = 389; // not a multiple of any vector width
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let query: Vec<i16> = (0..dimensions)
        .map(|_| (next() % 2049) as i16 - 1024)
        .collect();
    let rows: Vec<i8> = (0..dimensions * 37).map(|_| (next() % 255) as i8).collect();
    let (words, bytes) = (sign_words(dimensions), low_bytes(dimensions));
    let (mut signs, mut low) = (vec![0u64; 37 * words], vec![0u8; 37 * bytes]);
    for (slot, row) in rows.chunks(dimensions).enumerate() {
        codes::encode(
            row,
            &mut signs[slot * words..(slot + 1) * words],
            &mut low[slot * bytes..(slot + 1) * bytes],
        );
    }
    let planes = Planes {
        signs: &signs,
        low: &low,
        words,
        bytes,
    };
    // Every slot, in another order, with one twice.
    let slots: Vec<u32> = (0..37u32).rev().chain([5]).collect();
    let expected: Vec<i32> = slots
        .iter()
        .map(|&slot| dot(&query, &rows[slot as usize * dimensions..][..dimensions]))
        .collect();
    let mut portable = vec![0i32; slots.len()];
    dots_portable(&query, planes, &slots, &mut portable);
    assert_eq!(portable, expected);
    let mut dispatched = vec![0i32; slots.len()];
    dots(&query, planes, &slots, &mut dispatched);
    assert_eq!(dispatched, expected);
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        let mut avx2 = vec![0i32; slots.len()];
        // SAFETY: checked just above.
        unsafe { dots_avx2(&query, planes, &slots, &mut avx2) };
        assert_eq!(avx2, expected);
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vbmi")
    {
        let mut wide = vec![0i32; slots.len()];
        // SAFETY: checked just above.
        unsafe { dots_avx512(&query, planes, &slots, &mut wide) };
        assert_eq!(wide, expected);
    }
}

/// `count` vectors of `dimensions` from a fixed sequence, half of them near one of the others
/// (as replicas are), and the vector store holding them for documents `0..count`.
fn corpus(count: usize, dimensions: usize, order: &[usize]) -> (Vec<Vec<f32>>, Vectors) {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 20_001) as f32 / 10_000.0 - 1.0
    };
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(count);
    for i in 0..count {
        let fresh: Vec<f32> = (0..dimensions).map(|_| next()).collect();
        rows.push(if i % 2 == 1 {
            rows[i / 2]
                .iter()
                .zip(&fresh)
                .map(|(a, b)| a + b / 4.0)
                .collect()
        } else {
            fresh
        });
    }
    let mut vectors = Vectors::default();
    for &doc in order {
        vectors.set(doc as u32, &rows[doc]);
    }
    (rows, vectors)
}

/// The `k` nearest by their definition: every selected document's cosine, best first.
fn by_definition(vectors: &Vectors, query: &QueryVector, k: usize, docs: usize) -> Vec<u32> {
    let mut all: Vec<(f32, u32)> = (0..docs as u32)
        .filter_map(|doc| Some((vectors.cosine(query, doc)?, doc)))
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|(_, doc)| doc).collect()
}

#[test]
fn the_prefiltered_nearest_are_exact_within_the_pool_and_find_each_vector_itself() {
    let (count, dimensions) = (600, 72);
    let order: Vec<usize> = (0..count).collect();
    let (rows, vectors) = corpus(count, dimensions, &order);
    let docs = |found: &[Neighbor]| found.iter().map(|n| n.doc).collect::<Vec<_>>();
    for (doc, row) in rows.iter().enumerate().step_by(7) {
        let query = Vectors::query(row);
        // A pool as large as the corpus: the exact ranking.
        let (all, scanned) = vectors.nearest_with_pool(&query, 10, None, count);
        assert_eq!(scanned, count);
        assert_eq!(docs(&all), by_definition(&vectors, &query, 10, count));
        // A pool of 24: the stored vector itself is the closest sign plane, so it stays first.
        let (pooled, scanned) = vectors.nearest_with_pool(&query, 10, None, 24);
        assert_eq!(scanned, count);
        assert_eq!(pooled[0].doc, doc as u32);
        assert!(pooled.windows(2).all(|w| w[0].cosine >= w[1].cosine));
        // Cosines are the exact ones.
        for found in &pooled {
            assert_eq!(Some(found.cosine), vectors.cosine(&query, found.doc));
        }
        // A group filter: only selected documents, and the query's own when selected.
        let even = |doc: u32| doc.is_multiple_of(2);
        let (filtered, scanned) = vectors.nearest_with_pool(&query, 10, Some(&even), 24);
        assert_eq!(scanned, count / 2);
        assert!(filtered.iter().all(|n| n.doc.is_multiple_of(2)));
        if doc.is_multiple_of(2) {
            assert_eq!(filtered[0].doc, doc as u32);
        }
    }
}

#[test]
fn the_prefiltered_nearest_do_not_depend_on_insertion_order() {
    let (count, dimensions) = (500, 40);
    let forward: Vec<usize> = (0..count).collect();
    let shuffled: Vec<usize> = (0..count).map(|i| (i * 263) % count).collect();
    let (rows, first) = corpus(count, dimensions, &forward);
    let (_, mut second) = corpus(count, dimensions, &shuffled);
    // Drops and re-adds move slots around too.
    for doc in (0..count as u32).step_by(11) {
        second.drop_doc(doc);
    }
    for doc in (0..count).step_by(11) {
        second.set(doc as u32, &rows[doc]);
    }
    for row in rows.iter().step_by(13) {
        let query = Vectors::query(&row.iter().map(|x| -x * 0.5 + 0.1).collect::<Vec<_>>());
        let a = first.nearest_with_pool(&query, 20, None, 40);
        let b = second.nearest_with_pool(&query, 20, None, 40);
        let docs = |found: &[Neighbor]| found.iter().map(|n| (n.doc, n.cosine)).collect::<Vec<_>>();
        assert_eq!(docs(&a.0), docs(&b.0));
    }
}

#[test]
fn tiny_vectors_keep_their_direction() {
    // `127 / largest` overflows `f32` for subnormal values: without the exact magnification
    // every nonzero value became +-127.
    let tiny = f32::from_bits(1);
    let small = [tiny, -2.0 * tiny, 3.0 * tiny];
    let scaled = [1.0f32, -2.0, 3.0];
    assert_eq!(
        quantize(&small, 127.0, |x| x as i8),
        quantize(&scaled, 127.0, |x| x as i8)
    );
    let query = Vectors::query(&small);
    assert_eq!(query.codes, Vectors::query(&scaled).codes);
    let mut signs = vec![0u64; 1];
    let mut low = vec![0u8; low_bytes(3)];
    codes::encode(&[1, -2, 3], &mut signs, &mut low);
    let (mut from_small, mut from_scaled) = ([0u32], [0u32]);
    prefilter::distances(&query.scan, &signs, &mut from_small);
    prefilter::distances(&Vectors::query(&scaled).scan, &signs, &mut from_scaled);
    assert_eq!(from_small, from_scaled);
    let mut vectors = Vectors::default();
    vectors.set(0, &small);
    assert!((vectors.cosine(&Vectors::query(&scaled), 0).unwrap() - 1.0).abs() < 1e-4);
}

#[test]
fn vectors_around_a_common_direction_are_ranked_by_the_exact_cosine_of_every_one() {
    let (count, dimensions) = (900, 48);
    let order: Vec<usize> = (0..count).collect();
    let (rows, balanced) = corpus(count, dimensions, &order);
    assert!(balanced.signs_balanced());
    // The same vectors moved far along one direction: most signs alike.
    let common: Vec<f32> = (0..dimensions)
        .map(|i| if i % 3 == 0 { -4.0 } else { 4.0 })
        .collect();
    let shifted: Vec<Vec<f32>> = rows
        .iter()
        .map(|row| row.iter().zip(&common).map(|(x, c)| x + c).collect())
        .collect();
    let mut skewed = Vectors::default();
    for (doc, row) in shifted.iter().enumerate() {
        skewed.set(doc as u32, row);
    }
    assert!(!skewed.signs_balanced());
    for row in shifted.iter().step_by(17) {
        let query = Vectors::query(row);
        let (found, _) = skewed.nearest_with_pool(&query, 25, None, 40);
        let docs: Vec<u32> = found.iter().map(|n| n.doc).collect();
        assert_eq!(docs, by_definition(&skewed, &query, 25, count));
    }
    // The counts follow replacements and drops: equal to counting afresh.
    for doc in (0..count as u32).step_by(5) {
        skewed.set(doc, &rows[doc as usize]);
    }
    for doc in (0..count as u32).step_by(7) {
        skewed.drop_doc(doc);
    }
    let mut afresh = vec![0u32; dimensions];
    let words = sign_words(dimensions);
    for slot in 0..skewed.len() {
        for (i, count) in afresh.iter_mut().enumerate() {
            *count += (skewed.signs[slot * words + i / 64] >> (i % 64) & 1) as u32;
        }
    }
    assert_eq!(skewed.negatives, afresh);
}

#[test]
fn the_query_dot_product_cannot_overflow() {
    let dimensions = MAX_DIMENSIONS;
    let mut vectors = Vectors::default();
    let ones = vec![1.0f32; dimensions];
    vectors.set(0, &ones);
    let negative: Vec<f32> = ones.iter().map(|x| -x).collect();
    vectors.set(1, &negative);
    let query = Vectors::query(&ones);
    assert!((vectors.cosine(&query, 0).unwrap() - 1.0).abs() < 1e-6);
    assert!((vectors.cosine(&query, 1).unwrap() + 1.0).abs() < 1e-6);
}
