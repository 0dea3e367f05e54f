//! Tests of the hybrid ranking against its definition ([`super::super::fusion`]).

use super::super::fusion::*;
use super::super::tests::{record, search};
use super::*;

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

type Ranking = (usize, Vec<String>);

fn hybrid(
    index: &SearchIndex,
    query: &str,
    vector: Option<&[f32]>,
    groups: Option<&[&str]>,
    window: (usize, usize),
    weight: f64,
) -> Ranking {
    let vector = vector.map(bytes);
    let (total, keys) = index
        .search_hybrid(query, vector.as_deref(), groups, window.0, window.1, weight)
        .unwrap();
    (total, keys.iter().map(ToString::to_string).collect())
}

/// The whole hybrid ranking by definition: every selected document's unpruned keyword score
/// and its cosine, fused and sorted (no pool, no merge).
fn reference(
    index: &SearchIndex,
    query: &str,
    vector: &[f32],
    groups: Option<&[&str]>,
    weight: f64,
) -> Ranking {
    let weight = weight as f32;
    let mut prepared = index.prepare(query, groups);
    if weight == 0.0 || index.vector_count() == 0 || prepared.browse {
        return search(index, query, groups, 0, usize::MAX);
    }
    let (_, best) = prepared.score(usize::MAX, false);
    let allowed = prepared.allowed();
    let query_vector = Vectors::query(vector);
    let selected = |doc: u32| {
        index.alive[doc as usize]
            && allowed.is_none_or(|a| a[index.doc_group[doc as usize] as usize])
    };
    let mut cosines: Vec<(u32, f32)> = (0..index.docs.len() as u32)
        .filter(|&doc| selected(doc))
        .filter_map(|doc| Some((doc, index.vectors.cosine(&query_vector, doc)?)))
        .collect();
    let mut sorted: Vec<f32> = cosines.iter().map(|c| c.1).collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let scale = match sorted.len() {
        0 => (0.0, 0.0),
        n => (sorted[0], sorted[n.min(NEAREST_POOL) - 1]),
    };
    let keyword: std::collections::HashMap<u32, ScoredDoc> =
        best.iter().map(|s| (s.doc, *s)).collect();
    let evidence = index.evidence(&prepared, best_keyword(best.iter()));
    let best = best.iter().fold(0.0f32, |b, s| b.max(s.score));
    let mut ranked: Vec<HybridDoc> = Vec::new();
    cosines.sort_unstable_by_key(|c| c.0);
    for doc in (0..index.docs.len() as u32).filter(|&doc| selected(doc)) {
        let sem = cosines
            .binary_search_by_key(&doc, |c| c.0)
            .map_or(0.0, |at| semantic(cosines[at].1, scale));
        let found = keyword.get(&doc);
        if found.is_none() && sem <= 0.0 {
            continue;
        }
        let score = found.map_or(0.0, |s| s.score);
        ranked.push(HybridDoc {
            doc,
            exact: found.is_some_and(|s| s.exact),
            fused: fuse(score, best, evidence, sem, weight).2,
            keyword: score,
            ordinal: index.tie_break_ordinals[doc as usize],
        });
    }
    ranked.sort_by(fused_order);
    let keys = ranked
        .iter()
        .map(|r| index.docs[r.doc as usize].name.key().to_owned())
        .collect();
    (ranked.len(), keys)
}

fn weather_index() -> SearchIndex {
    let mut index = SearchIndex::new();
    index.upsert([
        record("meteo", "get_forecast", "Weather forecast for a city."),
        record("meteo", "umbrella", "Nothing about keywords here."),
        record("fs", "read_file", "Read a file."),
        record("fs", "write_file", "Write a file."),
        record("mail", "send_email", "Send an email."),
    ]);
    let keys = [
        "meteo__get_forecast",
        "meteo__umbrella",
        "fs__read_file",
        "fs__write_file",
        "mail__send_email",
    ];
    let rows: Vec<f32> = [
        [0.9, 0.1, 0.0],
        [1.0, 0.0, 0.1],
        [0.0, 1.0, 0.0],
        [0.1, 0.9, 0.2],
        [0.0, 0.0, 1.0],
    ]
    .concat();
    index.set_vectors(&keys, &bytes(&rows), 3).unwrap();
    index
}

