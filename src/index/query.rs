//! A query prepared once for every way it is ranked: [`SearchIndex::search`], `search_hybrid`,
//! `explain` and `explain_hybrid` all start from a [`PreparedQuery`] (the selection mask, the query
//! tokens, the exact name matches, whether it browses, the group-description matches and gains)
//! and score it through [`PreparedQuery::score`] (the keyword run of [`super::maxscore`], with the
//! rule for optional tokens) or [`PreparedQuery::score_docs`] and [`PreparedQuery::score_parts`]
//! (the same scores for given documents, by posting look-ups: the hybrid ranking's candidates,
//! the document an explanation is about).

use super::analysis::{self, QueryToken};
use super::bm25f::document_score;
use super::collector::ScoredDoc;
use super::maxscore::group_gain;
use super::plan::QueryPlan;
use super::scorer::{with_scratch, Scorer, Scratch};
use super::SearchIndex;

/// A query resolved against one index state.
pub(super) struct PreparedQuery<'a> {
    pub(super) index: &'a SearchIndex,
    /// The selection mask by group id (`None`: every group).
    allowed: Option<Vec<bool>>,
    /// The distinct query tokens ([`SearchIndex::query_tokens`]); [`Self::score`] may make the
    /// optional ones required ([`analysis::require_all`]).
    pub(super) tokens: Vec<QueryToken<'a>>,
    /// The selectable exact name matches, sorted.
    pub(super) exact: Vec<u32>,
    /// Nothing to look for (empty, spaces, punctuation) and no exact name: the query browses.
    pub(super) browse: bool,
    /// Each query token found in a group's description, with its gain there, in query order
    /// (empty when browsing): computed once per query, for the ranking's group gains, for
    /// explanations and for the hybrid ranking's keyword evidence.
    pub(super) group_matches: Vec<GroupMatch>,
    /// `[gain, matched]` per group id of the group descriptions the query matches (empty when
    /// none does, and when browsing), summed from `group_matches`.
    pub(super) group_gains: Vec<[f32; 2]>,
}

/// A query token found in a group's description ([`SearchIndex::each_group_gain`]).
#[derive(Debug)]
pub(super) struct GroupMatch {
    /// The group's id.
    pub(super) group: u32,
    /// The query token, as the tokenizer produced it.
    pub(super) token: Box<str>,
    /// Its gain over the group's description.
    pub(super) gain: f32,
}

impl SearchIndex {
    /// `query` over the selected `groups` (`None`: every group), prepared.
    pub(super) fn prepare<'a>(
        &'a self,
        query: &'a str,
        groups: Option<&[&str]>,
    ) -> PreparedQuery<'a> {
        self.prepare_selected(query, self.allowed_groups(groups))
    }

    /// `query` over the selection mask `allowed` (`None`: every group), prepared.
    pub(super) fn prepare_selected<'a>(
        &'a self,
        query: &'a str,
        allowed: Option<Vec<bool>>,
    ) -> PreparedQuery<'a> {
        let tokens = self.query_tokens(query, allowed.as_deref());
        let exact = self.exact_matches(query, allowed.as_deref());
        // Browsing is for a query with nothing to look for (empty, spaces, punctuation). A word
        // whose tokens were all dropped (each over `MAX_TOKEN_BYTES`) matches nothing instead,
        // and a punctuation-only tool name (`-`) still finds its tool first.
        let browse = tokens.is_empty() && exact.is_empty() && analysis::nothing_to_find(query);
        let mut group_matches = Vec::new();
        if !browse {
            self.each_group_gain(query, |group, token, gain| {
                group_matches.push(GroupMatch {
                    group,
                    token: Box::from(token),
                    gain,
                });
            });
        }
        let group_gains = self.group_gains(&group_matches);
        PreparedQuery {
            index: self,
            allowed,
            tokens,
            exact,
            browse,
            group_matches,
            group_gains,
        }
    }

    /// The selection mask of `groups` by group id (`None`: every group).
    pub(super) fn allowed_groups(&self, groups: Option<&[&str]>) -> Option<Vec<bool>> {
        groups.map(|names| {
            let mut allowed = vec![false; self.groups.len()];
            for name in names {
                if let Some(&id) = self.group_ids.get(*name) {
                    allowed[id as usize] = true;
                }
            }
            allowed
        })
    }
}

