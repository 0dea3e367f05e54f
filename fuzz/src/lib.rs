//! Property checks behind the cargo-fuzz targets of the toolproxy core (issue 6, point 2).
//!
//! Each `check_*` function takes raw fuzzer bytes, drives one part of the core with them and
//! asserts its invariants; a failed assertion or a panic inside the core is a finding. The
//! targets in `fuzz_targets/` are one-line wrappers, so the same checks can also be replayed from
//! a corpus or an artifact with `cargo fuzz run <target> <file>`.
//!
//! * [`check_tokenize`]: arbitrary bytes as lossy UTF-8 and as UTF-16 code units with lone
//!   surrogates (the path a Python `str` that is not valid UTF-8 takes through the binding).
//! * [`check_index`]: upserts, removes (with the compactions they trigger) and searches over arbitrary records whose
//!   parameter schemas are arbitrary graphs (cycles like `$ref` loops, 100,000-deep nesting,
//!   huge fan-out) or arbitrary JSON text; the incrementally maintained index must agree with an
//!   index rebuilt from scratch in another order.
//! * [`check_page`]: page planning on arbitrary numbers, and full pagination of a ranking under a
//!   byte budget: every position exactly once, every page within budget, byte-exact sizes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use toolproxy_core::index::{
    collect_parameter_text, ParameterText, Record, SchemaNode, SearchIndex,
};
use toolproxy_core::tokenize::{tokenize, MAX_TOKEN_BYTES};

mod page;
pub use page::{check_page, PageInput};

// ---------------------------------------------------------------------------------------------
// tokenizer

/// Tokenizes `data` read as lossy UTF-8 and as little-endian UTF-16 code units (lone surrogates
/// become U+FFFD exactly as `src/python/convert.rs::text` does for Python strings).
///
/// Asserts: no panic, deterministic output, every token non-empty and at most
/// `MAX_TOKEN_BYTES` bytes, a token count linear in the input length.
pub fn check_tokenize(data: &[u8]) {
    check_tokens(&String::from_utf8_lossy(data));
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    check_tokens(&String::from_utf16_lossy(&units));
}

