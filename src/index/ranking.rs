//! Query-time ranking: BM25F gains per query token, pruning of documents that cannot reach the
//! requested window, and top-k selection.
//!
//! The score of a document is defined in the [module docs](super); this file computes it without
//! scoring every document that some query token matches:
//!
//! 1. The tokens that find documents (not the optional function words) are taken in order of
//!    their *upper bound*, the most one token can add to a score: `weight * (K1 + 1) * idf`, with
//!    the highest `idf` of its own term or of any term of its stem class.
//! 2. Each is scored over its whole posting list into per-document accumulators. Before a token
//!    whose remaining lists are long, the `keep`-th best score so far (`threshold`) is compared
//!    with the most any document could reach from the remaining tokens alone; when that is lower,
//!    no document they alone match can enter the window, so the remaining tokens are *deferred*:
//!    they still count their documents into `total` (a bitmap union, no scoring), and they score
//!    only the *survivors*.
//! 3. Optional tokens whose lists are short are then scanned once, adding to the documents
//!    already found (and the exact name matches); the threshold is recomputed with them.
//! 4. Survivors are the scored documents (and exact name matches) whose score plus the upper
//!    bounds of the deferred tokens and of the common optional tokens can still reach
//!    `threshold`; the others are known to rank below at least `keep` documents. Those tokens
//!    score only the survivors, by galloping search in their posting lists (sorted by document).
//!
//! Every document that can reach the window therefore gets its exact score, added in the same
//! order as without pruning (finding tokens and optional tokens in separate accumulators, each
//! in a fixed token order), so the pruning never changes a ranking: the
//! `pruning_never_changes_the_window` test checks this against scoring without it.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{Posting, SearchIndex, COVERAGE_BOOST, FIELDS, K1, LENGTH_NORMALIZATION, WEIGHTS};

