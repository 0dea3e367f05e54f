//! Query execution in the manner of `MaxScore` (Turtle and Flood): the requested window is computed
//! without scoring every document that some query token matches.
//!
//! The score of a document is defined in [`super::bm25f`]. Execution:
//!
//! 1. The *content tokens* (those that find documents, not the optional function words) are taken
//!    in order of their *upper bound*, the most one token can add to a score:
//!    `weight * (K1 + 1) * idf`, with the highest `idf` of its own term or of any term of its stem
//!    class.
//! 2. Each is scored over its whole posting list into per-document accumulators
//!    ([`super::scorer`]). Before a token whose remaining lists are long, the `keep`-th best score
//!    so far (`threshold`) is compared with the most any document could reach from the remaining
//!    tokens alone; when that is lower, no document they alone match can enter the window. The
//!    tokens scored so far are the *essential* ones, the remaining ones *non-essential*: these
//!    still count their documents into `total` (a bitmap union, no scoring), and they score only
//!    the *candidates*.
//!    Optional tokens whose lists are short are scanned first, into accumulators of their own:
//!    the most they add to any one document, not the sum of their upper bounds, is then part of
//!    the bound (rare function words such as `there` or `could` have a high `idf`, yet a tool
//!    description rarely holds several). Their gains count only for documents a content token
//!    (or an exact name) finds.
//! 3. The threshold is recomputed once the essential tokens are scored.
//! 4. Candidates are the scored documents (and exact name matches) whose score plus the upper
//!    bounds of the non-essential tokens and of the common optional tokens can still reach
//!    `threshold`; the others are known to rank below at least `keep` documents. Those tokens
//!    score only the candidates, by galloping search in their posting lists (sorted by document).
//!    While the candidates are many, the threshold is raised after each non-essential token and
//!    the candidates that can no longer reach it are dropped.
//! 5. The candidates go through the top-k collector ([`super::collector`]).
//!
//! Every document that can reach the window therefore gets its exact score, added in the same
//! order as without pruning (content tokens and optional tokens in separate accumulators, each
//! in a fixed token order), so the pruning never changes a ranking: the
//! `pruning_never_changes_the_window` test checks this against scoring without it.

use super::bm25f::document_score;
use super::collector::{ScoredDoc, TopK};
use super::plan::QueryPlan;
use super::query::{DocScore, PreparedQuery};
use super::scorer::{combined, with_scratch, Scorer, Scratch};
use super::SearchIndex;

#[cfg(test)]
thread_local! {
    /// Queries that had non-essential tokens / a threshold / candidates dropped between
    /// non-essential tokens, on this thread (tests check pruning ran).
    pub(super) static PRUNED: std::cell::Cell<[usize; 3]> = const { std::cell::Cell::new([0; 3]) };
}

/// Relative margin of the pruning tests, so float rounding can never prune a document that ties.
const PRUNE_MARGIN: f32 = 1e-4;
/// Most threshold computations per query (each costs a pass over the scored documents).
const MAX_THRESHOLD_CHECKS: usize = 4;
/// The candidates are pruned again after a non-essential token while they are more than this many
/// times the window.
const PRUNE_AGAIN: usize = 8;

/// One query's execution over one index state (see the module docs).
struct MaxScore<'i, 'q, 'a> {
    index: &'i SearchIndex,
    scorer: Scorer<'i>,
    plan: QueryPlan<'q, 'a>,
    /// Exact name matches, sorted.
    exact: &'i [u32],
    /// `[gain, matched]` per group id (empty: no group description matches).
    group_gains: &'i [[f32; 2]],
    /// Component-wise maxima over the selectable groups: an upper bound of any one group's.
    max_group_gain: [f32; 2],
    /// Selectable groups whose description the query matches: each member is a match (the group
    /// text is a field of every member), also when no token matches its own fields.
    described: Vec<(usize, [f32; 2])>,
    /// Component-wise maxima of the scanned optional tokens' `[gain, matched]` over the documents
    /// (known once they are scanned, before the content tokens): what they can add to a document
    /// the content tokens have not found yet.
    max_scanned: [f32; 2],
    keep: usize,
}