fn check_tokens(text: &str) {
    let tokens = tokenize(text);
    assert_eq!(tokens, tokenize(text), "tokenizer is not deterministic");
    let chars = text.chars().count();
    assert!(
        tokens.len() <= 4 * chars + 1,
        "{} tokens from {chars} characters",
        tokens.len()
    );
    for token in &tokens {
        assert!(!token.is_empty(), "empty token from {text:?}");
        assert!(
            token.len() <= MAX_TOKEN_BYTES,
            "token of {} bytes from {text:?}",
            token.len()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// schema graphs

/// One node of an arbitrary schema graph; child references are indices into the arena taken
/// modulo its length, so cycles and shared nodes (like `$ref` loops) happen naturally.
#[derive(Debug, Clone, Arbitrary)]
pub enum NodeInput {
    Map(Vec<(Option<String>, u16)>),
    List(Vec<u16>),
    Str(String),
    Number(f64),
}

/// A parameters schema: an arbitrary graph, a generated pathological shape, or JSON text.
#[derive(Debug, Clone, Arbitrary)]
pub enum SchemaInput {
    Graph(Vec<NodeInput>),
    /// `{"properties": {"p": {"properties": ...}}, "description": ...}` nested this many times
    /// (up to 100,000), generated lazily like a Python object graph.
    Deep(u32),
    /// One `properties` mapping with this many entries (up to 100,000) of `{"description": <2 KB>}`.
    Wide(u32),
    /// JSON text parsed with serde_json (its own nesting limit applies) and converted.
    Json(String),
}

const MAX_GENERATED: u32 = 100_000;

/// An arena of schema nodes, or a lazily generated shape; dropping it never recurses.
#[derive(Debug, Default)]
pub struct Arena {
    nodes: Vec<NodeInput>,
    shape: Option<Shape>,
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Deep(u32),
    Wide(u32),
}

/// A node of an [`Arena`] or of a lazily generated shape, implementing the core's [`SchemaNode`].
#[derive(Clone, Copy)]
pub enum ArenaNode<'a> {
    Node {
        arena: &'a Arena,
        id: usize,
    },
    /// A mapping nested `remaining` more levels deep.
    Chain {
        remaining: u32,
    },
    /// `{"type": "object", "properties": <WideProperties>}`.
    WideRoot {
        width: u32,
    },
    /// The `properties` mapping of the wide shape.
    WideProperties {
        width: u32,
    },
    /// `{"description": <2 KB text>, "title": <2 KB text>}`.
    Described,
    /// A 2 KB string (the walk cuts it to its per-string limit).
    LongText,
}

impl Arena {
    fn child(&self, raw: u16) -> usize {
        usize::from(raw) % self.nodes.len().max(1)
    }

    /// The root node (`None` for an empty arena).
    pub fn root(&self) -> Option<ArenaNode<'_>> {
        match self.shape {
            Some(Shape::Deep(depth)) => Some(ArenaNode::Chain { remaining: depth }),
            Some(Shape::Wide(width)) => Some(ArenaNode::WideRoot { width }),
            None => (!self.nodes.is_empty()).then_some(ArenaNode::Node { arena: self, id: 0 }),
        }
    }

    /// Builds the arena for a schema input, iteratively.
    pub fn build(input: &SchemaInput) -> Arena {
        let mut arena = Arena::default();
        match input {
            SchemaInput::Graph(nodes) => arena.nodes = nodes.clone(),
            SchemaInput::Deep(depth) => arena.shape = Some(Shape::Deep(depth % MAX_GENERATED + 1)),
            SchemaInput::Wide(width) => arena.shape = Some(Shape::Wide(width % MAX_GENERATED)),
            SchemaInput::Json(text) => {
                if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
                    arena.push_json(value);
                }
            }
        }
        arena
    }

    fn push_json(&mut self, root: serde_json::Value) {
        use serde_json::Value;
        // Iterative conversion: (value, slot to fill).
        let mut stack = vec![(root, 0usize)];
        self.nodes.push(NodeInput::Number(0.0));
        while let Some((value, slot)) = stack.pop() {
            let node = match value {
                Value::Object(map) => NodeInput::Map(
                    map.into_iter()
                        .map(|(key, child)| {
                            let id = self.reserve();
                            stack.push((child, id));
                            (Some(key), id as u16)
                        })
                        .collect(),
                ),
                Value::Array(items) => NodeInput::List(
                    items
                        .into_iter()
                        .map(|child| {
                            let id = self.reserve();
                            stack.push((child, id));
                            id as u16
                        })
                        .collect(),
                ),
                Value::String(text) => NodeInput::Str(text),
                Value::Number(number) => NodeInput::Number(number.as_f64().unwrap_or(f64::NAN)),
                Value::Bool(_) | Value::Null => NodeInput::Number(f64::NAN),
            };
            self.nodes[slot] = node;
        }
    }

    fn reserve(&mut self) -> usize {
        self.nodes.push(NodeInput::Number(0.0));
        self.nodes.len() - 1
    }
}

fn long_text() -> String {
    "lorem ipsum ".repeat(171)
}

impl<'a> SchemaNode for ArenaNode<'a> {
    fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>> {
        let entries = match *self {
            ArenaNode::Node { arena, id } => match &arena.nodes[id] {
                NodeInput::Map(entries) => entries
                    .iter()
                    .take(limit)
                    .map(|(key, child)| {
                        let id = arena.child(*child);
                        (key.clone(), ArenaNode::Node { arena, id })
                    })
                    .collect(),
                _ => return None,
            },
            ArenaNode::Chain { remaining: 0 } => return None,
            ArenaNode::Chain { remaining } => {
                let next = ArenaNode::Chain {
                    remaining: remaining - 1,
                };
                vec![
                    (Some("description".into()), ArenaNode::LongText),
                    (Some("properties".into()), next),
                    (Some(format!("p{remaining}")), next),
                ]
            }
            ArenaNode::WideRoot { width } => vec![
                (Some("type".into()), ArenaNode::LongText),
                (
                    Some("properties".into()),
                    ArenaNode::WideProperties { width },
                ),
            ],
            ArenaNode::WideProperties { width } => (0..width as usize)
                .take(limit)
                .map(|i| (Some(format!("param_{i}")), ArenaNode::Described))
                .collect(),
            ArenaNode::Described => vec![
                (Some("description".into()), ArenaNode::LongText),
                (Some("title".into()), ArenaNode::LongText),
            ],
            ArenaNode::LongText => return None,
        };
        Some(entries.into_iter().take(limit).collect())
    }

