//! Fusion: the definitions of the hybrid ranking, the keyword score fused with the cosine of tool
//! vectors ([`super::vectors`]): normalization, weights, the keyword-evidence rule and the order.
//! Pure functions of scores; [`super::hybrid`] runs them over the index.
//!
//! For a query with a vector `q` and a weight `w` in `[0, 1]`, over the selected live documents
//! `S` (the group filter), `V` those of `S` with a vector:
//!
//! * `cos(t)`: the cosine of `q` with `t`'s vector (quantized, see [`super::vectors`]);
//!   `c1` the best cosine over `V`, `cF` the [`NEAREST_POOL`]-th best (the smallest when `V` has
//!   fewer); `sem(t) = clip((cos(t) - cF) / (c1 - cF), 0, 1)` (0 when `c1 == cF`, or without a
//!   vector).
//! * `kw(t)`: the keyword score ([`super::maxscore`]) over the best keyword score in `S` (0 for a
//!   document the query does not match, and when nothing has a positive score), times the query's
//!   keyword *evidence* `e` in `[0, 1]`: how much the query's words actually matched. Its matched
//!   mass is the summed `idf` (Lucene's, over the live documents; `df` as the keyword plan bounds
//!   it: its own term's, or its stem class's largest member's when smaller) of the distinct query
//!   words of query weight 1 (not function words or numbers, see
//!   [`super::analysis::STOPWORD_WEIGHT`]) that the best keyword match `b` holds, in its own
//!   fields, through its stem class, or in its group's description (a word only a group
//!   description holds counts at `idf(0)`).
//!   `e = min(1, matched mass / idf(ceil(COMMON_SHARE * live)))`: a match on one word rarer than
//!   [`COMMON_SHARE`] of the documents, or on several more common ones, is full evidence; a match
//!   on only very common words is partial; a match on only function words or numbers is none
//!   (`e = 0`: such matches then only order documents of equal `sem`, the keyword score being the
//!   second key, and never outrank a closer vector). `b` is the match with the best keyword score,
//!   an exact name before others at equal scores, then the smallest tie-break ordinal (so every
//!   keyword top holding it, the ranking's and `explain_hybrid`'s, picks the same one).
//! * `fused(t) = (1 - w) * kw(t) + w * sem(t)`.
//! * The ranked documents `R`: the keyword matches and the documents with `sem > 0` (closer than
//!   the `cF`, so fewer than [`NEAREST_POOL`]); `total = |R|`.
//! * Order: exact name matches first, then `fused` descending, then the keyword score descending,
//!   then the `(group, tool, key)` tie-break ordinal: deterministic for equal inputs.
//!
//! How the ranking is computed without scoring every document: [`super::hybrid`].

use std::cmp::Ordering;

use super::collector::ScoredDoc;

/// `F`: the query's nearest documents whose cosines set the semantic scale (`cF` is the `F`-th
/// best); only documents closer than the `F`-th have a semantic share.
pub const NEAREST_POOL: usize = 50;

/// A word held by this share of the live documents is "very common": matching only such words (or
/// less) is partial keyword evidence (see the module docs). Chosen on the development halves of
/// the benchmark sets (`bench/keyword_evidence.py`, docs/search-quality.md).
pub const COMMON_SHARE: f32 = 0.1;

/// Why one document has its hybrid rank.
#[derive(Debug, Clone, PartialEq)]
pub struct HybridExplanation {
    /// An exact name match: ranked above every other match.
    pub exact: bool,
    /// The keyword score ([`super::SearchIndex::explain`]'s `score`), 0 when the query does not match.
    pub keyword_score: f32,
    /// `(1 - weight) * evidence * keyword_score / best keyword score`.
    pub keyword_share: f32,
    /// The query's keyword evidence `e` in `[0, 1]` (see the module docs).
    pub evidence: f32,
    /// The cosine with the query vector (`None`: no query vector or no tool vector).
    pub cosine: Option<f32>,
    /// `weight * sem`, `sem = clip((cosine - cF) / (c1 - cF), 0, 1)`.
    pub semantic_share: f32,
    /// The weight of the semantic share.
    pub weight: f32,
    /// `keyword_share + semantic_share`: the score ranked by (after exact names).
    pub fused: f32,
}

