//! Explanations are the ranking: an explained score is the ranked score bit for bit, the core
//! reports when it browsed, exact names are found in the core, and a query's group-description
//! matches are computed once.

use proptest::prelude::*;

use super::super::group_text::GROUP_TEXT_PASSES;
use super::super::tests::{skewed_index, xorshift};
use super::super::{ParameterText, Record, SearchIndex};
use super::GROUP_DESCRIPTION_FIELD;

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
        record("sym", "-", "A tool named by punctuation alone", &[]),
    ]);
    index
}

/// Every document `search` ranks for `query` over `groups` is explained with its ranked score,
/// bit for bit, and its exact flag; explained scores never rise down the ranking. Returns how
/// many documents were checked.
fn check_explained_is_ranked(index: &SearchIndex, query: &str, groups: Option<&[&str]>) -> usize {
    let mut prepared = index.prepare(query, groups);
    if prepared.browse {
        // No score to explain (`-` outside the selection of its tool): reported as browsed.
        assert!(index.rank(query, None, groups, 0, 1, 0.0).unwrap().browsed);
        return 0;
    }
    let (_, ranked) = prepared.score(usize::MAX, false);
    let mut checked = 0;
    for candidate in &ranked {
        let key = index.docs[candidate.doc as usize].name.key().to_owned();
        let explained = index.explain(query, groups, &key).unwrap();
        assert_eq!(explained.exact, candidate.exact, "{query:?} {key}");
        assert_eq!(
            explained.score.to_bits(),
            candidate.score.to_bits(),
            "{query:?} {groups:?} {key}: explained {} vs ranked {} ({explained:?})",
            explained.score,
            candidate.score
        );
        assert!(!explained.browsed);
        let sum: f32 = explained.matches.iter().map(|m| m.gain).sum();
        let tolerance = 1e-4 * explained.score.abs().max(1.0);
        assert!(
            (sum * explained.coordination - explained.score).abs() <= tolerance,
            "{query:?} {key}: {explained:?}"
        );
        checked += 1;
    }
    // The public window in the same order: exact names first, then explained scores descending.
    let (_, keys) = index.search(query, groups, 0, usize::MAX);
    assert_eq!(keys.len(), ranked.len(), "{query:?}");
    let explained: Vec<_> = keys
        .iter()
        .map(|key| index.explain(query, groups, key).unwrap())
        .collect();
    for pair in explained.windows(2) {
        assert!(
            (pair[0].exact && !pair[1].exact)
                || (pair[0].exact == pair[1].exact && pair[0].score >= pair[1].score),
            "{query:?}: {pair:?}"
        );
    }
    checked
}