#[test]
fn a_vector_finds_what_keywords_miss_and_exact_names_stay_first() {
    let index = weather_index();
    let rain = [1.0, 0.0, 0.05];
    // `bring an umbrella?` matches `umbrella` by name; `rain tomorrow` matches nothing.
    let (total, keys) = hybrid(&index, "rain tomorrow", Some(&rain), None, (0, 10), 0.4);
    assert_eq!(keys[..2], ["meteo__umbrella", "meteo__get_forecast"]);
    // Five vectors: cF is the smallest cosine, so four documents are closer.
    assert_eq!(total, 4);
    assert_eq!(search(&index, "rain tomorrow", None, 0, 10).0, 0);
    // An exact name ranks first whatever the vector.
    let away = [0.0, 0.0, 1.0];
    let (_, keys) = hybrid(&index, "read_file", Some(&away), None, (0, 10), 0.9);
    assert_eq!(keys[0], "fs__read_file");
    // Both signals: the keyword match and the nearest vector.
    let (_, keys) = hybrid(&index, "write", Some(&rain), None, (0, 2), 0.5);
    // `write_file`: 0.5 for its keywords and a little for its vector; `umbrella`: 0.5 for its
    // vector alone.
    assert_eq!(keys, ["fs__write_file", "meteo__umbrella"]);
    let explained = index
        .explain_hybrid("write", Some(&bytes(&rain)), None, "fs__write_file", 0.5)
        .unwrap()
        .unwrap();
    assert!(
        (explained.keyword_share - 0.5).abs() < 1e-6,
        "{explained:?}"
    );
    assert!(explained.cosine.unwrap() < 0.2 && explained.semantic_share > 0.0);
    assert!((explained.fused - explained.keyword_share - explained.semantic_share).abs() < 1e-6);
}

#[test]
fn a_match_on_function_words_alone_is_no_keyword_evidence() {
    // The docs' hybrid example beside six tools whose descriptions say "an": the query's only
    // keyword match is the function word `an`, which must not outrank the nearest vector.
    let mut index = SearchIndex::new();
    let tools = [
        ("weather", "get_forecast", "Weather forecast for a city."),
        ("mail", "send_email", "Send an email to a recipient."),
        ("calendar", "create_event", "Create an event in a calendar."),
        ("files", "open_archive", "Open an archive file."),
        (
            "billing",
            "issue_invoice",
            "Issue an invoice to a customer.",
        ),
        ("users", "add_user", "Add an account for a user."),
        ("tickets", "file_ticket", "File an issue in the tracker."),
    ];
    index.upsert(
        tools
            .iter()
            .map(|&(group, tool, text)| record(group, tool, text)),
    );
    let keys: Vec<String> = tools.iter().map(|&(g, t, _)| format!("{g}__{t}")).collect();
    // get_forecast is by far the nearest (0.74); the others lie at 0.2-0.45.
    let rows: Vec<f32> = [
        [0.74, 0.6726, 0.0],
        [0.45, 0.0, 0.893],
        [0.4, 0.1, 0.911],
        [0.35, 0.2, 0.915],
        [0.3, 0.3, 0.905],
        [0.25, 0.4, 0.882],
        [0.2, 0.5, 0.843],
    ]
    .concat();
    index.set_vectors(&keys, &bytes(&rows), 3).unwrap();
    let query = [1.0, 0.0, 0.0];
    let text = "should I bring an umbrella";
    assert_eq!(
        search(&index, text, None, 0, 10).0,
        6,
        "`an` matches the six"
    );
    let (_, page) = hybrid(&index, text, Some(&query), None, (0, 5), 0.35);
    assert_eq!(page[0], "weather__get_forecast", "{page:?}");
    // Only closeness orders them now: the cosine order, `an` only breaking ties.
    assert_eq!(&page[1..], &keys[1..5], "{page:?}");
    let explained = index
        .explain_hybrid(text, Some(&bytes(&query)), None, "mail__send_email", 0.35)
        .unwrap()
        .unwrap();
    assert_eq!((explained.evidence, explained.keyword_share), (0.0, 0.0));
    assert!(explained.keyword_score > 0.0);
    // A content word found is full evidence again: the keyword share as before this rule.
    let explained = index
        .explain_hybrid(
            "send an email",
            Some(&bytes(&query)),
            None,
            "mail__send_email",
            0.35,
        )
        .unwrap()
        .unwrap();
    assert!((explained.evidence - 1.0).abs() < f32::EPSILON);
    assert!(
        (explained.keyword_share - 0.65).abs() < 1e-6,
        "{explained:?}"
    );
}

