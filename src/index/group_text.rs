//! Group descriptions as a BM25F field shared by a group's members.
//!
//! A group's description (an MCP server's summary, "Customer records and account operations")
//! names the kind of tools it holds, in the words agents use to ask for them ("browser
//! automation ...", "stock market data ..."). Its text is indexed once per group, not once per
//! member: a stem maps to the groups whose description holds it, with its frequency there. At
//! query time each group gets a *group gain*, the BM25 gain of the query's tokens over its
//! description, added to the score of every member the query's tokens find; the gain is also
//! part of every pruning bound, so pruning stays exact. The field's `idf` counts every live member
//! of the groups holding the stem as a document holding it (what per-member postings would
//! count), plus the documents holding the term in their own fields.
//!
//! A query whose tokens find no document but match group descriptions browses the members of
//! the matching groups, best group first ([`super::SearchIndex::search`]).

use std::sync::Arc;

use super::bm25f::{lucene_idf, saturated_gain};
use super::query::GroupMatch;
use super::{FoldHashMap, FoldHashSet, SearchIndex};
use crate::terms::{is_optional_word, term};
use crate::tokenize::for_each_token;

/// Weight of the group-description field, relative to a tool description's 1.4.
pub(super) const GROUP_TEXT_WEIGHT: f32 = 0.6;
/// What a query token found in a group's description counts toward the coordination factor of
/// the group's members (a token found in a member's own fields counts 1).
pub(super) const GROUP_TEXT_COORDINATION: f32 = 0.5;
/// BM25 length normalization of group descriptions.
const GROUP_TEXT_LENGTH_NORMALIZATION: f32 = 0.5;
/// Tokens of one description that are indexed (a description is at most 512 characters).
const MAX_GROUP_TEXT_TOKENS: usize = 256;
/// Distinct query stems looked up in group descriptions (a query is at most `MAX_QUERY_BYTES` from a model;
/// past this many the rest of a longer one adds no group gain).
const MAX_QUERY_STEMS: usize = 1024;

#[cfg(test)]
thread_local! {
    /// Passes over a query's tokens for group descriptions on this thread (tests check one per
    /// query).
    pub(super) static GROUP_TEXT_PASSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The indexed descriptions of groups, by stem.
#[derive(Debug, Default)]
pub(super) struct GroupTexts {
    /// Stem -> `(group name, term frequency)` of every group whose description holds it.
    postings: FoldHashMap<Box<str>, Vec<(Arc<str>, u16)>>,
    /// Group name -> its description's token count.
    lengths: FoldHashMap<Arc<str>, u16>,
}

impl GroupTexts {
    /// Sets (or, with an empty `text`, removes) the description of `group`.
    pub(super) fn set(&mut self, group: &str, text: &str) {
        let name: Arc<str> = Arc::from(group);
        self.postings.retain(|_, groups| {
            groups.retain(|(other, _)| **other != *group);
            !groups.is_empty()
        });
        self.lengths.remove(group);
        let mut tfs: FoldHashMap<String, u16> = FoldHashMap::default();
        let mut length = 0usize;
        for_each_token(text, |token| {
            if length >= MAX_GROUP_TEXT_TOKENS {
                return;
            }
            length += 1;
            if !is_optional_word(token) {
                let stem = term(token).into_owned();
                let tf = tfs.entry(stem).or_insert(0);
                *tf = tf.saturating_add(1);
            }
        });
        if length == 0 {
            return;
        }
        // Sorted by stem, so that each stem's group list grows in one order whatever the hash.
        let mut sorted: Vec<(String, u16)> = tfs.into_iter().collect();
        sorted.sort_unstable();
        for (stem, tf) in sorted {
            self.postings
                .entry(stem.into_boxed_str())
                .or_default()
                .push((name.clone(), tf));
        }
        self.lengths.insert(name, length as u16);
    }

    /// Calls `found(group id, query token, gain)` for each distinct non-function-word token of
    /// `query` (up to `MAX_QUERY_STEMS`) and each group whose description holds its stem, `gain`
    /// being `idf * BM25(tf)` over that description. `group_id` maps a name to its id (`None`:
    /// the group has no live member), `members` gives a group's live member count, `doc_df` the
    /// live documents holding a token in their own fields; `live` is the live document count.
    pub(super) fn each_gain(
        &self,
        query: &str,
        group_id: impl Fn(&str) -> Option<u32>,
        members: impl Fn(u32) -> usize,
        doc_df: impl Fn(&str) -> usize,
        live: usize,
        mut found: impl FnMut(u32, &str, f32),
    ) {
        if self.lengths.is_empty() || live == 0 {
            return;
        }
        let average =
            self.lengths.values().map(|&l| f32::from(l)).sum::<f32>() / self.lengths.len() as f32;
        let b = GROUP_TEXT_LENGTH_NORMALIZATION;
        let mut seen: FoldHashSet<String> = FoldHashSet::default();
        for_each_token(query, |token| {
            if is_optional_word(token) || seen.len() >= MAX_QUERY_STEMS {
                return;
            }
            let stem = term(token);
            if seen.contains(stem.as_ref()) {
                return;
            }
            seen.insert(stem.to_string());
            let Some(holders) = self.postings.get(stem.as_ref()) else {
                return;
            };
            let with_ids: Vec<(u32, &Arc<str>, u16)> = holders
                .iter()
                .filter_map(|(name, tf)| group_id(name).map(|id| (id, name, *tf)))
                .collect();
            if with_ids.is_empty() {
                return;
            }
            let df = with_ids
                .iter()
                .map(|&(id, _, _)| members(id))
                .sum::<usize>()
                + doc_df(token);
            let df = df.min(live) as f32;
            let idf = lucene_idf(live as f32, df);
            for (id, name, tf) in with_ids {
                let length = self.lengths.get(name).map_or(average, |&l| f32::from(l));
                let norm = (1.0 - b) + b * length / average.max(1.0);
                let x = GROUP_TEXT_WEIGHT * f32::from(tf) / norm.max(1e-3);
                found(id, token, saturated_gain(idf, x));
            }
        });
    }
}

impl SearchIndex {
    /// Calls `found(group id, token, gain)` for each query token found in a group's description
    /// (once per query: [`super::query::PreparedQuery::group_matches`] keeps what it found).
    pub(super) fn each_group_gain(&self, query: &str, found: impl FnMut(u32, &str, f32)) {
        #[cfg(test)]
        GROUP_TEXT_PASSES.with(|passes| passes.set(passes.get() + 1));
        self.group_texts.each_gain(
            query,
            |name| {
                self.group_ids
                    .get(name)
                    .copied()
                    .filter(|&id| !self.groups[id as usize].members.is_empty())
            },
            |id| self.groups[id as usize].members.len(),
            |token| {
                self.terms.get(token).map_or(0, |term| {
                    self.live_df(self.postings[term as usize].as_slice())
                })
            },
            self.live,
            found,
        );
    }

    /// The group gain of each group (see the module docs) from the query's group-description
    /// `matches`, by group id; empty when there is none.
    /// `[gain, matched]`: the summed gains, and `GROUP_TEXT_COORDINATION` per matched token
    /// toward the members' coordination factor.
    pub(super) fn group_gains(&self, matches: &[GroupMatch]) -> Vec<[f32; 2]> {
        if matches.is_empty() {
            return Vec::new();
        }
        let mut gains = vec![[0.0f32; 2]; self.groups.len()];
        for found in matches {
            let [total, matched] = &mut gains[found.group as usize];
            *total += found.gain;
            *matched += GROUP_TEXT_COORDINATION;
        }
        gains
    }
}
