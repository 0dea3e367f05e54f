//! Why a tool ranked where it did: each query token's gain, split by the field it matched in,
//! the group description's gain, and the coordination factor (Lucene's `explain`, for BM25F).
//!
//! As tantivy puts `Weight::explain` beside `Weight::scorer`, the explanation is the ranking's own
//! code run for one document: its score is [`PreparedQuery::score_parts`] (the sums
//! [`PreparedQuery::score_docs`] adds, in plan order, for the hybrid ranking's look-ups), so
//! `Explanation::score` is bit for bit the score the document was ranked by; each token's share
//! is [`Scorer::token_gain`], by the one rule of a token's gain the ranking applies
//! ([`super::scorer::larger_gain`]).

use std::sync::Arc;

use super::bm25f::{DESCRIPTION, FIELDS, GROUP, NAME, PARAMETER_NAMES, PARAMETER_TEXT};
use super::query::PreparedQuery;
use super::scorer::{with_scratch, Scorer, TokenGain};
use super::SearchIndex;

/// Field names, by field index, as an explanation shows them.
const FIELD_NAMES: [&str; FIELDS] = {
    let mut names = [""; FIELDS];
    names[NAME] = "tool name";
    names[GROUP] = "group name";
    names[DESCRIPTION] = "description";
    names[PARAMETER_NAMES] = "parameter names";
    names[PARAMETER_TEXT] = "parameter text";
    names
};
/// The field name of a group description's gain.
pub const GROUP_DESCRIPTION_FIELD: &str = "group description";

/// One query token's share of a document's score, in one field.
#[derive(Debug, Clone, PartialEq)]
pub struct TermMatch {
    /// The query token (lower-cased, as the tokenizer produced it).
    pub token: String,
    /// Where it matched: `tool name`, `group name`, `description`, `parameter names`,
    /// `parameter text` or `group description`.
    pub field: &'static str,
    /// Whether it matched through another word of its stem (`lists` for `list`), not itself.
    pub via_stem: bool,
    /// Its gain in this field (its weight included), before the coordination factor.
    pub gain: f32,
}

/// Why one document has the score it was ranked by.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The document's key.
    pub key: Arc<str>,
    /// An exact name match: ranked above every other match, whatever its score.
    pub exact: bool,
    /// The score the ranking gives the document, bit for bit: `(sum of gains) * coordination`
    /// (summed in the ranking's order, so the sum of `matches` may differ in the last bits).
    pub score: f32,
    /// `1 + COORDINATION * matched / query tokens`.
    pub coordination: f32,
    /// Every token's gain per field, in query order.
    pub matches: Vec<TermMatch>,
    /// The query has nothing to look for and no exact name: the ranking browses (every score 0).
    pub browsed: bool,
}

impl SearchIndex {
    /// Explains the score of the live document `key` for `query` (see [`Self::search`]), or
    /// `None` for an unknown key. A document outside the selected `groups` is explained as if
    /// selected.
    pub fn explain(&self, query: &str, groups: Option<&[&str]>, key: &str) -> Option<Explanation> {
        let doc = self.doc_of(key)?;
        // Tokens as `search` decides them over the selection as given, even when `key` is outside
        // it (a selection of no group, which no search finds anything in, counts as every group):
        // optional tokens find by themselves when the others find nothing selected.
        let decide = self
            .allowed_groups(groups)
            .filter(|selected| selected.iter().any(|&group| group));
        let mut prepared = self.prepare_selected(query, decide);
        if prepared.tokens.iter().any(|token| token.optional) {
            prepared.score(1, true);
        }
        // An exact name outside the selection is explained as if selected.
        let exact = self.exact_matches(query, None).contains(&doc);
        if exact {
            if let Err(at) = prepared.exact.binary_search(&doc) {
                prepared.exact.insert(at, doc);
            }
        }
        let parts = prepared.score_parts(doc);
        let (score, coordination) = parts.score();
        let matches = if prepared.browse {
            Vec::new()
        } else {
            self.term_matches(&prepared, doc, parts.content[1] > 0.0 || exact)
        };
        Some(Explanation {
            key: Arc::from(key),
            exact,
            score,
            coordination,
            matches,
            browsed: prepared.browse,
        })
    }

    /// Each token's gain on `doc` split by field, in query order: the content tokens', the
    /// optional tokens' when `found` (a content token or an exact name found `doc`), then the
    /// group description's.
    fn term_matches(&self, prepared: &PreparedQuery<'_>, doc: u32, found: bool) -> Vec<TermMatch> {
        let scorer = Scorer::new(self, prepared.allowed());
        let mut matches = Vec::new();
        with_scratch(|scratch| {
            for optional in [false, true] {
                if optional && !found {
                    break;
                }
                for token in prepared.tokens.iter().filter(|t| t.optional == optional) {
                    if let Some(share) = scorer.token_gain_of(token, !optional, doc, scratch) {
                        push_shares(&mut matches, &scorer, doc, &token.text, token.weight, share);
                    }
                }
            }
        });
        let group = self.doc_group[doc as usize];
        for found in prepared.group_matches.iter().filter(|m| m.group == group) {
            matches.push(TermMatch {
                token: found.token.to_string(),
                field: GROUP_DESCRIPTION_FIELD,
                via_stem: false,
                gain: found.gain,
            });
        }
        matches
    }
}

/// Pushes a token's gain `found` (its query `weight` applied) split by the fields it came from.
fn push_shares(
    matches: &mut Vec<TermMatch>,
    scorer: &Scorer<'_>,
    doc: u32,
    token: &str,
    weight: f32,
    found: TokenGain,
) {
    let shares = scorer.field_shares(doc, found.tf);
    for (field, share) in shares.into_iter().enumerate() {
        if share > 0.0 {
            matches.push(TermMatch {
                token: token.to_owned(),
                field: FIELD_NAMES[field],
                via_stem: found.via_stem,
                gain: weight * found.gain * share,
            });
        }
    }
}

#[cfg(test)]
#[path = "tests/explain.rs"]
mod tests;