/// A document in the hybrid ranking.
#[derive(Debug, Clone, Copy)]
pub(super) struct HybridDoc {
    pub(super) doc: u32,
    pub(super) exact: bool,
    pub(super) fused: f32,
    pub(super) keyword: f32,
    pub(super) ordinal: u32,
}

/// The hybrid ranking order (see the module docs): `Less` ranks first.
pub(super) fn fused_order(a: &HybridDoc, b: &HybridDoc) -> Ordering {
    b.exact
        .cmp(&a.exact)
        .then_with(|| b.fused.total_cmp(&a.fused))
        .then_with(|| b.keyword.total_cmp(&a.keyword))
        .then_with(|| a.ordinal.cmp(&b.ordinal))
}

/// `clip((cosine - cF) / (c1 - cF), 0, 1)` (0 when `c1 <= cF`).
pub(super) fn semantic(cosine: f32, scale: (f32, f32)) -> f32 {
    let (best, floor) = scale;
    if best > floor {
        ((cosine - floor) / (best - floor)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// `(1 - weight) * evidence * keyword / best + weight * sem`, with its two shares.
pub(super) fn fuse(
    keyword: f32,
    best: f32,
    evidence: f32,
    sem: f32,
    weight: f32,
) -> (f32, f32, f32) {
    let normalized = if best > 0.0 {
        keyword / best * evidence
    } else {
        0.0
    };
    let keyword_share = (1.0 - weight) * normalized;
    let semantic_share = weight * sem;
    (
        keyword_share,
        semantic_share,
        keyword_share + semantic_share,
    )
}

/// Checks a fusion weight and returns it as the `f32` the fusion computes with.
pub(super) fn check_weight(weight: f64) -> crate::Result<f32> {
    if (0.0..=1.0).contains(&weight) {
        Ok(weight as f32)
    } else {
        Err(crate::Error::new(format!(
            "the semantic weight must be between 0 and 1, got {weight}"
        )))
    }
}

/// The document frequency of a "very common" word: [`COMMON_SHARE`] of the `live` documents,
/// rounded up; matching words of summed `idf` equal to this frequency's is full keyword evidence.
pub(super) fn common_df(live: usize) -> usize {
    ((live as f32) * COMMON_SHARE).ceil() as usize
}

/// The keyword evidence `e = min(1, matched / full)` of a best keyword match holding query words
/// of summed `idf` `matched`, `full` the `idf` of [`common_df`] (0 when `full` is not positive).
pub(super) fn keyword_evidence(matched: f32, full: f32) -> f32 {
    if full > 0.0 {
        (matched / full).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The best keyword match of `scored` (a keyword top that holds every exact match and the best
/// other documents, with the vector candidates): the highest positive score, an exact name before
/// others at equal scores, then the smallest tie-break ordinal (the first of them in keyword order,
/// so every keyword top that holds it picks the same one). `None` when nothing scores above 0.
pub(super) fn best_keyword<'a>(
    scored: impl Iterator<Item = &'a ScoredDoc>,
) -> Option<&'a ScoredDoc> {
    scored.filter(|scored| scored.score > 0.0).min_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.exact.cmp(&a.exact))
            .then_with(|| a.ordinal.cmp(&b.ordinal))
    })
}

/// The first `count` of two lists sorted by [`fused_order`], merged.
pub(super) fn merge(
    first: impl Iterator<Item = HybridDoc>,
    second: Vec<HybridDoc>,
    count: usize,
) -> impl Iterator<Item = HybridDoc> {
    let mut first = first.peekable();
    let mut second = second.into_iter().peekable();
    std::iter::from_fn(move || match (first.peek(), second.peek()) {
        (Some(a), Some(b)) => {
            if fused_order(a, b) == Ordering::Greater {
                second.next()
            } else {
                first.next()
            }
        }
        (Some(_), None) => first.next(),
        (None, _) => second.next(),
    })
    .take(count)
}
