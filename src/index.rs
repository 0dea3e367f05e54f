//! Incremental inverted index over tool records with BM25F-style ranking.
//!
//! Every record has five fields, each tokenized with [`crate::tokenize`]:
//!
//! | field | text | weight | length normalization `b` |
//! | --- | --- | --- | --- |
//! | name | local tool name | 3.0 | 0.15 |
//! | group | group name | 0.37 | 0 |
//! | description | tool description | 1.4 | 1.0 |
//! | parameter names | keys of every `properties` mapping | 2.0 | 0.6 |
//! | parameter text | descriptions, titles and string `enum` values inside parameter schemas | 0.5 | 0.2 |
//!
//! Tokens are interned to `u32` term ids; each term has a posting list of `(doc, per-field tf)`.
//! Terms sharing an English stem ([`crate::terms::term`]) form a *stem class*.
//!
//! ## Score
//!
//! For each distinct query token, a document's gain is the larger of two BM25F gains
//! (`k1 = 1.2`, field weights and `b` above, `idf = ln(1 + (N - df + 0.5) / (df + 0.5))` over
//! live documents): one for the token itself, one for its stem class (term frequencies of all
//! the class's terms summed, `df` = documents holding any of them). So `restaurants` finds
//! `restaurant`, while an exact rare form keeps its higher rarity. A token that is an English
//! function word ([`crate::terms::is_stopword`]) gains `0.3` times as much, from its own term
//! only (no stem class), and only in documents that match another token of the query: when a
//! query has a token that is not a function word and is indexed, the function words shape the
//! ranking of the documents found by the other tokens but find none of their own (a query of
//! function words alone still finds documents by them). So a question's `the`, `of` and `for`
//! cost no more than a lookup per candidate, and `total` counts the documents that match what
//! the question is about. The summed gains
//! are multiplied by `1 + 1.5 * coverage`, where coverage is the weight of the matched query
//! tokens over the number of distinct query tokens, so documents matching more of the query
//! come first. A term found in nearly every document has an `idf` near zero, so a shared
//! prefix such as `github_` cannot outrank a specific match. The weights were chosen on the BFCL
//! benchmark in `bench/quality.py` as one global setting (never per category).
//!
//! Removing a record only marks its document dead (queries skip it); the index compacts
//! itself when dead documents exceed a quarter of all documents. Re-upserting an unchanged
//! record is a no-op; a changed one is removed and added again, leaving other records alone.
//!
//! Ranking is fully deterministic: exact name matches first, then score descending, then
//! `(group, tool, key)` in byte order. Scores are finite `f32`s compared with `total_cmp`.
//! `index/ranking.rs` computes the requested window without scoring every match: documents that cannot
//! reach it are pruned by upper bounds, which never changes the result.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::terms::{is_stopword, Dictionary};
use crate::tokenize::for_each_token;

mod by_hash;
mod doc_name;
mod explain;
mod group_text;
mod postings;
mod ranking;
use by_hash::DocsByHash;
use doc_name::{ByTool, DocName};
pub use explain::{Explanation, TermMatch, GROUP_DESCRIPTION_FIELD};
use group_text::GroupTexts;
use postings::PostingList;
use ranking::QueryToken;

/// Deepest schema nesting the parameter walk descends into.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Most schema nodes (mapping entries and sequence items) visited per tool.
pub const MAX_SCHEMA_NODES: usize = 2000;
/// Longest single string taken from a schema, in bytes (longer ones are cut).
pub const MAX_SCHEMA_STRING_BYTES: usize = 1024;
/// Most text indexed from a description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// Most parameter text indexed per tool, in bytes.
pub const MAX_PARAMETER_TEXT_BYTES: usize = 16 * 1024;
/// Most tokens indexed per field of one record.
pub const MAX_FIELD_TOKENS: u32 = 4096;
/// Longest query, in UTF-8 bytes, that the search control accepts from a model (8 KiB: agent
/// queries are 5-20 words, and a pasted question of a few KB still fits; BFCL's longest is
/// 4.7 KB). The core itself ranks any query in time linear in its distinct
/// tokens; the cap bounds how long one search holds the index lock on the caller's thread.
pub const MAX_QUERY_BYTES: usize = 8192;
/// Adjacent word pairs of a query looked up as compounds (`file system` -> `filesystem`).
const MAX_COMPOUND_PAIRS: usize = 1024;

const FIELDS: usize = 5;
const NAME: usize = 0;
const GROUP: usize = 1;
const DESCRIPTION: usize = 2;
const PARAMETER_NAMES: usize = 3;
const PARAMETER_TEXT: usize = 4;
/// Field weights: tool name, group name, description, parameter names, parameter text.
const WEIGHTS: [f32; FIELDS] = [3.0, 0.37, 1.4, 2.0, 0.5];
/// BM25 length normalization `b` per field.
const LENGTH_NORMALIZATION: [f32; FIELDS] = [0.15, 0.0, 1.0, 0.6, 0.2];
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// Query weight of an English function word, relative to other tokens.
const STOPWORD_WEIGHT: f32 = 0.3;
/// Score factor per unit of query coverage: `score * (1 + COVERAGE_BOOST * coverage)`.
const COVERAGE_BOOST: f32 = 1.5;

/// One tool as the index sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Identity of the record, normally the canonical name `group__tool`.
    pub key: String,
    pub group: String,
    pub tool: String,
    pub description: String,
    /// Parameter names and texts, see [`collect_parameter_text`].
    pub parameter_text: ParameterText,
}

/// The searchable text of a parameters JSON schema (see [`collect_parameter_text`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParameterText {
    /// Parameter names: the keys of every `properties` mapping, at any depth.
    pub names: Vec<String>,
    /// Descriptions, titles and string `enum` values inside the parameter schemas.
    pub texts: Vec<String>,
}

