//! Query analysis: from a query's text to its distinct tokens (function words, stem classes,
//! synonyms, compounds), its exact name matches, and browsing for a query with nothing to look
//! for.

use std::borrow::Cow;
use std::sync::Arc;

use super::storage::Group;
use super::{FoldHashMap, FoldHashSet, SearchIndex};
use crate::names::CANONICAL_SEPARATOR;
use crate::terms::{is_number, is_optional_word};
use crate::tokenize::{fold, for_each_token};

/// Query weight of an English function word or a number ([`is_optional_word`]), relative to
/// other tokens.
pub(super) const STOPWORD_WEIGHT: f32 = 0.3;
/// Adjacent word pairs of a query looked up as compounds (`file system` -> `filesystem`).
const MAX_COMPOUND_PAIRS: usize = 1024;

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
    /// 1, or [`STOPWORD_WEIGHT`] for an English function word or a number.
    pub(super) weight: f32,
    /// A function word or a number in a query with other indexed tokens: it scores the documents
    /// the other tokens find (by its own term only) and finds none itself.
    pub(super) optional: bool,
    /// The `idf` of its stem class once a pass over the class's lists counted its documents
    /// (the live documents of the union, whatever the group filter): the keyword run and the
    /// hybrid's look-ups of the vector candidates count it once per query.
    pub(super) class_idf: std::cell::Cell<Option<f32>>,
}

impl QueryToken<'_> {
    /// Whether other terms of its stem are indexed (its gain is then the larger of two).
    pub(super) fn has_variants(&self) -> bool {
        self.class.iter().any(|&member| Some(member) != self.term)
    }
}

