//! Tests of the search index (search, upserts, removal, groups, exact names), and the helpers
//! the other test modules share (`record`, `search`, `xorshift`, `skewed_index`).

use super::*;
use crate::names::canonical_name;

pub(crate) fn record(group: &str, tool: &str, description: &str) -> Record {
    Record {
        key: canonical_name(group, tool),
        group: group.to_owned(),
        tool: tool.to_owned(),
        description: description.to_owned(),
        parameter_text: ParameterText::default(),
    }
}

/// A deterministic xorshift64 generator for randomized tests: each call returns a number in
/// `0..bound` (`bound` > 0; panics on 0). The same nonzero `seed` gives the same sequence.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    }
}

/// An index in `0..len` (`len` > 0) drawn from `next` (an [`xorshift`] generator), index `i`
/// with probability about proportional to 1 / (i + 1): the skewed word frequencies of the
/// randomized corpora.
pub(crate) fn skewed_index(next: &mut dyn FnMut(usize) -> usize, len: usize) -> usize {
    let pick = next(1000);
    let index = (len as f64).powf(pick as f64 / 1000.0) as usize - 1;
    index.min(len - 1)
}

pub(crate) fn search(
    index: &SearchIndex,
    query: &str,
    groups: Option<&[&str]>,
    offset: usize,
    limit: usize,
) -> (usize, Vec<String>) {
    let (total, keys) = index.search(query, groups, offset, limit);
    (total, keys.iter().map(ToString::to_string).collect())
}

pub(crate) fn github_index() -> SearchIndex {
    let tools = [
        ("github_get_me", "Get the profile of the authenticated user"),
        (
            "github_get_issue",
            "Get details of a specific issue in a GitHub repository",
        ),
        ("github_list_issues", "List issues in a GitHub repository"),
        (
            "github_create_issue",
            "Create a new issue in a GitHub repository",
        ),
        ("github_add_issue_comment", "Add a comment to an issue"),
        ("github_get_pull_request", "Get details of a pull request"),
        (
            "github_list_pull_requests",
            "List pull requests in a repository",
        ),
        ("github_merge_pull_request", "Merge a pull request"),
        (
            "github_get_file_contents",
            "Get the contents of a file or directory",
        ),
        (
            "github_create_or_update_file",
            "Create or update a single file in a repository",
        ),
        (
            "github_search_repositories",
            "Search for GitHub repositories",
        ),
        (
            "github_search_code",
            "Search for code across GitHub repositories",
        ),
        ("github_search_users", "Search for GitHub users"),
        ("github_list_commits", "Get list of commits of a branch"),
        (
            "github_create_branch",
            "Create a new branch in a repository",
        ),
    ];
    let mut index = SearchIndex::new();
    index.upsert(
        tools
            .iter()
            .map(|(tool, description)| record("dev", tool, description)),
    );
    index.upsert([
        record(
            "crm",
            "customer_name",
            "Look up the display name for a customer ID.",
        ),
        record(
            "crm",
            "update_customer",
            "Update a customer's account details.",
        ),
    ]);
    index
}

#[test]
fn github_prefix_corpus() {
    let index = github_index();
    let (total, keys) = search(&index, "github profile", None, 0, 5);
    assert_eq!(keys[0], "dev__github_get_me");
    assert!(total >= 15, "github matches every dev tool: {total}");
    let (_, keys) = search(&index, "get me", None, 0, 5);
    assert_eq!(keys[0], "dev__github_get_me");
    let (_, keys) = search(&index, "customer name", None, 0, 5);
    assert_eq!(keys[0], "crm__customer_name");
    let (_, keys) = search(&index, "pull request", None, 0, 3);
    assert!(
        keys.iter().all(|key| key.contains("pull_request")),
        "{keys:?}"
    );
    let (total, keys) = search(&index, "comment", None, 0, 5);
    assert_eq!(
        (total, keys),
        (1, vec!["dev__github_add_issue_comment".to_owned()])
    );
}