thread_local! {
    /// Per-thread query accumulators, indexed by document and kept zeroed between queries, so a
    /// query touches only the entries of matching documents instead of allocating.
    static SCORE_SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[cfg(test)]
thread_local! {
    /// Queries that deferred tokens / pruned documents on this thread (tests check pruning ran).
    pub(super) static PRUNED: std::cell::Cell<[usize; 2]> = const { std::cell::Cell::new([0; 2]) };
}

/// Relative margin of the pruning tests, so float rounding can never prune a document that ties.
const PRUNE_MARGIN: f32 = 1e-4;
/// An optional token is scanned when its list holds at most 1 / `SCAN_FRACTION` of the documents.
const SCAN_FRACTION: usize = 8;
/// Most threshold computations per query (each costs a pass over the scored documents).
const MAX_THRESHOLD_CHECKS: usize = 4;

/// Per-document accumulators of one query; every entry is zero between queries.
#[derive(Debug, Default)]
struct Scratch {
    /// Summed, weighted gains and summed query weights of the matched finding tokens.
    score: Vec<[f32; 2]>,
    /// The same for the optional tokens (kept apart, so their sum is added in one fixed order
    /// whichever way each was scored).
    optional: Vec<[f32; 2]>,
    /// Gain of the current query token.
    gain: Vec<f32>,
    /// Per-field term frequencies of the current stem class.
    class_tf: Vec<[u16; FIELDS]>,
    /// One bit per document: sorting a set of documents, counting a union.
    marks: Vec<u64>,
    /// Reused document lists (kept empty between queries, their capacity kept).
    touched: Vec<u32>,
    token_docs: Vec<u32>,
    class_docs: Vec<u32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn fit(&mut self, docs: usize) {
        if self.score.len() < docs {
            self.score.resize(docs, [0.0; 2]);
            self.optional.resize(docs, [0.0; 2]);
            self.gain.resize(docs, 0.0);
            self.class_tf.resize(docs, [0; FIELDS]);
            self.marks.resize(docs.div_ceil(64), 0);
        }
    }

    fn mark(&mut self, doc: u32) {
        self.marks[doc as usize / 64] |= 1 << (doc % 64);
    }

    /// The marked documents in ascending order; clears the marks.
    fn take_marked(&mut self) -> Vec<u32> {
        let mut sorted = Vec::new();
        for (word, bits) in self.marks.iter_mut().enumerate() {
            let mut bits = std::mem::take(bits);
            while bits != 0 {
                sorted.push(word as u32 * 64 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        sorted
    }

    /// Number of marked documents; clears the marks.
    fn take_count(&mut self) -> usize {
        self.marks
            .iter_mut()
            .map(|bits| std::mem::take(bits).count_ones() as usize)
            .sum()
    }
}

/// One distinct token of a query, resolved against the term dictionary.
#[derive(Debug)]
pub(super) struct QueryToken<'a> {
    /// The token as the tokenizer produced it (for explanations).
    pub(super) text: Box<str>,
    /// The token's own term, if indexed.
    pub(super) term: Option<u32>,
    /// The terms sharing its stem, and those of its synonyms' stems (`crate::synonyms`), sorted;
    /// empty if none is indexed.
    pub(super) class: Cow<'a, [u32]>,
    /// 1, or `STOPWORD_WEIGHT` for an English function word.
    pub(super) weight: f32,
    /// A function word in a query with other indexed tokens: it scores the documents the other
    /// tokens find (by its own term only) and finds none itself.
    pub(super) optional: bool,
}

impl QueryToken<'_> {
    /// Whether other terms of its stem are indexed (its gain is then the larger of two).
    pub(super) fn has_variants(&self) -> bool {
        self.class.iter().any(|&member| Some(member) != self.term)
    }
}

/// A ranked candidate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) doc: u32,
    pub(super) exact: bool,
    pub(super) score: f32,
    /// The document's `(group, tool, key)` position.
    rank: u32,
}

/// Ranking order: exact name matches first, then score descending, then `(group, tool, key)`.
fn compare(a: &Candidate, b: &Candidate) -> Ordering {
    b.exact
        .cmp(&a.exact)
        .then_with(|| b.score.total_cmp(&a.score))
        .then_with(|| a.rank.cmp(&b.rank))
}

/// The first position in `postings[from..]` (sorted by document) whose document is `>= doc`,
/// found by galloping (exponential, then binary) search.
fn gallop(postings: &[Posting], from: usize, doc: u32) -> usize {
    let below = |at: usize| postings.get(at).is_some_and(|posting| posting.doc < doc);
    if !below(from) {
        return from;
    }
    // Invariant: postings[low].doc < doc.
    let mut low = from;
    let mut step = 1;
    while below(low + step) {
        low += step;
        step *= 2;
    }
    let high = (low + step).min(postings.len());
    low + 1 + postings[low + 1..high].partition_point(|posting| posting.doc < doc)
}

/// The best `keep` candidates seen, in a heap whose top is the worst of them.
struct TopK {
    keep: usize,
    heap: BinaryHeap<Ranked>,
}

/// A candidate ordered by [`compare`]: greater is ranked lower.
struct Ranked(Candidate);

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
        compare(&self.0, &other.0)
    }
}

impl TopK {
    fn new(keep: usize) -> Self {
        Self {
            keep,
            heap: BinaryHeap::with_capacity(keep.min(1024)),
        }
    }

    fn push(&mut self, candidate: Candidate) {
        if self.heap.len() < self.keep {
            self.heap.push(Ranked(candidate));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if compare(&candidate, &worst.0) == Ordering::Less {
                *worst = Ranked(candidate);
            }
        }
    }

    /// The kept candidates, best first.
    fn into_sorted(self) -> Vec<Candidate> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|ranked| ranked.0)
            .collect()
    }
}

/// A query token with its upper bound and the length of its posting lists.
struct Planned<'q, 'a> {
    token: &'q QueryToken<'a>,
    /// The most this token can add to a document's summed gains (weight included).
    bound: f32,
    /// Postings of its term and stem class.
    postings: usize,
    /// `idf` of its own term (0 without one), computed once per query.
    term_idf: f32,
}

/// The gains of one query over one index state.
pub(super) struct Scorer<'i> {
    index: &'i SearchIndex,
    allowed: Option<&'i [bool]>,
    /// No group filter and no dead document: every listed document is selectable (and alive), so
    /// the per-posting checks are skipped.
    everything: bool,
    live: f32,
    /// Per-field `1 - b` and `b / average length` of the BM25 length normalization.
    base: [f32; FIELDS],
    slope: [f32; FIELDS],
}

