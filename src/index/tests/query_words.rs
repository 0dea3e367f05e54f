//! How the words of a query are read, seen in rankings: stems, function words, numbers,
//! compounds, synonyms, full-width and dashed names; a submodule of the index tests
//! (`tests/index.rs`), whose helpers it uses.

use super::*;

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
