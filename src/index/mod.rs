//! Incremental inverted index over tool records, ranked by BM25F.
//!
//! A record ([`Record`]) has five fields (tool name, group name, description, parameter names,
//! parameter text); each is tokenized with [`crate::tokenize`] ([`record_tokens`]), its tokens
//! interned to `u32` term ids ([`crate::terms::Dictionary`]), and each term has a posting list of
//! `(doc, per-field tf)` ([`postings`]). Terms sharing an English stem ([`crate::terms::term`])
//! form a *stem class*. A group's description is a field shared by its members, indexed once per
//! group ([`group_text`]).
//!
//! The modules, in the order a query meets them:
//!
//! * [`analysis`]: query tokens, function words, stem classes, synonyms and compounds, exact
//!   name matches, browsing.
//! * [`query`]: the query prepared once ([`query::PreparedQuery`]) for every ranking and
//!   explanation, and its keyword run with the rule for optional tokens.
//! * [`bm25f`]: the score: field weights, length normalization, `k1`, Lucene's `idf`, a term's
//!   gain, the coordination factor, a document's final score ([`bm25f::document_score`]).
//! * [`maxscore`]: the execution: essential and non-essential tokens, candidates, `total`;
//!   [`plan`]: its query plan; [`scorer`]: the term-at-a-time passes it runs; [`collector`]: the
//!   top-k window.
//! * [`explain`]: why a document has its score.
//! * [`storage`]: upserts, removal, compaction; [`record`], [`record_tokens`], [`schema_text`]:
//!   what a record holds and how it is read; [`by_hash`], [`doc_name`]: lookups by name.
//! * [`vectors`]: tool vectors (quantized embeddings) and the nearest documents of a query
//!   vector; [`fusion`]: the hybrid ranking's definitions, the keyword score fused with the
//!   cosine; [`hybrid`]: hybrid search and its explanation, the fusion run over the index.
//!
//! The long test modules are files of their own under `tests/`, each included by the module it
//! tests.
//!
//! Ranking is fully deterministic: exact name matches first, then score descending, then
//! `(group, tool, key)` in byte order ([`collector`]). Documents that cannot reach the requested
//! window are pruned by upper bounds, which never changes the result ([`maxscore`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::terms::Dictionary;

mod analysis;
#[cfg(test)]
mod bench;
#[cfg(test)]
mod bench_hybrid;
mod bm25f;
mod by_hash;
mod collector;
mod doc_name;
mod explain;
mod fusion;
mod group_text;
mod hybrid;
mod maxscore;
mod plan;
mod postings;
mod query;
mod record;
mod record_tokens;
mod schema_text;
mod scorer;
mod storage;
mod vectors;

pub use analysis::nothing_to_find;
use bm25f::FIELDS;
use by_hash::DocsByHash;
pub use explain::{Explanation, TermMatch, GROUP_DESCRIPTION_FIELD};
pub use fusion::{HybridExplanation, NEAREST_POOL};
use group_text::GroupTexts;
use postings::PostingList;
pub use record::Record;
pub use record_tokens::{MAX_DESCRIPTION_BYTES, MAX_FIELD_TOKENS};
pub use schema_text::{
    collect_parameter_text, truncate_str, ParameterText, SchemaNode, MAX_PARAMETER_TEXT_BYTES,
    MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MAX_SCHEMA_STRING_BYTES,
};
use storage::{Doc, Group};
pub use vectors::MAX_DIMENSIONS;

/// Longest query, in UTF-8 bytes, that the search control accepts from a model (8 KiB: agent
/// queries are 5-20 words, and a pasted question of a few KB still fits; BFCL's longest is
/// 4.7 KB). The core itself ranks any query in time linear in its distinct
/// tokens; the cap bounds how long one search holds the index lock on the caller's thread.
pub const MAX_QUERY_BYTES: usize = 8192;

/// The hasher of the term dictionary and id maps: foldhash's fast hasher with a fixed seed, so the
/// index behaves the same in every process (nothing depends on iteration order, but runs stay
/// reproducible).
type FoldHashState = foldhash::fast::FixedState;
type FoldHashMap<K, V> = HashMap<K, V, FoldHashState>;
type FoldHashSet<K> = HashSet<K, FoldHashState>;

/// Checks a result window from a caller (negative values are rejected).
pub fn search_window(offset: i64, limit: i64) -> crate::Result<(usize, usize)> {
    let convert = |name: &str, value: i64| {
        if value < 0 {
            return Err(crate::Error::new(format!(
                "{name} must not be negative, got {value}"
            )));
        }
        Ok(usize::try_from(value).unwrap_or(usize::MAX))
    };
    Ok((convert("offset", offset)?, convert("limit", limit)?))
}

/// One query's ranked window, as the ranking ran ([`SearchIndex::rank`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    /// The ranked set's size (the selected documents, when browsing).
    pub total: usize,
    /// The keys of the window, best first.
    pub keys: Vec<Arc<str>>,
    /// How many of `keys`, from the first, are exact name matches of the query.
    pub exact: usize,
    /// The query had nothing to look for and no exact name: the window lists the selected
    /// documents in `(group, tool)` order.
    pub browsed: bool,
}

