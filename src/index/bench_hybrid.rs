//! Timings, memory and recall of the hybrid ranking at 100,000 tools, on real embeddings:
//!
//! ```text
//! python -m bench.export_records /tmp/quality.tsv quality
//! TOOLPROXY_RECORDS=/tmp/quality.tsv TOOLPROXY_VECTORS=DIR \
//!     cargo test --release --lib hybrid_search_over_100k -- --ignored --nocapture
//! ```
//!
//! `DIR` holds `bfcl_tools.f32` (the 1,582 BFCL tools' all-MiniLM-L6-v2 vectors, in the records'
//! order), `bfcl_queries.f32` and `bfcl_queries.json` (the 2,501 questions' vectors and texts), as
//! `bench/export_vectors.py` writes them. The tools are replicated to `TOOLPROXY_TOOLS` (default
//! 100,000) as `bench/perf.py` does (`{tool}_r{k}`, same text); a replica's vector is a real
//! tool's vector moved a quarter of the way towards another real tool's (`normalize(a + b / 4)`,
//! the other tool chosen by a fixed sequence), so replicas are near their original but distinct,
//! and every vector stays in the region real embeddings occupy (no random vectors).

use super::bench::{env_number, env_vars, percentile, records_from};
use super::vectors::Vectors;
use super::*;
use std::time::{Duration, Instant};

/// Little-endian `f32` rows of `dimensions` from `path`.
fn rows(path: &std::path::Path, dimensions: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).expect("vector file");
    assert_eq!(bytes.len() % (4 * dimensions), 0, "{}", path.display());
    bytes
        .chunks_exact(4 * dimensions)
        .map(|row| {
            row.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect()
}

/// The strings of the JSON array `"name": [...]` in `json` (a small reader for the sidecars:
/// strings with the escapes JSON allows).
fn json_strings(json: &str, name: &str) -> Vec<String> {
    let start = json.find(&format!("\"{name}\": [")).expect("array") + name.len() + 5;
    let mut chars = json[start..].chars();
    let mut out = Vec::new();
    loop {
        match chars.next() {
            Some('"') => {
                let mut text = String::new();
                let mut pending_high: Option<u32> = None;
                loop {
                    match chars.next().expect("string end") {
                        '"' => break,
                        '\\' => match chars.next().expect("escape") {
                            'n' => text.push('\n'),
                            't' => text.push('\t'),
                            'r' => text.push('\r'),
                            'b' => text.push('\u{8}'),
                            'f' => text.push('\u{c}'),
                            'u' => {
                                let hex: String = chars.by_ref().take(4).collect();
                                let unit = u32::from_str_radix(&hex, 16).expect("hex");
                                if (0xD800..0xDC00).contains(&unit) {
                                    pending_high = Some(unit);
                                    continue;
                                }
                                let code = match pending_high.take() {
                                    Some(high) => {
                                        0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                                    }
                                    None => unit,
                                };
                                text.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            }
                            other => text.push(other),
                        },
                        other => text.push(other),
                    }
                }
                out.push(text);
            }
            Some(']') | None => return out,
            Some(_) => {}
        }
    }
}

fn normalized(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector
        .iter()
        .map(|x| x / norm.max(f32::MIN_POSITIVE))
        .collect()
}

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `count` records and their vectors: the base records, then replicas (see the module docs).
fn replicated(base: &[Record], vectors: &[Vec<f32>], count: usize) -> (Vec<Record>, Vec<Vec<f32>>) {
    let mut next = super::tests::xorshift(0x2545_f491_4f6c_dd1d);
    let mut records = Vec::with_capacity(count);
    let mut rows = Vec::with_capacity(count);
    'outer: for k in 0.. {
        for (record, vector) in base.iter().zip(vectors) {
            if records.len() >= count {
                break 'outer;
            }
            if k == 0 {
                records.push(record.clone());
                rows.push(vector.clone());
                continue;
            }
            let suffix = format!("_r{k}");
            let mut tool = record.tool.clone();
            while tool.len() + suffix.len() > 64 {
                tool.pop();
            }
            tool.push_str(&suffix);
            let mut replica = record.clone();
            replica.key = crate::names::canonical_name(&record.group, &tool);
            replica.tool = tool;
            records.push(replica);
            let other = &vectors[next(vectors.len())];
            let mixed: Vec<f32> = vector.iter().zip(other).map(|(a, b)| a + b / 4.0).collect();
            rows.push(normalized(&mixed));
        }
    }
    (records, rows)
}

