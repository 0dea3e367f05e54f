//! Timings of the index at 100,000 tools (`cargo test --release -- --ignored --nocapture bench`).

use super::*;
use std::time::Instant;

/// Deterministic pseudo-random words for a synthetic corpus.
fn corpus(count: usize) -> Vec<Record> {
    let verbs = [
        "get", "list", "create", "update", "delete", "search", "merge", "sync",
    ];
    let nouns: Vec<String> = (0..3000).map(|i| format!("noun{i}")).collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    (0..count)
        .map(|i| {
            let group = format!("group{}", i % 100);
            let tool = format!(
                "{}_{}_{}",
                verbs[next(verbs.len())],
                nouns[next(nouns.len())],
                i
            );
            let description = (0..20)
                .map(|_| nouns[next(nouns.len())].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let parameter_text = ParameterText {
                names: (0..4).map(|_| nouns[next(nouns.len())].clone()).collect(),
                texts: Vec::new(),
            };
            Record {
                key: crate::names::canonical_name(&group, &tool),
                group,
                tool,
                description,
                parameter_text,
            }
        })
        .collect()
}

#[test]
#[ignore = "timing; run with --release --ignored --nocapture"]
fn keyword_search_over_100k() {
    let records = corpus(100_000);
    let started = Instant::now();
    let mut index = SearchIndex::new();
    index.upsert(records);
    println!("build: {:?}", started.elapsed());
    for query in [
        "noun17 noun2500",
        "get noun42",
        "create",
        "update_noun7_7",
        "",
    ] {
        let started = Instant::now();
        let rounds = 200;
        let mut total = 0;
        for _ in 0..rounds {
            total = index.search(query, None, 0, 10).0;
        }
        println!(
            "{query:?}: total {total}, {:?} per search",
            started.elapsed() / rounds
        );
    }
    let started = Instant::now();
    index.remove((0..30_000).map(|i| format!("group{}__x{i}", i % 100)));
    let keys: Vec<Arc<str>> = index.keys().into_iter().take(30_000).collect();
    index.remove(keys.iter().map(|k| &**k));
    println!("remove 30k + compact: {:?}", started.elapsed());
}