impl PreparedQuery<'_> {
    /// The selection mask by group id (`None`: every group).
    pub(super) fn allowed(&self) -> Option<&[bool]> {
        self.allowed.as_deref()
    }

    /// Whether the selection holds the group of `doc`.
    pub(super) fn selects(&self, doc: u32) -> bool {
        self.allowed()
            .is_none_or(|allowed| allowed[self.index.doc_group[doc as usize] as usize])
    }

    /// The selected documents matching the query and the best `keep` of them, best first
    /// ([`Self::execute`], pruned or not), with the one rule for optional tokens that every
    /// ranking shares: when nothing selected matches the content tokens, the function words and
    /// numbers become required ([`analysis::require_all`], left so in the tokens) and the query is
    /// scored again.
    pub(super) fn score(&mut self, keep: usize, prune: bool) -> (usize, Vec<ScoredDoc>) {
        let scored = self.execute(keep, prune);
        if scored.0 == 0 && analysis::require_all(&mut self.tokens) {
            return self.execute(keep, prune);
        }
        scored
    }
}

impl PreparedQuery<'_> {
    /// The exact scores of `docs` (sorted, selectable) for `tokens` (decided as the keyword run
    /// left them, see [`PreparedQuery::score`]), in document order: the same sums in the
    /// same order as [`Self::execute`] adds them (content tokens in plan order, then the
    /// optional tokens, scanned ones first, for a document a content token or an exact name
    /// finds; then the group gain and the coordination factor), so each equals the score that
    /// ranking gives it, bit for bit (0 for a document the query does not match). Only lookups
    /// in the posting lists: cheap for a few documents.
    pub(super) fn score_docs(&self, docs: &[u32]) -> Vec<ScoredDoc> {
        with_scratch(|scratch| {
            let query_tokens = self.look_up_docs(docs, scratch);
            docs.iter()
                .map(|&doc| {
                    let parts = self.parts(doc, query_tokens, scratch);
                    ScoredDoc {
                        doc,
                        exact: parts.exact,
                        score: parts.score().0,
                        ordinal: self.index.tie_break_ordinals[doc as usize],
                    }
                })
                .collect()
        })
    }

    /// The parts of `doc`'s score ([`Self::score_docs`]'s sums), from which [`DocScore::score`]
    /// gives the score the ranking gives it, bit for bit: what an explanation reports.
    pub(super) fn score_parts(&self, doc: u32) -> DocScore {
        with_scratch(|scratch| {
            let query_tokens = self.look_up_docs(&[doc], scratch);
            self.parts(doc, query_tokens, scratch)
        })
    }

    /// Adds the query's gains of `docs` (sorted) into `scratch`'s accumulators as
    /// [`Self::score_docs`] describes; returns the coordination factor's denominator.
    fn look_up_docs(&self, docs: &[u32], scratch: &mut Scratch) -> f32 {
        let index = self.index;
        scratch.fit(index.docs.len());
        let scorer = Scorer::new(index, self.allowed());
        let plan = QueryPlan::new(&scorer, &self.tokens, index.live);
        for planned in &plan.content {
            scorer.look_up(planned, true, docs, scratch);
        }
        let found: Vec<u32> = docs
            .iter()
            .copied()
            .filter(|&doc| scratch.score[doc as usize][1] != 0.0 || self.is_exact(doc))
            .collect();
        for planned in plan.scanned.iter().chain(&plan.looked_up) {
            scorer.look_up(planned, false, &found, scratch);
        }
        plan.query_tokens
    }

    fn is_exact(&self, doc: u32) -> bool {
        self.exact.binary_search(&doc).is_ok()
    }

    /// `doc`'s parts from its accumulators, which are taken (left zeroed).
    fn parts(&self, doc: u32, query_tokens: f32, scratch: &mut Scratch) -> DocScore {
        let at = doc as usize;
        DocScore {
            exact: self.is_exact(doc),
            content: std::mem::take(&mut scratch.score[at]),
            optional: std::mem::take(&mut scratch.optional[at]),
            group: group_gain(&self.group_gains, &self.index.doc_group, doc),
            query_tokens,
        }
    }
}

/// The parts of one document's score for one query, added as the ranking adds them.
#[derive(Debug, Clone, Copy)]
pub(super) struct DocScore {
    /// An exact name match of the query.
    pub(super) exact: bool,
    /// `[gain, matched weight]` of the content tokens, in plan order.
    pub(super) content: [f32; 2],
    /// The same of the optional tokens (for a document a content token or an exact name finds).
    pub(super) optional: [f32; 2],
    /// Its group's gain (`[gain, matched]`).
    pub(super) group: [f32; 2],
    /// The number of distinct query tokens (at least 1).
    pub(super) query_tokens: f32,
}

impl DocScore {
    /// `(score, coordination)` by [`document_score`].
    pub(super) fn score(&self) -> (f32, f32) {
        document_score(self.content, self.optional, self.group, self.query_tokens)
    }
}