#[repr(C)]
struct Timespec {
    seconds: i64,
    nanoseconds: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
}

/// CPU time of this thread (Linux `CLOCK_THREAD_CPUTIME_ID`): on a shared machine a search's
/// wall time includes the time other processes run on its core, its CPU time does not.
fn thread_cpu_time() -> Duration {
    let mut time = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: `clock_gettime` writes a `timespec` (two `i64`s on 64-bit Linux) into `time`.
    unsafe { clock_gettime(3, &raw mut time) };
    Duration::new(time.seconds as u64, time.nanoseconds as u32)
}

fn summary(name: &str, times: Vec<(Duration, Duration)>) {
    let (mut wall, mut cpu): (Vec<Duration>, Vec<Duration>) = times.into_iter().unzip();
    wall.sort();
    cpu.sort();
    println!(
        "{name}: CPU time median {:?}, p95 {:?}, max {:?}; wall time median {:?}, p95 {:?} ({} queries)",
        percentile(&cpu, 0.5),
        percentile(&cpu, 0.95),
        cpu[cpu.len() - 1],
        percentile(&wall, 0.5),
        percentile(&wall, 0.95),
        cpu.len()
    );
}

#[test]
#[ignore = "timing; TOOLPROXY_RECORDS=file TOOLPROXY_VECTORS=dir, run with --release --ignored --nocapture"]
fn hybrid_search_over_100k() {
    let Some([records_path, vectors_dir]) = env_vars(["TOOLPROXY_RECORDS", "TOOLPROXY_VECTORS"])
    else {
        return;
    };
    let count = env_number("TOOLPROXY_TOOLS", 100_000);
    let dir = std::path::Path::new(&vectors_dir);
    let dimensions = 384;
    let base = records_from(&records_path);
    let base_vectors = rows(&dir.join("bfcl_tools.f32"), dimensions);
    assert_eq!(
        base.len(),
        base_vectors.len(),
        "records and vectors in one order"
    );
    let queries = json_strings(
        &std::fs::read_to_string(dir.join("bfcl_queries.json")).expect("query sidecar"),
        "queries",
    );
    let query_vectors = rows(&dir.join("bfcl_queries.f32"), dimensions);
    assert_eq!(queries.len(), query_vectors.len());
    let (records, vectors) = replicated(&base, &base_vectors, count);
    let keys: Vec<String> = records.iter().map(|r| r.key.clone()).collect();

    let mut index = SearchIndex::new();
    index.upsert(records);
    let flat: Vec<f32> = vectors.iter().flatten().copied().collect();
    let buffer = bytes(&flat);
    let started = Instant::now();
    index.set_vectors(&keys, &buffer, dimensions).unwrap();
    println!(
        "{count} tools: set_vectors {:?}; vectors {} B per tool allocated ({} B per tool at 384 \
         dimensions, {} B at 1,536)",
        started.elapsed(),
        index.vector_heap_bytes() / count,
        SearchIndex::vector_bytes_per_record(384),
        SearchIndex::vector_bytes_per_record(1536),
    );

    // Every 5th question: 500 of 2,501.
    let sample: Vec<usize> = (0..queries.len()).step_by(5).collect();
    let query_bytes: Vec<Vec<u8>> = query_vectors.iter().map(|v| bytes(v)).collect();
    let time = |run: &dyn Fn(usize)| -> Vec<(Duration, Duration)> {
        for &q in sample.iter().take(20) {
            run(q); // warm-up
        }
        sample
            .iter()
            .map(|&q| {
                let (started, cpu) = (Instant::now(), thread_cpu_time());
                run(q);
                (started.elapsed(), thread_cpu_time().saturating_sub(cpu))
            })
            .collect()
    };
    let weight = 0.4;
    if std::env::var_os("TOOLPROXY_PROFILE_HYBRID").is_some() {
        // For `perf record`: the hybrid searches alone (20 rounds, so the build is a small share).
        summary(
            "hybrid search (window 0+10, weight 0.4)",
            time(&|q| {
                for _ in 0..20 {
                    std::hint::black_box(
                        index
                            .search_hybrid(&queries[q], Some(&query_bytes[q]), None, 0, 10, weight)
                            .unwrap(),
                    );
                }
            }),
        );
        return;
    }
    summary(
        "keyword search (window 0+10)",
        time(&|q| {
            std::hint::black_box(index.search(&queries[q], None, 0, 10));
        }),
    );
    summary(
        "hybrid search (window 0+10, weight 0.4)",
        time(&|q| {
            std::hint::black_box(
                index
                    .search_hybrid(&queries[q], Some(&query_bytes[q]), None, 0, 10, weight)
                    .unwrap(),
            );
        }),
    );
    summary(
        "hybrid search of a query no keyword matches (the vector side alone)",
        time(&|q| {
            std::hint::black_box(
                index
                    .search_hybrid("zzzz", Some(&query_bytes[q]), None, 0, 10, weight)
                    .unwrap(),
            );
        }),
    );
    // The hybrid search's parts, one at a time (as `search_hybrid` runs them, without a group
    // filter); the vector candidates of each question found beforehand.
    let extras: Vec<Vec<u32>> = (0..queries.len())
        .map(|q| {
            if q % 5 != 0 {
                return Vec::new();
            }
            let query = Vectors::query(&query_vectors[q]);
            index
                .semantic_neighbors(&query, None)
                .candidates
                .iter()
                .map(|c| c.0)
                .collect()
        })
        .collect();
    summary(
        "part: keyword top 10 (PreparedQuery::score)",
        time(&|q| {
            let mut prepared = index.prepare(&queries[q], None);
            std::hint::black_box(prepared.score(10, true));
        }),
    );
    summary(
        "part: keyword scores of the vector candidates (score_docs)",
        time(&|q| {
            let prepared = index.prepare(&queries[q], None);
            std::hint::black_box(prepared.score_docs(&extras[q]));
        }),
    );
    summary(
        "part: the prepared query alone (tokens, exact names, group gains)",
        time(&|q| {
            std::hint::black_box(index.prepare(&queries[q], None));
        }),
    );
    summary(
        "vector top-50 alone",
        time(&|q| {
            let query = Vectors::query(&query_vectors[q]);
            std::hint::black_box(index.vectors.nearest(&query, fusion::NEAREST_POOL, None));
        }),
    );

    // Recall@50 of the quantized top-50 against the exact f32 top-50 (cosine of the normalized
    // vectors), over the sampled questions: the index's own (prefilter pool
    // `vectors::PREFILTER_POOL`), other pool sizes, and the exact scan of every code.
    let normalized_rows: Vec<Vec<f32>> = vectors.iter().map(|v| normalized(v)).collect();
    let doc_of: Vec<u32> = keys.iter().map(|k| index.doc_of(k).unwrap()).collect();
    let pools = [1024, 2048, super::vectors::PREFILTER_POOL, 4096, usize::MAX];
    let mut found = [0usize; 5];
    let mut worst = [1.0f64; 5];
    let mut wanted = 0usize;
    for &q in &sample {
        let query = normalized(&query_vectors[q]);
        let mut exact: Vec<(f32, u32)> = normalized_rows
            .iter()
            .zip(&doc_of)
            .map(|(row, &doc)| (row.iter().zip(&query).map(|(a, b)| a * b).sum(), doc))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let truth: std::collections::HashSet<u32> =
            exact[..fusion::NEAREST_POOL].iter().map(|e| e.1).collect();
        let quantized = Vectors::query(&query_vectors[q]);
        for (at, &pool) in pools.iter().enumerate() {
            let (nearest, _) =
                index
                    .vectors
                    .nearest_with_pool(&quantized, fusion::NEAREST_POOL, None, pool);
            let hits = nearest.iter().filter(|n| truth.contains(&n.doc)).count();
            worst[at] = worst[at].min(hits as f64 / fusion::NEAREST_POOL as f64);
            found[at] += hits;
        }
        wanted += fusion::NEAREST_POOL;
    }
    for (at, &pool) in pools.iter().enumerate() {
        let name = if pool == usize::MAX {
            "every code (exact scan)".to_owned()
        } else if pool == super::vectors::PREFILTER_POOL {
            format!("prefilter pool {pool} (the index's)")
        } else {
            format!("prefilter pool {pool}")
        };
        println!(
            "recall@50 against exact f32, {name}: mean {:.4}, worst query {:.2} ({} questions)",
            found[at] as f64 / wanted as f64,
            worst[at],
            sample.len()
        );
    }
}
