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
fn stems_and_function_words_shape_the_ranking() {
    let mut index = SearchIndex::new();
    index.upsert([
        record(
            "food",
            "find_restaurant",
            "Find a restaurant near a location",
        ),
        record("food", "restaurants_list", "List the restaurants of a city"),
        record("misc", "help_me", "Provide help to me"),
        record("misc", "weather", "Weather forecast for a city"),
    ]);
    // Inflections meet at their stem; the query's own form ranks its tool first.
    let (total, keys) = search(&index, "restaurants", None, 0, 10);
    assert_eq!(total, 2);
    assert_eq!(keys[0], "food__restaurants_list");
    assert_eq!(
        search(&index, "restaurant", None, 0, 10).1[0],
        "food__find_restaurant"
    );
    // Function words (`for`, `me`, `to`) find nothing beside a content word: it decides.
    let (total, keys) = search(&index, "find something for me to eat", None, 0, 10);
    assert_eq!((total, keys), (1, vec!["food__find_restaurant".to_owned()]));
    // Alone, a function word still finds its tool; beside an unknown word too.
    assert_eq!(search(&index, "me", None, 0, 10).1, ["misc__help_me"]);
    assert_eq!(search(&index, "zzzz me", None, 0, 10).1, ["misc__help_me"]);
}

#[test]
fn numbers_order_the_documents_found_by_words() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record(
            "math",
            "calculate_average",
            "Calculate the average of numbers.",
        ),
        record(
            "usage",
            "hosts_per_day",
            "Hosts counted on a day, 12 to 21 of 2021.",
        ),
        record("usage", "hosts_2021", "Hosts counted in 2021."),
    ]);
    // The query's numbers are argument values: they neither find `hosts_per_day` nor
    // outweigh `average`; nor do `20 21` form the compound `2021`.
    let (total, keys) = search(&index, "average of 12, 20, 21", None, 0, 10);
    assert_eq!(
        (total, keys),
        (1, vec!["math__calculate_average".to_owned()])
    );
    // Beside a word, a number still orders what the word finds.
    let (_, keys) = search(&index, "hosts 12", None, 0, 10);
    assert_eq!(keys, ["usage__hosts_per_day", "usage__hosts_2021"]);
    // Alone, a number finds by itself.
    assert_eq!(search(&index, "2021", None, 0, 10).0, 2);
    assert_eq!(
        search(&index, "21", None, 0, 10).1,
        ["usage__hosts_per_day"]
    );
}

#[test]
fn numbers_find_when_the_words_find_nothing_selected() {
    let mut index = SearchIndex::new();
    let mut records: Vec<Record> = (0..200)
        .map(|i| record("filler", &format!("filler_{i:03}"), "filler text"))
        .collect();
    records.push(record("arcade", "tiles", "Slide tiles up to 2048."));
    records.push(record("board", "chess", "Play chess."));
    records.push(record("tmp", "old", "Zebra stripes."));
    index.upsert(records);
    index.remove(["tmp__old"]);
    // `chess` finds nothing in `arcade`; `zebra` only a removed tool: `2048` finds by itself.
    let arcade = Some(&["arcade"][..]);
    assert_eq!(
        search(&index, "chess 2048", arcade, 0, 10),
        (1, vec!["arcade__tiles".to_owned()])
    );
    assert_eq!(
        search(&index, "zebra 2048", None, 0, 10).1,
        ["arcade__tiles"]
    );
    // The explanation follows the same rule.
    let explained = index
        .explain("chess 2048", Some(&["arcade"]), "arcade__tiles")
        .unwrap();
    assert!(explained.score > 0.0 && explained.matches[0].token == "2048");
    // Beside a word that finds a selected tool, the number still finds nothing.
    assert_eq!(
        search(&index, "chess 2048", None, 0, 10).1,
        ["board__chess"]
    );
}

#[test]
fn a_number_that_is_a_tool_name_finds_it_and_dates_are_numbers() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record("games", "2048", "Slide numbered tiles to combine them."),
        record("games", "chess_game", "Play a chess game."),
        record("meteo", "get_weather", "Weather forecast for a date."),
        record("cal", "events", "List events. Example date: 2025-01-01."),
    ]);
    let (total, keys) = search(&index, "play 2048", None, 0, 10);
    assert_eq!((total, keys[0].as_str()), (2, "games__2048"));
    // `2025-01-01` is also the token `2025_01_01`: a number like its parts.
    for query in ["weather on 2025-01-01", "weather on 2025 01 01"] {
        assert_eq!(
            search(&index, query, None, 0, 10),
            (1, vec!["meteo__get_weather".to_owned()]),
            "{query}"
        );
    }
}

#[test]
fn fullwidth_and_dashed_names_match_as_their_tokens_do() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record("a", "weather", "Nothing."),
        record("b", "forecast", "Weather weather weather report."),
        record("games", "１２", "Slide numbered tiles."),
        record("games", "chess", "Play chess."),
        record("cal", "2025-01-01", "New year."),
    ]);
    // The exact-name rule folds as tokens do: fullwidth letters are their ASCII forms.
    for query in ["weather", "ＷＥＡＴＨＥＲ", "ａ__ｗｅａｔｈｅｒ"] {
        assert_eq!(
            search(&index, query, None, 0, 1).1,
            ["a__weather"],
            "{query}"
        );
    }
    assert!(index.explain("12", None, "games__１２").unwrap().exact);
    // A number is the name of `１２` and of `2025-01-01` (the token `2025_01_01`).
    assert_eq!(search(&index, "play 12", None, 0, 10).1[0], "games__１２");
    assert_eq!(
        search(&index, "play 2025-01-01", None, 0, 10).1[0],
        "cal__2025-01-01"
    );
}