impl ParameterText {
    /// `true` without names and texts.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.texts.is_empty()
    }

    /// Number of names and texts.
    pub fn len(&self) -> usize {
        self.names.len() + self.texts.len()
    }

    /// The names, then the texts.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.names.iter().chain(&self.texts)
    }
}

/// Read access to one node of a parameters JSON schema of unknown shape.
///
/// Implemented for Python objects by the binding; the walk itself is [`collect_parameter_text`].
/// Every method must return `None` rather than fail when the node is not of the asked kind or
/// cannot be read.
pub trait SchemaNode: Sized {
    /// The entries of a mapping node, at most `limit` of them, in iteration order. Keys that
    /// are not strings are `None`.
    fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>>;
    /// The items of a sequence node, at most `limit` of them.
    fn sequence_items(&self, limit: usize) -> Option<Vec<Self>>;
    /// The text of a string node, cut to at most `max_bytes` bytes (see [`truncate_str`]).
    fn string(&self, max_bytes: usize) -> Option<String>;
}

/// Checks a result window from a caller (negative values are rejected).
pub fn search_window(offset: i64, limit: i64) -> crate::Result<(usize, usize)> {
    let convert = |name: &str, value: i64| {
        if value < 0 {
            return Err(crate::Error::new(format!(
                "{name} must not be negative, got {value}"
            )));
        }
        Ok(usize::try_from(value).unwrap_or(usize::MAX))
    };
    Ok((convert("offset", offset)?, convert("limit", limit)?))
}

/// Cuts `text` to at most `max_bytes` bytes at a character boundary.
pub fn truncate_str(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Collects the searchable parameter text of a parameters JSON schema: the keys of every
/// `properties` mapping (parameter names, into [`ParameterText::names`]) and, inside the schemas
/// of those properties at any depth, the string values of `description` and `title` keys and the
/// string items of `enum` lists (into [`ParameterText::texts`]).
///
/// The walk is iterative (explicit stack), stops descending at [`MAX_SCHEMA_DEPTH`] and after
/// [`MAX_SCHEMA_NODES`] visited nodes, keeps at most [`MAX_PARAMETER_TEXT_BYTES`] of text in
/// all, and skips anything unreadable, so recursive, very deep or huge objects are safe.
pub fn collect_parameter_text<N: SchemaNode>(root: N) -> ParameterText {
    let mut out = ParameterText::default();
    let mut text_bytes = 0usize;
    let mut budget = MAX_SCHEMA_NODES;
    let mut push_text = |out: &mut Vec<String>, text: String| {
        if text_bytes < MAX_PARAMETER_TEXT_BYTES && !text.is_empty() {
            text_bytes += text.len();
            out.push(text);
        }
    };
    // (node, depth, inside a property schema)
    let mut stack: Vec<(N, usize, bool)> = vec![(root, 0, false)];
    while let Some((node, depth, in_property)) = stack.pop() {
        if budget == 0 {
            break;
        }
        if depth >= MAX_SCHEMA_DEPTH {
            continue;
        }
        if let Some(entries) = node.mapping_entries(budget) {
            budget = budget.saturating_sub(entries.len());
            for (key, value) in entries {
                let Some(key) = key else { continue };
                match key.as_str() {
                    "properties" => {
                        let Some(properties) = value.mapping_entries(budget) else {
                            stack.push((value, depth + 1, in_property));
                            continue;
                        };
                        budget = budget.saturating_sub(properties.len());
                        for (name, schema) in properties {
                            if let Some(name) = name {
                                push_text(&mut out.names, name);
                            }
                            stack.push((schema, depth + 2, true));
                        }
                    }
                    "description" | "title" if in_property => {
                        if let Some(text) = value.string(MAX_SCHEMA_STRING_BYTES) {
                            push_text(&mut out.texts, text);
                        }
                    }
                    "enum" if in_property => {
                        let Some(items) = value.sequence_items(budget) else {
                            continue;
                        };
                        budget = budget.saturating_sub(items.len());
                        for item in items {
                            if let Some(text) = item.string(MAX_SCHEMA_STRING_BYTES) {
                                push_text(&mut out.texts, text);
                            }
                        }
                    }
                    _ => stack.push((value, depth + 1, in_property)),
                }
            }
        } else if let Some(items) = node.sequence_items(budget) {
            budget = budget.saturating_sub(items.len());
            stack.extend(items.into_iter().map(|item| (item, depth + 1, in_property)));
        }
    }
    out
}

/// The hasher of the term dictionary and id maps: foldhash's fast hasher with a fixed seed, so the
/// index behaves the same in every process (nothing depends on iteration order, but runs stay
/// reproducible).
type FastState = foldhash::fast::FixedState;

type FxMap<K, V> = HashMap<K, V, FastState>;
type FxSet<K> = HashSet<K, FastState>;

/// FNV-1a over the record content, to skip re-indexing unchanged records.
fn fingerprint(record: &Record) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &byte in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(record.group.as_bytes());
    feed(record.tool.as_bytes());
    feed(record.description.as_bytes());
    let parameters = &record.parameter_text;
    feed(&(parameters.names.len() as u64).to_le_bytes());
    for text in parameters.names.iter().chain(&parameters.texts) {
        feed(text.as_bytes());
    }
    hash
}

/// The tokens of one record, by field, in one buffer (`spans` are `(field, start, end)` byte
/// ranges of `text`), with the per-field token counts and the record's content fingerprint.
struct Tokens {
    text: String,
    spans: Vec<(u8, u32, u32)>,
    lens: [u32; FIELDS],
    fingerprint: u64,
}

