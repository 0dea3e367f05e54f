//! Property tests of the core: search pages cover the ranking exactly once, each page
//! within its byte budget, and rankings are deterministic whatever the history of the index.
//!
//! This is a cargo integration test (the Python tests beside it are ignored by cargo, and pytest ignores
//! this file). The fuzz targets in `fuzz/` check the same properties on arbitrary bytes.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use toolproxy_core::index::{ParameterText, Record, SearchIndex};
use toolproxy_core::names::canonical_name;
use toolproxy_core::page::{page_size, plan_page};

const WORDS: [&str; 12] = [
    "customer", "invoice", "refund", "email", "name", "list", "get", "update", "delete", "report",
    "東京", "café",
];
const GROUPS: [&str; 3] = ["crm", "billing", "ops"];

fn record(group: usize, tool: &[usize], description: &[usize], serial: usize) -> Record {
    let tool_name = tool.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join("_");
    let tool_name = format!("{tool_name}_{serial}");
    let group = GROUPS[group].to_owned();
    Record {
        key: canonical_name(&group, &tool_name),
        group,
        tool: tool_name,
        description: description
            .iter()
            .map(|&w| WORDS[w])
            .collect::<Vec<_>>()
            .join(" "),
        parameter_text: ParameterText {
            names: vec![WORDS[description.first().copied().unwrap_or(0)].to_owned()],
            texts: Vec::new(),
        },
    }
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec(
        (
            0..GROUPS.len(),
            prop::collection::vec(0..WORDS.len(), 1..3),
            prop::collection::vec(0..WORDS.len(), 0..6),
        ),
        0..60,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(serial, (group, tool, description))| record(group, &tool, &description, serial))
            .collect()
    })
}

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(0..WORDS.len() + 1, 0..3).prop_map(|words| {
        words
            .into_iter()
            .map(|w| WORDS.get(w).copied().unwrap_or("zzz"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// Pages through `query` the way the search control does (`search` with `offset`/`limit`, then
/// `plan_page` on the entries' sizes), skipping an entry that cannot fit alone (a plan of no
/// entries while entries were given) as the control's message advises. Returns the keys in page order, asserting every page is within `budget`.
fn paginate(
    index: &SearchIndex,
    query: &str,
    groups: Option<&[&str]>,
    limit: usize,
    budget: i64,
    size_of: &dyn Fn(&str) -> i64,
) -> Vec<Arc<str>> {
    let mut seen = Vec::new();
    let mut offset = 0usize;
    loop {
        let (total, keys) = index.search(query, groups, offset, limit);
        let sizes: Vec<i64> = keys.iter().map(|k| size_of(k)).collect();
        let plan = plan_page(&sizes, total as i64, offset as i64, budget).expect("a valid window");
        if plan.count == 0 && !keys.is_empty() {
            // The first entry cannot fit alone: the plan gives the page it would need, and the
            // control's failure advises searching on from offset + 1.
            let next = (offset + 1 < total).then_some(offset as u64 + 1);
            let alone = page_size(size_of(&keys[0]) as u64, 1, total as u64, next);
            assert_eq!(plan.size, alone);
            assert!(
                alone > budget as u64,
                "an entry that fits alone ({alone} bytes) was refused"
            );
            seen.push(keys[0].clone());
            offset += 1;
            continue;
        }
        assert!(
            plan.count == 0 || plan.size <= budget as u64,
            "page of {} bytes over {budget}",
            plan.size
        );
        assert!(
            plan.count > 0 || keys.is_empty(),
            "an empty page while results remain"
        );
        seen.extend(keys.into_iter().take(plan.count));
        match plan.next_offset {
            Some(next) => offset = next as usize,
            None => return seen,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn pages_cover_the_ranking_exactly_once_within_budget(
        records in records(),
        query in query(),
        group_filter in prop::option::of(prop::collection::btree_set(0..GROUPS.len(), 1..3)),
        limit in 1usize..12,
        budget in 1024i64..6000,
        size_seed in any::<u64>(),
    ) {
        let mut index = SearchIndex::new();
        index.upsert(records.clone());
        let groups: Option<Vec<&str>> = group_filter.map(|g| g.into_iter().map(|i| GROUPS[i]).collect());
        let (total, full) = index.search(&query, groups.as_deref(), 0, usize::MAX);
        prop_assert_eq!(total, full.len());
        // Entry sizes between 40 bytes and ~2x the budget, a deterministic function of the key.
        let size_of = |key: &str| -> i64 {
            let mut h = size_seed ^ 0x9e37_79b9_7f4a_7c15;
            for b in key.bytes() { h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3); }
            40 + (h % (2 * budget as u64)) as i64
        };
        let paged = paginate(&index, &query, groups.as_deref(), limit, budget, &size_of);
        prop_assert_eq!(&paged, &full, "pages do not reproduce the ranking in order");
        let unique: BTreeSet<&str> = paged.iter().map(|k| &**k).collect();
        prop_assert_eq!(unique.len(), paged.len());
    }

    #[test]
    fn ranking_is_independent_of_insertion_order_and_history(
        records in records(),
        extra in records(),
        query in query(),
        rotate in 0usize..60,
    ) {
        let mut first = SearchIndex::new();
        first.upsert(records.clone());

        // Another history: rotated insertion order, interleaved with records that are added, changed and
        // removed again (forcing dead documents and compaction), and a re-upsert of everything.
        let mut second = SearchIndex::new();
        let mut rotated = records.clone();
        if !rotated.is_empty() {
            let by = rotate % rotated.len();
            rotated.rotate_left(by);
        }
        let extra: Vec<Record> = extra
            .into_iter()
            .map(|mut r| { r.key = format!("extra::{}", r.key); r })
            .collect();
        second.upsert(extra.clone());
        for chunk in rotated.chunks(7) {
            second.upsert(chunk.to_vec());
            second.remove(extra.iter().take(3).map(|r| r.key.clone()));
        }
        let mut changed = extra.clone();
        for r in &mut changed { r.description.push_str(" changed"); }
        second.upsert(changed);
        second.remove(extra.iter().map(|r| r.key.clone()));
        second.upsert(records.iter().rev().cloned());
        // Compaction happens inside `upsert`/`remove` (more than a quarter dead), and directly here too.
        second.compact();

        for groups in [None, Some(vec!["crm"]), Some(vec!["billing", "ops"])] {
            let a = first.search(&query, groups.as_deref(), 0, usize::MAX);
            let b = second.search(&query, groups.as_deref(), 0, usize::MAX);
            prop_assert_eq!(a, b, "history changed the ranking of {:?}", query);
        }
    }
}
