//! Timings and memory of the index at 100,000 tools (`cargo test --release --lib -- --ignored
//! --nocapture bench`); `build_phases`, `build_memory` and `first_search` read records exported
//! from the benchmark corpus (`TOOLPROXY_RECORDS`, see `records_from`).

use super::*;
use std::time::{Duration, Instant};

/// Deterministic pseudo-random words for a synthetic corpus.
fn corpus(count: usize) -> Vec<Record> {
    let verbs = [
        "get", "list", "create", "update", "delete", "search", "merge", "sync",
    ];
    let nouns: Vec<String> = (0..3000).map(|i| format!("noun{i}")).collect();
    let mut next = super::tests::xorshift(0x2545_f491_4f6c_dd1d);
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

/// The values of the environment variables `names` (a benchmark's inputs), or None when one is
/// unset or not Unicode (the benchmark then does nothing).
pub(super) fn env_vars<const N: usize>(names: [&str; N]) -> Option<[String; N]> {
    let values: Vec<String> = names
        .iter()
        .map(|name| std::env::var(name).ok())
        .collect::<Option<_>>()?;
    values.try_into().ok()
}

/// The whole number in the environment variable `name`, or `default` when it is unset or not one.
pub(super) fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0..=1, nearest rank) of the ascending `sorted` (not empty).
pub(super) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Records from a file of tab-separated `key group tool description names texts` lines (names and
/// texts separated by U+001F), e.g. the benchmark corpus exported from Python.
pub(super) fn records_from(path: &str) -> Vec<Record> {
    let text = std::fs::read_to_string(path).expect("records file");
    let split = |field: &str| -> Vec<String> {
        field
            .split('\u{1f}')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            Record {
                key: fields[0].to_owned(),
                group: fields[1].to_owned(),
                tool: fields[2].to_owned(),
                description: fields[3].to_owned(),
                parameter_text: ParameterText {
                    names: split(fields[4]),
                    texts: split(fields[5]),
                },
            }
        })
        .collect()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    fn malloc_trim(pad: usize) -> i32;
}

/// Resident memory after returning freed memory to the system, in bytes (Linux, glibc).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn settled_rss() -> usize {
    // SAFETY: glibc's `malloc_trim` has no preconditions.
    unsafe { malloc_trim(0) };
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[ignore = "memory; TOOLPROXY_RECORDS=file, run with --release --ignored --nocapture"]
fn build_memory() {
    let Ok(path) = std::env::var("TOOLPROXY_RECORDS") else {
        return;
    };
    let before = settled_rss();
    let records = records_from(&path);
    let count = records.len();
    let mut index = SearchIndex::new();
    index.upsert(records);
    let after = settled_rss();
    std::hint::black_box(&index);
    println!(
        "{count} records: RSS {} B per record after the build",
        (after - before) / count
    );
}

#[test]
#[ignore = "timing; TOOLPROXY_RECORDS=file, run with --release --ignored --nocapture"]
fn build_phases() {
    let Ok(path) = std::env::var("TOOLPROXY_RECORDS") else {
        return;
    };
    let records = records_from(&path);
    let rounds = env_number("ROUNDS", 5);
    let mut builds = Vec::new();
    let mut tokenizes = Vec::new();
    let mut inserts = Vec::new();
    for _ in 0..rounds {
        let copy = records.clone();
        let held: Vec<_> = copy.iter().map(|r| (r.fingerprint(), false)).collect();
        let started = Instant::now();
        let tokens = super::record_tokens::tokenize_all(&copy, &held, 1);
        tokenizes.push(started.elapsed());
        let started = Instant::now();
        let mut index = SearchIndex::new();
        index.insert_batch(&copy, &tokens);
        inserts.push(started.elapsed());
        drop((tokens, index, copy));
        let copy = records.clone();
        let started = Instant::now();
        let mut index = SearchIndex::new();
        index.upsert(copy);
        builds.push(started.elapsed());
        std::hint::black_box(&index);
    }
    tokenizes.sort();
    inserts.sort();
    builds.sort();
    println!(
        "{} records: tokenize (1 thread) median {:?}, insert (1 thread, tokenized before) median \
         {:?}, build median {:?} (all {builds:?})",
        records.len(),
        tokenizes[rounds / 2],
        inserts[rounds / 2],
        builds[rounds / 2]
    );
}

/// The first search of a thread (its accumulators not yet allocated) over the records of
/// `TOOLPROXY_RECORDS`, each of the queries of `TOOLPROXY_QUERIES` (one a line) on a new thread;
/// then each query on a warm thread (mean of 5), with the slowest queries named; then each once
/// with cold CPU caches; then checks that pruning leaves every query's window as scoring every
/// match gives it.
#[test]
#[ignore = "timing; TOOLPROXY_RECORDS=file TOOLPROXY_QUERIES=file, run with --release --ignored --nocapture"]
fn first_search() {
    let Some([records, queries]) = env_vars(["TOOLPROXY_RECORDS", "TOOLPROXY_QUERIES"]) else {
        return;
    };
    let mut index = SearchIndex::new();
    index.upsert(records_from(&records));
    let queries = std::fs::read_to_string(queries).expect("queries file");
    let index = &index;
    let time = |query: &str| {
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let started = Instant::now();
                    std::hint::black_box(index.search(query, None, 0, 5));
                    started.elapsed()
                })
                .join()
                .unwrap()
        })
    };
    let mut first: Vec<_> = queries.lines().map(time).collect();
    first.sort();
    let mut by_query: Vec<_> = queries
        .lines()
        .map(|query| {
            let started = Instant::now();
            for _ in 0..5 {
                std::hint::black_box(index.search(query, None, 0, 5));
            }
            (started.elapsed() / 5, query)
        })
        .collect();
    by_query.sort();
    let later: Vec<_> = by_query.iter().map(|(elapsed, _)| *elapsed).collect();
    for (elapsed, query) in by_query.iter().rev().take(8) {
        println!("slowest: {elapsed:?} {query:?}");
    }
    // Each query once more after writing a buffer larger than the CPU caches, as a step's first
    // search runs after the step's preparation walked every tool.
    let mut sweep = vec![0u8; 64 << 20];
    let mut cold: Vec<_> = queries
        .lines()
        .enumerate()
        .map(|(round, query)| {
            sweep
                .iter_mut()
                .step_by(64)
                .for_each(|byte| *byte = round as u8);
            std::hint::black_box(&sweep);
            let started = Instant::now();
            std::hint::black_box(index.search(query, None, 0, 5));
            started.elapsed()
        })
        .collect();
    cold.sort();
    println!(
        "cold caches: median {:?} p95 {:?}",
        percentile(&cold, 0.5),
        percentile(&cold, 0.95)
    );
    for query in queries.lines() {
        assert_eq!(
            index.search_pruned(query, None, 0, 5, true),
            index.search_pruned(query, None, 0, 5, false),
            "pruning changed the window of {query:?}"
        );
    }
    println!(
        "{} queries: first search on a thread median {:?} p95 {:?}; later median {:?} p95 {:?}",
        first.len(),
        percentile(&first, 0.5),
        percentile(&first, 0.95),
        percentile(&later, 0.5),
        percentile(&later, 0.95)
    );
}
