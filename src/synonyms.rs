//! Query-side synonyms: a small, fixed table of words that tool descriptions and agent queries
//! use for the same action or object ("remove" a file, "delete" a file).
//!
//! A query token whose stem is in a group below also matches the documents of the other words of
//! its group, through the token's stem class (see `index::ranking`): its gain is the larger of
//! its own term's and that of the class, scored with the class's own `idf`, so a tool that uses
//! the query's own word still ranks first. Only the query side is expanded; the index is the
//! same with or without the table. Groups hold words agents and tool authors use
//! interchangeably in tool catalogues (MCP servers, BFCL); a word in no group is matched as it
//! is. The table is deterministic and ships with the crate (no model, no download).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::terms::term;

/// Interchangeable words, one group a line. Every word is matched by its stem.
const GROUPS: &[&[&str]] = &[
    &["delete", "remove", "erase", "trash"],
    &["get", "fetch", "retrieve", "obtain"],
    &["create", "make", "generate", "new"],
    &["find", "search", "lookup", "locate"],
    &["update", "modify", "edit", "change", "alter"],
    &["copy", "duplicate", "clone"],
    &["folder", "directory"],
    &["show", "display", "view"],
    &["run", "execute", "launch"],
    &["stop", "terminate", "kill", "halt"],
    &["save", "store", "persist"],
    &["picture", "image", "photo"],
    &["calculate", "compute", "evaluate"],
    &["ticket", "issue"],
    &["send", "post", "submit"],
    &["read", "load"],
];

/// Stem -> the stems of the other words of its group.
type ByStem = HashMap<Box<str>, Box<[Box<str>]>>;

/// The stems of the other words in the synonym group of `token`'s stem (empty when none).
pub fn synonyms(token: &str) -> &'static [Box<str>] {
    static BY_STEM: OnceLock<ByStem> = OnceLock::new();
    let by_stem = BY_STEM.get_or_init(|| {
        let mut by_stem = HashMap::new();
        for group in GROUPS {
            let stems: Vec<Box<str>> = group
                .iter()
                .map(|word| Box::from(term(word).as_ref()))
                .collect();
            for stem in &stems {
                let others: Box<[Box<str>]> = stems
                    .iter()
                    .filter(|other| *other != stem)
                    .cloned()
                    .collect();
                by_stem.insert(stem.clone(), others);
            }
        }
        by_stem
    });
    by_stem
        .get(term(token).as_ref())
        .map_or(&[], |others| others)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_are_found_by_stem_both_ways() {
        assert!(synonyms("removing")
            .iter()
            .any(|s| &**s == term("delete").as_ref()));
        assert!(synonyms("deleted")
            .iter()
            .any(|s| &**s == term("remove").as_ref()));
        assert!(synonyms("weather").is_empty());
        assert!(!synonyms("delete")
            .iter()
            .any(|s| &**s == term("delete").as_ref()));
    }

    #[test]
    fn every_word_is_in_one_group() {
        let mut seen = std::collections::HashSet::new();
        for group in GROUPS {
            for word in *group {
                assert!(
                    seen.insert(term(word).into_owned()),
                    "{word} is in two groups"
                );
            }
        }
    }
}