#[test]
fn the_explained_score_is_the_ranked_score_bit_for_bit() {
    let index = index();
    for query in [
        "browser automation open a page",
        "write to a file",
        "list the files",
        "customer name",
        "files of the directory listing",
        "read_file",
        "fill in a form in the browser",
        "the path of the file to read and write with content",
        "-",
    ] {
        assert!(
            check_explained_is_ranked(&index, query, None) > 0,
            "{query}"
        );
        check_explained_is_ranked(&index, query, Some(&["fs", "crm"]));
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

#[test]
fn the_core_reports_a_query_with_nothing_to_look_for_as_browsed() {
    let index = index();
    for query in ["", "   ", "???", "!?", " ... "] {
        let ranked = index.rank(query, None, None, 0, 3, 0.0).unwrap();
        assert!(ranked.browsed, "{query:?}");
        assert_eq!(ranked.exact, 0);
        assert_eq!(
            (ranked.total, ranked.keys.clone()),
            index.browse(None, 0, 3),
            "{query:?}"
        );
        let explained = index.explain(query, None, "fs__read_file").unwrap();
        assert!(explained.browsed && explained.matches.is_empty() && explained.score == 0.0);
    }
    // A punctuation-only tool name is no browse: its tool comes first, as an exact name.
    let ranked = index.rank(" - ", None, None, 0, 3, 0.0).unwrap();
    assert!(!ranked.browsed);
    assert_eq!((ranked.exact, &*ranked.keys[0]), (1, "sym__-"));
    // Words are no browse, whether they find anything or not.
    for query in ["files", "zzzz", "é"] {
        assert!(!index.rank(query, None, None, 0, 3, 0.0).unwrap().browsed);
    }
}

#[test]
fn the_core_counts_the_exact_names_that_lead_a_window() {
    let index = index();
    let keys = |ranked: &super::super::Ranked| -> Vec<String> {
        ranked.keys.iter().map(ToString::to_string).collect()
    };
    let ranked = index.rank("READ_FILE", None, None, 0, 5, 0.4).unwrap();
    assert_eq!(
        (ranked.exact, keys(&ranked)[0].as_str()),
        (1, "fs__read_file")
    );
    assert_eq!(
        (ranked.total, ranked.keys.clone()),
        index.search("READ_FILE", None, 0, 5)
    );
    // The canonical name, case folded, is an exact name too; behind the window's start it is not
    // counted, nor outside the selection.
    let ranked = index.rank("Fs__Write_File", None, None, 0, 5, 0.4).unwrap();
    assert_eq!(
        (ranked.exact, keys(&ranked)[0].as_str()),
        (1, "fs__write_file")
    );
    assert_eq!(
        index
            .rank("read_file", None, None, 1, 5, 0.4)
            .unwrap()
            .exact,
        0
    );
    assert_eq!(
        index
            .rank("read_file", None, Some(&["web"]), 0, 5, 0.4)
            .unwrap()
            .exact,
        0
    );
    assert_eq!(
        index
            .rank("read file", None, None, 0, 5, 0.4)
            .unwrap()
            .exact,
        0
    );
}

#[test]
fn group_description_matches_are_computed_once_per_query() {
    let index = index();
    let passes = || GROUP_TEXT_PASSES.with(std::cell::Cell::get);
    let before = passes();
    index.search("browser automation open a page", None, 0, 5);
    assert_eq!(passes() - before, 1);
    let before = passes();
    index.explain("browser automation open a page", None, "web__navigate");
    assert_eq!(passes() - before, 1);
    let before = passes();
    index
        .explain_hybrid("file system read", None, None, "fs__read_file", 0.5)
        .unwrap();
    assert_eq!(passes() - before, 1);
}

/// Words of the random corpora: stem variants, synonyms' words, function words, numbers.
const WORDS: [&str; 32] = [
    "get",
    "list",
    "lists",
    "listing",
    "data",
    "user",
    "users",
    "file",
    "files",
    "search",
    "restaurant",
    "weather",
    "city",
    "report",
    "reports",
    "create",
    "update",
    "delete",
    "the",
    "for",
    "of",
    "a",
    "to",
    "with",
    "2048",
    "price",
    "prices",
    "flight",
    "email",
    "message",
    "system",
    "filesystem",
];

/// A random index: `docs` documents in four groups, some removed, three groups described.
fn random_index(seed: u64, docs: usize) -> (SearchIndex, Vec<String>) {
    let mut next = xorshift(seed | 1);
    let word = |next: &mut dyn FnMut(usize) -> usize| WORDS[skewed_index(next, WORDS.len())];
    let records: Vec<Record> = (0..docs)
        .map(|doc| {
            let name: Vec<&str> = (0..=next(2)).map(|_| word(&mut next)).collect();
            let description: Vec<&str> = (0..=next(9)).map(|_| word(&mut next)).collect();
            let tool = if next(12) == 0 {
                word(&mut next).to_owned() // a tool named by one word (`2048`): an exact name
            } else {
                format!("{}_{doc}", name.join("_"))
            };
            let param = word(&mut next);
            record(
                &format!("g{}", next(4)),
                &tool,
                &description.join(" "),
                &[param],
            )
        })
        .collect();
    let keys: Vec<String> = records.iter().map(|r| r.key.clone()).collect();
    let mut index = SearchIndex::new();
    index.upsert(records);
    index.remove(keys.iter().step_by(7));
    for group in ["g0", "g1", "g2"] {
        let text: Vec<&str> = (0..=next(5)).map(|_| word(&mut next)).collect();
        index.set_group_description(group, &text.join(" "));
    }
    (index, keys)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn explained_scores_are_ranked_scores_on_random_corpora(
        seed in any::<u64>(),
        docs in 20usize..300,
        queries in prop::collection::vec(
            (prop::collection::vec(0usize..WORDS.len(), 1..9), any::<bool>()),
            1..6,
        ),
    ) {
        let (index, _) = random_index(seed, docs);
        for (words, select) in queries {
            let query: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            let query = query.join(" ");
            let groups: Option<&[&str]> = select.then_some(&["g1", "g3"][..]);
            check_explained_is_ranked(&index, &query, groups);
        }
    }
}
