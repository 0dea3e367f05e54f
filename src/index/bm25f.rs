//! The BM25F weight: fields and their weights, length normalization, `k1`, Lucene's `idf`, a
//! term's gain in a document, and the coordination factor. Every ranking weight is here (the
//! group-description field's are in [`super::group_text`], the query weight of a function word in
//! [`super::analysis`]).
//!
//! Every record has five fields, each tokenized with [`crate::tokenize`]:
//!
//! | field | text | weight | length normalization `b` |
//! | --- | --- | --- | --- |
//! | name | local tool name | 3.0 | 0.15 |
//! | group | group name | 0.37 | 0 |
//! | description | tool description | 1.4 | 1.0 |
//! | parameter names | keys of every `properties` mapping | 2.0 | 0.6 |
//! | parameter text | descriptions, titles and string `enum` values inside parameter schemas | 0.5 | 0.2 |
//!
//! ## Score
//!
//! For each distinct query token, a document's gain is the larger of two BM25F gains
//! (`k1 = 1.2`, field weights and `b` above, Lucene's `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`
//! over live documents): one for the token itself, one for its stem class (term frequencies of all
//! the class's terms summed, `df` = documents holding any of them). So `restaurants` finds
//! `restaurant`, while an exact rare form keeps its higher rarity. A token that is an English
//! function word or a number ([`crate::terms::is_optional_word`]) gains `0.3` times as much, from
//! its own term only (no stem class), and only in documents that match another token of the
//! query: when a query has a token of neither kind that is indexed, the function words and
//! numbers shape the ranking of the documents found by the other tokens but find none of their
//! own (a query of function words or numbers alone still finds documents by them). So a
//! question's `the`, `of` and `for`, and the dates and amounts it passes as arguments, cost no
//! more than a lookup per candidate, and `total` counts the documents that match what the
//! question is about.
//!
//! The summed gains are multiplied by the *coordination factor* `1 + 1.5 * matched / n`, where
//! `matched` is the weight of the matched query tokens and `n` the number of distinct query
//! tokens (Lucene's `coord`), so documents matching more of the query come first. A term found in
//! nearly every document has an `idf` near zero, so a shared prefix such as `github_` cannot
//! outrank a specific match. The weights were chosen on the BFCL benchmark in `bench/quality.py`
//! as one global setting (never per category).

use super::SearchIndex;

pub(super) const FIELDS: usize = 5;
pub(super) const NAME: usize = 0;
pub(super) const GROUP: usize = 1;
pub(super) const DESCRIPTION: usize = 2;
pub(super) const PARAMETER_NAMES: usize = 3;
pub(super) const PARAMETER_TEXT: usize = 4;
/// Field weights: tool name, group name, description, parameter names, parameter text.
const WEIGHTS: [f32; FIELDS] = [3.0, 0.37, 1.4, 2.0, 0.5];
/// BM25 length normalization `b` per field.
const LENGTH_NORMALIZATION: [f32; FIELDS] = [0.15, 0.0, 1.0, 0.6, 0.2];
/// BM25 term-frequency saturation.
pub(super) const K1: f32 = 1.2;
/// Weight of the coordination factor: `score * (1 + COORDINATION_WEIGHT * matched / n)`.
pub(super) const COORDINATION_WEIGHT: f32 = 1.5;

/// Lucene's BM25 `idf` of a term held by `df` of `n` documents: `ln(1 + (n - df + 0.5) / (df + 0.5))`
/// (never negative, unlike Robertson-Sparck Jones's).
#[inline]
pub(super) fn lucene_idf(n: f32, df: f32) -> f32 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// BM25 saturation of `weighted_tf` (length-normalized, weighted term frequencies summed over
/// fields), times `idf`: always below `idf * (K1 + 1)`.
#[inline]
pub(super) fn saturated_gain(idf: f32, weighted_tf: f32) -> f32 {
    idf * weighted_tf * (K1 + 1.0) / (weighted_tf + K1)
}

/// The coordination factor of a document that matched query tokens of summed weight `matched`
/// out of `query_tokens` distinct ones.
#[inline]
pub(super) fn coordination(matched: f32, query_tokens: f32) -> f32 {
    1.0 + COORDINATION_WEIGHT * matched / query_tokens
}