    fn sequence_items(&self, limit: usize) -> Option<Vec<Self>> {
        let ArenaNode::Node { arena, id } = *self else {
            return None;
        };
        match &arena.nodes[id] {
            NodeInput::List(items) => Some(
                items
                    .iter()
                    .take(limit)
                    .map(|child| ArenaNode::Node {
                        arena,
                        id: arena.child(*child),
                    })
                    .collect(),
            ),
            _ => None,
        }
    }

    fn string(&self, max_bytes: usize) -> Option<String> {
        let text = match *self {
            ArenaNode::Node { arena, id } => match &arena.nodes[id] {
                NodeInput::Str(text) => text.clone(),
                _ => return None,
            },
            ArenaNode::LongText => long_text(),
            _ => return None,
        };
        Some(toolproxy_core::index::truncate_str(&text, max_bytes).to_owned())
    }
}

/// The parameter text of a schema input, asserting the walk's documented bounds.
pub fn parameter_text(input: &SchemaInput) -> ParameterText {
    use toolproxy_core::index::{
        MAX_PARAMETER_TEXT_BYTES, MAX_SCHEMA_NODES, MAX_SCHEMA_STRING_BYTES,
    };
    let arena = Arena::build(input);
    let Some(root) = arena.root() else {
        return ParameterText::default();
    };
    let text = collect_parameter_text(root);
    let bytes: usize = text.iter().map(String::len).sum();
    // The walk stops adding once the budget is reached; the last piece may overshoot by one string.
    assert!(
        bytes <= MAX_PARAMETER_TEXT_BYTES + MAX_SCHEMA_STRING_BYTES.max(4 * 1024),
        "parameter text of {bytes} bytes"
    );
    assert!(
        text.len() <= 2 * MAX_SCHEMA_NODES + 1,
        "{} parameter strings",
        text.len()
    );
    text
}

// ---------------------------------------------------------------------------------------------
// index

/// One record to upsert. Keys and groups come from small pools so that re-upserts, replacements
/// and group filters actually hit.
#[derive(Debug, Clone, Arbitrary)]
pub struct RecordInput {
    key: u8,
    group: u8,
    tool: String,
    description: String,
    schema: SchemaInput,
}

/// One step of an index session.
#[derive(Debug, Clone, Arbitrary)]
pub enum Op {
    Upsert(Vec<RecordInput>),
    Remove(Vec<u8>),
    Search {
        query: String,
        groups: Option<Vec<u8>>,
        offset: u8,
        limit: u8,
        /// Non-zero: the query is lengthened with every live record's tool name and description
        /// and `64 * (long % 32)` distinct unknown words (up to ~2,000 tokens), for the
        /// pruning's long-query path.
        long: u8,
    },
}

const GROUPS: [&str; 6] = ["crm", "billing", "Crm", "crm_", "ünï", "g-1"];

fn group_name(raw: u8) -> &'static str {
    GROUPS[usize::from(raw) % GROUPS.len()]
}

fn key_name(raw: u8) -> String {
    format!("k{}", raw % 24)
}

fn to_record(input: &RecordInput) -> Record {
    Record {
        key: key_name(input.key),
        group: group_name(input.group).to_owned(),
        tool: input.tool.clone(),
        description: input.description.clone(),
        parameter_text: parameter_text(&input.schema),
    }
}

