//! Why a tool ranked where it did: each query token's gain, split by the field it matched in,
//! the group description's gain, and the coordination factor (Lucene's `explain`, for BM25F).
//!
//! The explanation recomputes a document's score the way [`super::maxscore`] computes it (the
//! same BM25F gains, the larger of a token's own term and its stem class, optional function
//! words only beside a found token, the group gain and the coordination factor), so
//! `Explanation::score` is the score the document was ranked by.

use std::sync::Arc;

use super::analysis::QueryToken;
use super::bm25f::{
    document_score, DESCRIPTION, FIELDS, GROUP, NAME, PARAMETER_NAMES, PARAMETER_TEXT,
};
use super::group_text::GROUP_TEXT_COORDINATION;
use super::postings::find;
use super::scorer::Scorer;
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
    /// `(sum of gains) * coordination`.
    pub score: f32,
    /// `1 + COORDINATION * matched / query tokens`.
    pub coordination: f32,
    /// Every token's gain per field, in query order.
    pub matches: Vec<TermMatch>,
}

impl SearchIndex {
    /// How many of `keys`, from the first, are exact name matches of `query` (what [`Self::explain`]
    /// reports as `exact`): a ranking window's leading exact names, with one look at the query.
    pub fn leading_exact_names<K: AsRef<str>>(&self, query: &str, keys: &[K]) -> usize {
        let exact = self.exact_matches(query, None);
        keys.iter()
            .take_while(|key| {
                self.doc_of(key.as_ref())
                    .is_some_and(|doc| exact.contains(&doc))
            })
            .count()
    }

    /// Explains the score of the live document `key` for `query` (see [`Self::search`]), or
    /// `None` for an unknown key. A document outside the selected `groups` is explained as if
    /// selected.
    pub fn explain(&self, query: &str, groups: Option<&[&str]>, key: &str) -> Option<Explanation> {
        let doc = self.doc_of(key)?;
        let allowed = self.allowed_groups(groups);
        let scorer = Scorer::new(self, allowed.as_deref());
        // Tokens as `search` decides them over the selection as given, even when `key` is outside
        // it (a selection of no group, which no search finds anything in, counts as every group):
        // optional tokens find by themselves when the others find nothing selected.
        let decide = allowed
            .clone()
            .filter(|selected| selected.iter().any(|&group| group));
        let mut prepared = self.prepare_selected(query, decide);
        if prepared.tokens.iter().any(|token| token.optional) {
            prepared.score(1, true);
        }
        let tokens = &prepared.tokens;
        let exact = self.exact_matches(query, None).contains(&doc);
        let mut matches = Vec::new();
        let mut content = (0.0f32, 0.0f32);
        for token in tokens.iter().filter(|token| !token.optional) {
            if let Some((gain, tf, via_stem)) = self.best_gain(&scorer, token, doc) {
                content.0 += token.weight * gain;
                content.1 += token.weight;
                push_shares(&mut matches, &scorer, doc, token, gain, tf, via_stem);
            }
        }
        let mut optional = (0.0f32, 0.0f32);
        if content.1 > 0.0 || exact {
            for token in tokens.iter().filter(|token| token.optional) {
                let Some(term) = token.term else { continue };
                let list = scorer.postings(term);
                if let Some(posting) = find(list, doc) {
                    let gain = scorer.gain(doc, posting.tf(), scorer.idf(self.live_df(list)));
                    optional.0 += token.weight * gain;
                    optional.1 += token.weight;
                    push_shares(&mut matches, &scorer, doc, token, gain, posting.tf(), false);
                }
            }
        }
        let group = self.doc_group[doc as usize];
        let mut group_gain = 0.0f32;
        let mut group_matched = 0.0f32;
        self.each_group_gain(query, |id, token, gain| {
            if id == group {
                group_gain += gain;
                group_matched += GROUP_TEXT_COORDINATION;
                matches.push(TermMatch {
                    token: token.to_owned(),
                    field: GROUP_DESCRIPTION_FIELD,
                    via_stem: false,
                    gain,
                });
            }
        });
        let (score, coordination) = document_score(
            [content.0, content.1],
            [optional.0, optional.1],
            [group_gain, group_matched],
            tokens.len().max(1) as f32,
        );
        Some(Explanation {
            key: Arc::from(key),
            exact,
            score,
            coordination,
            matches,
        })
    }

