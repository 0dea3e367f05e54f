//! Hybrid search: the fusion ([`super::fusion`], where the ranking is defined) run over the index,
//! for `search_hybrid` and `explain_hybrid`.
//!
//! Execution: `fused` is monotone in the keyword score, and a vector candidate only gains, so a
//! document ranks at least as low here as in the keyword ranking, and the documents with
//! `sem = 0` rank among themselves exactly in keyword order (the keyword score as second key keeps
//! rounding ties apart). A window `[offset, offset + limit)` therefore needs only the keyword top
//! `offset + limit` (at least one past the exact matches, for the best keyword score) of the pruned
//! keyword search, less the vector candidates, plus the exact keyword scores of the fewer than
//! [`NEAREST_POOL`] vector candidates, looked up in the posting lists
//! ([`PreparedQuery::score_docs`], the same sums as the keyword run's); the two lists merge.
//! `query_vector` absent, a weight of 0, or a query with nothing to look for (browsing) is the
//! keyword search, exactly.

use std::sync::Arc;

use super::collector::ScoredDoc;
use super::fusion::{
    best_keyword, check_weight, common_df, fuse, fused_order, keyword_evidence, merge, semantic,
    HybridDoc, HybridExplanation, NEAREST_POOL,
};
use super::postings::find;
use super::query::PreparedQuery;
use super::scorer::Scorer;
use super::vectors::{parse_rows, QueryVector, Vectors};
use super::{Ranked, SearchIndex};

/// The query's semantic neighbors: the scale `(c1, cF)` of its nearest documents and the candidates
/// closer than `cF`.
pub(super) struct SemanticNeighbors {
    /// `(c1, cF)` (`(0, 0)` without vectors).
    scale: (f32, f32),
    /// Documents with `sem > 0` and their semantic values, sorted by document.
    pub(super) candidates: Vec<(u32, f32)>,
}

impl SearchIndex {
    /// Checks and quantizes a query vector given as little-endian `f32` bytes: `None` when no
    /// vector was given or the index has no vector dimensionality yet (then the search is the
    /// keyword search). Errors: a length that is not a whole number of `f32`s of the index's
    /// dimensionality, a non-finite value.
    fn query_vector(&self, bytes: Option<&[u8]>) -> crate::Result<Option<QueryVector>> {
        let Some(bytes) = bytes else { return Ok(None) };
        let dimensions = self.vectors.dimensions();
        let given = bytes.len() / 4;
        if bytes.len() % 4 != 0 || dimensions.is_some_and(|d| d != given) {
            return Err(crate::Error::new(format!(
                "the query vector must hold {} little-endian float32 values, got {} bytes",
                dimensions.map_or_else(|| "whole".to_owned(), |d| d.to_string()),
                bytes.len()
            )));
        }
        if given == 0 {
            return if dimensions.is_none() {
                Ok(None)
            } else {
                Err(crate::Error::new("the query vector is empty"))
            };
        }
        let values = parse_rows(bytes, 1, given)?;
        Ok(dimensions.map(|_| Vectors::query(&values)))
    }

    /// The selected documents nearest to `query` (see the [`super::fusion`] docs).
    pub(super) fn semantic_neighbors(
        &self,
        query: &QueryVector,
        allowed: Option<&[bool]>,
    ) -> SemanticNeighbors {
        let selected =
            allowed.map(|allowed| move |doc: u32| allowed[self.doc_group[doc as usize] as usize]);
        let (nearest, _) = self.vectors.nearest(
            query,
            NEAREST_POOL,
            selected.as_ref().map(|f| f as &dyn Fn(u32) -> bool),
        );
        let (Some(first), Some(last)) = (nearest.first(), nearest.last()) else {
            return SemanticNeighbors {
                scale: (0.0, 0.0),
                candidates: Vec::new(),
            };
        };
        let scale = (first.cosine, last.cosine);
        let mut candidates: Vec<(u32, f32)> = nearest
            .iter()
            .map(|n| (n.doc, semantic(n.cosine, scale)))
            .filter(|&(_, sem)| sem > 0.0)
            .collect();
        candidates.sort_unstable_by_key(|&(doc, _)| doc);
        SemanticNeighbors { scale, candidates }
    }