impl MaxScore<'_, '_, '_> {
    /// The group gain of a document's group (group descriptions, see `group_text`), added to
    /// its score; the largest selectable one is part of every pruning bound.
    fn group_gain(&self, doc: u32) -> [f32; 2] {
        group_gain(self.group_gains, &self.index.doc_group, doc)
    }

    fn is_exact(&self, doc: u32) -> bool {
        !self.exact.is_empty() && self.exact.binary_search(&doc).is_ok()
    }

    /// A document the query's own tokens did not find (nor an exact name match).
    fn unfound(&self, doc: u32, scratch: &Scratch) -> bool {
        scratch.score[doc as usize][1] == 0.0
            && (self.exact.is_empty() || self.exact.binary_search(&doc).is_err())
    }

    /// The selectable members of `group`.
    fn members(&self, group: usize) -> impl Iterator<Item = u32> + '_ {
        self.index.groups[group]
            .members
            .docs()
            .filter(|&doc| self.scorer.selectable(doc))
    }

    /// Scans the optional tokens with short lists into the optional accumulators of every
    /// selectable document they match (kept only for the documents a content token or an exact
    /// name finds); returns the component-wise maxima of the sums.
    fn scan_optional(&self, scratch: &mut Scratch) -> [f32; 2] {
        for planned in &self.plan.scanned {
            self.scorer.scan_optional(planned, scratch);
        }
        let mut most = [0.0f32; 2];
        for planned in &self.plan.scanned {
            for doc in self.scorer.term_docs(planned) {
                let [gain, matched] = scratch.optional[doc as usize];
                most = [most[0].max(gain), most[1].max(matched)];
            }
        }
        most
    }

    /// Scores the essential tokens over their whole lists into `touched` (the documents they
    /// found); returns where the non-essential tokens start and the threshold found on the way.
    fn score_essential(
        &self,
        prune: bool,
        touched: &mut Vec<u32>,
        scratch: &mut Scratch,
    ) -> (usize, Option<f32>) {
        let plan = &self.plan;
        let mut checks = 0;
        let mut best = 0.0f32;
        // A threshold found stays valid as tokens are added (scores only grow), so it is reused.
        let mut known = 0.0f32;
        for at in 0..plan.content.len() {
            let remaining = plan.suffix[at].2;
            if prune && at > 0 {
                let (bound, weight) = plan.rest(at);
                let reach = plan.upper(
                    bound + self.max_group_gain[0] + self.max_scanned[0],
                    weight + self.max_group_gain[1] + self.max_scanned[1],
                ) * (1.0 + PRUNE_MARGIN);
                // A new threshold costs a pass over `touched`: computed only when it may succeed
                // (the best score so far beats the bound) and saves more than it costs.
                if reach >= known
                    && reach < best
                    && checks < MAX_THRESHOLD_CHECKS
                    && 2 * remaining > touched.len()
                {
                    checks += 1;
                    known = self.threshold(touched, known, scratch).unwrap_or(known);
                }
                if reach < known {
                    return (at, Some(known));
                }
            }
            self.scorer.accumulate(
                &plan.content[at],
                plan.query_tokens,
                touched,
                &mut best,
                scratch,
            );
        }
        (plan.content.len(), None)
    }

    /// The `keep`-th best score so far among `docs` that are not exact matches, group gains
    /// included (scores only grow as tokens are added, so the final `keep`-th best is at least
    /// this), or `None` when fewer than `keep` of them score at least `floor` (a threshold the
    /// caller already has: only the scores above it are collected).
    fn threshold(&self, docs: &[u32], floor: f32, scratch: &mut Scratch) -> Option<f32> {
        let keep = self.keep;
        if keep == 0 || docs.len() < keep {
            return None;
        }
        let query_tokens = self.plan.query_tokens;
        let mut scores = std::mem::take(&mut scratch.scores);
        scores.clear();
        scores.extend(
            docs.iter()
                .filter(|doc| self.exact.is_empty() || self.exact.binary_search(doc).is_err())
                .map(|&doc| {
                    let index = doc as usize;
                    let content = scratch.score[index];
                    // The optional tokens count only for a document a content token found.
                    let optional = if content[1] == 0.0 {
                        [0.0; 2]
                    } else {
                        scratch.optional[index]
                    };
                    document_score(content, optional, self.group_gain(doc), query_tokens).0
                })
                .filter(|&score| score >= floor),
        );
        let found = (scores.len() >= keep).then(|| {
            let (_, kth, _) = scores.select_nth_unstable_by(keep - 1, |a, b| b.total_cmp(a));
            *kth
        });
        scratch.scores = scores;
        found
    }

    /// `total`: the union of the scored documents, the exact matches, the members of described
    /// groups and the non-essential tokens' selectable documents.
    fn count_total(&self, cut: usize, touched: &[u32], scratch: &mut Scratch) -> usize {
        let non_essential = &self.plan.content[cut..];
        if non_essential.is_empty() {
            let group_only: usize = self
                .described
                .iter()
                .map(|&(group, _)| {
                    self.members(group)
                        .filter(|&doc| self.unfound(doc, scratch))
                        .count()
                })
                .sum();
            return touched.len()
                + self
                    .exact
                    .iter()
                    .filter(|&&doc| scratch.score[doc as usize][1] == 0.0)
                    .count()
                + group_only;
        }
        for &doc in touched.iter().chain(self.exact) {
            scratch.mark(doc);
        }
        for &(group, _) in &self.described {
            for doc in self.members(group) {
                scratch.mark(doc);
            }
        }
        for planned in non_essential {
            let token = planned.token;
            let class: &[u32] = if token.has_variants() {
                &token.class
            } else {
                &[]
            };
            for term in token.term.into_iter().chain(class.iter().copied()) {
                for posting in self.scorer.postings(term) {
                    if self.scorer.selectable(posting.doc) {
                        scratch.mark(posting.doc);
                    }
                }
            }
        }
        scratch.take_count()
    }

    /// The candidates: documents that can still reach the window, in document order. The
    /// accumulators of the other scored documents are cleared.
    fn select_candidates(
        &self,
        cut: usize,
        threshold: Option<f32>,
        touched: &[u32],
        scratch: &mut Scratch,
    ) -> Vec<u32> {
        let (rest_bound, rest_weight) = self.plan.rest(cut);
        // Group-only members first (before pruned found documents' accumulators are cleared):
        // a group whose gain cannot reach the threshold adds none. A member that a non-essential
        // token finds also gets its scanned optional gains.
        for &(group, [gain, matched]) in &self.described {
            let reach = self.plan.upper(
                rest_bound + gain + self.max_scanned[0],
                rest_weight + matched + self.max_scanned[1],
            ) * (1.0 + PRUNE_MARGIN);
            if threshold.is_some_and(|threshold| reach < threshold) {
                continue;
            }
            for doc in self.members(group) {
                if self.unfound(doc, scratch) {
                    scratch.mark(doc);
                }
            }
        }
        for &doc in touched {
            if threshold.is_none_or(|threshold| {
                self.kept(doc, (rest_bound, rest_weight), threshold, scratch)
            }) {
                scratch.mark(doc);
            }
        }
        for &doc in self.exact {
            scratch.mark(doc);
        }
        scratch.take_marked()
    }

    /// Adds the non-essential tokens' gains to the candidates, and the optional tokens' to the
    /// candidates that a content token (or an exact name) found.
    ///
    /// Between tokens, while the candidates are many, the threshold is raised to the `keep`-th
    /// best score the candidates have so far and the candidates that can no longer reach it (their
    /// score plus what the tokens still to add can give) are dropped, their accumulators cleared:
    /// with near-duplicate tools, thousands of candidates share the first tokens' gains and only
    /// the later tokens tell them apart.
    fn score_candidates(
        &self,
        cut: usize,
        prune: bool,
        mut threshold: Option<f32>,
        candidates: &mut Vec<u32>,
        scratch: &mut Scratch,
    ) {
        // Group-only candidates (no content token matched them yet) that a non-essential token
        // may find.
        let group_only: Vec<u32> = if self.described.is_empty() {
            Vec::new()
        } else {
            candidates
                .iter()
                .copied()
                .filter(|&doc| self.unfound(doc, scratch))
                .collect()
        };
        for (at, planned) in self.plan.content.iter().enumerate().skip(cut) {
            self.scorer.look_up(planned, true, candidates, scratch);
            if prune && candidates.len() > PRUNE_AGAIN * self.keep {
                if let Some(found) = self.threshold(candidates, threshold.unwrap_or(0.0), scratch) {
                    threshold = Some(threshold.map_or(found, |known| known.max(found)));
                }
                self.drop_unreachable(at + 1, threshold, candidates, scratch);
            }
        }
        // Optional tokens score only documents a content token (or an exact name) found, as
        // without pruning: a member found only through its group's description gets none (its
        // scanned gains are cleared), and one that a non-essential token found keeps its scanned
        // gains.
        let found: Vec<u32>;
        let optional_docs: &[u32] = if group_only.is_empty() {
            candidates
        } else {
            for &doc in &group_only {
                if self.unfound(doc, scratch) {
                    scratch.optional[doc as usize] = [0.0; 2];
                }
            }
            found = candidates
                .iter()
                .copied()
                .filter(|&doc| !self.unfound(doc, scratch))
                .collect();
            &found
        };
        for planned in &self.plan.looked_up {
            self.scorer.look_up(planned, false, optional_docs, scratch);
        }
    }

    /// Whether `doc` (an exact match, or a document whose score so far plus `rest`, what the
    /// tokens still to score can add, and its group gain can reach `threshold`) stays a candidate;
    /// a document that does not has its accumulators cleared.
    fn kept(&self, doc: u32, rest: (f32, f32), threshold: f32, scratch: &mut Scratch) -> bool {
        let index = doc as usize;
        let (score, matched) = combined(scratch.score[index], scratch.optional[index]);
        let [gain, group_matched] = self.group_gain(doc);
        let reach = self
            .plan
            .upper(score + rest.0 + gain, matched + rest.1 + group_matched)
            * (1.0 + PRUNE_MARGIN);
        let kept = reach >= threshold || self.is_exact(doc);
        if !kept {
            scratch.score[index] = [0.0; 2];
            scratch.optional[index] = [0.0; 2];
        }
        kept
    }

    /// Drops the candidates (but exact matches) that cannot reach `threshold` once the content
    /// tokens from `from` on and the looked-up optional tokens have added their most (the scanned
    /// ones are in the accumulators already), clearing their accumulators.
    fn drop_unreachable(
        &self,
        from: usize,
        threshold: Option<f32>,
        candidates: &mut Vec<u32>,
        scratch: &mut Scratch,
    ) {
        let Some(threshold) = threshold.filter(|&threshold| threshold > 0.0) else {
            return;
        };
        let (rest_bound, rest_weight) = self.plan.rest(from);
        #[cfg(test)]
        let before = candidates.len();
        candidates.retain(|&doc| self.kept(doc, (rest_bound, rest_weight), threshold, scratch));
        #[cfg(test)]
        PRUNED.with(|count| {
            let [cuts, thresholds, drops] = count.get();
            count.set([
                cuts,
                thresholds,
                drops + usize::from(candidates.len() < before),
            ]);
        });
    }

    /// The final scores of the candidates through the top-k collector (their accumulators
    /// cleared), best first.
    fn collect(&self, candidates: &[u32], scratch: &mut Scratch) -> Vec<ScoredDoc> {
        let mut best = TopK::new(self.keep);
        for &doc in candidates {
            best.push(scored(
                self.index,
                doc,
                self.is_exact(doc),
                self.group_gain(doc),
                self.plan.query_tokens,
                scratch,
            ));
        }
        best.into_sorted()
    }
}