impl Tokens {
    fn of(record: &Record) -> Self {
        let mut text = String::new();
        let mut spans = Vec::new();
        let mut lens = [0u32; FIELDS];
        let mut add_text = |field: usize, source: &str| {
            for_each_token(source, |token| {
                if lens[field] >= MAX_FIELD_TOKENS || text.len() + token.len() > u32::MAX as usize {
                    return;
                }
                lens[field] += 1;
                let start = text.len() as u32;
                text.push_str(token);
                spans.push((field as u8, start, text.len() as u32));
            });
        };
        add_text(NAME, &record.tool);
        add_text(GROUP, &record.group);
        add_text(
            DESCRIPTION,
            truncate_str(&record.description, MAX_DESCRIPTION_BYTES),
        );
        let mut budget = MAX_PARAMETER_TEXT_BYTES;
        let parameters = &record.parameter_text;
        let texts = parameters.names.iter().map(|text| (PARAMETER_NAMES, text));
        let texts = texts.chain(parameters.texts.iter().map(|text| (PARAMETER_TEXT, text)));
        for (field, source) in texts {
            let source = truncate_str(source, budget);
            budget -= source.len();
            add_text(field, source);
            if budget == 0 {
                break;
            }
        }
        Tokens {
            text,
            spans,
            lens,
            fingerprint: fingerprint(record),
        }
    }
}

/// Smallest batch tokenized on several threads.
const PARALLEL_TOKENIZE_MIN: usize = 4096;
/// Most records tokenized ahead of their insertion.
const TOKENIZE_BATCH: usize = 16 * 1024;

/// Tokenizes `records` in order, splitting a large batch over the machine's cores (scoped
/// threads; a thread that panics has its share tokenized again on the calling thread).
fn tokenize_all(records: &[Record]) -> Vec<Tokens> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if records.len() < PARALLEL_TOKENIZE_MIN || threads < 2 {
        return records.iter().map(Tokens::of).collect();
    }
    let chunk = records.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = records
            .chunks(chunk)
            .map(|part| {
                (
                    part,
                    scope.spawn(move || part.iter().map(Tokens::of).collect::<Vec<_>>()),
                )
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(part, handle)| {
                handle
                    .join()
                    .unwrap_or_else(|_| part.iter().map(Tokens::of).collect())
            })
            .collect()
    })
}

/// One document of a posting list and the term's frequency in each of its fields, 3 bits a
/// field, saturating at [`MAX_TF`]. Packed to 6 bytes: queries stream whole posting lists, so
/// their size is their speed, and they are most of the index's memory.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(2))]
struct Posting {
    doc: u32,
    packed_tf: u16,
}

/// Highest term frequency a posting records per field. BM25 saturates well before: with
/// `k1 = 1.2`, a term's 8th occurrence in a field adds under 3% to its gain.
const MAX_TF: u8 = 7;

impl Posting {
    fn new(doc: u32, tf: [u8; FIELDS]) -> Self {
        let mut packed_tf = 0u16;
        for (field, &count) in tf.iter().enumerate() {
            packed_tf |= u16::from(count.min(MAX_TF)) << (3 * field);
        }
        Self { doc, packed_tf }
    }

    /// Term frequency per field.
    #[inline]
    fn tf(self) -> [u16; FIELDS] {
        let packed = self.packed_tf;
        std::array::from_fn(|field| (packed >> (3 * field)) & 7)
    }
}

#[derive(Debug)]
struct Doc {
    name: DocName,
    fingerprint: u64,
}

#[derive(Debug, Default)]
struct Group {
    name: Arc<str>,
    /// Live members in browse order: (tool, key) -> doc.
    members: BTreeMap<ByTool, u32>,
}

/// The search index. Cheap to query concurrently (`&self`), mutated with `&mut self`.
#[derive(Debug, Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
    alive: Vec<bool>,
    doc_group: Vec<u32>,
    doc_lens: Vec<[u16; FIELDS]>,
    /// Position of each live document in `(group, tool, key)` order: the cheap tie-break.
    doc_rank: Vec<u32>,
    live: usize,
    dead: usize,
    live_field_tokens: [u64; FIELDS],
    terms: Dictionary<FastState>,
    /// Posting lists by term id.
    postings: Vec<PostingList>,
    /// Live documents by key (by hash: candidates are checked against [`Doc::name`]).
    by_key: DocsByHash,
    /// Documents by case-folded tool name (exact-name matches; a canonical name `group__tool` is
    /// matched through its tool part and the group).
    by_tool_folded: DocsByHash,
    groups: Vec<Group>,
    group_ids: BTreeMap<Arc<str>, u32>,
    /// Per-record term frequencies, kept between `add_tokenized` calls so its table is allocated once.
    scratch_tfs: FxMap<u32, [u8; FIELDS]>,
    /// Group descriptions, indexed once per group ([`group_text`]).
    group_texts: GroupTexts,
}

