//! Term-at-a-time scoring: each query token's BM25F gains added into per-document accumulators,
//! over a whole posting list ([`Scorer::accumulate`], [`Scorer::scan_optional`]) or only for given
//! candidates by galloping search ([`Scorer::look_up`]). [`super::maxscore`] decides which.

use super::analysis::QueryToken;
use super::bm25f::{Bm25f, COORDINATION_WEIGHT, FIELDS};
use super::postings::{find, gallop, Posting};
use super::SearchIndex;

thread_local! {
    /// Per-thread query accumulators, indexed by document and kept zeroed between queries, so a
    /// query touches only the entries of matching documents instead of allocating.
    pub(super) static SCORE_SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Per-document accumulators of one query; every entry is zero between queries.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Summed, weighted gains and summed query weights of the matched content tokens.
    pub(super) score: Vec<[f32; 2]>,
    /// The same for the optional tokens (kept apart, so their sum is added in one fixed order
    /// whichever way each was scored).
    pub(super) optional: Vec<[f32; 2]>,
    /// Gain of the current query token's own term (a token with a stem class).
    gain: Vec<f32>,
    /// Per-field term frequencies of the current stem class.
    class_tf: Vec<[u16; FIELDS]>,
    /// One bit per document: sorting a set of documents, counting a union.
    marks: Vec<u64>,
    /// Reused document lists (kept empty between queries, their capacity kept).
    pub(super) touched: Vec<u32>,
    class_docs: Vec<u32>,
    pub(super) scores: Vec<f32>,
}

impl Scratch {
    /// Makes room for `docs` documents. Every entry is zero, so a larger index gets new zeroed
    /// vectors (`vec![0; n]` is a zeroed allocation: the pages a query never touches are never
    /// written, which keeps a thread's first search on a large index cheap).
    pub(super) fn fit(&mut self, docs: usize) {
        if self.score.len() < docs {
            self.score = vec![[0.0; 2]; docs];
            self.optional = vec![[0.0; 2]; docs];
            self.gain = vec![0.0; docs];
            self.class_tf = vec![[0; FIELDS]; docs];
            self.marks = vec![0; docs.div_ceil(64)];
        }
    }

    pub(super) fn mark(&mut self, doc: u32) {
        self.marks[doc as usize / 64] |= 1 << (doc % 64);
    }

    /// The marked documents in ascending order; clears the marks.
    pub(super) fn take_marked(&mut self) -> Vec<u32> {
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
    pub(super) fn take_count(&mut self) -> usize {
        self.marks
            .iter_mut()
            .map(|bits| std::mem::take(bits).count_ones() as usize)
            .sum()
    }
}

/// Runs `run` with this thread's zeroed accumulators (fresh ones when they are in use: a
/// re-entrant call); `run` must leave them zeroed.
pub(super) fn with_scratch<T>(run: impl FnOnce(&mut Scratch) -> T) -> T {
    SCORE_SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        Err(_) => run(&mut Scratch::default()),
    })
}

/// A query token's gain on a document, the one rule of every ranking and explanation: the larger
/// of its own term's gain `term` and its stem class's `class` (`None` where the document holds
/// none; the term's on a tie), and whether the class's won (`via_stem`); `None` when the document
/// holds neither. [`Scorer::accumulate`], [`Scorer::look_up`] and explanations
/// ([`Scorer::token_gain`]) all apply it.
#[inline]
pub(super) fn larger_gain(term: Option<f32>, class: Option<f32>) -> Option<(f32, bool)> {
    match (term, class) {
        (Some(term), Some(class)) if class > term => Some((class, true)),
        (Some(term), _) => Some((term, false)),
        (None, Some(class)) => Some((class, true)),
        (None, None) => None,
    }
}

/// A query token's gain on one document ([`Scorer::token_gain`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct TokenGain {
    /// The BM25F gain, before the token's query weight.
    pub(super) gain: f32,
    /// The term frequencies it came from, by field.
    pub(super) tf: [u16; FIELDS],
    /// Whether the stem class's gain won over the token's own term's.
    pub(super) via_stem: bool,
}

/// A query token with its upper bound and the length of its posting lists.
pub(super) struct Planned<'q, 'a> {
    pub(super) token: &'q QueryToken<'a>,
    /// The most this token can add to a document's summed gains (weight included).
    pub(super) bound: f32,
    /// Postings of its term and stem class.
    pub(super) postings: usize,
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
    bm25f: Bm25f,
}

impl<'i> Scorer<'i> {
    pub(super) fn new(index: &'i SearchIndex, allowed: Option<&'i [bool]>) -> Self {
        Self {
            index,
            allowed,
            everything: allowed.is_none() && index.dead == 0,
            bm25f: Bm25f::new(index),
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
        self.bm25f.idf(df)
    }

    /// The BM25F gain of term frequencies `tf` in `doc` ([`Bm25f::gain`]).
    #[inline]
    pub(super) fn gain(&self, doc: u32, tf: [u16; FIELDS], idf: f32) -> f32 {
        self.bm25f.gain(&self.index.doc_lens[doc as usize], tf, idf)
    }

    /// Each field's share of [`Self::gain`] for `tf` (they sum to 1 over the matched fields).
    pub(super) fn field_shares(&self, doc: u32, tf: [u16; FIELDS]) -> [f32; FIELDS] {
        self.bm25f
            .field_shares(&self.index.doc_lens[doc as usize], tf)
    }

    pub(super) fn postings(&self, term: u32) -> &'i [Posting] {
        self.index.postings[term as usize].as_slice()
    }