    /// Runs a hybrid query and returns `(total, keys of ranked results[offset..offset + limit])`
    /// (see the module docs for the ranking and `total`).
    ///
    /// `query_vector`: the query's embedding as little-endian `f32` bytes, of the index's
    /// dimensionality; `None`, a `weight` of 0, an index without vectors, or a query with nothing
    /// to look for is exactly [`Self::search`]. Errors: a `weight` outside `[0, 1]` (or NaN), a
    /// query vector of another length or with a non-finite value.
    pub fn search_hybrid(
        &self,
        query: &str,
        query_vector: Option<&[u8]>,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
        weight: f64,
    ) -> crate::Result<(usize, Vec<Arc<str>>)> {
        let ranked = self.rank(query, query_vector, groups, offset, limit, weight)?;
        Ok((ranked.total, ranked.keys))
    }

    /// [`Self::search_hybrid`] (exactly [`Self::search`] when `query_vector` is `None`, whatever
    /// `weight`), with how many of the window's keys, from the first, are exact name matches and
    /// whether the query browsed: one ranking, reported as it ran. Errors: those of
    /// [`Self::search_hybrid`].
    pub fn rank(
        &self,
        query: &str,
        query_vector: Option<&[u8]>,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
        weight: f64,
    ) -> crate::Result<Ranked> {
        let weight = check_weight(weight)?;
        let vector = self.query_vector(query_vector)?;
        let Some(vector) = vector.filter(|_| weight > 0.0 && self.vectors.len() > 0) else {
            return Ok(self.rank_keywords(query, groups, offset, limit, true));
        };
        let mut prepared = self.prepare(query, groups);
        if prepared.browse {
            return Ok(self.browsed(&prepared, offset, limit));
        }
        // Every document above another in keyword order is above it here too (its fused score is
        // at least as high: a vector candidate adds a semantic share), so a document at position
        // `p` here is at a position `<= p` in keyword order: the window's keyword-ranked documents
        // are within the keyword top `offset + limit` (one more than the exact matches holds the
        // best keyword score). The keyword run goes first, while the index is in the CPU caches
        // (the vector scan reads every vector); the candidates' keyword scores are looked up
        // afterwards, bit for bit those of the run.
        let keep = offset
            .saturating_add(limit)
            .max(prepared.exact.len().saturating_add(1));
        let (keyword_total, mut by_keyword) = prepared.score(keep, true);
        let nearest = self.semantic_neighbors(&vector, prepared.allowed());
        let extra: Vec<u32> = nearest.candidates.iter().map(|&(doc, _)| doc).collect();
        by_keyword.retain(|scored| extra.binary_search(&scored.doc).is_err());
        let by_vector = prepared.score_docs(&extra);
        let best = best_keyword(by_keyword.iter().chain(&by_vector));
        let evidence = self.evidence(&prepared, best);
        let best = best.map_or(0.0, |scored| scored.score);
        let fused = |scored: &ScoredDoc, sem: f32| HybridDoc {
            doc: scored.doc,
            exact: scored.exact,
            fused: fuse(scored.score, best, evidence, sem, weight).2,
            keyword: scored.score,
            ordinal: scored.ordinal,
        };
        // The vector candidates that the keywords do not match are the ranked documents beyond
        // the keyword total.
        let unmatched = by_vector
            .iter()
            .filter(|scored| !scored.exact && scored.score <= 0.0)
            .count();
        let total = keyword_total + unmatched;
        let mut by_vector: Vec<HybridDoc> = by_vector
            .iter()
            .zip(&nearest.candidates)
            .map(|(scored, &(doc, sem))| {
                debug_assert_eq!(scored.doc, doc);
                fused(scored, sem)
            })
            .collect();
        by_vector.sort_unstable_by(fused_order);
        let by_keyword = by_keyword.iter().map(|scored| fused(scored, 0.0));
        let window: Vec<HybridDoc> = merge(by_keyword, by_vector, offset.saturating_add(limit))
            .skip(offset)
            .collect();
        Ok(self.window(
            total,
            window.iter().map(|ranked| (ranked.doc, ranked.exact)),
        ))
    }

