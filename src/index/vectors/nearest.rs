//! The nearest documents of a query vector: the pool-and-rerank top-`k`. Above [`PREFILTER_POOL`]
//! selected vectors (and with balanced signs) the prefilter ([`super::prefilter`]) keeps a pool of
//! slots by their sign planes alone; the pool (or every selected slot) is reranked by the exact
//! cosine of its codes ([`super::dots`]) through a top-`k` heap.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::codes::{low_bytes, sign_words};
use super::dots::{dots, Planes};
use super::prefilter::{self, ScanQuery};
use super::quantize::{inverse_norm, quantize, query_range};
use super::{Vectors, PREFILTER_POOL};

thread_local! {
    /// The prefilter's distances, reused by this thread's queries.
    static DISTANCES: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A query vector, quantized for [`Vectors::cosine`] and [`Vectors::nearest`].
#[derive(Debug, Clone)]
pub(in crate::index) struct QueryVector {
    pub(super) codes: Vec<i16>,
    pub(super) inverse_norm: f64,
    pub(super) scan: ScanQuery,
}

/// A document with its cosine, ordered by cosine then by document (for the top-`k` heap: a
/// greater entry ranks lower).
#[derive(Debug, Clone, Copy)]
pub(in crate::index) struct Neighbor {
    pub(in crate::index) doc: u32,
    pub(in crate::index) cosine: f32,
}

struct Worse(Neighbor);

impl Ord for Worse {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .cosine
            .total_cmp(&self.0.cosine)
            .then_with(|| self.0.doc.cmp(&other.0.doc))
    }
}

impl PartialOrd for Worse {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Worse {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worse {}

impl Vectors {
    /// Quantizes a query vector (checked: finite, of the index's dimensionality).
    pub(in crate::index) fn query(vector: &[f32]) -> QueryVector {
        let range = query_range(vector.len());
        let codes = quantize(vector, range, |x| x as i16);
        let inverse_norm = inverse_norm(codes.iter().map(|&c| i64::from(c)));
        QueryVector {
            codes,
            inverse_norm,
            scan: ScanQuery::new(vector),
        }
    }

    fn planes(&self, dimensions: usize) -> Planes<'_> {
        Planes {
            signs: &self.signs,
            low: &self.low,
            words: sign_words(dimensions),
            bytes: low_bytes(dimensions),
        }
    }

    fn cosine_of(&self, query: &QueryVector, slot: usize, dot: i32) -> f32 {
        (f64::from(dot) * query.inverse_norm * f64::from(self.inverse_norms[slot])) as f32
    }

    /// The cosine of `query` with the vector of `doc` (`None`: no vector).
    pub(in crate::index) fn cosine(&self, query: &QueryVector, doc: u32) -> Option<f32> {
        let slot = self.slot(doc)?;
        let mut out = [0i32];
        dots(
            &query.codes,
            self.planes(query.codes.len()),
            &[slot as u32],
            &mut out,
        );
        Some(self.cosine_of(query, slot, out[0]))
    }

    /// The `k` documents nearest to `query` among those `selected` accepts (`None`: every
    /// document), best first (cosine
    /// descending, then document ascending), and how many were scanned (the selected documents
    /// with a vector). Above [`PREFILTER_POOL`] selected vectors, the nearest of the prefilter's
    /// pool (see the module docs).
    pub(in crate::index) fn nearest(
        &self,
        query: &QueryVector,
        k: usize,
        selected: Option<&dyn Fn(u32) -> bool>,
    ) -> (Vec<Neighbor>, usize) {
        self.nearest_with_pool(query, k, selected, PREFILTER_POOL)
    }

    /// [`Self::nearest`] with a prefilter pool of `pool` slots.
    pub(in crate::index) fn nearest_with_pool(
        &self,
        query: &QueryVector,
        k: usize,
        selected: Option<&dyn Fn(u32) -> bool>,
        pool: usize,
    ) -> (Vec<Neighbor>, usize) {
        if k == 0 || self.dimensions != Some(query.codes.len()) {
            return (Vec::new(), 0);
        }
        let dimensions = query.codes.len();
        let planes = self.planes(dimensions);
        let slots = self.slot_doc.len();
        let (candidates, scanned) = if slots > pool && self.signs_balanced() {
            let by_slot = selected.map(|selected| move |slot: usize| selected(self.slot_doc[slot]));
            let run = |distances: &mut Vec<u32>| {
                distances.clear();
                distances.resize(slots, 0);
                prefilter::distances(&query.scan, &self.signs, distances);
                prefilter::pool(
                    distances,
                    planes.words,
                    pool,
                    by_slot.as_ref().map(|f| f as &dyn Fn(usize) -> bool),
                )
            };
            // One buffer per thread: a fresh 400 kB allocation per query is fresh pages from the
            // kernel each time.
            DISTANCES.with(|buffer| match buffer.try_borrow_mut() {
                Ok(mut buffer) => run(&mut buffer),
                Err(_) => run(&mut Vec::new()),
            })
        } else {
            let all: Vec<u32> = (0..slots as u32)
                .filter(|&slot| selected.is_none_or(|keep| keep(self.slot_doc[slot as usize])))
                .collect();
            let count = all.len();
            (all, count)
        };
        let mut dot_products = vec![0i32; candidates.len()];
        dots(&query.codes, planes, &candidates, &mut dot_products);
        let mut heap: BinaryHeap<Worse> = BinaryHeap::with_capacity(k + 1);
        for (&slot, &dot) in candidates.iter().zip(&dot_products) {
            let entry = Neighbor {
                doc: self.slot_doc[slot as usize],
                cosine: self.cosine_of(query, slot as usize, dot),
            };
            if heap.len() < k {
                heap.push(Worse(entry));
            } else if let Some(mut worst) = heap.peek_mut() {
                if Worse(entry) < *worst {
                    *worst = Worse(entry);
                }
            }
        }
        let nearest = heap
            .into_sorted_vec()
            .into_iter()
            .map(|worse| worse.0)
            .collect();
        (nearest, scanned)
    }
}