impl PreparedQuery<'_> {
    /// Scores the selectable documents matching the query's tokens (see the module docs), plus
    /// its exact matches, and returns their number and the best `keep` of them, best first (one
    /// keyword run; [`PreparedQuery::score`] adds the rule for optional tokens).
    pub(super) fn execute(&self, keep: usize, prune: bool) -> (usize, Vec<ScoredDoc>) {
        with_scratch(|scratch| self.execute_with(keep, prune, scratch))
    }

    /// [`Self::execute`] with `scratch`, which must be zeroed and is left zeroed.
    fn execute_with(
        &self,
        keep: usize,
        prune: bool,
        scratch: &mut Scratch,
    ) -> (usize, Vec<ScoredDoc>) {
        let index = self.index;
        let allowed = self.allowed();
        let group_gains = &self.group_gains;
        scratch.fit(index.docs.len());
        let selected = |group: usize| allowed.is_none_or(|allowed| allowed[group]);
        let max_group_gain = group_gains
            .iter()
            .enumerate()
            .filter(|&(group, _)| selected(group))
            .fold([0.0f32; 2], |[gain, matched], (_, &[g, m])| {
                [gain.max(g), matched.max(m)]
            });
        let described = group_gains
            .iter()
            .enumerate()
            .filter(|&(group, gain)| gain[0] > 0.0 && selected(group))
            .map(|(group, &gain)| (group, gain))
            .collect();
        let scorer = Scorer::new(index, allowed);
        let mut run = MaxScore {
            index,
            group_gains,
            plan: QueryPlan::new(&scorer, &self.tokens, index.live),
            scorer,
            exact: &self.exact,
            max_group_gain,
            described,
            max_scanned: [0.0; 2],
            keep,
        };
        run.max_scanned = run.scan_optional(scratch);
        let mut touched = std::mem::take(&mut scratch.touched);
        touched.clear();
        let (cut, mut threshold) = run.score_essential(prune, &mut touched, scratch);
        if prune && (threshold.is_some() || touched.len() / 8 > keep) {
            // Scores grew since (or no threshold was needed yet): the candidates are fewer with it.
            threshold = run
                .threshold(&touched, threshold.unwrap_or(0.0), scratch)
                .or(threshold);
        }
        let threshold = threshold.filter(|&threshold| threshold > 0.0);
        #[cfg(test)]
        PRUNED.with(|count| {
            let [cuts, thresholds, drops] = count.get();
            count.set([
                cuts + usize::from(cut < run.plan.content.len()),
                thresholds + usize::from(threshold.is_some()),
                drops,
            ]);
        });
        let total = run.count_total(cut, &touched, scratch);
        let mut candidates = run.select_candidates(cut, threshold, &touched, scratch);
        run.score_candidates(cut, prune, threshold, &mut candidates, scratch);
        let best = run.collect(&candidates, scratch);
        for planned in &run.plan.scanned {
            run.scorer.clear_optional(planned, scratch);
        }
        scratch.touched = touched;
        (total, best)
    }
}

