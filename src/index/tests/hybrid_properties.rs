//! The hybrid ranking against its definition on larger corpora (where the keyword search prunes,
//! above the prefilter's pool) and on randomized ones (pages, history); a submodule of the
//! hybrid tests (`tests/hybrid.rs`), whose `hybrid`, `reference` and `bytes` it uses.

use super::super::super::tests::{skewed_index, xorshift};
use super::super::super::Record;
use super::*;
use proptest::prelude::*;

#[test]
fn pruned_pages_equal_the_ranking_by_definition_on_larger_corpora() {
    // Skewed corpora where the keyword search prunes, with bag-of-words vectors, so the
    // nearest documents are often the best keyword matches too (the vector candidates then
    // take places among the keyword top that the window must not lose).
    let words = [
        "get", "list", "lists", "data", "user", "users", "file", "files", "search", "weather",
        "city", "report", "create", "update", "delete", "the", "for", "of", "a", "stock", "price",
        "flight", "hotel", "event", "email",
    ];
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15_u64);
    let word = |next: &mut dyn FnMut(usize) -> usize| skewed_index(next, words.len());
    let dimensions = 12;
    let embed = |ids: &[usize]| {
        let mut vector = vec![0.0f32; dimensions];
        for &id in ids {
            vector[id % dimensions] += 1.0;
        }
        vector
    };
    for round in 0..3 {
        let mut index = SearchIndex::new();
        let docs = 800 + round * 900;
        let mut keys = Vec::new();
        let mut rows = Vec::new();
        let records: Vec<Record> = (0..docs)
            .map(|doc| {
                let name: Vec<usize> = (0..=next(2)).map(|_| word(&mut next)).collect();
                let description: Vec<usize> = (0..2 + next(8)).map(|_| word(&mut next)).collect();
                let text = |ids: &[usize]| {
                    ids.iter()
                        .map(|&id| words[id])
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let record = record(
                    &format!("g{}", next(3)),
                    &format!("{}_{doc}", text(&name).replace(' ', "_")),
                    &text(&description),
                );
                if next(10) > 0 {
                    keys.push(record.key.clone());
                    rows.extend(embed(&[name, description].concat()));
                }
                record
            })
            .collect();
        index.upsert(records);
        index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
        index.remove(keys.iter().step_by(11 + round));
        for query_number in 0..60 {
            let ids: Vec<usize> = (0..=next(5)).map(|_| word(&mut next)).collect();
            let query = ids
                .iter()
                .map(|&id| words[id])
                .collect::<Vec<_>>()
                .join(" ");
            let vector = embed(&ids);
            let groups: Option<Vec<&str>> = (query_number % 3 == 0).then(|| vec!["g0", "g2"]);
            let groups = groups.as_deref();
            for weight in [0.3, 0.7] {
                let (total, expected) = reference(&index, &query, &vector, groups, weight);
                for (offset, limit) in [(0, 1), (0, 10), (5, 5), (20, 10), (45, 10)] {
                    let slice: Vec<String> =
                        expected.iter().skip(offset).take(limit).cloned().collect();
                    assert_eq!(
                        hybrid(
                            &index,
                            &query,
                            Some(&vector),
                            groups,
                            (offset, limit),
                            weight
                        ),
                        (total, slice),
                        "query {query:?}, groups {groups:?}, window {offset}+{limit}"
                    );
                }
            }
        }
    }
}