/// Makes every optional token of a query required (it then finds documents by itself, at its
/// own weight), for a query whose other tokens find no selected document: `play 2048` in a group
/// where only `2048` matches, or a word whose only documents were removed. Returns whether any
/// token was optional.
pub(super) fn require_all(tokens: &mut [QueryToken<'_>]) -> bool {
    let mut changed = false;
    for token in tokens.iter_mut().filter(|token| token.optional) {
        token.optional = false;
        changed = true;
    }
    changed
}

/// Whether a query has nothing to look for (no alphanumeric character): it browses when no
/// exact name matches either (the one rule; the Python side asks the core, never decides).
pub fn nothing_to_find(query: &str) -> bool {
    !query.chars().any(char::is_alphanumeric)
}

impl SearchIndex {
    /// The query's distinct tokens, resolved against the term dictionary, in query order:
    /// English function words and numbers are optional (they score only what the other tokens
    /// find) unless no other token can find a document; a number that is the whole tool name of a
    /// document `allowed` selects is not.
    pub(super) fn query_tokens(
        &self,
        query: &str,
        allowed: Option<&[bool]>,
    ) -> Vec<QueryToken<'_>> {
        // The query's tokens in order (repeats included), then each distinct one.
        let mut sequence: Vec<String> = Vec::new();
        for_each_token(query, |token| sequence.push(token.to_owned()));
        // Compounds: two adjacent words whose concatenation is an indexed term ("file system" and
        // `filesystem`) join that term to both words' classes. Not of function words or numbers
        // ("20 21" is not `2021`).
        let mut compounds: FoldHashMap<&str, Vec<u32>> = FoldHashMap::default();
        let pairs = sequence.windows(2).filter(|pair| {
            let (first, second) = (pair[0].as_str(), pair[1].as_str());
            !is_optional_word(first)
                && !is_optional_word(second)
                && first
                    .bytes()
                    .chain(second.bytes())
                    .all(|b| b.is_ascii_alphanumeric())
        });
        for pair in pairs.take(MAX_COMPOUND_PAIRS) {
            let (first, second) = (pair[0].as_str(), pair[1].as_str());
            if let Some(term) = self.terms.get(&format!("{first}{second}")) {
                compounds.entry(first).or_default().push(term);
                compounds.entry(second).or_default().push(term);
            }
        }
        let mut distinct: FoldHashSet<&str> = FoldHashSet::default();
        let mut tokens: Vec<QueryToken<'_>> = Vec::new();
        for token in &sequence {
            if !distinct.insert(token.as_str()) {
                continue;
            }
            let term = self.terms.get(token);
            // A number that is a tool's whole name (`2048`) names that tool, not an argument.
            let optional =
                is_optional_word(token) && !(is_number(token) && self.is_tool_name(token, allowed));
            let extra = compounds.get(token.as_str()).map_or(&[][..], Vec::as_slice);
            tokens.push(QueryToken {
                text: Box::from(token.as_str()),
                term,
                class: self.class_with_synonyms(token, term, extra),
                weight: if optional { STOPWORD_WEIGHT } else { 1.0 },
                optional,
                class_idf: std::cell::Cell::new(None),
            });
        }
        // Function words and numbers are optional only beside a token that can find documents
        // (whether it finds one among the selected documents, `search` sees by scoring: see
        // [`require_all`]).
        let findable = |token: &QueryToken<'_>| token.term.is_some() || !token.class.is_empty();
        if !tokens
            .iter()
            .any(|token| !token.optional && findable(token))
        {
            require_all(&mut tokens);
        }
        tokens
    }

    /// Whether the tool name of `doc`, case-folded ([`fold`]), is `folded`.
    fn names_tool(&self, doc: u32, folded: &str) -> bool {
        let tool = self.docs[doc as usize].name.tool();
        tool.eq_ignore_ascii_case(folded) || (!tool.is_ascii() && fold(tool) == folded)
    }

    /// Whether `token` (as the tokenizer emits it) is the whole tool name of a live, selected
    /// document: the name case-folded, with `-` as the tokenizer's `_` (`2025-01-01` is the token
    /// `2025_01_01`).
    fn is_tool_name(&self, token: &str, allowed: Option<&[bool]>) -> bool {
        let dashed = token.contains('_').then(|| token.replace('_', "-"));
        let candidates = self.by_tool_folded.get(token).chain(
            dashed
                .iter()
                .flat_map(|dashed| self.by_tool_folded.get(dashed)),
        );
        let mut candidates = candidates;
        candidates.any(|doc| {
            let index = doc as usize;
            self.alive[index]
                && allowed.is_none_or(|allowed| allowed[self.doc_group[index] as usize])
                && fold(self.docs[index].name.tool()).replace('-', "_") == token
        })
    }

    /// The stem class of `token` (see [`crate::terms::Dictionary::stem_class`]), joined with the stem classes
    /// of its synonyms ([`crate::synonyms`]) and with `extra` terms (compounds it is part of).
    fn class_with_synonyms(&self, token: &str, term: Option<u32>, extra: &[u32]) -> Cow<'_, [u32]> {
        let own = self.terms.stem_class(token, term);
        let synonyms = crate::synonyms::synonyms(token);
        if synonyms.is_empty() && extra.is_empty() {
            return Cow::Borrowed(own);
        }
        let mut union: Vec<u32> = own.to_vec();
        union.extend(term);
        union.extend_from_slice(extra);
        for stem in synonyms {
            union.extend_from_slice(self.terms.stem_members(stem));
        }
        union.sort_unstable();
        union.dedup();
        if union.len() == own.len() {
            Cow::Borrowed(own)
        } else {
            Cow::Owned(union)
        }
    }

    pub(super) fn browse(
        &self,
        allowed: Option<&[bool]>,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<Arc<str>>) {
        let selected: Vec<&Group> = self
            .group_ids
            .values()
            .filter(|&&id| allowed.is_none_or(|allowed| allowed[id as usize]))
            .map(|&id| &self.groups[id as usize])
            .collect();
        let total = selected.iter().map(|group| group.members.len()).sum();
        let mut skip = offset;
        let mut keys = Vec::new();
        for group in selected {
            if keys.len() >= limit {
                break;
            }
            if skip >= group.members.len() {
                skip -= group.members.len();
                continue;
            }
            let wanted = limit - keys.len();
            keys.extend(
                group
                    .members
                    .iter()
                    .skip(skip)
                    .take(wanted)
                    .map(|(name, _)| Arc::from(name.0.key())),
            );
            skip = 0;
        }
        (total, keys)
    }

    /// The selectable documents whose tool name (or canonical `group__tool` name) equals the
    /// trimmed query, ignoring case, in document order.
    pub(super) fn exact_matches(&self, query: &str, allowed: Option<&[bool]>) -> Vec<u32> {
        let selectable = |doc: u32| {
            let index = doc as usize;
            self.alive[index]
                && allowed.is_none_or(|allowed| allowed[self.doc_group[index] as usize])
        };
        let folded = fold(query.trim());
        // Documents by name hash, checked against the documents' own (folded) tool names.
        let named = |doc: &u32, folded: &str| self.names_tool(*doc, folded);
        let mut exact: Vec<u32> = self
            .by_tool_folded
            .get(&folded)
            .filter(|doc| named(doc, &folded))
            .collect();
        if let Some((group, tool)) = folded.split_once(CANONICAL_SEPARATOR) {
            let in_group = |doc: &u32| {
                let name = &self.groups[self.doc_group[*doc as usize] as usize].name;
                name.eq_ignore_ascii_case(group) || (!name.is_ascii() && fold(name) == group)
            };
            let docs = self.by_tool_folded.get(tool);
            exact.extend(docs.filter(|doc| named(doc, tool) && in_group(doc)));
        }
        exact.retain(|&doc| selectable(doc));
        exact.sort_unstable();
        exact.dedup();
        exact
    }
}