/// The group gain (`[gain, matched]`) of `doc`'s group among `group_gains` (by group id; empty: no
/// group description matches; see `group_text`).
#[inline]
pub(super) fn group_gain(group_gains: &[[f32; 2]], doc_group: &[u32], doc: u32) -> [f32; 2] {
    if group_gains.is_empty() {
        return [0.0; 2];
    }
    group_gains
        .get(doc_group[doc as usize] as usize)
        .copied()
        .unwrap_or([0.0; 2])
}

/// `doc` with its final score ([`document_score`]) from its accumulators, which are taken (left
/// zeroed), and its group's gain `group`: what the collector ranks and the hybrid's look-ups return.
#[inline]
fn scored(
    index: &SearchIndex,
    doc: u32,
    exact: bool,
    group: [f32; 2],
    query_tokens: f32,
    scratch: &mut Scratch,
) -> ScoredDoc {
    let at = doc as usize;
    let parts = DocScore {
        exact,
        content: std::mem::take(&mut scratch.score[at]),
        optional: std::mem::take(&mut scratch.optional[at]),
        group,
        query_tokens,
    };
    ScoredDoc {
        doc,
        exact,
        score: parts.score().0,
        ordinal: index.tie_break_ordinals[at],
    }
}

#[cfg(test)]
#[path = "tests/maxscore.rs"]
mod tests;
