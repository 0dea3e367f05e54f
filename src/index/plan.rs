//! The query plan of the `MaxScore` execution ([`super::maxscore`]): the content tokens by upper
//! bound, the optional tokens split into scanned and looked-up ones, and the suffix sums of the
//! bounds the pruning compares with.

use super::analysis::QueryToken;
use super::bm25f::coordination;
use super::scorer::{Planned, Scorer};

/// An optional token is scanned when its list holds at most 1 / `SCAN_FRACTION` of the documents.
const SCAN_FRACTION: usize = 8;

/// The query's tokens in execution order, with the sums of their upper bounds.
pub(super) struct QueryPlan<'q, 'a> {
    /// Content tokens by upper bound, highest first (a stable sort: ties keep query order).
    pub(super) content: Vec<Planned<'q, 'a>>,
    /// Optional tokens with short lists: scanned once the essential tokens are scored.
    pub(super) scanned: Vec<Planned<'q, 'a>>,
    /// The common optional tokens (`the`, `a`): looked up for the candidates only.
    pub(super) looked_up: Vec<Planned<'q, 'a>>,
    /// `suffix[at]`: what the content tokens from `at` on can add (upper bound, weight) and how
    /// many postings they hold. Computed once, so a query of `n` distinct tokens costs O(n) here,
    /// not O(n^2).
    pub(super) suffix: Vec<(f32, f32, usize)>,
    /// Summed upper bounds and weights of `looked_up`.
    pub(super) looked_up_sum: (f32, f32),
    /// Number of distinct query tokens (at least 1), the denominator of the coordination factor.
    pub(super) query_tokens: f32,
}

impl<'q, 'a> QueryPlan<'q, 'a> {
    pub(super) fn new(scorer: &Scorer<'_>, tokens: &'q [QueryToken<'a>], live: usize) -> Self {
        let mut content: Vec<Planned<'q, 'a>> = tokens
            .iter()
            .filter(|token| !token.optional)
            .map(|token| scorer.plan(token, true))
            .collect();
        content.sort_by(|a, b| b.bound.total_cmp(&a.bound));
        // The split of the optional tokens depends on the index alone, so the optional gains
        // always add up in the same order.
        let (scanned, looked_up): (Vec<Planned<'q, 'a>>, Vec<Planned<'q, 'a>>) = tokens
            .iter()
            .filter(|token| token.optional && token.term.is_some())
            .map(|token| scorer.plan(token, false))
            .partition(|planned| planned.postings * SCAN_FRACTION <= live);
        let sums = |planned: &[Planned<'_, '_>]| {
            (
                planned.iter().map(|p| p.bound).sum::<f32>(),
                planned.iter().map(|p| p.token.weight).sum::<f32>(),
            )
        };
        let mut suffix = vec![(0.0f32, 0.0f32, 0usize); content.len() + 1];
        for at in (0..content.len()).rev() {
            let (bound, weight, postings) = suffix[at + 1];
            let planned = &content[at];
            suffix[at] = (
                bound + planned.bound,
                weight + planned.token.weight,
                postings + planned.postings,
            );
        }
        Self {
            looked_up_sum: sums(&looked_up),
            content,
            scanned,
            looked_up,
            suffix,
            query_tokens: tokens.len().max(1) as f32,
        }
    }

    /// What the content tokens from `from` on and the looked-up optional tokens can add (upper
    /// bound, weight).
    pub(super) fn rest(&self, from: usize) -> (f32, f32) {
        let (bound, weight, _) = self.suffix[from];
        (bound + self.looked_up_sum.0, weight + self.looked_up_sum.1)
    }

    /// The score of summed gains `bound` matched with weight `weight`.
    pub(super) fn upper(&self, bound: f32, weight: f32) -> f32 {
        bound * coordination(weight, self.query_tokens)
    }
}