#[test]
fn exact_name_ranks_first() {
    let mut index = SearchIndex::new();
    index.upsert([
        record("a", "issue", "Nothing relevant"),
        record(
            "a",
            "list_issues",
            "List issue issue issue issues of an issue tracker",
        ),
        record("b", "issue_issue", "issue issue issue issue"),
    ]);
    let (_, keys) = search(&index, "  ISSUE ", None, 0, 10);
    assert_eq!(keys[0], "a__issue");
    let (_, keys) = search(&index, "b__Issue_Issue", None, 0, 10);
    assert_eq!(keys[0], "b__issue_issue");
    // Exact matches count even without matching terms through the other fields.
    let (total, keys) = search(&index, "list_issues", Some(&["a"]), 0, 1);
    assert_eq!(keys, ["a__list_issues"]);
    assert!(total >= 1);
    // Group filters apply to exact matches too.
    let (_, keys) = search(&index, "issue", Some(&["b"]), 0, 10);
    assert_eq!(keys, ["b__issue_issue"]);
}

#[test]
fn ties_break_by_group_then_tool() {
    let mut index = SearchIndex::new();
    let same = "Fetch the weather forecast";
    index.upsert([
        record("zeta", "alpha", same),
        record("alpha", "zeta", same),
        record("alpha", "beta", same),
        record("beta", "alpha", same),
    ]);
    let expected = ["alpha__beta", "alpha__zeta", "beta__alpha", "zeta__alpha"];
    for _ in 0..3 {
        let (total, keys) = search(&index, "weather", None, 0, 10);
        assert_eq!(total, 4);
        assert_eq!(keys, expected);
    }
    // Pages of the same order.
    let (_, first) = search(&index, "weather", None, 0, 1);
    let (_, rest) = search(&index, "weather", None, 1, 10);
    assert_eq!([first, rest].concat(), expected);
}

#[test]
fn browse_orders_by_group_then_tool() {
    let index = github_index();
    let (total, keys) = search(&index, "", None, 0, 3);
    assert_eq!(total, 17);
    assert_eq!(
        keys,
        [
            "crm__customer_name",
            "crm__update_customer",
            "dev__github_add_issue_comment"
        ]
    );
    let (total, keys) = search(&index, " \t ", None, 1, 2);
    assert_eq!(total, 17);
    assert_eq!(
        keys,
        ["crm__update_customer", "dev__github_add_issue_comment"]
    );
    let (total, keys) = search(&index, "!!", Some(&["dev"]), 14, 10);
    assert_eq!(
        (total, keys),
        (15, vec!["dev__github_search_users".to_owned()])
    );
    let (total, keys) = search(&index, "", Some(&[]), 0, 10);
    assert_eq!((total, keys.len()), (0, 0));
    let (total, keys) = search(&index, "", Some(&["nope"]), 0, 10);
    assert_eq!((total, keys.len()), (0, 0));
    let (total, keys) = search(&index, "", None, 100, 10);
    assert_eq!((total, keys.len()), (17, 0));
    let (total, keys) = search(&index, "", None, 0, 0);
    assert_eq!((total, keys.len()), (17, 0));
}

#[test]
fn group_filter() {
    let index = github_index();
    let (total, keys) = search(&index, "update", Some(&["crm"]), 0, 10);
    assert_eq!((total, keys), (1, vec!["crm__update_customer".to_owned()]));
    let (total, _) = search(&index, "update", Some(&["crm", "dev", "crm"]), 0, 10);
    assert_eq!(total, 2);
    let (total, _) = search(&index, "update", None, 0, 10);
    assert_eq!(total, 2);
    let (total, _) = search(&index, "crm", None, 0, 10);
    assert_eq!(total, 2, "group names are searchable");
}

#[test]
fn totals_count_all_matches() {
    let mut index = SearchIndex::new();
    index.upsert((0..250).map(|i| {
        record(
            "g",
            &format!("t{i}"),
            if i % 5 == 0 { "alpha beta" } else { "beta" },
        )
    }));
    assert_eq!(search(&index, "alpha", None, 0, 3).0, 50);
    let (total, keys) = search(&index, "beta alpha", None, 0, 50);
    assert_eq!(total, 250);
    assert_eq!(keys.len(), 50);
    // Records with both terms come first.
    let (_, all) = search(&index, "beta alpha", None, 0, 250);
    let alpha: Vec<_> = all.iter().take(50).collect();
    assert!(alpha
        .iter()
        .all(|key| key[4..].parse::<u32>().unwrap() % 5 == 0));
    // Paging through covers every match exactly once.
    let mut paged = Vec::new();
    let mut offset = 0;
    while offset < 250 {
        let (_, keys) = search(&index, "beta alpha", None, offset, 7);
        offset += 7;
        paged.extend(keys);
    }
    assert_eq!(paged, all);
}