impl<'i> Scorer<'i> {
    pub(super) fn new(index: &'i SearchIndex, allowed: Option<&'i [bool]>) -> Self {
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
            index,
            allowed,
            everything: allowed.is_none() && index.dead == 0,
            live: index.live as f32,
            base,
            slope,
        }
    }

    #[inline]
    pub(super) fn selectable(&self, doc: u32) -> bool {
        if self.everything {
            return true;
        }
        let index = doc as usize;
        self.index.alive[index]
            && self
                .allowed
                .is_none_or(|allowed| allowed[self.index.doc_group[index] as usize])
    }

    pub(super) fn idf(&self, df: usize) -> f32 {
        (1.0 + (self.live - df as f32 + 0.5) / (df as f32 + 0.5)).ln()
    }

    /// BM25F: length-normalized, weighted field frequencies summed, then saturated (so a gain is
    /// always below `idf * (K1 + 1)`).
    #[inline]
    pub(super) fn gain(&self, doc: u32, tf: [u16; FIELDS], idf: f32) -> f32 {
        let lens = &self.index.doc_lens[doc as usize];
        let mut sum = 0.0f32;
        for field in 0..FIELDS {
            if tf[field] != 0 {
                let norm = self.base[field] + self.slope[field] * f32::from(lens[field]);
                sum += WEIGHTS[field] * f32::from(tf[field]) / norm.max(1e-3);
            }
        }
        idf * sum * (K1 + 1.0) / (sum + K1)
    }

    /// Each field's share of [`Self::gain`] for `tf` (they sum to 1 over the matched fields).
    pub(super) fn field_shares(&self, doc: u32, tf: [u16; FIELDS]) -> [f32; FIELDS] {
        let lens = &self.index.doc_lens[doc as usize];
        let mut parts = [0.0f32; FIELDS];
        for field in 0..FIELDS {
            if tf[field] != 0 {
                let norm = self.base[field] + self.slope[field] * f32::from(lens[field]);
                parts[field] = WEIGHTS[field] * f32::from(tf[field]) / norm.max(1e-3);
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

    pub(super) fn postings(&self, term: u32) -> &'i [Posting] {
        self.index.postings[term as usize].as_slice()
    }

    /// Number of live documents in `postings`.
    pub(super) fn live_df(&self, postings: &[Posting]) -> usize {
        if self.index.dead == 0 {
            postings.len()
        } else {
            postings
                .iter()
                .filter(|posting| self.index.alive[posting.doc as usize])
                .count()
        }
    }

    /// `token` with its upper bound: a stem class holds at least as many documents as its
    /// largest member, so its `idf` is at most that member's.
    fn plan<'q, 'a>(&self, token: &'q QueryToken<'a>, class_too: bool) -> Planned<'q, 'a> {
        let mut postings = 0;
        let mut smallest_df = usize::MAX;
        let mut term_idf = 0.0;
        if let Some(term) = token.term {
            let list = self.postings(term);
            postings += list.len();
            smallest_df = self.live_df(list);
            term_idf = self.idf(smallest_df);
        }
        if class_too && token.has_variants() {
            let mut largest = 0;
            for &member in token.class.iter() {
                let list = self.postings(member);
                postings += list.len();
                largest = largest.max(self.live_df(list));
            }
            smallest_df = smallest_df.min(largest);
        }
        let bound = if smallest_df == usize::MAX {
            0.0
        } else {
            token.weight * (K1 + 1.0) * self.idf(smallest_df)
        };
        Planned {
            token,
            bound,
            postings,
            term_idf,
        }
    }

    /// Scores `token` over its whole posting lists: adds its gain to every selectable document it
    /// matches, recording newly matched documents in `touched` and raising `best` to the highest
    /// score so far (with its coverage factor, over `query_tokens` tokens).
    fn accumulate(
        &self,
        planned: &Planned<'_, '_>,
        query_tokens: f32,
        touched: &mut Vec<u32>,
        best: &mut f32,
        scratch: &mut Scratch,
    ) {
        let token = planned.token;
        let coverage = COVERAGE_BOOST / query_tokens;
        // Without other terms of its stem, a token's gain is its own term's: added directly.
        // Otherwise the two gains meet in `scratch.gain` and the larger is added.
        let variants = token.has_variants();
        let mut token_docs = std::mem::take(&mut scratch.token_docs);
        token_docs.clear();
        if let Some(term) = token.term {
            let postings = self.postings(term);
            let idf = planned.term_idf;
            for posting in postings
                .iter()
                .filter(|posting| self.selectable(posting.doc))
            {
                let doc_gain = self.gain(posting.doc, posting.tf(), idf);
                let index = posting.doc as usize;
                if variants {
                    // Settled below, against the stem class's gain.
                    scratch.gain[index] = doc_gain;
                    token_docs.push(posting.doc);
                    continue;
                }
                let [score, matched] = &mut scratch.score[index];
                if *matched == 0.0 {
                    touched.push(posting.doc);
                }
                *score += token.weight * doc_gain;
                *matched += token.weight;
                *best = best.max(*score * (1.0 + coverage * *matched));
            }
        }
        if !variants {
            scratch.token_docs = token_docs;
            return;
        }
        let mut class_docs = std::mem::take(&mut scratch.class_docs);
        class_docs.clear();
        for &member in token.class.iter() {
            for posting in self.postings(member) {
                if !self.everything && !self.index.alive[posting.doc as usize] {
                    continue;
                }
                let sum = &mut scratch.class_tf[posting.doc as usize];
                if *sum == [0; FIELDS] {
                    class_docs.push(posting.doc);
                }
                for (total, tf) in sum.iter_mut().zip(posting.tf()) {
                    *total = total.saturating_add(tf);
                }
            }
        }
        let idf = self.idf(class_docs.len());
        for &doc in &class_docs {
            let tf = std::mem::take(&mut scratch.class_tf[doc as usize]);
            if !self.selectable(doc) {
                continue;
            }
            let class_gain = self.gain(doc, tf, idf);
            let best = &mut scratch.gain[doc as usize];
            if *best == 0.0 {
                token_docs.push(doc);
            }
            *best = best.max(class_gain);
        }
        for &doc in &token_docs {
            let index = doc as usize;
            let doc_gain = std::mem::take(&mut scratch.gain[index]);
            let [score, matched] = &mut scratch.score[index];
            if *matched == 0.0 {
                touched.push(doc);
            }
            *score += token.weight * doc_gain;
            *matched += token.weight;
            *best = best.max(*score * (1.0 + coverage * *matched));
        }
        scratch.token_docs = token_docs;
        scratch.class_docs = class_docs;
    }

    /// Adds the gain of `token` to each of `docs` (ascending, selectable), looking each up in its
    /// posting lists by galloping search; with `class_too` (a finding token), as the larger of the
    /// term's gain and the stem class's, exactly as [`Self::accumulate`] would, else (an optional
    /// token) into the optional accumulator.
    fn look_up(
        &self,
        planned: &Planned<'_, '_>,
        class_too: bool,
        docs: &[u32],
        scratch: &mut Scratch,
    ) {
        let token = planned.token;
        let term = token
            .term
            .map(|term| (self.postings(term), planned.term_idf));
        let class = (class_too && token.has_variants()).then(|| {
            let lists: Vec<&[Posting]> = token.class.iter().map(|&m| self.postings(m)).collect();
            // The class's document frequency: the live documents of the union of its lists.
            for posting in lists.iter().flat_map(|list| list.iter()) {
                if self.index.alive[posting.doc as usize] {
                    scratch.mark(posting.doc);
                }
            }
            let idf = self.idf(scratch.take_count());
            (lists, idf)
        });
        let mut term_at = 0;
        let mut class_at = vec![0usize; class.as_ref().map_or(0, |(lists, _)| lists.len())];
        for &doc in docs {
            let mut best: Option<f32> = None;
            if let Some((postings, idf)) = term {
                term_at = gallop(postings, term_at, doc);
                if let Some(posting) = postings.get(term_at).filter(|p| p.doc == doc) {
                    best = Some(self.gain(doc, posting.tf(), idf));
                }
            }
            if let Some((lists, idf)) = &class {
                let mut tf = [0u16; FIELDS];
                let mut found = false;
                for (list, at) in lists.iter().zip(class_at.iter_mut()) {
                    *at = gallop(list, *at, doc);
                    if let Some(posting) = list.get(*at).filter(|p| p.doc == doc) {
                        found = true;
                        for (total, tf) in tf.iter_mut().zip(posting.tf()) {
                            *total = total.saturating_add(tf);
                        }
                    }
                }
                if found {
                    let class_gain = self.gain(doc, tf, *idf);
                    best = Some(best.map_or(class_gain, |gain| gain.max(class_gain)));
                }
            }
            if let Some(gain) = best {
                let accumulator = if class_too {
                    &mut scratch.score
                } else {
                    &mut scratch.optional
                };
                let [score, matched] = &mut accumulator[doc as usize];
                *score += token.weight * gain;
                *matched += token.weight;
            }
        }
    }
}

impl Scorer<'_> {
    /// Adds the gain of the optional `token` to the documents of its posting list that finding
    /// tokens matched or that are `exact` matches: one pass over its list, cheaper than a lookup
    /// per document when the list is short.
    fn scan_optional(&self, planned: &Planned<'_, '_>, exact: &[u32], scratch: &mut Scratch) {
        let token = planned.token;
        let Some(term) = token.term else { return };
        let postings = self.postings(term);
        let idf = planned.term_idf;
        for posting in postings {
            let doc = posting.doc;
            let found = scratch.score[doc as usize][1] != 0.0;
            if found || (!exact.is_empty() && exact.binary_search(&doc).is_ok()) {
                let [score, matched] = &mut scratch.optional[doc as usize];
                *score += token.weight * self.gain(doc, posting.tf(), idf);
                *matched += token.weight;
            }
        }
    }
}

