//! Hybrid ranking: the keyword score fused with the cosine of tool vectors ([`super::vectors`]).
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
//!   words of query weight 1 (not function words or numbers, see [`analysis::STOPWORD_WEIGHT`])
//!   that the best keyword match `b` holds, in its own fields, through its stem class, or in its
//!   group's description (a word only a group description holds counts at `idf(0)`).
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
//! Execution: `fused` is monotone in the keyword score, and a vector candidate only gains, so a
//! document ranks at least as low here as in the keyword ranking, and the documents with
//! `sem = 0` rank among themselves exactly in keyword order (the keyword score as second key keeps
//! rounding ties apart). A window `[offset, offset + limit)` therefore needs only the keyword top
//! `offset + limit` (at least one past the exact matches, for the best keyword score) of the pruned
//! keyword search, less the vector candidates, plus the exact keyword scores of the fewer than
//! [`NEAREST_POOL`] vector candidates, looked up in the posting lists
//! ([`SearchIndex::score_docs`], the same sums as the keyword run's); the two lists merge.
//! `query_vector` absent, a weight of 0, or a query with nothing to look for (browsing) is the
//! keyword search, exactly.

use std::cmp::Ordering;
use std::sync::Arc;

use super::analysis::QueryToken;
use super::collector::ScoredDoc;
use super::postings::find;
use super::scorer::Scorer;
use super::vectors::{parse_rows, QueryVector, Vectors};
use super::{analysis, SearchIndex};

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
    /// The keyword score ([`SearchIndex::explain`]'s `score`), 0 when the query does not match.
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
struct HybridDoc {
    doc: u32,
    exact: bool,
    fused: f32,
    keyword: f32,
    ordinal: u32,
}

/// The hybrid ranking order (see the module docs): `Less` ranks first.
fn fused_order(a: &HybridDoc, b: &HybridDoc) -> Ordering {
    b.exact
        .cmp(&a.exact)
        .then_with(|| b.fused.total_cmp(&a.fused))
        .then_with(|| b.keyword.total_cmp(&a.keyword))
        .then_with(|| a.ordinal.cmp(&b.ordinal))
}