    /// A query token's gain on `doc` from its own term's term frequencies `term` in `doc` and its
    /// stem class's summed ones `class` (each with its `idf`; `None` where `doc` holds none), by
    /// [`larger_gain`], with the term frequencies it came from; `None` when `doc` holds neither.
    #[inline]
    pub(super) fn token_gain(
        &self,
        doc: u32,
        term: Option<([u16; FIELDS], f32)>,
        class: Option<([u16; FIELDS], f32)>,
    ) -> Option<TokenGain> {
        let term_gain = term.map(|(tf, idf)| self.gain(doc, tf, idf));
        let class_gain = class.map(|(tf, idf)| self.gain(doc, tf, idf));
        let (gain, via_stem) = larger_gain(term_gain, class_gain)?;
        let tf = if via_stem { class } else { term };
        Some(TokenGain {
            gain,
            tf: tf.map_or([0; FIELDS], |(tf, _)| tf),
            via_stem,
        })
    }

    /// The `idf` of `token`'s stem class: the live documents of the union of its lists, counted
    /// once per query (kept in [`QueryToken::class_idf`]).
    pub(super) fn class_idf(&self, token: &QueryToken<'_>, scratch: &mut Scratch) -> f32 {
        token.class_idf.get().unwrap_or_else(|| {
            for &member in token.class.iter() {
                for posting in self.postings(member) {
                    if self.index.alive[posting.doc as usize] {
                        scratch.mark(posting.doc);
                    }
                }
            }
            let idf = self.idf(scratch.take_count());
            token.class_idf.set(Some(idf));
            idf
        })
    }

    /// `token`'s share of `doc`'s score by [`Self::token_gain`], looked up in its posting lists
    /// (with its stem class for a content token, `class_too`); for one document (explanations).
    pub(super) fn token_gain_of(
        &self,
        token: &QueryToken<'_>,
        class_too: bool,
        doc: u32,
        scratch: &mut Scratch,
    ) -> Option<TokenGain> {
        let term = token.term.and_then(|term| {
            let list = self.postings(term);
            find(list, doc).map(|posting| (posting.tf(), self.idf(self.index.live_df(list))))
        });
        let class = (class_too && token.has_variants())
            .then(|| {
                let mut tf = [0u16; FIELDS];
                let mut found = false;
                for &member in token.class.iter() {
                    if let Some(posting) = find(self.postings(member), doc) {
                        found = true;
                        for (total, tf) in tf.iter_mut().zip(posting.tf()) {
                            *total = total.saturating_add(tf);
                        }
                    }
                }
                found.then(|| (tf, self.class_idf(token, scratch)))
            })
            .flatten();
        self.token_gain(doc, term, class)
    }