#[test]
fn pages_stay_consistent_above_the_prefilter_pool() {
    // More vectors than the prefilter keeps (`vectors::PREFILTER_POOL`): the nearest come from
    // the sign-plane pool, and every window is still a slice of one ranking with one total.
    let words = [
        "get", "list", "data", "user", "file", "search", "weather", "city", "report",
    ];
    let dimensions = 24;
    let docs = super::super::super::vectors::PREFILTER_POOL + 1500;
    let mut next = xorshift(0x2545_f491_4f6c_dd1d_u64);
    let mut keys = Vec::new();
    let mut rows = Vec::new();
    let records: Vec<Record> = (0..docs)
        .map(|doc| {
            let a = words[next(words.len())];
            let b = words[next(words.len())];
            let record = record(
                &format!("g{}", doc % 3),
                &format!("{a}_{doc}"),
                &format!("{a} {b}"),
            );
            keys.push(record.key.clone());
            rows.extend((0..dimensions).map(|_| next(2001) as f32 / 1000.0 - 1.0));
            record
        })
        .collect();
    let mut index = SearchIndex::new();
    index.upsert(records);
    index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
    for query_number in 0..12 {
        let query = format!("{} {}", words[next(words.len())], words[next(words.len())]);
        let vector: Vec<f32> = (0..dimensions)
            .map(|_| next(2001) as f32 / 1000.0 - 1.0)
            .collect();
        let groups: Option<Vec<&str>> = (query_number % 2 == 0).then(|| vec!["g1"]);
        let groups = groups.as_deref();
        let (total, whole) = hybrid(&index, &query, Some(&vector), groups, (0, 100_000), 0.5);
        assert_eq!(whole.len(), total);
        for (offset, limit) in [(0, 10), (10, 10), (40, 25), (total.saturating_sub(3), 10)] {
            let page = hybrid(&index, &query, Some(&vector), groups, (offset, limit), 0.5);
            let slice: Vec<String> = whole.iter().skip(offset).take(limit).cloned().collect();
            assert_eq!(
                page,
                (total, slice),
                "{query:?} {groups:?} {offset}+{limit}"
            );
        }
    }
}

fn corpus() -> impl Strategy<Value = (Vec<Record>, Vec<Option<[i8; 4]>>, Vec<usize>)> {
    let words = [
        "get", "list", "file", "weather", "the", "for", "user", "report",
    ];
    let groups = ["a", "b", "c"];
    prop::collection::vec(
        (
            0..groups.len(),
            prop::collection::vec(0..words.len(), 1..3),
            prop::collection::vec(0..words.len(), 0..5),
            prop::option::weighted(0.8, prop::array::uniform4(-2i8..=2)),
            0..4usize,
        ),
        0..130,
    )
    .prop_map(move |raw| {
        let mut records = Vec::new();
        let mut vectors = Vec::new();
        let mut removed = Vec::new();
        for (at, (group, name, description, vector, fate)) in raw.into_iter().enumerate() {
            let name: Vec<&str> = name.iter().map(|&w| words[w]).collect();
            let description: Vec<&str> = description.iter().map(|&w| words[w]).collect();
            records.push(record(
                groups[group],
                &format!("{}_{}", name.join("_"), at),
                &description.join(" "),
            ));
            vectors.push(vector);
            if fate == 0 {
                removed.push(at);
            }
        }
        (records, vectors, removed)
    })
}