#[test]
fn a_match_on_very_common_words_alone_is_partial_evidence() {
    // `list` is held by every tool (idf ~0.05), `weather` and `forecast` by one each: a best
    // match holding only `list` is a fraction of full evidence; holding a rare word, full.
    let mut index = SearchIndex::new();
    index.upsert((0..30).map(|i| record("g", &format!("list_{i}"), "list things")));
    index.upsert([record("w", "list_forecasts", "list weather forecasts")]);
    let keys: Vec<String> = (0..30)
        .map(|i| format!("g__list_{i}"))
        .chain(["w__list_forecasts".to_owned()])
        .collect();
    let rows: Vec<f32> = (0..31).flat_map(|i| [1.0, i as f32 / 10.0]).collect();
    index.set_vectors(&keys, &bytes(&rows), 2).unwrap();
    let vector = bytes(&[1.0, 0.0]);
    let evidence = |query: &str| {
        index
            .explain_hybrid(query, Some(&vector), None, "g__list_0", 0.35)
            .unwrap()
            .unwrap()
            .evidence
    };
    let common = evidence("list umbrellas");
    assert!(common > 0.0 && common < 0.1, "{common}");
    assert!((evidence("list weather") - 1.0).abs() < f32::EPSILON);
}

#[test]
fn without_a_vector_or_weight_it_is_the_keyword_search() {
    let index = weather_index();
    let rain = [1.0, 0.0, 0.05];
    for query in ["file", "weather city", "", "  ", "read_file", "zzz"] {
        for window in [(0, 10), (1, 2), (3, 100)] {
            let keyword = search(&index, query, None, window.0, window.1);
            assert_eq!(hybrid(&index, query, None, None, window, 0.4), keyword);
            assert_eq!(
                hybrid(&index, query, Some(&rain), None, window, 0.0),
                keyword
            );
        }
    }
    // Browsing stays browsing with a vector.
    assert_eq!(
        hybrid(&index, " ? ", Some(&rain), None, (0, 10), 0.4),
        search(&index, " ? ", None, 0, 10)
    );
}

#[test]
fn bad_inputs_are_errors() {
    let mut index = weather_index();
    let good = bytes(&[1.0, 0.0, 0.0]);
    for weight in [-0.1, 1.1, f64::NAN, f64::INFINITY, -1e-300] {
        assert!(index
            .search_hybrid("file", Some(&good), None, 0, 10, weight)
            .is_err());
        assert!(index
            .explain_hybrid("file", Some(&good), None, "fs__read_file", weight)
            .is_err());
    }
    for vector in [
        bytes(&[1.0, 0.0]),
        bytes(&[1.0, 0.0, f32::NAN]),
        vec![0u8; 5],
        Vec::new(),
    ] {
        let error = index
            .search_hybrid("file", Some(&vector), None, 0, 10, 0.5)
            .unwrap_err();
        assert!(
            ["query vector", "non-finite"]
                .iter()
                .any(|part| error.message().contains(part)),
            "{error}"
        );
    }
    let keys = ["fs__read_file"];
    assert!(index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 2).is_err());
    assert!(index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 3).is_err());
    assert!(index
        .set_vectors(&keys, &bytes(&[1.0, f32::NEG_INFINITY, 0.0]), 3)
        .is_err());
    assert!(index.set_vectors(&keys, &[], 0).is_err());
    assert_eq!(index.vector_dimensions(), Some(3));
    index.clear_vectors();
    assert_eq!((index.vector_count(), index.vector_dimensions()), (0, None));
    index.set_vectors(&keys, &bytes(&[1.0, 2.0]), 2).unwrap();
    assert_eq!(
        (index.vector_count(), index.vector_dimensions()),
        (1, Some(2))
    );
    // Without a dimensionality any query vector means keyword search.
    index.clear_vectors();
    assert_eq!(
        index
            .search_hybrid("file", Some(&good), None, 0, 10, 0.5)
            .unwrap()
            .0,
        2
    );
}