/// A document's score: its summed gains (`[gain, matched weight]` of the content tokens, then of the
/// optional ones) plus its group's gain (`[gain, matched]` of the group description), times the
/// coordination factor of the weight they matched (at most the query's `query_tokens`): `(sum +
/// group gain) x coordination`, added in this order. The one definition the ranking
/// ([`super::maxscore`]'s collector and threshold, the hybrid's look-ups) and `explain` use, so an
/// explained score is the ranked one bit for bit. Returns `(score, coordination)`.
#[inline]
pub(super) fn document_score(
    content: [f32; 2],
    optional: [f32; 2],
    group: [f32; 2],
    query_tokens: f32,
) -> (f32, f32) {
    let sum = content[0] + optional[0];
    let matched = content[1] + optional[1];
    let matched = (matched + group[1]).min(query_tokens);
    let coordination = coordination(matched, query_tokens);
    ((sum + group[0]) * coordination, coordination)
}

/// The BM25F weight over one index state: the live document count and each field's length
/// normalization.
pub(super) struct Bm25f {
    live: f32,
    /// Per-field `1 - b` and `b / average length` of the BM25 length normalization.
    base: [f32; FIELDS],
    slope: [f32; FIELDS],
}

impl Bm25f {
    pub(super) fn new(index: &SearchIndex) -> Self {
        let mut base = [1.0f32; FIELDS];
        let mut slope = [0.0f32; FIELDS];
        for field in 0..FIELDS {
            let b = LENGTH_NORMALIZATION[field];
            let average = if index.live == 0 {
                0.0
            } else {
                index.live_field_tokens[field] as f32 / index.live as f32
            };
            if average > 0.0 {
                base[field] = 1.0 - b;
                slope[field] = b / average;
            }
        }
        Self {
            live: index.live as f32,
            base,
            slope,
        }
    }

    /// [`lucene_idf`] of a term held by `df` live documents.
    #[inline]
    pub(super) fn idf(&self, df: usize) -> f32 {
        lucene_idf(self.live, df as f32)
    }

    /// Each field's length-normalized, weighted term frequency.
    #[inline]
    fn weighted(&self, lens: &[u16; FIELDS], tf: [u16; FIELDS], field: usize) -> f32 {
        let norm = self.base[field] + self.slope[field] * f32::from(lens[field]);
        WEIGHTS[field] * f32::from(tf[field]) / norm.max(1e-3)
    }

    /// BM25F: length-normalized, weighted field frequencies summed, then saturated (so a gain is
    /// always below `idf * (K1 + 1)`). `lens` are the document's field lengths.
    #[inline]
    pub(super) fn gain(&self, lens: &[u16; FIELDS], tf: [u16; FIELDS], idf: f32) -> f32 {
        let mut sum = 0.0f32;
        for field in 0..FIELDS {
            if tf[field] != 0 {
                sum += self.weighted(lens, tf, field);
            }
        }
        saturated_gain(idf, sum)
    }

    /// Each field's share of [`Self::gain`] for `tf` (they sum to 1 over the matched fields).
    pub(super) fn field_shares(&self, lens: &[u16; FIELDS], tf: [u16; FIELDS]) -> [f32; FIELDS] {
        let mut parts = [0.0f32; FIELDS];
        for field in 0..FIELDS {
            if tf[field] != 0 {
                parts[field] = self.weighted(lens, tf, field);
            }
        }
        let sum: f32 = parts.iter().sum();
        if sum > 0.0 {
            for part in &mut parts {
                *part /= sum;
            }
        }
        parts
    }

    /// The most a token of query weight `weight` can add to a document's summed gains when the
    /// rarest of its terms is held by `df` live documents.
    pub(super) fn upper_bound(&self, weight: f32, df: usize) -> f32 {
        weight * (K1 + 1.0) * self.idf(df)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_is_lucenes_and_gains_saturate() {
        assert!((lucene_idf(10.0, 1.0) - (1.0f32 + 9.5 / 1.5).ln()).abs() < 1e-6);
        assert!(lucene_idf(10.0, 10.0) > 0.0);
        let idf = 2.0;
        assert!(saturated_gain(idf, 1e6) < idf * (K1 + 1.0));
        assert!(saturated_gain(idf, 0.0).abs() < f32::EPSILON);
        assert!((coordination(0.0, 3.0) - 1.0).abs() < f32::EPSILON);
        assert!((coordination(3.0, 3.0) - (1.0 + COORDINATION_WEIGHT)).abs() < 1e-6);
    }
}