type Query = (String, Option<Vec<&'static str>>);

fn run_search(
    index: &SearchIndex,
    query: &Query,
    offset: usize,
    limit: usize,
) -> (usize, Vec<Arc<str>>) {
    let groups = query.1.as_deref();
    index.search(&query.0, groups, offset, limit)
}

/// Runs an arbitrary session of index operations and checks every search.
///
/// Asserts: no panic; pages are windows of the full ranking; keys are unique, live and inside
/// the group filter; an empty query browses every live record of the selected groups; the same
/// search twice gives the same answer; and at the end an index rebuilt from the live records in
/// reverse order ranks every query of the session exactly like the incrementally maintained one.
pub fn check_index(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(ops) = Vec::<Op>::arbitrary(&mut u) else {
        return;
    };
    let mut index = SearchIndex::new();
    let mut live: BTreeMap<String, Record> = BTreeMap::new();
    let mut queries: Vec<Query> = Vec::new();
    for op in ops.iter().take(64) {
        match op {
            Op::Upsert(records) => {
                let records: Vec<Record> = records.iter().take(32).map(to_record).collect();
                for record in &records {
                    live.insert(record.key.clone(), record.clone());
                }
                index.upsert(records);
            }
            Op::Remove(keys) => {
                let keys: Vec<String> = keys.iter().map(|&k| key_name(k)).collect();
                for key in &keys {
                    live.remove(key);
                }
                index.remove(keys.iter().chain([&"never-a-key".to_owned()]));
            }
            Op::Search {
                query,
                groups,
                offset,
                limit,
                long,
            } => {
                let selected: Option<Vec<&'static str>> = groups
                    .as_ref()
                    .map(|g| g.iter().take(8).map(|&raw| group_name(raw)).collect());
                let mut text = query.clone();
                if *long > 0 {
                    for record in live.values() {
                        text.push(' ');
                        text.push_str(&record.tool);
                        text.push(' ');
                        text.push_str(&record.description);
                    }
                    for i in 0..64 * usize::from(*long % 32) {
                        text.push_str(&format!(" unknown{i}word"));
                    }
                }
                let q: Query = (text, selected);
                check_search(&index, &live, &q, usize::from(*offset), usize::from(*limit));
                queries.push(q);
            }
        }
        assert_eq!(
            index.len(),
            live.len(),
            "index length differs from the live records"
        );
    }
    let mut keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert_eq!(keys, live.keys().cloned().collect::<Vec<_>>());

    let mut fresh = SearchIndex::new();
    fresh.upsert(live.values().rev().cloned());
    queries.push((String::new(), None));
    for query in &queries {
        assert_eq!(
            run_search(&index, query, 0, usize::MAX),
            run_search(&fresh, query, 0, usize::MAX),
            "incremental and rebuilt index rank {query:?} differently"
        );
    }
}

fn check_search(
    index: &SearchIndex,
    live: &BTreeMap<String, Record>,
    query: &Query,
    offset: usize,
    limit: usize,
) {
    let (total, all) = run_search(index, query, 0, usize::MAX);
    assert_eq!(total, all.len(), "total differs from the full ranking");
    let unique: BTreeSet<&str> = all.iter().map(|k| &**k).collect();
    assert_eq!(unique.len(), all.len(), "a key ranked twice");
    let selected: Option<BTreeSet<&str>> = query.1.as_ref().map(|g| g.iter().copied().collect());
    for key in &all {
        let record = live.get(&**key).expect("a removed key was returned");
        if let Some(selected) = &selected {
            assert!(
                selected.contains(record.group.as_str()),
                "key outside the group filter"
            );
        }
    }
    if tokenize(&query.0).is_empty() {
        let in_selection = |r: &&Record| {
            selected
                .as_ref()
                .is_none_or(|s| s.contains(r.group.as_str()))
        };
        let folded = query.0.trim().to_lowercase();
        let exact = live
            .values()
            .filter(in_selection)
            .filter(|r| {
                r.tool.to_lowercase() == folded
                    || format!("{}__{}", r.group, r.tool).to_lowercase() == folded
            })
            .count();
        if exact == 0 && !query.0.chars().any(char::is_alphanumeric) {
            let expected = live.values().filter(in_selection).count();
            assert_eq!(total, expected, "browse did not list every selected record");
        } else {
            // Words too long to be tokens match nothing; only exact names are found.
            assert_eq!(
                total, exact,
                "a query without tokens found more than its exact names"
            );
        }
    }
    let (page_total, page) = run_search(index, query, offset, limit);
    assert_eq!(page_total, total);
    let end = offset.saturating_add(limit).min(total);
    let window: &[Arc<str>] = if offset < end { &all[offset..end] } else { &[] };
    assert_eq!(page, window, "page is not a window of the full ranking");
    assert_eq!(run_search(index, query, offset, limit), (page_total, page));
}