/// The search index. Cheap to query concurrently (`&self`), mutated with `&mut self`.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
    alive: Vec<bool>,
    doc_group: Vec<u32>,
    doc_lens: Vec<[u16; FIELDS]>,
    /// Position of each live document in `(group, tool, key)` order: the tie-break of equal
    /// scores, renumbered after every change.
    tie_break_ordinals: Vec<u32>,
    live: usize,
    dead: usize,
    live_field_tokens: [u64; FIELDS],
    terms: Dictionary<FoldHashState>,
    /// Posting lists by term id.
    postings: Vec<PostingList>,
    /// Live documents by key (by hash: candidates are checked against [`Doc::name`]).
    by_key: DocsByHash,
    /// Documents by case-folded tool name (exact-name matches; a canonical name `group__tool` is
    /// matched through its tool part and the group).
    by_tool_folded: DocsByHash,
    groups: Vec<Group>,
    group_ids: BTreeMap<Arc<str>, u32>,
    /// Group descriptions, indexed once per group ([`group_text`]).
    group_texts: GroupTexts,
    /// Quantized tool vectors of the hybrid ranking ([`vectors`], [`fusion`]).
    vectors: vectors::Vectors,
}

impl SearchIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.live
    }

    /// `true` without live records.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Live keys, in no particular order.
    pub fn keys(&self) -> Vec<Arc<str>> {
        self.docs
            .iter()
            .zip(&self.alive)
            .filter(|(_, &alive)| alive)
            .map(|(doc, _)| Arc::from(doc.name.key()))
            .collect()
    }

    /// Sets the description of `group` (an empty text removes it): a field of every member of the
    /// group, indexed once for the group (see [`group_text`]). A group may be described before or
    /// after its members are added; the description outlives its members.
    pub fn set_group_description(&mut self, group: &str, text: &str) {
        self.group_texts.set(group, text);
    }

    /// Runs a query and returns `(total, keys of ranked results[offset..offset + limit])`.
    ///
    /// `groups`: `None` selects every group, otherwise only the listed ones. A query with nothing
    /// to look for (no alphanumeric character, no exact name match) browses the selected groups
    /// in `(group, tool)` order. Otherwise only records matching at least one query token count
    /// (a word over [`crate::tokenize::MAX_TOKEN_BYTES`] is no token: it matches nothing); an exact
    /// name match (the trimmed, lower-cased query equals a record's lower-cased tool name or its
    /// `group__tool` name) ranks above everything else.
    pub fn search(
        &self,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<Arc<str>>) {
        self.search_pruned(query, groups, offset, limit, true)
    }

    /// [`Self::search`], with or without pruning (see [`maxscore`]; `false` scores every match,
    /// which the tests use as the reference).
    pub(super) fn search_pruned(
        &self,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
        prune: bool,
    ) -> (usize, Vec<Arc<str>>) {
        let ranked = self.rank_keywords(query, groups, offset, limit, prune);
        (ranked.total, ranked.keys)
    }

    /// The keyword ranking's window ([`Self::search_pruned`]), as [`Self::rank`] reports it.
    fn rank_keywords(
        &self,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
        prune: bool,
    ) -> Ranked {
        let mut prepared = self.prepare(query, groups);
        if prepared.browse {
            return self.browsed(&prepared, offset, limit);
        }
        let keep = offset.saturating_add(limit);
        let (total, best) = prepared.score(keep, prune);
        self.window(
            total,
            best.iter()
                .skip(offset)
                .map(|scored| (scored.doc, scored.exact)),
        )
    }

    /// The window of a query that browses ([`query::PreparedQuery::browse`]).
    fn browsed(&self, prepared: &query::PreparedQuery<'_>, offset: usize, limit: usize) -> Ranked {
        let (total, keys) = self.browse(prepared.allowed(), offset, limit);
        Ranked {
            total,
            keys,
            exact: 0,
            browsed: true,
        }
    }

    /// A ranked window from its `(document, exact name match)`s, best first.
    fn window(&self, total: usize, docs: impl Iterator<Item = (u32, bool)>) -> Ranked {
        let mut keys = Vec::new();
        let mut exact = 0;
        for (doc, is_exact) in docs {
            // Exact name matches rank first: the first document that is none ends them.
            if is_exact && exact == keys.len() {
                exact += 1;
            }
            keys.push(Arc::from(self.docs[doc as usize].name.key()));
        }
        Ranked {
            total,
            keys,
            exact,
            browsed: false,
        }
    }

    /// Number of live documents in `postings`: a removed document stays in its lists until the
    /// index is compacted.
    fn live_df(&self, postings: &[postings::Posting]) -> usize {
        if self.dead == 0 {
            postings.len()
        } else {
            postings
                .iter()
                .filter(|posting| self.alive[posting.doc as usize])
                .count()
        }
    }
}

#[cfg(test)]
#[path = "tests/index.rs"]
pub(super) mod tests;