#[test]
fn only_a_selected_tool_makes_a_number_its_name() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record("arcade", "tiles", "Slide tiles up to 2048."),
        record(
            "arcade",
            "scores",
            "High scores table, at most 2048 entries.",
        ),
        record("arcade", "tetris", "Tetris tiles game."),
    ]);
    let arcade = Some(&["arcade"][..]);
    let before = search(&index, "tiles 2048", arcade, 0, 10);
    assert_eq!(before.0, 2);
    index.upsert(vec![record("other", "2048", "The game.")]);
    assert_eq!(search(&index, "tiles 2048", arcade, 0, 10), before);
    // An explanation over a selection of no group decides as over every group.
    let none = index.explain("tiles 2048", None, "arcade__scores").unwrap();
    let empty = index
        .explain("tiles 2048", Some(&[]), "arcade__scores")
        .unwrap();
    assert!((none.score - empty.score).abs() < f32::EPSILON);
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
fn pairs_of_numbers_do_not_use_up_the_compound_lookups() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record("fs", "read", "Read a file from the filesystem."),
        record("os", "info", "Operating system information."),
    ]);
    let long = format!("{}file system", "1 ".repeat(1030));
    assert_eq!(search(&index, "file system", None, 0, 5).1[0], "fs__read");
    assert_eq!(search(&index, &long, None, 0, 5).1[0], "fs__read");
}

#[test]
fn you_and_the_pieces_of_contractions_are_function_words() {
    let mut index = SearchIndex::new();
    index.upsert(vec![
        record("weather", "get_weather", "Current weather for a city."),
        record(
            "chat",
            "reply",
            "What's it? You're told what they'd say: don't ask.",
        ),
    ]);
    // "what's", "can you", "I'd" and "don't" find nothing of their own beside `weather`.
    let query = "What's the weather? Can you, or I'd wait, don't";
    let (total, keys) = search(&index, query, None, 0, 10);
    assert_eq!((total, keys), (1, vec!["weather__get_weather".to_owned()]));
    // Alone, they still find by themselves.
    assert_eq!(search(&index, "you're", None, 0, 10).1, ["chat__reply"]);
}

#[test]
fn function_words_order_the_documents_found_by_content_words() {
    let mut index = SearchIndex::new();
    let mut records: Vec<Record> = (0..300)
        .map(|i| record("g", &format!("filler_{i:03}"), "for the record"))
        .collect();
    records.push(record("g", "a_report", "Report of a city"));
    records.push(record("g", "b_report", "Report for a city"));
    records.push(record("g", "c_report", "Report for the city"));
    index.upsert(records);
    // `for` and `the` rank the matches of `report` and `city`; the fillers, which match
    // only function words, are not found.
    let (total, keys) = search(&index, "report for the city", None, 0, 10);
    assert_eq!(total, 3);
    assert_eq!(keys, ["g__c_report", "g__b_report", "g__a_report"]);
    // A filtered or offset window sees the same order.
    assert_eq!(
        search(&index, "report for the city", None, 1, 1).1,
        ["g__b_report"]
    );
    index.remove(["g__c_report"]);
    assert_eq!(
        search(&index, "report for the city", Some(&["g"]), 0, 10),
        (2, vec!["g__b_report".to_owned(), "g__a_report".to_owned()])
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
fn synonyms_find_the_other_word_and_the_own_word_ranks_first() {
    let mut index = SearchIndex::new();
    index.upsert([
        record("notes", "delete_note", "Delete a note by its id"),
        record("notes", "remove_tag", "Remove a tag from a note"),
        record("notes", "read_note", "Read a note"),
    ]);
    // `remove` finds `delete_note` through its synonym, `remove_tag` by the word itself.
    let (total, keys) = search(&index, "remove note", None, 0, 10);
    assert_eq!(total, 3);
    assert_eq!(keys[0], "notes__remove_tag");
    assert_eq!(search(&index, "erase", None, 0, 10).0, 2);
    // Without a synonym the word matches only itself.
    assert_eq!(search(&index, "tag", None, 0, 10).1, ["notes__remove_tag"]);
}

#[test]
fn two_query_words_find_their_compound() {
    let mut index = SearchIndex::new();
    index.upsert([
        record("fs", "read", "Read a file from the filesystem"),
        record(
            "os",
            "system_info",
            "Information about the operating system",
        ),
    ]);
    // `file system` finds the tool whose text says `filesystem`, as matching both words.
    assert_eq!(
        search(&index, "file system read", None, 0, 1).1,
        ["fs__read"]
    );
    let explained = index.explain("file system", None, "fs__read").unwrap();
    assert!(
        explained
            .matches
            .iter()
            .any(|m| m.token == "system" && m.via_stem),
        "{explained:?}"
    );
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