    /// Explains the hybrid rank of the live document `key` (`None`: unknown key); the arguments
    /// and errors are those of [`Self::search_hybrid`]. The semantic share is the ranking's: 0 for
    /// a document the prefilter's pool left out, whatever its cosine. A document outside the
    /// selected `groups` is explained as if selected, against the selection's best scores.
    pub fn explain_hybrid(
        &self,
        query: &str,
        query_vector: Option<&[u8]>,
        groups: Option<&[&str]>,
        key: &str,
        weight: f64,
    ) -> crate::Result<Option<HybridExplanation>> {
        let weight = check_weight(weight)?;
        let vector = self.query_vector(query_vector)?;
        let Some(doc) = self.doc_of(key) else {
            return Ok(None);
        };
        let mut prepared = self.prepare(query, groups);
        let selected = prepared.selects(doc);
        let browsing = prepared.browse;
        let (keyword_score, best, evidence) = if browsing {
            (0.0, 0.0, 0.0)
        } else {
            let keep = prepared.exact.len().saturating_add(1);
            let (_, top) = prepared.score(keep, true);
            // The record's score as the ranking computes it (as if selected, when it is not).
            let own = prepared.score_docs(&[doc])[0];
            let best = if selected {
                best_keyword(top.iter().chain([&own]))
            } else {
                best_keyword(top.iter())
            };
            let evidence = self.evidence(&prepared, best);
            (own.score, best.map_or(0.0, |best| best.score), evidence)
        };
        let is_exact = !browsing && self.exact_matches(query, None).contains(&doc);
        let vector = vector.filter(|_| !browsing);
        let cosine = vector
            .as_ref()
            .and_then(|vector| self.vectors.cosine(vector, doc));
        let sem = match (&vector, cosine) {
            (Some(vector), Some(cosine)) if weight > 0.0 => {
                let nearest = self.semantic_neighbors(vector, prepared.allowed());
                if selected {
                    // The share the ranking gives: 0 for a document the prefilter's pool left out
                    // (above `PREFILTER_POOL` vectors), whatever its cosine.
                    nearest
                        .candidates
                        .binary_search_by_key(&doc, |&(candidate, _)| candidate)
                        .map_or(0.0, |at| nearest.candidates[at].1)
                } else {
                    semantic(cosine, nearest.scale)
                }
            }
            _ => 0.0,
        };
        let (keyword_share, semantic_share, fused) =
            fuse(keyword_score, best, evidence, sem, weight);
        Ok(Some(HybridExplanation {
            exact: is_exact,
            keyword_score,
            keyword_share,
            evidence,
            cosine,
            semantic_share,
            weight,
            fused,
        }))
    }

    /// The query's keyword evidence `e` for its best keyword match `best` (see the module docs):
    /// 0 without a match or without a word of query weight 1.
    pub(super) fn evidence(&self, prepared: &PreparedQuery<'_>, best: Option<&ScoredDoc>) -> f32 {
        let Some(best) = best else { return 0.0 };
        let doc = best.doc;
        let words: Vec<_> = prepared
            .tokens
            .iter()
            .filter(|token| token.weight >= 1.0)
            .collect();
        if words.is_empty() {
            return 0.0;
        }
        let scorer = Scorer::new(self, None);
        let group = self.doc_group[doc as usize];
        let in_group_text: Vec<&str> = prepared
            .group_matches
            .iter()
            .filter(|found| found.group == group)
            .map(|found| &*found.token)
            .collect();
        let mut matched = 0.0f32;
        for token in words {
            let mut df = usize::MAX;
            let mut holds = false;
            if let Some(term) = token.term {
                let list = scorer.postings(term);
                df = self.live_df(list);
                holds = find(list, doc).is_some();
            }
            if token.has_variants() {
                let mut largest = 0;
                for &member in token.class.iter() {
                    let list = scorer.postings(member);
                    largest = largest.max(self.live_df(list));
                    holds = holds || find(list, doc).is_some();
                }
                df = df.min(largest);
            }
            let in_group = in_group_text.contains(&&*token.text);
            if df != usize::MAX && (holds || in_group) {
                matched += scorer.idf(df);
            } else if in_group {
                // Found only in the group's description (no document holds it).
                matched += scorer.idf(0);
            }
        }
        keyword_evidence(matched, scorer.idf(common_df(self.live)))
    }
}

#[cfg(test)]
#[path = "tests/hybrid.rs"]
mod tests;