/// Final score from the two accumulators of a document.
fn combined(finding: [f32; 2], optional: [f32; 2]) -> (f32, f32) {
    (finding[0] + optional[0], finding[1] + optional[1])
}

impl SearchIndex {
    /// Scores the selectable documents matching `tokens` (see the module docs), plus the `exact`
    /// documents (sorted), and returns their number and the best `keep` of them, best first.
    pub(super) fn score_query(
        &self,
        tokens: &[QueryToken<'_>],
        exact: &[u32],
        allowed: Option<&[bool]>,
        keep: usize,
        prune: bool,
        group_gains: &[[f32; 2]],
    ) -> (usize, Vec<Candidate>) {
        SCORE_SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => self.score(
                tokens,
                exact,
                allowed,
                keep,
                prune,
                group_gains,
                &mut scratch,
            ),
            Err(_) => self.score(
                tokens,
                exact,
                allowed,
                keep,
                prune,
                group_gains,
                &mut Scratch::default(),
            ),
        })
    }

    /// [`Self::score_query`] with `scratch`, which must be zeroed and is left zeroed.
    #[allow(clippy::too_many_arguments)] // the query's parts, passed through from `score_query`
    fn score(
        &self,
        tokens: &[QueryToken<'_>],
        exact: &[u32],
        allowed: Option<&[bool]>,
        keep: usize,
        prune: bool,
        group_gains: &[[f32; 2]],
        scratch: &mut Scratch,
    ) -> (usize, Vec<Candidate>) {
        scratch.fit(self.docs.len());
        // The group gain of a document's group (group descriptions, see `group_text`), added to
        // its score; the largest selectable one is part of every pruning bound.
        let group_gain = |doc: u32| {
            group_gains
                .get(self.doc_group[doc as usize] as usize)
                .copied()
                .unwrap_or([0.0; 2])
        };
        // Component-wise maxima over the selectable groups: an upper bound of any one group's.
        let max_group_gain = group_gains
            .iter()
            .enumerate()
            .filter(|&(group, _)| allowed.is_none_or(|allowed| allowed[group]))
            .fold([0.0f32; 2], |[gain, matched], (_, &[g, m])| {
                [gain.max(g), matched.max(m)]
            });
        let scorer = Scorer::new(self, allowed);
        let query_tokens = tokens.len().max(1) as f32;
        let upper =
            |bound: f32, weight: f32| bound * (1.0 + COVERAGE_BOOST * weight / query_tokens);

        // Finding tokens by upper bound, highest first (a stable sort: ties keep query order).
        let mut finding: Vec<Planned<'_, '_>> = tokens
            .iter()
            .filter(|token| !token.optional)
            .map(|token| scorer.plan(token, true))
            .collect();
        finding.sort_by(|a, b| b.bound.total_cmp(&a.bound));
        // Optional tokens: those with short lists are scanned once the finding tokens are scored
        // (`scanned`); the common ones (`the`, `a`) only look up the surviving documents. The split
        // depends on the index alone, so the optional gains always add up in the same order.
        let (scanned, looked_up): (Vec<Planned<'_, '_>>, Vec<Planned<'_, '_>>) = tokens
            .iter()
            .filter(|token| token.optional && token.term.is_some())
            .map(|token| scorer.plan(token, false))
            .partition(|planned| planned.postings * SCAN_FRACTION <= self.live);
        let sums = |planned: &[Planned<'_, '_>]| {
            (
                planned.iter().map(|p| p.bound).sum::<f32>(),
                planned.iter().map(|p| p.token.weight).sum::<f32>(),
            )
        };
        let (scanned_bound, scanned_weight) = sums(&scanned);
        let (looked_up_bound, looked_up_weight) = sums(&looked_up);
        // Suffix sums over `finding`: `suffix[at]` is what the finding tokens from `at` on can add
        // (upper bound, weight) and how many postings they hold. Computed once, so a query of `n`
        // distinct tokens costs O(n) here, not O(n^2).
        let mut suffix = vec![(0.0f32, 0.0f32, 0usize); finding.len() + 1];
        for at in (0..finding.len()).rev() {
            let (bound, weight, postings) = suffix[at + 1];
            let planned = &finding[at];
            suffix[at] = (
                bound + planned.bound,
                weight + planned.token.weight,
                postings + planned.postings,
            );
        }
        // What the finding tokens from `from` on and the optional tokens still to score can add.
        let rest = |from: usize, scanned_too: bool| {
            let (bound, weight, _) = suffix[from];
            let (extra_bound, extra_weight) = if scanned_too {
                (scanned_bound, scanned_weight)
            } else {
                (0.0, 0.0)
            };
            (
                bound + looked_up_bound + extra_bound,
                weight + looked_up_weight + extra_weight,
            )
        };

        let mut touched = std::mem::take(&mut scratch.touched);
        touched.clear();
        let mut cut = finding.len();
        let mut threshold: Option<f32> = None;
        let mut checks = 0;
        let mut best = 0.0f32;
        // A threshold found stays valid as tokens are added (scores only grow), so it is reused.
        let mut known = 0.0f32;
        for at in 0..finding.len() {
            let remaining = suffix[at].2;
            if prune && at > 0 {
                let (bound, weight) = rest(at, true);
                let reach = upper(bound + max_group_gain[0], weight + max_group_gain[1])
                    * (1.0 + PRUNE_MARGIN);
                // A new threshold costs a pass over `touched`: computed only when it may succeed
                // (the best score so far beats the bound) and saves more than it costs.
                if reach >= known
                    && reach < best
                    && checks < MAX_THRESHOLD_CHECKS
                    && 2 * remaining > touched.len()
                {
                    checks += 1;
                    known = Self::threshold(&touched, exact, keep, query_tokens, scratch)
                        .unwrap_or(known);
                }
                if reach < known {
                    threshold = Some(known);
                    cut = at;
                    break;
                }
            }
            scorer.accumulate(&finding[at], query_tokens, &mut touched, &mut best, scratch);
        }
        for planned in &scanned {
            scorer.scan_optional(planned, exact, scratch);
        }
        if prune && (threshold.is_some() || touched.len() / 8 > keep) {
            // Scores grew since (or no threshold was needed yet): the survivors are fewer with it.
            threshold = Self::threshold(&touched, exact, keep, query_tokens, scratch);
        }
        let threshold = threshold.filter(|&threshold| threshold > 0.0);
        let deferred = &finding[cut..];
        #[cfg(test)]
        PRUNED.with(|count| {
            let [cuts, thresholds] = count.get();
            count.set([
                cuts + usize::from(!deferred.is_empty()),
                thresholds + usize::from(threshold.is_some()),
            ]);
        });

        // `total`: the union of the scored documents, the exact matches and the deferred tokens'
        // selectable documents.
        let is_exact = |doc: u32| !exact.is_empty() && exact.binary_search(&doc).is_ok();
        // Groups whose description the query matches: each member is a match (the group text is
        // a field of every member), also when no token matches its own fields.
        let described: Vec<(usize, [f32; 2])> = group_gains
            .iter()
            .enumerate()
            .filter(|&(group, gain)| gain[0] > 0.0 && allowed.is_none_or(|allowed| allowed[group]))
            .map(|(group, &gain)| (group, gain))
            .collect();
        let members = |group: usize| {
            self.groups[group]
                .members
                .values()
                .copied()
                .filter(|&doc| scorer.selectable(doc))
        };
        // A member the query's own tokens did not find (nor an exact name match).
        let unfound = |doc: u32, scratch: &Scratch| {
            scratch.score[doc as usize][1] == 0.0
                && (exact.is_empty() || exact.binary_search(&doc).is_err())
        };
        let total = if deferred.is_empty() {
            let group_only: usize = described
                .iter()
                .map(|&(group, _)| members(group).filter(|&doc| unfound(doc, scratch)).count())
                .sum();
            touched.len()
                + exact
                    .iter()
                    .filter(|&&doc| scratch.score[doc as usize][1] == 0.0)
                    .count()
                + group_only
        } else {
            for &doc in touched.iter().chain(exact) {
                scratch.mark(doc);
            }
            for &(group, _) in &described {
                for doc in members(group) {
                    scratch.mark(doc);
                }
            }
            for planned in deferred {
                let token = planned.token;
                let class: &[u32] = if token.has_variants() {
                    &token.class
                } else {
                    &[]
                };
                for term in token.term.into_iter().chain(class.iter().copied()) {
                    for posting in scorer.postings(term) {
                        if scorer.selectable(posting.doc) {
                            scratch.mark(posting.doc);
                        }
                    }
                }
            }
            scratch.take_count()
        };

        // Survivors: documents that can still reach the window, in document order.
        let (rest_bound, rest_weight) = rest(cut, false);
        // Group-only members first (before pruned found documents' accumulators are cleared):
        // a group whose gain cannot reach the threshold adds none.
        for &(group, [gain, matched]) in &described {
            let reach = upper(rest_bound + gain, rest_weight + matched) * (1.0 + PRUNE_MARGIN);
            if threshold.is_some_and(|threshold| reach < threshold) {
                continue;
            }
            for doc in members(group) {
                if unfound(doc, scratch) {
                    scratch.mark(doc);
                }
            }
        }
        for &doc in &touched {
            let index = doc as usize;
            let (score, matched) = combined(scratch.score[index], scratch.optional[index]);
            let survives = threshold.is_none_or(|threshold| {
                is_exact(doc) || {
                    let [gain, group_matched] = group_gain(doc);
                    upper(
                        score + rest_bound + gain,
                        matched + rest_weight + group_matched,
                    ) * (1.0 + PRUNE_MARGIN)
                        >= threshold
                }
            });
            if survives {
                scratch.mark(doc);
            } else {
                scratch.score[index] = [0.0; 2];
                scratch.optional[index] = [0.0; 2];
            }
        }
        for &doc in exact {
            scratch.mark(doc);
        }
        let survivors = scratch.take_marked();
        // Group-only survivors (no finding token matched them yet) that a deferred token finds.
        let group_only: Vec<u32> = if described.is_empty() {
            Vec::new()
        } else {
            survivors
                .iter()
                .copied()
                .filter(|&doc| unfound(doc, scratch))
                .collect()
        };
        for planned in deferred {
            scorer.look_up(planned, true, &survivors, scratch);
        }
        // Optional tokens score only documents a finding token (or an exact name) found, as
        // without pruning: a member found only through its group's description gets none, and
        // one that a deferred token found gets the scanned optional tokens' gains too.
        let found: Vec<u32>;
        let optional_docs: &[u32] = if group_only.is_empty() {
            &survivors
        } else {
            let late: Vec<u32> = group_only
                .iter()
                .copied()
                .filter(|&doc| scratch.score[doc as usize][1] != 0.0)
                .collect();
            for planned in &scanned {
                scorer.look_up(planned, false, &late, scratch);
            }
            found = survivors
                .iter()
                .copied()
                .filter(|&doc| !unfound(doc, scratch))
                .collect();
            &found
        };
        for planned in &looked_up {
            scorer.look_up(planned, false, optional_docs, scratch);
        }

        let mut best = TopK::new(keep);
        for &doc in &survivors {
            let index = doc as usize;
            let (score, matched) = combined(
                std::mem::take(&mut scratch.score[index]),
                std::mem::take(&mut scratch.optional[index]),
            );
            best.push(Candidate {
                doc,
                exact: is_exact(doc),
                score: {
                    let [gain, group_matched] = group_gain(doc);
                    let matched = (matched + group_matched).min(query_tokens);
                    (score + gain) * (1.0 + COVERAGE_BOOST * matched / query_tokens)
                },
                rank: self.doc_rank[doc as usize],
            });
        }
        scratch.touched = touched;
        (total, best.into_sorted())
    }

    /// The `keep`-th best score so far among the scored documents that are not exact matches
    /// (scores only grow as tokens are added, so the final `keep`-th best is at least this), or
    /// `None` with fewer such documents.
    fn threshold(
        touched: &[u32],
        exact: &[u32],
        keep: usize,
        query_tokens: f32,
        scratch: &mut Scratch,
    ) -> Option<f32> {
        if keep == 0 || touched.len() < keep {
            return None;
        }
        let mut scores = std::mem::take(&mut scratch.scores);
        scores.clear();
        scores.extend(
            touched
                .iter()
                .filter(|doc| exact.is_empty() || exact.binary_search(doc).is_err())
                .map(|&doc| {
                    let index = doc as usize;
                    let (score, matched) = combined(scratch.score[index], scratch.optional[index]);
                    score * (1.0 + COVERAGE_BOOST * matched / query_tokens)
                }),
        );
        let found = (scores.len() >= keep).then(|| {
            let (_, kth, _) = scores.select_nth_unstable_by(keep - 1, |a, b| b.total_cmp(a));
            *kth
        });
        scratch.scores = scores;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_finds_the_first_posting_at_or_after_a_document() {
        let postings: Vec<Posting> = [2u32, 3, 5, 8, 13, 21, 34, 55, 89]
            .iter()
            .map(|&doc| Posting::new(doc, [1; FIELDS]))
            .collect();
        for from in 0..=postings.len() {
            for doc in 0..100u32 {
                let expected = from + postings[from..].iter().take_while(|p| p.doc < doc).count();
                assert_eq!(
                    gallop(&postings, from, doc),
                    expected,
                    "from {from}, doc {doc}"
                );
            }
        }
        assert_eq!(gallop(&[], 0, 7), 0);
    }

    #[test]
    fn top_k_keeps_the_best_in_order() {
        let candidate = |doc: u32, exact: bool, score: f32| Candidate {
            doc,
            exact,
            score,
            rank: doc,
        };
        let mut top = TopK::new(3);
        for (doc, score) in [(0, 1.0), (1, 5.0), (2, 3.0), (3, 5.0), (4, 0.5)] {
            top.push(candidate(doc, false, score));
        }
        top.push(candidate(9, true, 0.0));
        let docs: Vec<u32> = top.into_sorted().iter().map(|c| c.doc).collect();
        assert_eq!(docs, [9, 1, 3]);
        let mut none = TopK::new(0);
        none.push(candidate(1, true, 1.0));
        assert!(none.into_sorted().is_empty());
    }
}