/// `clip((cosine - cF) / (c1 - cF), 0, 1)` (0 when `c1 <= cF`).
fn semantic(cosine: f32, scale: (f32, f32)) -> f32 {
    let (best, floor) = scale;
    if best > floor {
        ((cosine - floor) / (best - floor)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// `(1 - weight) * evidence * keyword / best + weight * sem`, with its two shares.
fn fuse(keyword: f32, best: f32, evidence: f32, sem: f32, weight: f32) -> (f32, f32, f32) {
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
fn check_weight(weight: f64) -> crate::Result<f32> {
    if (0.0..=1.0).contains(&weight) {
        Ok(weight as f32)
    } else {
        Err(crate::Error::new(format!(
            "the semantic weight must be between 0 and 1, got {weight}"
        )))
    }
}

/// The query's nearest documents: `c1`, `cF` and the candidates closer than `cF`.
pub(super) struct Nearest {
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

    /// The selected documents nearest to `query` (see the module docs).
    pub(super) fn nearest(&self, query: &QueryVector, allowed: Option<&[bool]>) -> Nearest {
        let selected =
            allowed.map(|allowed| move |doc: u32| allowed[self.doc_group[doc as usize] as usize]);
        let (nearest, _) = self.vectors.nearest(
            query,
            NEAREST_POOL,
            selected.as_ref().map(|f| f as &dyn Fn(u32) -> bool),
        );
        let (Some(first), Some(last)) = (nearest.first(), nearest.last()) else {
            return Nearest {
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
        Nearest { scale, candidates }
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
        let weight = check_weight(weight)?;
        let vector = self.query_vector(query_vector)?;
        let Some(vector) = vector.filter(|_| weight > 0.0 && self.vectors.len() > 0) else {
            return Ok(self.search(query, groups, offset, limit));
        };
        let allowed = self.allowed_groups(groups);
        let allowed = allowed.as_deref();
        let mut tokens = self.query_tokens(query, allowed);
        let exact = self.exact_matches(query, allowed);
        if tokens.is_empty() && exact.is_empty() && analysis::nothing_to_find(query) {
            return Ok(self.browse(allowed, offset, limit));
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
            .max(exact.len().saturating_add(1));
        let group_gains = self.group_gains(query);
        let (keyword_total, mut by_keyword) =
            self.score_deciding(&mut tokens, &exact, allowed, keep, true, &group_gains);
        let nearest = self.nearest(&vector, allowed);
        let extra: Vec<u32> = nearest.candidates.iter().map(|&(doc, _)| doc).collect();
        by_keyword.retain(|scored| extra.binary_search(&scored.doc).is_err());
        let by_vector = self.score_docs(&tokens, &exact, allowed, &extra, &group_gains);
        let best = best_keyword(by_keyword.iter().chain(&by_vector));
        let evidence = self.evidence(query, &tokens, best);
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
        let keys = merge(by_keyword, by_vector, offset.saturating_add(limit))
            .skip(offset)
            .map(|ranked| Arc::from(self.docs[ranked.doc as usize].name.key()))
            .collect();
        Ok((total, keys))
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
        let allowed = self.allowed_groups(groups);
        let allowed = allowed.as_deref();
        let selected = allowed.is_none_or(|allowed| allowed[self.doc_group[doc as usize] as usize]);
        let mut tokens = self.query_tokens(query, allowed);
        let exact = self.exact_matches(query, allowed);
        let browsing = tokens.is_empty() && exact.is_empty() && analysis::nothing_to_find(query);
        let (keyword_score, best, evidence) = if browsing {
            (0.0, 0.0, 0.0)
        } else {
            let group_gains = self.group_gains(query);
            let keep = exact.len().saturating_add(1);
            let (_, top) =
                self.score_deciding(&mut tokens, &exact, allowed, keep, true, &group_gains);
            // The record's score as the ranking computes it (as if selected, when it is not).
            let own = self.score_docs(&tokens, &exact, allowed, &[doc], &group_gains)[0];
            let best = if selected {
                best_keyword(top.iter().chain([&own]))
            } else {
                best_keyword(top.iter())
            };
            let evidence = self.evidence(query, &tokens, best);
            (own.score, best.map_or(0.0, |best| best.score), evidence)
        };
        let is_exact = !browsing && self.exact_matches(query, None).contains(&doc);
        let vector = vector.filter(|_| !browsing);
        let cosine = vector
            .as_ref()
            .and_then(|vector| self.vectors.cosine(vector, doc));
        let sem = match (&vector, cosine) {
            (Some(vector), Some(cosine)) if weight > 0.0 => {
                let nearest = self.nearest(vector, allowed);
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
}

/// The best keyword match of `scored` (a keyword top that holds every exact match and the best
/// other documents, with the vector candidates): the highest positive score, an exact name before
/// others at equal scores, then the smallest tie-break ordinal (the first of them in keyword order,
/// so every keyword top that holds it picks the same one). `None` when nothing scores above 0.
fn best_keyword<'a>(scored: impl Iterator<Item = &'a ScoredDoc>) -> Option<&'a ScoredDoc> {
    scored.filter(|scored| scored.score > 0.0).min_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.exact.cmp(&a.exact))
            .then_with(|| a.ordinal.cmp(&b.ordinal))
    })
}

impl SearchIndex {
    /// The query's keyword evidence `e` for its best keyword match `best` (see the module docs):
    /// 0 without a match or without a word of query weight 1.
    fn evidence(&self, query: &str, tokens: &[QueryToken<'_>], best: Option<&ScoredDoc>) -> f32 {
        let Some(best) = best else { return 0.0 };
        let doc = best.doc;
        let words: Vec<&QueryToken<'_>> =
            tokens.iter().filter(|token| token.weight >= 1.0).collect();
        if words.is_empty() {
            return 0.0;
        }
        let scorer = Scorer::new(self, None);
        let group = self.doc_group[doc as usize];
        let mut in_group_text: Vec<String> = Vec::new();
        self.each_group_gain(query, |id, token, _| {
            if id == group {
                in_group_text.push(token.to_owned());
            }
        });
        let mut matched = 0.0f32;
        for token in words {
            let mut df = usize::MAX;
            let mut holds = false;
            if let Some(term) = token.term {
                let list = scorer.postings(term);
                df = scorer.live_df(list);
                holds = find(list, doc).is_some();
            }
            if token.has_variants() {
                let mut largest = 0;
                for &member in token.class.iter() {
                    let list = scorer.postings(member);
                    largest = largest.max(scorer.live_df(list));
                    holds = holds || find(list, doc).is_some();
                }
                df = df.min(largest);
            }
            let in_group = in_group_text.iter().any(|text| **text == *token.text);
            if df != usize::MAX && (holds || in_group) {
                matched += scorer.idf(df);
            } else if in_group {
                // Found only in the group's description (no document holds it).
                matched += scorer.idf(0);
            }
        }
        let full = scorer.idf(((self.live as f32) * COMMON_SHARE).ceil() as usize);
        if full > 0.0 {
            (matched / full).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// The first `count` of two lists sorted by [`fused_order`], merged.
fn merge(
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

#[cfg(test)]
mod tests {
    use super::super::tests::{record, search, skewed_index, xorshift};
    use super::super::Record;
    use super::*;
    use proptest::prelude::*;

    fn bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    type Ranking = (usize, Vec<String>);

    fn hybrid(
        index: &SearchIndex,
        query: &str,
        vector: Option<&[f32]>,
        groups: Option<&[&str]>,
        window: (usize, usize),
        weight: f64,
    ) -> Ranking {
        let vector = vector.map(bytes);
        let (total, keys) = index
            .search_hybrid(query, vector.as_deref(), groups, window.0, window.1, weight)
            .unwrap();
        (total, keys.iter().map(ToString::to_string).collect())
    }

    /// The whole hybrid ranking by definition: every selected document's unpruned keyword score
    /// and its cosine, fused and sorted (no pool, no merge).
    fn reference(
        index: &SearchIndex,
        query: &str,
        vector: &[f32],
        groups: Option<&[&str]>,
        weight: f64,
    ) -> Ranking {
        let weight = weight as f32;
        let allowed = index.allowed_groups(groups);
        let allowed = allowed.as_deref();
        let mut tokens = index.query_tokens(query, allowed);
        let exact = index.exact_matches(query, allowed);
        if weight == 0.0
            || index.vector_count() == 0
            || tokens.is_empty() && exact.is_empty() && analysis::nothing_to_find(query)
        {
            return search(index, query, groups, 0, usize::MAX);
        }
        let gains = index.group_gains(query);
        let (_, best) =
            index.score_deciding(&mut tokens, &exact, allowed, usize::MAX, false, &gains);
        let query_vector = Vectors::query(vector);
        let selected = |doc: u32| {
            index.alive[doc as usize]
                && allowed.is_none_or(|a| a[index.doc_group[doc as usize] as usize])
        };
        let mut cosines: Vec<(u32, f32)> = (0..index.docs.len() as u32)
            .filter(|&doc| selected(doc))
            .filter_map(|doc| Some((doc, index.vectors.cosine(&query_vector, doc)?)))
            .collect();
        let mut sorted: Vec<f32> = cosines.iter().map(|c| c.1).collect();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let scale = match sorted.len() {
            0 => (0.0, 0.0),
            n => (sorted[0], sorted[n.min(NEAREST_POOL) - 1]),
        };
        let keyword: std::collections::HashMap<u32, ScoredDoc> =
            best.iter().map(|s| (s.doc, *s)).collect();
        let evidence = index.evidence(query, &tokens, best_keyword(best.iter()));
        let best = best.iter().fold(0.0f32, |b, s| b.max(s.score));
        let mut ranked: Vec<HybridDoc> = Vec::new();
        cosines.sort_unstable_by_key(|c| c.0);
        for doc in (0..index.docs.len() as u32).filter(|&doc| selected(doc)) {
            let sem = cosines
                .binary_search_by_key(&doc, |c| c.0)
                .map_or(0.0, |at| semantic(cosines[at].1, scale));
            let found = keyword.get(&doc);
            if found.is_none() && sem <= 0.0 {
                continue;
            }
            let score = found.map_or(0.0, |s| s.score);
            ranked.push(HybridDoc {
                doc,
                exact: found.is_some_and(|s| s.exact),
                fused: fuse(score, best, evidence, sem, weight).2,
                keyword: score,
                ordinal: index.tie_break_ordinals[doc as usize],
            });
        }
        ranked.sort_by(fused_order);
        let keys = ranked
            .iter()
            .map(|r| index.docs[r.doc as usize].name.key().to_owned())
            .collect();
        (ranked.len(), keys)
    }

    fn weather_index() -> SearchIndex {
        let mut index = SearchIndex::new();
        index.upsert([
            record("meteo", "get_forecast", "Weather forecast for a city."),
            record("meteo", "umbrella", "Nothing about keywords here."),
            record("fs", "read_file", "Read a file."),
            record("fs", "write_file", "Write a file."),
            record("mail", "send_email", "Send an email."),
        ]);
        let keys = [
            "meteo__get_forecast",
            "meteo__umbrella",
            "fs__read_file",
            "fs__write_file",
            "mail__send_email",
        ];
        let rows: Vec<f32> = [
            [0.9, 0.1, 0.0],
            [1.0, 0.0, 0.1],
            [0.0, 1.0, 0.0],
            [0.1, 0.9, 0.2],
            [0.0, 0.0, 1.0],
        ]
        .concat();
        index.set_vectors(&keys, &bytes(&rows), 3).unwrap();
        index
    }

    #[test]
    fn a_vector_finds_what_keywords_miss_and_exact_names_stay_first() {
        let index = weather_index();
        let rain = [1.0, 0.0, 0.05];
        // `bring an umbrella?` matches `umbrella` by name; `rain tomorrow` matches nothing.
        let (total, keys) = hybrid(&index, "rain tomorrow", Some(&rain), None, (0, 10), 0.4);
        assert_eq!(keys[..2], ["meteo__umbrella", "meteo__get_forecast"]);
        // Five vectors: cF is the smallest cosine, so four documents are closer.
        assert_eq!(total, 4);
        assert_eq!(search(&index, "rain tomorrow", None, 0, 10).0, 0);
        // An exact name ranks first whatever the vector.
        let away = [0.0, 0.0, 1.0];
        let (_, keys) = hybrid(&index, "read_file", Some(&away), None, (0, 10), 0.9);
        assert_eq!(keys[0], "fs__read_file");
        // Both signals: the keyword match and the nearest vector.
        let (_, keys) = hybrid(&index, "write", Some(&rain), None, (0, 2), 0.5);
        // `write_file`: 0.5 for its keywords and a little for its vector; `umbrella`: 0.5 for its
        // vector alone.
        assert_eq!(keys, ["fs__write_file", "meteo__umbrella"]);
        let explained = index
            .explain_hybrid("write", Some(&bytes(&rain)), None, "fs__write_file", 0.5)
            .unwrap()
            .unwrap();
        assert!(
            (explained.keyword_share - 0.5).abs() < 1e-6,
            "{explained:?}"
        );
        assert!(explained.cosine.unwrap() < 0.2 && explained.semantic_share > 0.0);
        assert!(
            (explained.fused - explained.keyword_share - explained.semantic_share).abs() < 1e-6
        );
    }

    #[test]
    fn a_match_on_function_words_alone_is_no_keyword_evidence() {
        // The docs' hybrid example beside six tools whose descriptions say "an": the query's only
        // keyword match is the function word `an`, which must not outrank the nearest vector.
        let mut index = SearchIndex::new();
        let tools = [
            ("weather", "get_forecast", "Weather forecast for a city."),
            ("mail", "send_email", "Send an email to a recipient."),
            ("calendar", "create_event", "Create an event in a calendar."),
            ("files", "open_archive", "Open an archive file."),
            (
                "billing",
                "issue_invoice",
                "Issue an invoice to a customer.",
            ),
            ("users", "add_user", "Add an account for a user."),
            ("tickets", "file_ticket", "File an issue in the tracker."),
        ];
        index.upsert(
            tools
                .iter()
                .map(|&(group, tool, text)| record(group, tool, text)),
        );
        let keys: Vec<String> = tools.iter().map(|&(g, t, _)| format!("{g}__{t}")).collect();
        // get_forecast is by far the nearest (0.74); the others lie at 0.2-0.45.
        let rows: Vec<f32> = [
            [0.74, 0.6726, 0.0],
            [0.45, 0.0, 0.893],
            [0.4, 0.1, 0.911],
            [0.35, 0.2, 0.915],
            [0.3, 0.3, 0.905],
            [0.25, 0.4, 0.882],
            [0.2, 0.5, 0.843],
        ]
        .concat();
        index.set_vectors(&keys, &bytes(&rows), 3).unwrap();
        let query = [1.0, 0.0, 0.0];
        let text = "should I bring an umbrella";
        assert_eq!(
            search(&index, text, None, 0, 10).0,
            6,
            "`an` matches the six"
        );
        let (_, page) = hybrid(&index, text, Some(&query), None, (0, 5), 0.35);
        assert_eq!(page[0], "weather__get_forecast", "{page:?}");
        // Only closeness orders them now: the cosine order, `an` only breaking ties.
        assert_eq!(&page[1..], &keys[1..5], "{page:?}");
        let explained = index
            .explain_hybrid(text, Some(&bytes(&query)), None, "mail__send_email", 0.35)
            .unwrap()
            .unwrap();
        assert_eq!((explained.evidence, explained.keyword_share), (0.0, 0.0));
        assert!(explained.keyword_score > 0.0);
        // A content word found is full evidence again: the keyword share as before this rule.
        let explained = index
            .explain_hybrid(
                "send an email",
                Some(&bytes(&query)),
                None,
                "mail__send_email",
                0.35,
            )
            .unwrap()
            .unwrap();
        assert!((explained.evidence - 1.0).abs() < f32::EPSILON);
        assert!(
            (explained.keyword_share - 0.65).abs() < 1e-6,
            "{explained:?}"
        );
    }

    #[test]
    fn a_match_on_very_common_words_alone_is_partial_evidence() {
        // `list` is held by every tool (idf ~0.05), `weather` and `forecast` by one each: a best
        // match holding only `list` is a fraction of full evidence; holding a rare word, full.
        let mut index = SearchIndex::new();
        index.upsert((0..30).map(|i| record("g", &format!("list_{i}"), "list things")));
        index.upsert([record("w", "list_forecasts", "list weather forecasts")]);
        let keys: Vec<String> = (0..30)
            .map(|i| format!("g__list_{i}"))
            .chain(["w__list_forecasts".to_owned()])
            .collect();
        let rows: Vec<f32> = (0..31).flat_map(|i| [1.0, i as f32 / 10.0]).collect();
        index.set_vectors(&keys, &bytes(&rows), 2).unwrap();
        let vector = bytes(&[1.0, 0.0]);
        let evidence = |query: &str| {
            index
                .explain_hybrid(query, Some(&vector), None, "g__list_0", 0.35)
                .unwrap()
                .unwrap()
                .evidence
        };
        let common = evidence("list umbrellas");
        assert!(common > 0.0 && common < 0.1, "{common}");
        assert!((evidence("list weather") - 1.0).abs() < f32::EPSILON);
    }

    #[test]
    fn without_a_vector_or_weight_it_is_the_keyword_search() {
        let index = weather_index();
        let rain = [1.0, 0.0, 0.05];
        for query in ["file", "weather city", "", "  ", "read_file", "zzz"] {
            for window in [(0, 10), (1, 2), (3, 100)] {
                let keyword = search(&index, query, None, window.0, window.1);
                assert_eq!(hybrid(&index, query, None, None, window, 0.4), keyword);
                assert_eq!(
                    hybrid(&index, query, Some(&rain), None, window, 0.0),
                    keyword
                );
            }
        }
        // Browsing stays browsing with a vector.
        assert_eq!(
            hybrid(&index, " ? ", Some(&rain), None, (0, 10), 0.4),
            search(&index, " ? ", None, 0, 10)
        );
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut index = weather_index();
        let good = bytes(&[1.0, 0.0, 0.0]);
        for weight in [-0.1, 1.1, f64::NAN, f64::INFINITY, -1e-300] {
            assert!(index
                .search_hybrid("file", Some(&good), None, 0, 10, weight)
                .is_err());
            assert!(index
                .explain_hybrid("file", Some(&good), None, "fs__read_file", weight)
                .is_err());
        }
        for vector in [
            bytes(&[1.0, 0.0]),
            bytes(&[1.0, 0.0, f32::NAN]),
            vec![0u8; 5],
            Vec::new(),
        ] {
            let error = index
                .search_hybrid("file", Some(&vector), None, 0, 10, 0.5)
                .unwrap_err();
            assert!(
                ["query vector", "non-finite"]
                    .iter()
                    .any(|part| error.message().contains(part)),
                "{error}"
            );
        }
        let keys = ["fs__read_file"];
        assert!(index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 2).is_err());
        assert!(index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 3).is_err());
        assert!(index
            .set_vectors(&keys, &bytes(&[1.0, f32::NEG_INFINITY, 0.0]), 3)
            .is_err());
        assert!(index.set_vectors(&keys, &[], 0).is_err());
        assert_eq!(index.vector_dimensions(), Some(3));
        index.clear_vectors();
        assert_eq!((index.vector_count(), index.vector_dimensions()), (0, None));
        index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 2).unwrap();
        assert_eq!(
            (index.vector_count(), index.vector_dimensions()),
            (1, Some(2))
        );
        // Without a dimensionality any query vector means keyword search.
        index.clear_vectors();
        assert_eq!(
            index
                .search_hybrid("file", Some(&good), None, 0, 10, 0.5)
                .unwrap()
                .0,
            2
        );
    }

    #[test]
    fn vectors_follow_upserts_and_go_with_removal_and_compaction() {
        let mut index = weather_index();
        assert_eq!(index.vector_count(), 5);
        // A changed record keeps its vector; a removed one loses it, also when re-added.
        index.upsert([record("meteo", "umbrella", "Rain gear advice.")]);
        assert_eq!(index.vector_count(), 5);
        assert!(index.vector_keys_missing(&["meteo__umbrella"]).is_empty());
        index.remove(["meteo__umbrella"]);
        assert_eq!(index.vector_count(), 4);
        index.upsert([record("meteo", "umbrella", "Rain gear advice.")]);
        assert_eq!(
            index.vector_keys_missing(&["meteo__umbrella", "unknown", "fs__read_file"]),
            ["meteo__umbrella"]
        );
        index.drop_vectors(["fs__read_file", "unknown"]);
        assert_eq!(index.vector_count(), 3);
        // Compaction (more than a quarter dead) renumbers documents; vectors follow them.
        index.remove(["fs__write_file", "mail__send_email"]);
        assert_eq!(index.slots(), index.len());
        assert_eq!(index.vector_count(), 1);
        let (_, keys) = hybrid(&index, "zzz", Some(&[1.0, 0.0, 0.0]), None, (0, 10), 0.5);
        assert!(
            keys.is_empty(),
            "one vector has no semantic scale: {keys:?}"
        );
        index
            .set_vectors(&["meteo__umbrella"], &bytes(&[1.0, 0.0, 0.0]), 3)
            .unwrap();
        let (total, keys) = hybrid(&index, "zzz", Some(&[1.0, 0.0, 0.0]), None, (0, 10), 0.5);
        assert_eq!((total, keys), (1, vec!["meteo__umbrella".to_owned()]));
        assert_eq!(index.vectors.docs().len(), index.vector_count());
    }

    #[test]
    fn explain_gives_the_ranking_share_to_a_document_the_prefilter_left_out() {
        // Above the prefilter's pool, a vector nearly equal to the query but with the other sign
        // on its small components has a sign plane farther than every filler's: the pool leaves
        // it out, and explain must not give it the semantic share the ranking did not.
        let fillers = super::super::vectors::PREFILTER_POOL + 100;
        let dimensions = 64;
        let mut index = SearchIndex::new();
        index.upsert((0..fillers).map(|i| record("g", &format!("t{i:05}"), "filler")));
        index.upsert([record("spike", "a", "nothing")]);
        let mut keys: Vec<String> = (0..fillers).map(|i| format!("g__t{i:05}")).collect();
        keys.push("spike__a".to_owned());
        // Fillers: a positive first component, the others' signs mixed (so the sign planes are
        // balanced and the prefilter runs), all small.
        let mut rows: Vec<f32> = (0..fillers * dimensions)
            .map(|i| {
                let magnitude = 0.01 + (i * 7919 % 1000) as f32 * 1e-5;
                let negative = i % dimensions != 0 && (i * 2_654_435_761) >> 7 & 1 == 1;
                if negative {
                    -magnitude
                } else {
                    magnitude
                }
            })
            .collect();
        rows.push(1.0);
        rows.extend(std::iter::repeat_n(-0.01f32, dimensions - 1));
        index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
        assert!(index.vectors.signs_balanced());
        let mut query = vec![0.01f32; dimensions];
        query[0] = 1.0;
        let (total, ranked) = hybrid(&index, "zzz", Some(&query), None, (0, 100), 1.0);
        assert!(!ranked.contains(&"spike__a".to_owned()) && total > 0);
        let explained = index
            .explain_hybrid("zzz", Some(&bytes(&query)), None, "spike__a", 1.0)
            .unwrap()
            .unwrap();
        assert!(explained.cosine.unwrap() > 0.98);
        assert_eq!((explained.semantic_share, explained.fused), (0.0, 0.0));
        // The ranked ones are explained with the shares they were ranked by.
        let shares: Vec<f32> = ranked
            .iter()
            .map(|key| {
                let e = index
                    .explain_hybrid("zzz", Some(&bytes(&query)), None, key, 1.0)
                    .unwrap()
                    .unwrap();
                assert!(e.semantic_share > 0.0, "{key}: {e:?}");
                e.fused
            })
            .collect();
        assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    }

    #[test]
    fn the_pool_bounds_the_semantic_candidates() {
        let mut index = SearchIndex::new();
        let count = 200;
        index.upsert((0..count).map(|i| record("g", &format!("t{i:03}"), "filler")));
        let keys: Vec<String> = (0..count).map(|i| format!("g__t{i:03}")).collect();
        let rows: Vec<f32> = (0..count)
            .flat_map(|i| {
                let angle = i as f32 / count as f32;
                [angle.cos(), angle.sin()]
            })
            .collect();
        index.set_vectors(&keys, &bytes(&rows), 2).unwrap();
        let (total, page) = hybrid(&index, "nothing", Some(&[1.0, 0.0]), None, (0, 100), 1.0);
        assert!((NEAREST_POOL - 5..NEAREST_POOL).contains(&total), "{total}");
        assert_eq!(page[0], "g__t000");
        // Keyword matches beyond the pool are ranked too.
        let (total, _) = hybrid(&index, "filler", Some(&[1.0, 0.0]), None, (0, 10), 0.5);
        assert_eq!(total, count);
    }

    #[test]
    fn pruned_pages_equal_the_ranking_by_definition_on_larger_corpora() {
        // Skewed corpora where the keyword search prunes, with bag-of-words vectors, so the
        // nearest documents are often the best keyword matches too (the vector candidates then
        // take places among the keyword top that the window must not lose).
        let words = [
            "get", "list", "lists", "data", "user", "users", "file", "files", "search", "weather",
            "city", "report", "create", "update", "delete", "the", "for", "of", "a", "stock",
            "price", "flight", "hotel", "event", "email",
        ];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let word = |next: &mut dyn FnMut(usize) -> usize| skewed_index(next, words.len());
        let dimensions = 12;
        let embed = |ids: &[usize]| {
            let mut vector = vec![0.0f32; dimensions];
            for &id in ids {
                vector[id % dimensions] += 1.0;
            }
            vector
        };
        for round in 0..3 {
            let mut index = SearchIndex::new();
            let docs = 800 + round * 900;
            let mut keys = Vec::new();
            let mut rows = Vec::new();
            let records: Vec<Record> = (0..docs)
                .map(|doc| {
                    let name: Vec<usize> = (0..=next(2)).map(|_| word(&mut next)).collect();
                    let description: Vec<usize> =
                        (0..2 + next(8)).map(|_| word(&mut next)).collect();
                    let text = |ids: &[usize]| {
                        ids.iter()
                            .map(|&id| words[id])
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    let record = record(
                        &format!("g{}", next(3)),
                        &format!("{}_{doc}", text(&name).replace(' ', "_")),
                        &text(&description),
                    );
                    if next(10) > 0 {
                        keys.push(record.key.clone());
                        rows.extend(embed(&[name, description].concat()));
                    }
                    record
                })
                .collect();
            index.upsert(records);
            index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
            index.remove(keys.iter().step_by(11 + round));
            for query_number in 0..60 {
                let ids: Vec<usize> = (0..=next(5)).map(|_| word(&mut next)).collect();
                let query = ids
                    .iter()
                    .map(|&id| words[id])
                    .collect::<Vec<_>>()
                    .join(" ");
                let vector = embed(&ids);
                let groups: Option<Vec<&str>> = (query_number % 3 == 0).then(|| vec!["g0", "g2"]);
                let groups = groups.as_deref();
                for weight in [0.3, 0.7] {
                    let (total, expected) = reference(&index, &query, &vector, groups, weight);
                    for (offset, limit) in [(0, 1), (0, 10), (5, 5), (20, 10), (45, 10)] {
                        let slice: Vec<String> =
                            expected.iter().skip(offset).take(limit).cloned().collect();
                        assert_eq!(
                            hybrid(
                                &index,
                                &query,
                                Some(&vector),
                                groups,
                                (offset, limit),
                                weight
                            ),
                            (total, slice),
                            "query {query:?}, groups {groups:?}, window {offset}+{limit}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pages_stay_consistent_above_the_prefilter_pool() {
        // More vectors than the prefilter keeps (`vectors::PREFILTER_POOL`): the nearest come from
        // the sign-plane pool, and every window is still a slice of one ranking with one total.
        let words = [
            "get", "list", "data", "user", "file", "search", "weather", "city", "report",
        ];
        let dimensions = 24;
        let docs = super::super::vectors::PREFILTER_POOL + 1500;
        let mut next = xorshift(0x2545_f491_4f6c_dd1d_u64);
        let mut keys = Vec::new();
        let mut rows = Vec::new();
        let records: Vec<Record> = (0..docs)
            .map(|doc| {
                let a = words[next(words.len())];
                let b = words[next(words.len())];
                let record = record(
                    &format!("g{}", doc % 3),
                    &format!("{a}_{doc}"),
                    &format!("{a} {b}"),
                );
                keys.push(record.key.clone());
                rows.extend((0..dimensions).map(|_| next(2001) as f32 / 1000.0 - 1.0));
                record
            })
            .collect();
        let mut index = SearchIndex::new();
        index.upsert(records);
        index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
        for query_number in 0..12 {
            let query = format!("{} {}", words[next(words.len())], words[next(words.len())]);
            let vector: Vec<f32> = (0..dimensions)
                .map(|_| next(2001) as f32 / 1000.0 - 1.0)
                .collect();
            let groups: Option<Vec<&str>> = (query_number % 2 == 0).then(|| vec!["g1"]);
            let groups = groups.as_deref();
            let (total, whole) = hybrid(&index, &query, Some(&vector), groups, (0, 100_000), 0.5);
            assert_eq!(whole.len(), total);
            for (offset, limit) in [(0, 10), (10, 10), (40, 25), (total.saturating_sub(3), 10)] {
                let page = hybrid(&index, &query, Some(&vector), groups, (offset, limit), 0.5);
                let slice: Vec<String> = whole.iter().skip(offset).take(limit).cloned().collect();
                assert_eq!(
                    page,
                    (total, slice),
                    "{query:?} {groups:?} {offset}+{limit}"
                );
            }
        }
    }

    fn corpus() -> impl Strategy<Value = (Vec<Record>, Vec<Option<[i8; 4]>>, Vec<usize>)> {
        let words = [
            "get", "list", "file", "weather", "the", "for", "user", "report",
        ];
        let groups = ["a", "b", "c"];
        prop::collection::vec(
            (
                0..groups.len(),
                prop::collection::vec(0..words.len(), 1..3),
                prop::collection::vec(0..words.len(), 0..5),
                prop::option::weighted(0.8, prop::array::uniform4(-2i8..=2)),
                0..4usize,
            ),
            0..130,
        )
        .prop_map(move |raw| {
            let mut records = Vec::new();
            let mut vectors = Vec::new();
            let mut removed = Vec::new();
            for (at, (group, name, description, vector, fate)) in raw.into_iter().enumerate() {
                let name: Vec<&str> = name.iter().map(|&w| words[w]).collect();
                let description: Vec<&str> = description.iter().map(|&w| words[w]).collect();
                records.push(record(
                    groups[group],
                    &format!("{}_{}", name.join("_"), at),
                    &description.join(" "),
                ));
                vectors.push(vector);
                if fate == 0 {
                    removed.push(at);
                }
            }
            (records, vectors, removed)
        })
    }

    fn build(
        records: &[Record],
        vectors: &[Option<[i8; 4]>],
        removed: &[usize],
        reverse: bool,
    ) -> SearchIndex {
        let mut index = SearchIndex::new();
        let mut order: Vec<usize> = (0..records.len()).collect();
        if reverse {
            order.reverse();
        }
        index.upsert(order.iter().map(|&at| records[at].clone()));
        for &at in &order {
            if let Some(vector) = vectors[at] {
                let row: Vec<f32> = vector.iter().map(|&x| f32::from(x)).collect();
                index
                    .set_vectors(&[&records[at].key], &bytes(&row), 4)
                    .unwrap();
            }
        }
        index.remove(removed.iter().map(|&at| &records[at].key));
        index
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

        #[test]
        fn pages_are_the_ranking_by_definition(
            (records, vectors, removed) in corpus(),
            query in prop::sample::select(vec![
                "", "get file", "weather report for the user", "the", "list_3", "a__get_7", "zzz", "file file",
            ]),
            query_vector in prop::array::uniform4(-2i8..=2),
            weight in prop::sample::select(vec![0.0f64, 0.25, 0.4, 0.5, 1.0]),
            groups in prop::option::of(prop::sample::subsequence(vec!["a", "b", "c"], 0..3)),
            windows in prop::collection::vec((0usize..80, 0usize..30), 1..6),
        ) {
            let index = build(&records, &vectors, &removed, false);
            let vector: Vec<f32> = query_vector.iter().map(|&x| f32::from(x)).collect();
            let groups = groups.as_deref();
            let (total, expected) = reference(&index, query, &vector, groups, weight);
            // Every window is the slice of the ranking, with the same total.
            for (offset, limit) in windows.into_iter().chain([(0, usize::MAX), (0, 0)]) {
                let page = hybrid(&index, query, Some(&vector), groups, (offset, limit), weight);
                let slice: Vec<String> = expected.iter().skip(offset).take(limit).cloned().collect();
                prop_assert_eq!(page, (total, slice), "window {}+{}", offset, limit);
            }
            // Pages of 7 cover the ranking exactly once.
            let mut pages = Vec::new();
            let mut offset = 0;
            while offset < total {
                let (page_total, page) = hybrid(&index, query, Some(&vector), groups, (offset, 7), weight);
                prop_assert_eq!(page_total, total);
                pages.extend(page);
                offset += 7;
            }
            prop_assert_eq!(&pages, &expected);
            // Exact names first; the group filter restricts both signals.
            let exact = index.exact_matches(query, index.allowed_groups(groups).as_deref());
            let exact_keys: Vec<&str> = exact.iter().map(|&d| index.docs[d as usize].name.key()).collect();
            prop_assert!(expected.iter().take(exact.len()).all(|key| exact_keys.contains(&key.as_str())));
            if let Some(groups) = groups {
                let in_groups = expected.iter().all(|key| groups.iter().any(|g| key.starts_with(&format!("{g}__"))));
                prop_assert!(in_groups);
            }
            // Without a vector (or weight 0): the keyword search, exactly.
            for (offset, limit) in [(0, 10), (3, 5), (0, usize::MAX)] {
                let keyword = search(&index, query, groups, offset, limit);
                prop_assert_eq!(&hybrid(&index, query, None, groups, (offset, limit), weight), &keyword);
                prop_assert_eq!(&hybrid(&index, query, Some(&vector), groups, (offset, limit), 0.0), &keyword);
            }
            // Explanations agree with the ranking's order.
            let bytes_vector = bytes(&vector);
            let fused: Vec<(bool, f32)> = expected
                .iter()
                .map(|key| {
                    let e = index.explain_hybrid(query, Some(&bytes_vector), groups, key, weight).unwrap().unwrap();
                    (e.exact, e.fused)
                })
                .collect();
            for pair in fused.windows(2) {
                prop_assert!((pair[0].0 && !pair[1].0) || (pair[0].0 == pair[1].0 && pair[0].1 >= pair[1].1), "{:?}", pair);
            }
        }

        #[test]
        fn rankings_do_not_depend_on_history(
            (records, vectors, removed) in corpus(),
            query in prop::sample::select(vec!["get file", "weather report for the user", "zzz", "list"]),
            query_vector in prop::array::uniform4(-2i8..=2),
            weight in prop::sample::select(vec![0.3f64, 0.5, 1.0]),
        ) {
            let vector: Vec<f32> = query_vector.iter().map(|&x| f32::from(x)).collect();
            let forward = build(&records, &vectors, &removed, false);
            let backward = build(&records, &vectors, &removed, true);
            // A fresh index of the surviving records only (no removal, no compaction).
            let kept: Vec<usize> = (0..records.len()).filter(|at| !removed.contains(at)).collect();
            let fresh = build(
                &kept.iter().map(|&at| records[at].clone()).collect::<Vec<_>>(),
                &kept.iter().map(|&at| vectors[at]).collect::<Vec<_>>(),
                &[],
                false,
            );
            prop_assert_eq!(forward.vector_count(), fresh.vector_count());
            let expected = hybrid(&fresh, query, Some(&vector), None, (0, usize::MAX), weight);
            prop_assert_eq!(&hybrid(&forward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
            prop_assert_eq!(&hybrid(&backward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
            prop_assert_eq!(&hybrid(&forward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
        }
    }
}