#[test]
fn vectors_follow_upserts_and_go_with_removal_and_compaction() {
    let mut index = weather_index();
    assert_eq!(index.vector_count(), 5);
    // A changed record keeps its vector; a removed one loses it, also when re-added.
    index.upsert([record("meteo", "umbrella", "Rain gear advice.")]);
    assert_eq!(index.vector_count(), 5);
    assert!(index.vector_keys_missing(&["meteo__umbrella"]).is_empty());
    index.remove(["meteo__umbrella"]);
    assert_eq!(index.vector_count(), 4);
    index.upsert([record("meteo", "umbrella", "Rain gear advice.")]);
    assert_eq!(
        index.vector_keys_missing(&["meteo__umbrella", "unknown", "fs__read_file"]),
        ["meteo__umbrella"]
    );
    index.drop_vectors(["fs__read_file", "unknown"]);
    assert_eq!(index.vector_count(), 3);
    // Compaction (more than a quarter dead) renumbers documents; vectors follow them.
    index.remove(["fs__write_file", "mail__send_email"]);
    assert_eq!(index.slots(), index.len());
    assert_eq!(index.vector_count(), 1);
    let (_, keys) = hybrid(&index, "zzz", Some(&[1.0, 0.0, 0.0]), None, (0, 10), 0.5);
    assert!(
        keys.is_empty(),
        "one vector has no semantic scale: {keys:?}"
    );
    index
        .set_vectors(&["meteo__umbrella"], &bytes(&[1.0, 0.0, 0.0]), 3)
        .unwrap();
    let (total, keys) = hybrid(&index, "zzz", Some(&[1.0, 0.0, 0.0]), None, (0, 10), 0.5);
    assert_eq!((total, keys), (1, vec!["meteo__umbrella".to_owned()]));
    assert_eq!(index.vectors.docs().len(), index.vector_count());
}

#[test]
fn explain_gives_the_ranking_share_to_a_document_the_prefilter_left_out() {
    // Above the prefilter's pool, a vector nearly equal to the query but with the other sign
    // on its small components has a sign plane farther than every filler's: the pool leaves
    // it out, and explain must not give it the semantic share the ranking did not.
    let fillers = super::super::vectors::PREFILTER_POOL + 100;
    let dimensions = 64;
    let mut index = SearchIndex::new();
    index.upsert((0..fillers).map(|i| record("g", &format!("t{i:05}"), "filler")));
    index.upsert([record("spike", "a", "nothing")]);
    let mut keys: Vec<String> = (0..fillers).map(|i| format!("g__t{i:05}")).collect();
    keys.push("spike__a".to_owned());
    // Fillers: a positive first component, the others' signs mixed (so the sign planes are
    // balanced and the prefilter runs), all small.
    let mut rows: Vec<f32> = (0..fillers * dimensions)
        .map(|i| {
            let magnitude = 0.01 + (i * 7919 % 1000) as f32 * 1e-5;
            let negative = i % dimensions != 0 && (i * 2_654_435_761) >> 7 & 1 == 1;
            if negative {
                -magnitude
            } else {
                magnitude
            }
        })
        .collect();
    rows.push(1.0);
    rows.extend(std::iter::repeat_n(-0.01f32, dimensions - 1));
    index.set_vectors(&keys, &bytes(&rows), dimensions).unwrap();
    assert!(index.vectors.signs_balanced());
    let mut query = vec![0.01f32; dimensions];
    query[0] = 1.0;
    let (total, ranked) = hybrid(&index, "zzz", Some(&query), None, (0, 100), 1.0);
    assert!(!ranked.contains(&"spike__a".to_owned()) && total > 0);
    let explained = index
        .explain_hybrid("zzz", Some(&bytes(&query)), None, "spike__a", 1.0)
        .unwrap()
        .unwrap();
    assert!(explained.cosine.unwrap() > 0.98);
    assert_eq!((explained.semantic_share, explained.fused), (0.0, 0.0));
    // The ranked ones are explained with the shares they were ranked by.
    let shares: Vec<f32> = ranked
        .iter()
        .map(|key| {
            let e = index
                .explain_hybrid("zzz", Some(&bytes(&query)), None, key, 1.0)
                .unwrap()
                .unwrap();
            assert!(e.semantic_share > 0.0, "{key}: {e:?}");
            e.fused
        })
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
}

#[test]
fn the_pool_bounds_the_semantic_candidates() {
    let mut index = SearchIndex::new();
    let count = 200;
    index.upsert((0..count).map(|i| record("g", &format!("t{i:03}"), "filler")));
    let keys: Vec<String> = (0..count).map(|i| format!("g__t{i:03}")).collect();
    let rows: Vec<f32> = (0..count)
        .flat_map(|i| {
            let angle = i as f32 / count as f32;
            [angle.cos(), angle.sin()]
        })
        .collect();
    index.set_vectors(&keys, &bytes(&rows), 2).unwrap();
    let (total, page) = hybrid(&index, "nothing", Some(&[1.0, 0.0]), None, (0, 100), 1.0);
    assert!((NEAREST_POOL - 5..NEAREST_POOL).contains(&total), "{total}");
    assert_eq!(page[0], "g__t000");
    // Keyword matches beyond the pool are ranked too.
    let (total, _) = hybrid(&index, "filler", Some(&[1.0, 0.0]), None, (0, 10), 0.5);
    assert_eq!(total, count);
}

#[path = "hybrid_properties.rs"]
mod properties;