    /// A content token's gain on `doc`: the larger of its own term's and its stem class's (as the
    /// ranking takes it), with the term frequencies it came from and whether the class won.
    fn best_gain(
        &self,
        scorer: &Scorer<'_>,
        token: &QueryToken<'_>,
        doc: u32,
    ) -> Option<(f32, [u16; FIELDS], bool)> {
        let mut best: Option<(f32, [u16; FIELDS], bool)> = None;
        if let Some(term) = token.term {
            let list = scorer.postings(term);
            if let Some(posting) = find(list, doc) {
                let idf = scorer.idf(self.live_df(list));
                best = Some((scorer.gain(doc, posting.tf(), idf), posting.tf(), false));
            }
        }
        if token.has_variants() {
            let mut union: Vec<u32> = Vec::new();
            let mut tf = [0u16; FIELDS];
            let mut found = false;
            for &member in token.class.iter() {
                let list = scorer.postings(member);
                union.extend(
                    list.iter()
                        .map(|p| p.doc)
                        .filter(|&d| self.alive[d as usize]),
                );
                if let Some(posting) = find(list, doc) {
                    found = true;
                    for (total, tf) in tf.iter_mut().zip(posting.tf()) {
                        *total = total.saturating_add(tf);
                    }
                }
            }
            if found {
                union.sort_unstable();
                union.dedup();
                let gain = scorer.gain(doc, tf, scorer.idf(union.len()));
                if best.is_none_or(|(own, _, _)| gain > own) {
                    best = Some((gain, tf, true));
                }
            }
        }
        best
    }
}

/// Pushes `token`'s `gain` (its weight applied) split by the fields of `tf`.
fn push_shares(
    matches: &mut Vec<TermMatch>,
    scorer: &Scorer<'_>,
    doc: u32,
    token: &QueryToken<'_>,
    gain: f32,
    tf: [u16; FIELDS],
    via_stem: bool,
) {
    let shares = scorer.field_shares(doc, tf);
    for (field, share) in shares.into_iter().enumerate() {
        if share > 0.0 {
            matches.push(TermMatch {
                token: token.text.to_string(),
                field: FIELD_NAMES[field],
                via_stem,
                gain: token.weight * gain * share,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ParameterText, Record};
    use super::*;

    fn record(group: &str, tool: &str, description: &str, params: &[&str]) -> Record {
        Record {
            key: crate::names::canonical_name(group, tool),
            group: group.to_owned(),
            tool: tool.to_owned(),
            description: description.to_owned(),
            parameter_text: ParameterText {
                names: params.iter().map(|&p| p.to_owned()).collect(),
                texts: Vec::new(),
            },
        }
    }

    fn index() -> SearchIndex {
        let mut index = SearchIndex::new();
        index.set_group_description(
            "web",
            "Browser automation: open web pages and fill in forms",
        );
        index.set_group_description("fs", "File system: read and write files");
        index.upsert([
            record("web", "navigate", "Go to a URL in the browser", &["url"]),
            record(
                "web",
                "fill_form",
                "Fill in the fields of a form",
                &["selector", "value"],
            ),
            record("fs", "read_file", "Read a file from disk", &["path"]),
            record(
                "fs",
                "write_file",
                "Write text to a file",
                &["path", "content"],
            ),
            record(
                "fs",
                "list_files",
                "List the files of a directory",
                &["path"],
            ),
            record(
                "crm",
                "customer_name",
                "Look up the name of a customer",
                &["customer_id"],
            ),
        ]);
        index
    }

    #[test]
    fn the_explained_score_is_the_ranked_score() {
        let index = index();
        for query in [
            "browser automation open a page",
            "write to a file",
            "list the files",
            "customer name",
            "files of the directory listing",
            "read_file",
            "fill in a form in the browser",
        ] {
            let (_, ranked) = index.prepare(query, None).score(usize::MAX, false);
            assert!(!ranked.is_empty(), "{query}");
            for candidate in ranked {
                let key = index.docs[candidate.doc as usize].name.key().to_owned();
                let explained = index.explain(query, None, &key).unwrap();
                assert_eq!(explained.exact, candidate.exact, "{query} {key}");
                let tolerance = 1e-4 * candidate.score.abs().max(1.0);
                assert!(
                    (explained.score - candidate.score).abs() <= tolerance,
                    "{query} {key}: explained {} vs ranked {} ({explained:?})",
                    explained.score,
                    candidate.score
                );
                let sum: f32 = explained.matches.iter().map(|m| m.gain).sum();
                assert!((sum * explained.coordination - explained.score).abs() <= tolerance);
            }
        }
    }

    #[test]
    fn an_explanation_names_fields_and_the_group_description() {
        let index = index();
        let explained = index
            .explain("browser automation open a page", None, "web__navigate")
            .unwrap();
        let fields: Vec<(&str, &str)> = explained
            .matches
            .iter()
            .map(|m| (m.token.as_str(), m.field))
            .collect();
        assert!(fields.contains(&("browser", "description")), "{fields:?}");
        assert!(
            fields.contains(&("browser", GROUP_DESCRIPTION_FIELD)),
            "{fields:?}"
        );
        assert!(
            fields.contains(&("automation", GROUP_DESCRIPTION_FIELD)),
            "{fields:?}"
        );
        let stem = index
            .explain("listing files", None, "fs__list_files")
            .unwrap();
        assert!(
            stem.matches
                .iter()
                .any(|m| m.token == "listing" && m.via_stem && m.field == "tool name"),
            "{stem:?}"
        );
        assert!(index.explain("x", None, "nope__nothing").is_none());
    }
}
