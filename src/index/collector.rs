//! The top-k collector: the best `k` scored documents of a query, in ranking order.
//!
//! Ranking order: exact name matches first, then score descending (finite `f32`s compared with
//! `total_cmp`), then the document's tie-break ordinal, its position in `(group, tool, key)` byte
//! order. So a ranking is fully deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A scored document.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScoredDoc {
    pub(super) doc: u32,
    pub(super) exact: bool,
    pub(super) score: f32,
    /// The document's tie-break ordinal (see [`super::SearchIndex`]).
    pub(super) ordinal: u32,
}

/// Ranking order (see the module docs): `Less` ranks first.
fn ranking_order(a: &ScoredDoc, b: &ScoredDoc) -> Ordering {
    b.exact
        .cmp(&a.exact)
        .then_with(|| b.score.total_cmp(&a.score))
        .then_with(|| a.ordinal.cmp(&b.ordinal))
}

/// The best `k` documents collected, in a heap whose top is the worst of them.
pub(super) struct TopK {
    k: usize,
    heap: BinaryHeap<Ranked>,
}

/// A document ordered by [`ranking_order`]: greater is ranked lower.
struct Ranked(ScoredDoc);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        ranking_order(&self.0, &other.0)
    }
}

impl TopK {
    pub(super) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024)),
        }
    }

    pub(super) fn push(&mut self, scored: ScoredDoc) {
        if self.heap.len() < self.k {
            self.heap.push(Ranked(scored));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if ranking_order(&scored, &worst.0) == Ordering::Less {
                *worst = Ranked(scored);
            }
        }
    }

    /// The collected documents, best first.
    pub(super) fn into_sorted(self) -> Vec<ScoredDoc> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|ranked| ranked.0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_best_in_order() {
        let scored = |doc: u32, exact: bool, score: f32| ScoredDoc {
            doc,
            exact,
            score,
            ordinal: doc,
        };
        let mut top = TopK::new(3);
        for (doc, score) in [(0, 1.0), (1, 5.0), (2, 3.0), (3, 5.0), (4, 0.5)] {
            top.push(scored(doc, false, score));
        }
        top.push(scored(9, true, 0.0));
        let docs: Vec<u32> = top.into_sorted().iter().map(|c| c.doc).collect();
        assert_eq!(docs, [9, 1, 3]);
        let mut none = TopK::new(0);
        none.push(scored(1, true, 1.0));
        assert!(none.into_sorted().is_empty());
    }
}