#[test]
fn unmatched_query_has_no_results() {
    let index = github_index();
    assert_eq!(search(&index, "zzzz quux", None, 0, 10), (0, vec![]));
    assert_eq!(search(&index, "me", Some(&["crm"]), 0, 10), (0, vec![]));
    assert_eq!(SearchIndex::new().search("anything", None, 0, 10).0, 0);
    assert_eq!(SearchIndex::new().search("", None, 0, 10).0, 0);
}

#[test]
fn group_descriptions_score_the_same_after_removals() {
    let build = |edited: bool| {
        let mut index = SearchIndex::new();
        index.set_group_description("web", "Browser automation");
        let words: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
        let mut records = vec![
            record("web", "click", "Click"),
            record("fs", "cache", &format!("browser {}", words.join(" "))),
        ];
        records.extend((0..10).map(|i| record("fs", &format!("x{i}"), "y")));
        index.upsert(records);
        if edited {
            index.upsert(vec![record("tmp", "old", "browser")]);
            index.remove(["tmp__old"]);
        }
        index
    };
    assert_eq!(
        search(&build(true), "browser", None, 0, 10),
        search(&build(false), "browser", None, 0, 10)
    );
}

#[test]
fn only_a_query_with_nothing_to_look_for_browses() {
    let mut index = SearchIndex::new();
    index.upsert([
        record("aa", "weather", "Weather forecast"),
        record("zz", "-", "A tool named with punctuation only"),
    ]);
    // A word of over 128 bytes is no token, and matches nothing (it used to browse).
    let long_word = "a".repeat(129);
    assert_eq!(search(&index, &long_word, None, 0, 10), (0, vec![]));
    assert_eq!(
        search(&index, &format!("{long_word} forecast"), None, 0, 10).0,
        1
    );
    // A punctuation-only tool name is still an exact match, ranked first.
    assert_eq!(
        search(&index, "-", None, 0, 10),
        (1, vec!["zz__-".to_owned()])
    );
    assert_eq!(search(&index, " zz__- ", None, 0, 10).1, ["zz__-"]);
    // Punctuation alone still browses.
    assert_eq!(search(&index, " ?! ", None, 0, 10).0, 2);
}

#[test]
fn group_descriptions_are_a_field_of_every_member() {
    let mut index = SearchIndex::new();
    index.set_group_description(
        "web",
        "Browser automation: open web pages and fill in forms",
    );
    index.upsert([
        record("web", "navigate", "Go to a URL"),
        record("web", "click", "Click an element"),
        record("fs", "open_file", "Open a file"),
        record("fs", "write_file", "Write a file"),
    ]);
    index.set_group_description("fs", "File system: read and write files on disk");
    // Members found only through their group's description are matches.
    assert_eq!(
        search(&index, "browser automation", None, 0, 10),
        (2, vec!["web__click".to_owned(), "web__navigate".to_owned()])
    );
    // The group's words decide between an own match elsewhere and the described group.
    let (total, keys) = search(&index, "browser automation open a web page", None, 0, 10);
    assert_eq!(total, 3);
    assert_eq!(keys[2], "fs__open_file", "{keys:?}");
    // A description adds to members' own matches: `write` in both groups, `disk` in fs's text.
    assert_eq!(
        search(&index, "write to disk", None, 0, 1).1,
        ["fs__write_file"]
    );
    // Group filters still apply; removing the description removes the field.
    assert_eq!(search(&index, "browser", Some(&["fs"]), 0, 10).0, 0);
    index.set_group_description("web", "");
    assert_eq!(search(&index, "browser automation", None, 0, 10).0, 0);
}

#[test]
fn parameters_and_cjk_are_searchable() {
    let mut index = SearchIndex::new();
    let mut with_params = record("crm", "lookup", "Look something up");
    with_params.parameter_text = ParameterText {
        names: vec!["customer_id".into()],
        texts: vec!["Numeric customer ID".into()],
    };
    index.upsert([
        with_params,
        record("docs", "fetch", "获取用户信息"),
        record("docs", "Отчёт", "Получить отчёт по клиенту"),
    ]);
    assert_eq!(search(&index, "customer", None, 0, 10).1, ["crm__lookup"]);
    assert_eq!(search(&index, "用户", None, 0, 10).1, ["docs__fetch"]);
    assert_eq!(search(&index, "ОТЧЁТ", None, 0, 10).1, ["docs__Отчёт"]);
}

#[path = "query_words.rs"]
mod query_words;
