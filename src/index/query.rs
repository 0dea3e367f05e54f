//! A query prepared once for every way it is ranked: [`SearchIndex::search`], `search_hybrid`,
//! `explain` and `explain_hybrid` all start from a [`PreparedQuery`] (the selection mask, the query
//! tokens, the exact name matches, whether it browses, the group-description matches and gains) and score it through
//! [`PreparedQuery::score`] (the keyword run of [`super::maxscore`], with the rule for optional
//! tokens) or [`PreparedQuery::score_docs`] (the same scores for given documents).

use super::analysis::{self, QueryToken};
use super::collector::ScoredDoc;
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