    /// `token` with its upper bound: a stem class holds at least as many documents as its
    /// largest member, so its `idf` is at most that member's.
    pub(super) fn plan<'q, 'a>(
        &self,
        token: &'q QueryToken<'a>,
        class_too: bool,
    ) -> Planned<'q, 'a> {
        let mut postings = 0;
        let mut smallest_df = usize::MAX;
        let mut term_idf = 0.0;
        if let Some(term) = token.term {
            let list = self.postings(term);
            postings += list.len();
            smallest_df = self.index.live_df(list);
            term_idf = self.idf(smallest_df);
        }
        if class_too && token.has_variants() {
            let mut largest = 0;
            for &member in token.class.iter() {
                let list = self.postings(member);
                postings += list.len();
                largest = largest.max(self.index.live_df(list));
            }
            smallest_df = smallest_df.min(largest);
        }
        let bound = if smallest_df == usize::MAX {
            0.0
        } else {
            self.bm25f.upper_bound(token.weight, smallest_df)
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
    /// score so far (with its coordination factor, over `query_tokens` tokens).
    pub(super) fn accumulate(
        &self,
        planned: &Planned<'_, '_>,
        query_tokens: f32,
        touched: &mut Vec<u32>,
        best: &mut f32,
        scratch: &mut Scratch,
    ) {
        let token = planned.token;
        // `1 + per_weight * matched`: the coordination factor, rounded differently from
        // `bm25f::coordination` (`best` only decides when a threshold is worth computing).
        let per_weight = COORDINATION_WEIGHT / query_tokens;
        let mut add = |doc: u32, doc_gain: f32, scratch: &mut Scratch| {
            let [score, matched] = &mut scratch.score[doc as usize];
            if *matched == 0.0 {
                touched.push(doc);
            }
            *score += token.weight * doc_gain;
            *matched += token.weight;
            *best = best.max(*score * (1.0 + per_weight * *matched));
        };
        if !token.has_variants() {
            // Without other terms of its stem, a token's gain is its own term's: added directly.
            let Some(term) = token.term else { return };
            let idf = planned.term_idf;
            for posting in self.postings(term) {
                if self.selectable(posting.doc) {
                    add(
                        posting.doc,
                        self.gain(posting.doc, posting.tf(), idf),
                        scratch,
                    );
                }
            }
            return;
        }
        // Otherwise its gain is the larger of its own term's and its stem class's ([`larger_gain`]).
        // The class holds the term (`QueryToken::class`), so one pass over the class's lists sums
        // the class's term frequencies and takes the term's own gains (into `scratch.gain`), and
        // one pass over the class's documents settles and adds each gain.
        debug_assert!(token
            .term
            .is_none_or(|term| token.class.binary_search(&term).is_ok()));
        let mut class_docs = std::mem::take(&mut scratch.class_docs);
        class_docs.clear();
        for &member in token.class.iter() {
            let own = token.term == Some(member);
            for posting in self.postings(member) {
                let doc = posting.doc;
                if !self.everything && !self.index.alive[doc as usize] {
                    continue;
                }
                let sum = &mut scratch.class_tf[doc as usize];
                if *sum == [0; FIELDS] {
                    class_docs.push(doc);
                }
                for (total, tf) in sum.iter_mut().zip(posting.tf()) {
                    *total = total.saturating_add(tf);
                }
                if own && self.selectable(doc) {
                    scratch.gain[doc as usize] = self.gain(doc, posting.tf(), planned.term_idf);
                }
            }
        }
        let idf = self.idf(class_docs.len());
        token.class_idf.set(Some(idf));
        for &doc in &class_docs {
            let tf = std::mem::take(&mut scratch.class_tf[doc as usize]);
            if !self.selectable(doc) {
                continue;
            }
            // A posting's gain is positive (tf > 0, idf > 0): 0 is no own term.
            let term_gain = std::mem::take(&mut scratch.gain[doc as usize]);
            let own = (term_gain != 0.0).then_some(term_gain);
            if let Some((gain, _)) = larger_gain(own, Some(self.gain(doc, tf, idf))) {
                add(doc, gain, scratch);
            }
        }
        scratch.class_docs = class_docs;
    }

    /// Adds the gain of `token` to each of `docs` (ascending, selectable), looking each up in its
    /// posting lists by galloping search; with `class_too` (a content token), as the larger of the
    /// term's gain and the stem class's, exactly as [`Self::accumulate`] would, else (an optional
    /// token) into the optional accumulator.
    pub(super) fn look_up(
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
            (lists, self.class_idf(token, scratch))
        });
        let mut term_at = 0;
        let mut class_at = vec![0usize; class.as_ref().map_or(0, |(lists, _)| lists.len())];
        for &doc in docs {
            let mut term_found = None;
            if let Some((postings, idf)) = term {
                term_at = gallop(postings, term_at, doc);
                if let Some(posting) = postings.get(term_at).filter(|p| p.doc == doc) {
                    term_found = Some((posting.tf(), idf));
                }
            }
            let mut class_found = None;
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
                class_found = found.then_some((tf, *idf));
            }
            if let Some(TokenGain { gain, .. }) = self.token_gain(doc, term_found, class_found) {
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
    /// Adds the gain of the optional `token` to every selectable document of its posting list, in
    /// the optional accumulator (one pass over a short list, before any content token is scored;
    /// [`super::maxscore`] keeps it only for the documents a content token or an exact name finds).
    pub(super) fn scan_optional(&self, planned: &Planned<'_, '_>, scratch: &mut Scratch) {
        let token = planned.token;
        let Some(term) = token.term else { return };
        let idf = planned.term_idf;
        for posting in self.postings(term) {
            let doc = posting.doc;
            if self.selectable(doc) {
                let [score, matched] = &mut scratch.optional[doc as usize];
                *score += token.weight * self.gain(doc, posting.tf(), idf);
                *matched += token.weight;
            }
        }
    }

    /// The documents of `planned`'s own term (none without one).
    pub(super) fn term_docs<'p>(
        &'p self,
        planned: &Planned<'_, '_>,
    ) -> impl Iterator<Item = u32> + 'p {
        let postings: &[Posting] = planned.token.term.map_or(&[], |term| self.postings(term));
        postings.iter().map(|posting| posting.doc)
    }

    /// Zeroes the optional accumulators of the documents of `planned`'s own term.
    pub(super) fn clear_optional(&self, planned: &Planned<'_, '_>, scratch: &mut Scratch) {
        for doc in self.term_docs(planned) {
            scratch.optional[doc as usize] = [0.0; 2];
        }
    }
}

/// Final score from the two accumulators of a document.
pub(super) fn combined(content: [f32; 2], optional: [f32; 2]) -> (f32, f32) {
    (content[0] + optional[0], content[1] + optional[1])
}