fn build(
    records: &[Record],
    vectors: &[Option<[i8; 4]>],
    removed: &[usize],
    reverse: bool,
) -> SearchIndex {
    let mut index = SearchIndex::new();
    let mut order: Vec<usize> = (0..records.len()).collect();
    if reverse {
        order.reverse();
    }
    index.upsert(order.iter().map(|&at| records[at].clone()));
    for &at in &order {
        if let Some(vector) = vectors[at] {
            let row: Vec<f32> = vector.iter().map(|&x| f32::from(x)).collect();
            index
                .set_vectors(&[&records[at].key], &bytes(&row), 4)
                .unwrap();
        }
    }
    index.remove(removed.iter().map(|&at| &records[at].key));
    index
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn pages_are_the_ranking_by_definition(
        (records, vectors, removed) in corpus(),
        query in prop::sample::select(vec![
            "", "get file", "weather report for the user", "the", "list_3", "a__get_7", "zzz", "file file",
        ]),
        query_vector in prop::array::uniform4(-2i8..=2),
        weight in prop::sample::select(vec![0.0f64, 0.25, 0.4, 0.5, 1.0]),
        groups in prop::option::of(prop::sample::subsequence(vec!["a", "b", "c"], 0..3)),
        windows in prop::collection::vec((0usize..80, 0usize..30), 1..6),
    ) {
        let index = build(&records, &vectors, &removed, false);
        let vector: Vec<f32> = query_vector.iter().map(|&x| f32::from(x)).collect();
        let groups = groups.as_deref();
        let (total, expected) = reference(&index, query, &vector, groups, weight);
        // Every window is the slice of the ranking, with the same total.
        for (offset, limit) in windows.into_iter().chain([(0, usize::MAX), (0, 0)]) {
            let page = hybrid(&index, query, Some(&vector), groups, (offset, limit), weight);
            let slice: Vec<String> = expected.iter().skip(offset).take(limit).cloned().collect();
            prop_assert_eq!(page, (total, slice), "window {}+{}", offset, limit);
        }
        // Pages of 7 cover the ranking exactly once.
        let mut pages = Vec::new();
        let mut offset = 0;
        while offset < total {
            let (page_total, page) = hybrid(&index, query, Some(&vector), groups, (offset, 7), weight);
            prop_assert_eq!(page_total, total);
            pages.extend(page);
            offset += 7;
        }
        prop_assert_eq!(&pages, &expected);
        // Exact names first; the group filter restricts both signals.
        let exact = index.exact_matches(query, index.allowed_groups(groups).as_deref());
        let exact_keys: Vec<&str> = exact.iter().map(|&d| index.docs[d as usize].name.key()).collect();
        prop_assert!(expected.iter().take(exact.len()).all(|key| exact_keys.contains(&key.as_str())));
        if let Some(groups) = groups {
            let in_groups = expected.iter().all(|key| groups.iter().any(|g| key.starts_with(&format!("{g}__"))));
            prop_assert!(in_groups);
        }
        // Without a vector (or weight 0): the keyword search, exactly.
        for (offset, limit) in [(0, 10), (3, 5), (0, usize::MAX)] {
            let keyword = search(&index, query, groups, offset, limit);
            prop_assert_eq!(&hybrid(&index, query, None, groups, (offset, limit), weight), &keyword);
            prop_assert_eq!(&hybrid(&index, query, Some(&vector), groups, (offset, limit), 0.0), &keyword);
        }
        // Explanations agree with the ranking's order.
        let bytes_vector = bytes(&vector);
        let fused: Vec<(bool, f32)> = expected
            .iter()
            .map(|key| {
                let e = index.explain_hybrid(query, Some(&bytes_vector), groups, key, weight).unwrap().unwrap();
                (e.exact, e.fused)
            })
            .collect();
        for pair in fused.windows(2) {
            prop_assert!((pair[0].0 && !pair[1].0) || (pair[0].0 == pair[1].0 && pair[0].1 >= pair[1].1), "{:?}", pair);
        }
    }

    #[test]
    fn rankings_do_not_depend_on_history(
        (records, vectors, removed) in corpus(),
        query in prop::sample::select(vec!["get file", "weather report for the user", "zzz", "list"]),
        query_vector in prop::array::uniform4(-2i8..=2),
        weight in prop::sample::select(vec![0.3f64, 0.5, 1.0]),
    ) {
        let vector: Vec<f32> = query_vector.iter().map(|&x| f32::from(x)).collect();
        let forward = build(&records, &vectors, &removed, false);
        let backward = build(&records, &vectors, &removed, true);
        // A fresh index of the surviving records only (no removal, no compaction).
        let kept: Vec<usize> = (0..records.len()).filter(|at| !removed.contains(at)).collect();
        let fresh = build(
            &kept.iter().map(|&at| records[at].clone()).collect::<Vec<_>>(),
            &kept.iter().map(|&at| vectors[at]).collect::<Vec<_>>(),
            &[],
            false,
        );
        prop_assert_eq!(forward.vector_count(), fresh.vector_count());
        let expected = hybrid(&fresh, query, Some(&vector), None, (0, usize::MAX), weight);
        prop_assert_eq!(&hybrid(&forward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
        prop_assert_eq!(&hybrid(&backward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
        prop_assert_eq!(&hybrid(&forward, query, Some(&vector), None, (0, usize::MAX), weight), &expected);
    }
}