impl SearchIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.live
    }

    /// `true` without live records.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Live keys, in no particular order.
    pub fn keys(&self) -> Vec<Arc<str>> {
        self.docs
            .iter()
            .zip(&self.alive)
            .filter(|(_, &alive)| alive)
            .map(|(doc, _)| Arc::from(doc.name.key()))
            .collect()
    }

    /// Sets the description of `group` (an empty text removes it): a field of every member of the
    /// group, indexed once for the group (see [`group_text`]). A group may be described before or
    /// after its members are added; the description outlives its members.
    pub fn set_group_description(&mut self, group: &str, text: &str) {
        self.group_texts.set(group, text);
    }

    /// Adds or replaces records by key. Unchanged records are left as they are.
    pub fn upsert(&mut self, records: impl IntoIterator<Item = Record>) {
        let mut records = records.into_iter();
        self.upsert_batches(std::iter::from_fn(|| {
            let batch: Vec<Record> = records.by_ref().take(TOKENIZE_BATCH).collect();
            (!batch.is_empty()).then_some(batch)
        }));
    }

    /// [`Self::upsert`] for records arriving in batches (e.g. converted from another language
    /// while earlier batches are indexed): each batch is tokenized (in parallel when large) and
    /// inserted in order, so a key given twice ends with its last record; the storage is trimmed
    /// and the tie-break ranks renumbered once, after the last batch.
    pub fn upsert_batches(&mut self, batches: impl IntoIterator<Item = Vec<Record>>) {
        let mut added = 0usize;
        for batch in batches {
            // Records already indexed with the same content are skipped before tokenizing.
            let batch: Vec<Record> = batch
                .into_iter()
                .filter(|record| !self.holds(record, fingerprint(record)))
                .collect();
            let tokenized = tokenize_all(&batch);
            for (record, tokens) in batch.into_iter().zip(tokenized) {
                if let Some(doc) = self.doc_of(&record.key) {
                    if self.holds(&record, tokens.fingerprint) {
                        continue;
                    }
                    self.remove_doc(doc);
                }
                self.add_tokenized(record, tokens);
                added += 1;
            }
        }
        if added == 0 {
            return;
        }
        if added >= TOKENIZE_BATCH {
            // A bulk build leaves vectors with up to half their capacity unused.
            self.shrink_to_fit();
        }
        self.maybe_compact();
        self.refresh_ranks();
    }

    /// Releases the unused capacity of the posting lists and per-document vectors.
    fn shrink_to_fit(&mut self) {
        for list in &mut self.postings {
            list.shrink_to_fit();
        }
        self.postings.shrink_to_fit();
        self.docs.shrink_to_fit();
        self.alive.shrink_to_fit();
        self.doc_group.shrink_to_fit();
        self.doc_lens.shrink_to_fit();
    }

    /// The live document with key `key`.
    fn doc_of(&self, key: &str) -> Option<u32> {
        let mut candidates = self.by_key.get(key).iter().copied();
        candidates.find(|&doc| self.docs[doc as usize].name.key() == key)
    }

    /// Whether `record` (with content `fingerprint`) is indexed unchanged.
    fn holds(&self, record: &Record, fingerprint: u64) -> bool {
        self.doc_of(&record.key).is_some_and(|doc| {
            self.docs[doc as usize].fingerprint == fingerprint
                && *self.groups[self.doc_group[doc as usize] as usize].name == *record.group
                && self.docs[doc as usize].name.tool() == record.tool
        })
    }

    /// Removes records by key; unknown keys are ignored.
    pub fn remove<S: AsRef<str>>(&mut self, keys: impl IntoIterator<Item = S>) {
        let mut changed = false;
        for key in keys {
            if let Some(doc) = self.doc_of(key.as_ref()) {
                self.remove_doc(doc);
                changed = true;
            }
        }
        if changed {
            self.maybe_compact();
            self.refresh_ranks();
        }
    }

    /// Renumbers `doc_rank` in `(group, tool, key)` order.
    fn refresh_ranks(&mut self) {
        self.doc_rank.clear();
        self.doc_rank.resize(self.docs.len(), u32::MAX);
        let mut rank = 0u32;
        for &group in self.group_ids.values() {
            for &doc in self.groups[group as usize].members.values() {
                self.doc_rank[doc as usize] = rank;
                rank += 1;
            }
        }
    }

    fn group_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.group_ids.get(name) {
            return id;
        }
        let id = self.groups.len() as u32;
        let name: Arc<str> = Arc::from(name);
        self.groups.push(Group {
            name: name.clone(),
            members: BTreeMap::new(),
        });
        self.group_ids.insert(name, id);
        id
    }

    fn add_tokenized(&mut self, record: Record, tokens: Tokens) {
        let doc = self.docs.len() as u32;
        let group = self.group_id(&record.group);
        let name = DocName::new(&record.key, &record.tool);

        let mut tfs = std::mem::take(&mut self.scratch_tfs);
        tfs.clear();
        for &(field, start, end) in &tokens.spans {
            let term = self
                .terms
                .intern(&tokens.text[start as usize..end as usize]);
            if term as usize == self.postings.len() {
                self.postings.push(PostingList::default());
            }
            let tf = &mut tfs.entry(term).or_default()[field as usize];
            *tf = tf.saturating_add(1);
        }
        let lens = tokens.lens;
        for (term, tf) in tfs.drain() {
            self.postings[term as usize].push(Posting::new(doc, tf));
        }
        self.scratch_tfs = tfs;

        let doc_lens = lens.map(|len| len.min(u32::from(u16::MAX)) as u16);
        for (total, len) in self.live_field_tokens.iter_mut().zip(doc_lens) {
            *total += u64::from(len);
        }
        self.docs.push(Doc {
            name: name.clone(),
            fingerprint: tokens.fingerprint,
        });
        self.alive.push(true);
        self.doc_group.push(group);
        self.doc_lens.push(doc_lens);
        self.live += 1;
        self.by_key.insert(name.key(), doc);
        self.by_tool_folded.insert(&record.tool.to_lowercase(), doc);
        self.groups[group as usize]
            .members
            .insert(ByTool(name), doc);
    }

    fn remove_doc(&mut self, doc: u32) {
        let index = doc as usize;
        if !self.alive.get(index).copied().unwrap_or(false) {
            return;
        }
        self.alive[index] = false;
        self.live -= 1;
        self.dead += 1;
        for (total, len) in self.live_field_tokens.iter_mut().zip(self.doc_lens[index]) {
            *total = total.saturating_sub(u64::from(len));
        }
        let name = &self.docs[index].name;
        self.by_key.remove(name.key(), doc);
        self.by_tool_folded.remove(&name.tool().to_lowercase(), doc);
        self.groups[self.doc_group[index] as usize]
            .members
            .remove(&ByTool(name.clone()));
    }

    fn maybe_compact(&mut self) {
        if self.dead > 0 && self.dead * 4 > self.docs.len() {
            self.compact();
        }
    }

    /// Drops dead documents and unused terms, renumbering documents in order.
    pub fn compact(&mut self) {
        if self.dead == 0 {
            return;
        }
        let mut remap = vec![u32::MAX; self.docs.len()];
        let mut next = 0u32;
        for (slot, &alive) in remap.iter_mut().zip(&self.alive) {
            if alive {
                *slot = next;
                next += 1;
            }
        }
        let docs = std::mem::take(&mut self.docs);
        let doc_lens = std::mem::take(&mut self.doc_lens);
        let doc_group = std::mem::take(&mut self.doc_group);
        let alive = std::mem::take(&mut self.alive);
        let columns = docs.into_iter().zip(doc_lens).zip(doc_group).zip(alive);
        for (((entry, lens), group), is_alive) in columns {
            if is_alive {
                self.docs.push(entry);
                self.doc_lens.push(lens);
                self.doc_group.push(group);
                self.alive.push(true);
            }
        }
        self.dead = 0;

        let mut postings = std::mem::take(&mut self.postings);
        for list in &mut postings {
            list.retain_mut(|posting| {
                let new = remap[posting.doc as usize];
                posting.doc = new;
                new != u32::MAX
            });
        }
        let mut term_remap = vec![u32::MAX; postings.len()];
        let mut kept: Vec<PostingList> = Vec::with_capacity(postings.len());
        for (slot, list) in term_remap.iter_mut().zip(postings) {
            if !list.is_empty() {
                *slot = kept.len() as u32;
                kept.push(list);
            }
        }
        self.terms.remap(&term_remap);
        self.postings = kept;

        self.by_key.remap(&remap);
        self.by_tool_folded.remap(&remap);
        for group in &mut self.groups {
            for doc in group.members.values_mut() {
                *doc = remap[*doc as usize];
            }
        }
        // Document ids moved, so the tie-break ranks must follow them.
        self.refresh_ranks();
    }

    /// Runs a query and returns `(total, keys of ranked results[offset..offset + limit])`.
    ///
    /// `groups`: `None` selects every group, otherwise only the listed ones. A query with nothing
    /// to look for (no alphanumeric character, no exact name match) browses the selected groups
    /// in `(group, tool)` order. Otherwise only records matching at least one query token count
    /// (a word over [`crate::tokenize::MAX_TOKEN_BYTES`] is no token: it matches nothing); an exact
    /// name match (the trimmed, lower-cased query equals a record's lower-cased tool name or its
    /// `group__tool` name) ranks above everything else.
    pub fn search(
        &self,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<Arc<str>>) {
        self.search_pruned(query, groups, offset, limit, true)
    }

    /// [`Self::search`], with or without pruning (see [`ranking`]; `false` scores every match,
    /// which the tests use as the reference).
    fn search_pruned(
        &self,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
        prune: bool,
    ) -> (usize, Vec<Arc<str>>) {
        let allowed = self.allowed_groups(groups);
        let tokens = self.query_tokens(query);
        let allowed = allowed.as_deref();
        let exact = self.exact_matches(query, allowed);
        // Browsing is for a query with nothing to look for (empty, spaces, punctuation). A word
        // whose tokens were all dropped (each over `MAX_TOKEN_BYTES`) matches nothing instead,
        // and a punctuation-only tool name (`-`) still finds its tool first.
        let nothing_to_find = !query.chars().any(char::is_alphanumeric);
        if tokens.is_empty() && exact.is_empty() && nothing_to_find {
            return self.browse(allowed, offset, limit);
        }
        let keep = offset.saturating_add(limit);
        let group_gains = self.group_gains(query);
        let (total, best) = self.score_query(&tokens, &exact, allowed, keep, prune, &group_gains);
        let keys = best
            .iter()
            .skip(offset)
            .map(|candidate| Arc::from(self.docs[candidate.doc as usize].name.key()))
            .collect();
        (total, keys)
    }

    /// The query's distinct tokens, resolved against the term dictionary, in query order:
    /// English function words are optional (they score only what the other tokens find) unless no
    /// other token can find a document.
    fn query_tokens(&self, query: &str) -> Vec<QueryToken<'_>> {
        // The query's tokens in order (repeats included), then each distinct one.
        let mut sequence: Vec<String> = Vec::new();
        for_each_token(query, |token| sequence.push(token.to_owned()));
        // Compounds: two adjacent words whose concatenation is an indexed term ("file system" and
        // `filesystem`) join that term to both words' classes.
        let mut compounds: FxMap<&str, Vec<u32>> = FxMap::default();
        for pair in sequence.windows(2).take(MAX_COMPOUND_PAIRS) {
            let (first, second) = (pair[0].as_str(), pair[1].as_str());
            if is_stopword(first)
                || is_stopword(second)
                || !first
                    .bytes()
                    .chain(second.bytes())
                    .all(|b| b.is_ascii_alphanumeric())
            {
                continue;
            }
            if let Some(term) = self.terms.get(&format!("{first}{second}")) {
                compounds.entry(first).or_default().push(term);
                compounds.entry(second).or_default().push(term);
            }
        }
        let mut distinct: FxSet<&str> = FxSet::default();
        let mut tokens: Vec<QueryToken<'_>> = Vec::new();
        for token in &sequence {
            if !distinct.insert(token.as_str()) {
                continue;
            }
            let term = self.terms.get(token);
            let stopword = is_stopword(token);
            let extra = compounds.get(token.as_str()).map_or(&[][..], Vec::as_slice);
            tokens.push(QueryToken {
                text: Box::from(token.as_str()),
                term,
                class: self.class_with_synonyms(token, term, extra),
                weight: if stopword { STOPWORD_WEIGHT } else { 1.0 },
                optional: stopword,
            });
        }
        // Function words are optional only beside a token that can find documents.
        let findable = |token: &QueryToken<'_>| token.term.is_some() || !token.class.is_empty();
        if !tokens
            .iter()
            .any(|token| !token.optional && findable(token))
        {
            for token in &mut tokens {
                token.optional = false;
            }
        }
        tokens
    }

    /// Calls `found(group id, token, gain)` for each query token found in a group's description.
    fn each_group_gain(&self, query: &str, found: impl FnMut(u32, &str, f32)) {
        self.group_texts.each_gain(
            query,
            |name| {
                self.group_ids
                    .get(name)
                    .copied()
                    .filter(|&id| !self.groups[id as usize].members.is_empty())
            },
            |id| self.groups[id as usize].members.len(),
            |token| {
                self.terms
                    .get(token)
                    .map_or(0, |term| self.postings[term as usize].as_slice().len())
            },
            self.live,
            found,
        );
    }

    /// The stem class of `token` (see [`Dictionary::stem_class`]), joined with the stem classes
    /// of its synonyms ([`crate::synonyms`]) and with `extra` terms (compounds it is part of).
    fn class_with_synonyms(&self, token: &str, term: Option<u32>, extra: &[u32]) -> Cow<'_, [u32]> {
        let own = self.terms.stem_class(token, term);
        let synonyms = crate::synonyms::synonyms(token);
        if synonyms.is_empty() && extra.is_empty() {
            return Cow::Borrowed(own);
        }
        let mut union: Vec<u32> = own.to_vec();
        union.extend(term);
        union.extend_from_slice(extra);
        for stem in synonyms {
            union.extend_from_slice(self.terms.stem_members(stem));
        }
        union.sort_unstable();
        union.dedup();
        if union.len() == own.len() {
            Cow::Borrowed(own)
        } else {
            Cow::Owned(union)
        }
    }

    /// The group gain of each group for `query` (see [`group_text`]), by group id; empty when no
    /// group description matches.
    /// `[gain, matched]`: the summed gains, and `GROUP_TEXT_COORDINATION` per matched token
    /// toward the members' coordination factor.
    fn group_gains(&self, query: &str) -> Vec<[f32; 2]> {
        if self.group_texts.is_empty() {
            return Vec::new();
        }
        let mut gains = vec![[0.0f32; 2]; self.groups.len()];
        let mut any = false;
        self.each_group_gain(query, |id, _, gain| {
            let [total, matched] = &mut gains[id as usize];
            *total += gain;
            *matched += group_text::GROUP_TEXT_COORDINATION;
            any = true;
        });
        if any {
            gains
        } else {
            Vec::new()
        }
    }

    /// The selection mask of `groups` by group id (`None`: every group).
    fn allowed_groups(&self, groups: Option<&[&str]>) -> Option<Vec<bool>> {
        groups.map(|names| {
            let mut allowed = vec![false; self.groups.len()];
            for name in names {
                if let Some(&id) = self.group_ids.get(*name) {
                    allowed[id as usize] = true;
                }
            }
            allowed
        })
    }

    fn browse(
        &self,
        allowed: Option<&[bool]>,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<Arc<str>>) {
        let selected: Vec<&Group> = self
            .group_ids
            .values()
            .filter(|&&id| allowed.is_none_or(|allowed| allowed[id as usize]))
            .map(|&id| &self.groups[id as usize])
            .collect();
        let total = selected.iter().map(|group| group.members.len()).sum();
        let mut skip = offset;
        let mut keys = Vec::new();
        for group in selected {
            if keys.len() >= limit {
                break;
            }
            if skip >= group.members.len() {
                skip -= group.members.len();
                continue;
            }
            let wanted = limit - keys.len();
            keys.extend(
                group
                    .members
                    .keys()
                    .skip(skip)
                    .take(wanted)
                    .map(|name| Arc::from(name.0.key())),
            );
            skip = 0;
        }
        (total, keys)
    }

    /// The selectable documents whose tool name (or canonical `group__tool` name) equals the
    /// trimmed query, ignoring case, in document order.
    fn exact_matches(&self, query: &str, allowed: Option<&[bool]>) -> Vec<u32> {
        let selectable = |doc: u32| {
            let index = doc as usize;
            self.alive[index]
                && allowed.is_none_or(|allowed| allowed[self.doc_group[index] as usize])
        };
        let folded = query.trim().to_lowercase();
        // Candidates by name hash, checked against the documents' own (folded) tool names.
        let named = |doc: &u32, folded: &str| {
            let tool = self.docs[*doc as usize].name.tool();
            tool.eq_ignore_ascii_case(folded) || (!tool.is_ascii() && tool.to_lowercase() == folded)
        };
        let mut exact: Vec<u32> = self
            .by_tool_folded
            .get(&folded)
            .iter()
            .filter(|doc| named(doc, &folded))
            .copied()
            .collect();
        if let Some((group, tool)) = folded.split_once("__") {
            let in_group = |doc: &u32| {
                let name = &self.groups[self.doc_group[*doc as usize] as usize].name;
                name.eq_ignore_ascii_case(group)
                    || (!name.is_ascii() && name.to_lowercase() == group)
            };
            let docs = self.by_tool_folded.get(tool).iter();
            exact.extend(docs.filter(|doc| named(doc, tool) && in_group(doc)));
        }
        exact.retain(|&doc| selectable(doc));
        exact.sort_unstable();
        exact.dedup();
        exact
    }

    /// Number of document slots, dead ones included (for tests of compaction).
    #[cfg(test)]
    fn slots(&self) -> usize {
        self.docs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn record(group: &str, tool: &str, description: &str) -> Record {
        Record {
            key: format!("{group}__{tool}"),
            group: group.to_owned(),
            tool: tool.to_owned(),
            description: description.to_owned(),
            parameter_text: ParameterText::default(),
        }
    }

    fn search(
        index: &SearchIndex,
        query: &str,
        groups: Option<&[&str]>,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<String>) {
        let (total, keys) = index.search(query, groups, offset, limit);
        (total, keys.iter().map(ToString::to_string).collect())
    }

    fn github_index() -> SearchIndex {
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

    /// A tree standing in for Python objects in walk tests (shared like Python references).
    #[derive(Debug, Clone)]
    enum Value {
        Map(Rc<Vec<(Option<String>, Value)>>),
        List(Rc<Vec<Value>>),
        Str(String),
        Int,
        /// A mapping `{"properties": <itself>, "items": <itself>}`.
        Loop,
    }

    impl SchemaNode for Value {
        fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>> {
            match self {
                Value::Map(entries) => Some(entries.iter().take(limit).cloned().collect()),
                Value::Loop => Some(
                    [("properties", Value::Loop), ("items", Value::Loop)]
                        .into_iter()
                        .take(limit)
                        .map(|(key, value)| (Some(key.to_owned()), value))
                        .collect(),
                ),
                _ => None,
            }
        }
        fn sequence_items(&self, limit: usize) -> Option<Vec<Self>> {
            match self {
                Value::List(items) => Some(items.iter().take(limit).cloned().collect()),
                _ => None,
            }
        }
        fn string(&self, max_bytes: usize) -> Option<String> {
            match self {
                Value::Str(text) => Some(truncate_str(text, max_bytes).to_owned()),
                _ => None,
            }
        }
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(Rc::new(
            entries
                .iter()
                .map(|(key, value)| (Some((*key).to_owned()), value.clone()))
                .collect(),
        ))
    }

    fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    fn text(value: &str) -> Value {
        Value::Str(value.to_owned())
    }

    #[test]
    fn walk_collects_parameter_names_and_descriptions() {
        let schema = map(&[
            ("type", text("object")),
            ("description", text("top-level text is not parameter text")),
            (
                "properties",
                map(&[
                    (
                        "customer_id",
                        map(&[
                            ("type", text("integer")),
                            ("description", text("Numeric customer ID")),
                        ]),
                    ),
                    ("description", map(&[("title", text("Free Text"))])),
                    (
                        "unit",
                        map(&[
                            (
                                "enum",
                                list(vec![text("celsius"), Value::Int, text("kelvin")]),
                            ),
                            ("items", map(&[("enum", list(vec![text("deep")]))])),
                        ]),
                    ),
                    (
                        "address",
                        map(&[(
                            "anyOf",
                            list(vec![
                                map(&[("properties", map(&[("zip_code", map(&[]))]))]),
                                Value::Int,
                            ]),
                        )]),
                    ),
                ]),
            ),
            (
                "$defs",
                map(&[("Item", map(&[("properties", map(&[("sku", map(&[]))]))]))]),
            ),
        ]);
        let mut collected = collect_parameter_text(schema);
        collected.names.sort();
        collected.texts.sort();
        assert_eq!(
            collected.names,
            [
                "address",
                "customer_id",
                "description",
                "sku",
                "unit",
                "zip_code"
            ]
        );
        assert_eq!(
            collected.texts,
            [
                "Free Text",
                "Numeric customer ID",
                "celsius",
                "deep",
                "kelvin"
            ]
        );
        // An `enum` outside a property schema is not parameter text.
        let top = map(&[("enum", list(vec![text("x")]))]);
        assert!(collect_parameter_text(top).is_empty());
    }

    #[test]
    fn walk_survives_odd_shapes() {
        assert!(collect_parameter_text(Value::Int).is_empty());
        assert!(collect_parameter_text(text("x")).is_empty());
        assert!(collect_parameter_text(list(vec![Value::Int; 10])).is_empty());
        // Non-string keys and non-mapping properties are skipped.
        let odd = Value::Map(Rc::new(vec![
            (None, map(&[("properties", map(&[("hidden", Value::Int)]))])),
            (Some("properties".into()), list(vec![text("not a mapping")])),
        ]));
        assert!(collect_parameter_text(odd).is_empty());
        // Very deep nesting stops at the depth cap without recursion.
        let mut deep = map(&[("properties", map(&[("bottom", Value::Int)]))]);
        for _ in 0..10_000 {
            deep = map(&[("items", deep)]);
        }
        assert!(collect_parameter_text(deep.clone()).is_empty());
        // A self-containing object (as Python dicts can be) is bounded too.
        let looped = collect_parameter_text(Value::Loop);
        assert!(!looped.is_empty() && looped.len() <= MAX_SCHEMA_NODES);
        let mut shallow = map(&[("properties", map(&[("top", Value::Int)]))]);
        for _ in 0..10 {
            shallow = map(&[("items", shallow)]);
        }
        assert_eq!(collect_parameter_text(shallow).names, ["top"]);
        // The node budget bounds huge schemas.
        let huge = map(&[(
            "properties",
            Value::Map(Rc::new(
                (0..50_000)
                    .map(|i| (Some(format!("p{i}")), Value::Int))
                    .collect(),
            )),
        )]);
        assert!(collect_parameter_text(huge).len() < MAX_SCHEMA_NODES);
        std::mem::forget(deep); // dropping 10,000 nested Rcs would recurse in the test itself
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_str("héllo", 2), "h");
        assert_eq!(truncate_str("héllo", 3), "hé");
        assert_eq!(truncate_str("abc", 10), "abc");
        assert_eq!(truncate_str("組", 0), "");
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
    fn upsert_replaces_and_remove_forgets() {
        let mut index = github_index();
        assert_eq!(index.len(), 17);
        index.upsert([record("crm", "customer_name", "Find invoices")]);
        assert_eq!(index.len(), 17);
        assert_eq!(search(&index, "display", None, 0, 10).0, 0);
        assert_eq!(
            search(&index, "invoices", None, 0, 10).1,
            ["crm__customer_name"]
        );
        // A key moving to another group is re-filed.
        let mut moved = record("billing", "customer_name", "Find invoices");
        moved.key = "crm__customer_name".into();
        index.upsert([moved]);
        assert_eq!(search(&index, "", Some(&["crm"]), 0, 10).0, 1);
        assert_eq!(
            search(&index, "", Some(&["billing"]), 0, 10).1,
            ["crm__customer_name"]
        );
        index.remove(["crm__customer_name", "unknown", "crm__customer_name"]);
        assert_eq!(index.len(), 16);
        assert_eq!(search(&index, "invoices", None, 0, 10).0, 0);
        assert!(!index
            .keys()
            .iter()
            .any(|key| &**key == "crm__customer_name"));
        assert_eq!(
            search(&index, "customer_name", None, 0, 10).1,
            ["crm__update_customer"]
        );
    }

    #[test]
    fn unchanged_upsert_is_a_no_op() {
        let mut index = github_index();
        let slots = index.slots();
        index.upsert([record(
            "crm",
            "customer_name",
            "Look up the display name for a customer ID.",
        )]);
        assert_eq!(index.slots(), slots);
        index.upsert([record("crm", "customer_name", "Changed")]);
        assert_eq!(index.slots(), slots + 1);
    }

    #[test]
    fn compaction_keeps_results() {
        let mut index = SearchIndex::new();
        index.upsert((0..100).map(|i| {
            record(
                "g",
                &format!("tool_{i:03}"),
                &format!("word{} common", i % 7),
            )
        }));
        let before = search(&index, "word3 common", None, 0, 100);
        index.remove(
            (0..100)
                .filter(|i| i % 2 == 1)
                .map(|i| format!("g__tool_{i:03}")),
        );
        assert_eq!(index.len(), 50);
        assert_eq!(
            index.slots(),
            50,
            "more than a quarter dead triggers compaction"
        );
        let after = search(&index, "word3 common", None, 0, 100);
        let expected: Vec<String> = before
            .1
            .into_iter()
            .filter(|key| {
                key[key.len() - 1..]
                    .parse::<u32>()
                    .is_ok_and(|d| d % 2 == 0)
            })
            .collect();
        assert_eq!(after.1, expected);
        assert_eq!(after.0, 50);
        // A freshly built index gives the same ranking.
        let mut fresh = SearchIndex::new();
        fresh.upsert((0..100).filter(|i| i % 2 == 0).map(|i| {
            record(
                "g",
                &format!("tool_{i:03}"),
                &format!("word{} common", i % 7),
            )
        }));
        assert_eq!(search(&fresh, "word3 common", None, 0, 100).1, after.1);
        assert_eq!(
            search(&fresh, "", None, 0, 100),
            search(&index, "", None, 0, 100)
        );
        // Still usable after compaction.
        index.upsert([record("g", "tool_001", "brand new")]);
        assert_eq!(search(&index, "brand", None, 0, 10).1, ["g__tool_001"]);
        assert_eq!(search(&index, "tool_001", None, 0, 1).1, ["g__tool_001"]);
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
    fn postings_pack_term_frequencies_into_six_bytes() {
        assert_eq!(std::mem::size_of::<Posting>(), 6);
        let posting = Posting::new(u32::MAX, [0, 1, 6, 7, 200]);
        assert_eq!({ posting.doc }, u32::MAX);
        assert_eq!(posting.tf(), [0, 1, 6, 7, 7]);
        assert_eq!(Posting::new(3, [0; FIELDS]).tf(), [0; FIELDS]);
    }

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
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        // Word `i` drawn with probability about proportional to 1 / (i + 1).
        let word = |next: &mut dyn FnMut(usize) -> usize| {
            let pick = next(1000);
            let index = (words.len() as f64).powf(pick as f64 / 1000.0) as usize - 1;
            words[index.min(words.len() - 1)]
        };
        let (mut cuts, mut thresholds) = (0, 0);
        for round in 0..4 {
            let mut index = SearchIndex::new();
            let docs = 600 + round * 700;
            let records: Vec<Record> = (0..docs)
                .map(|doc| {
                    let name: Vec<&str> = (0..=next(3)).map(|_| word(&mut next)).collect();
                    let description: Vec<&str> =
                        (0..2 + next(10)).map(|_| word(&mut next)).collect();
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
                for (offset, limit) in [(0, 1), (0, 5), (0, 10), (3, 4), (10, 10), (2, usize::MAX)]
                {
                    let pruned =
                        index.search_pruned(&query, groups.as_deref(), offset, limit, true);
                    let full = index.search_pruned(&query, groups.as_deref(), offset, limit, false);
                    assert_eq!(
                        pruned, full,
                        "query {query:?}, groups {groups:?}, window {offset}+{limit}"
                    );
                }
            }
            let [c, t] = ranking::PRUNED.with(std::cell::Cell::get);
            (cuts, thresholds) = (c, t);
        }
        assert!(
            cuts > 50 && thresholds > 200,
            "pruning rarely ran: {cuts} cuts, {thresholds} thresholds"
        );
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
}

#[cfg(test)]
mod bench {
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
                    key: format!("{group}__{tool}"),
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
}
