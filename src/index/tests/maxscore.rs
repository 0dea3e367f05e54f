//! The pruning of the `MaxScore` execution never changes a ranking.

use super::super::tests::{record, skewed_index, xorshift};
use super::super::{Record, SearchIndex};

#[test]
fn pruning_never_changes_the_window() {
    // Skewed random corpora (a few very common words, stem variants, function words, several
    // groups, dead documents): every window of every query must equal the unpruned ranking.
    let words = [
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
        "restaurants",
        "weather",
        "city",
        "report",
        "reports",
        "create",
        "update",
        "delete",
        "order",
        "the",
        "for",
        "of",
        "a",
        "to",
        "with",
        "stock",
        "price",
        "prices",
        "flight",
        "hotel",
        "calendar",
        "event",
        "events",
        "email",
        "message",
        "account",
    ];
    let mut next = xorshift(0x2545_f491_4f6c_dd1d_u64);
    // Word `i` drawn with probability about proportional to 1 / (i + 1).
    let word = |next: &mut dyn FnMut(usize) -> usize| words[skewed_index(next, words.len())];
    let (mut cuts, mut thresholds, mut drops) = (0, 0, 0);
    for round in 0..4 {
        let mut index = SearchIndex::new();
        let docs = 600 + round * 700;
        let records: Vec<Record> = (0..docs)
            .map(|doc| {
                let name: Vec<&str> = (0..=next(3)).map(|_| word(&mut next)).collect();
                let description: Vec<&str> = (0..2 + next(10)).map(|_| word(&mut next)).collect();
                let mut record = record(
                    &format!("g{}", next(4)),
                    &format!("{}_{doc}", name.join("_")),
                    &description.join(" "),
                );
                record.parameter_text.names = vec![word(&mut next).to_owned()];
                record
            })
            .collect();
        let keys: Vec<String> = records.iter().map(|r| r.key.clone()).collect();
        index.upsert(records);
        index.remove(keys.iter().step_by(9 + round));
        if round >= 2 {
            // Group descriptions (a field of every member): g3 has none.
            for group in ["g0", "g1", "g2"] {
                let text: Vec<&str> = (0..=next(6)).map(|_| word(&mut next)).collect();
                index.set_group_description(group, &text.join(" "));
            }
        }
        for query_number in 0..150 {
            let length = 1 + next(8);
            let mut query: Vec<&str> = (0..length).map(|_| word(&mut next)).collect();
            if query_number % 5 == 0 {
                query.push(&keys[next(keys.len())]); // sometimes an exact name too
            }
            let query = query.join(" ");
            let groups: Option<Vec<&str>> = (query_number % 3 == 0).then(|| vec!["g1", "g2"]);
            for (offset, limit) in [(0, 1), (0, 5), (0, 10), (3, 4), (10, 10), (2, usize::MAX)] {
                let pruned = index.search_pruned(&query, groups.as_deref(), offset, limit, true);
                let full = index.search_pruned(&query, groups.as_deref(), offset, limit, false);
                assert_eq!(
                    pruned, full,
                    "query {query:?}, groups {groups:?}, window {offset}+{limit}"
                );
            }
        }
        [cuts, thresholds, drops] = super::PRUNED.with(std::cell::Cell::get);
    }
    assert!(
        cuts > 50 && thresholds > 200 && drops > 20,
        "pruning rarely ran: {cuts} cuts, {thresholds} thresholds, {drops} drops"
    );
}
