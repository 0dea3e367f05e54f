//! Tokenizing of records: each field of a [`Record`] through [`crate::tokenize`], counted into
//! its distinct tokens; a large batch split over the machine's cores.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use hashbrown::HashTable;

use super::bm25f::{DESCRIPTION, FIELDS, GROUP, NAME, PARAMETER_NAMES, PARAMETER_TEXT};
use super::record::Record;
use super::schema_text::{truncate_str, MAX_PARAMETER_TEXT_BYTES};
use super::FoldHashState;
use crate::tokenize::for_each_token;

/// Most text indexed from a description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// Most tokens indexed per field of one record.
pub const MAX_FIELD_TOKENS: u32 = 4096;

/// One distinct token of a record: its end in [`TokensChunk::text`] (its start is the previous
/// token's end, or the record's start), its hash as the term dictionary hashes it (computed here,
/// on a tokenizing thread, so that inserting the record does not hash it again) and its frequency
/// in each field.
#[derive(Debug, Clone, Copy)]
struct TermCount {
    end: u32,
    hash: u64,
    tf: [u8; FIELDS],
}

/// One tokenized record of a [`TokensChunk`]: where its tokens start, per-field token counts and
/// its content fingerprint.
#[derive(Debug, Clone, Copy)]
struct RecordSpan {
    text_start: u32,
    terms_start: u32,
    terms_end: u32,
    lens: [u32; FIELDS],
    fingerprint: u64,
}

/// The distinct tokens of a run of consecutive records, each record's in order of first
/// occurrence, in one text buffer and one vector for the whole run: tokenizing a record allocates
/// nothing of its own, and inserting the run frees three buffers instead of two per record.
/// Counted on the tokenizing threads, so that inserting a record looks up each distinct token
/// once, by a hash computed here.
#[derive(Debug, Default)]
pub(super) struct TokensChunk {
    text: String,
    terms: Vec<TermCount>,
    /// One entry per record of the run; `None`: not tokenized (held unchanged, see
    /// [`Fingerprinted`]).
    records: Vec<Option<RecordSpan>>,
}

/// The tokens of one record: a view into its [`TokensChunk`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Tokens<'a> {
    text: &'a str,
    terms: &'a [TermCount],
    text_start: u32,
    /// Tokens counted per field.
    pub(super) lens: [u32; FIELDS],
    /// The record's content fingerprint ([`Record::fingerprint`]).
    pub(super) fingerprint: u64,
}

impl<'a> Tokens<'a> {
    /// Each distinct token with its dictionary hash ([`term_hash`]) and its frequency per field,
    /// in order of first occurrence.
    pub(super) fn each_term(&self) -> impl Iterator<Item = (&'a str, u64, [u8; FIELDS])> + 'a {
        let text = self.text;
        let mut start = self.text_start as usize;
        self.terms.iter().map(move |term| {
            let token = &text[start..term.end as usize];
            start = term.end as usize;
            (token, term.hash, term.tf)
        })
    }
}

/// The hash of `token` in the index's term dictionary ([`crate::terms::Dictionary::hash`]: its hasher has a
/// fixed seed, so any thread computes the same hash).
pub(super) fn term_hash(token: &str) -> u64 {
    FoldHashState::default().hash_one(token)
}

thread_local! {
    /// The distinct tokens of the record being tokenized, `(hash, position in
    /// TokensChunk::terms)`, kept between records so that its table is allocated once per thread.
    static DISTINCT: std::cell::RefCell<HashTable<(u64, u32)>> =
        const { std::cell::RefCell::new(HashTable::new()) };
}

impl TokensChunk {
    /// Tokenizes `records`, except those held unchanged (see [`Fingerprinted`]).
    pub(super) fn of_records(records: &[Record], held: &[Fingerprinted]) -> Self {
        DISTINCT.with(|cell| match cell.try_borrow_mut() {
            Ok(mut distinct) => Self::tokenize(records, held, &mut distinct),
            Err(_) => Self::tokenize(records, held, &mut HashTable::new()),
        })
    }

    /// One record, tokenized.
    pub(super) fn of_record(record: &Record) -> Self {
        Self::of_records(
            std::slice::from_ref(record),
            &[(record.fingerprint(), false)],
        )
    }

    /// The tokens of record `at` of the run, `None` if it was not tokenized.
    pub(super) fn get(&self, at: usize) -> Option<Tokens<'_>> {
        let span = self.records[at]?;
        Some(Tokens {
            text: &self.text,
            terms: &self.terms[span.terms_start as usize..span.terms_end as usize],
            text_start: span.text_start,
            lens: span.lens,
            fingerprint: span.fingerprint,
        })
    }

    fn tokenize(
        records: &[Record],
        held: &[Fingerprinted],
        distinct: &mut HashTable<(u64, u32)>,
    ) -> Self {
        let mut chunk = TokensChunk {
            records: Vec::with_capacity(records.len()),
            ..TokensChunk::default()
        };
        for (record, &(fingerprint, held)) in records.iter().zip(held) {
            let span = (!held).then(|| chunk.add_record(record, fingerprint, distinct));
            chunk.records.push(span);
        }
        chunk
    }

    /// Appends the distinct tokens of `record` (with content `fingerprint`).
    fn add_record(
        &mut self,
        record: &Record,
        fingerprint: u64,
        distinct: &mut HashTable<(u64, u32)>,
    ) -> RecordSpan {
        distinct.clear();
        let text_start = self.text.len() as u32;
        let terms_start = self.terms.len() as u32;
        let Self { text, terms, .. } = self;
        let mut lens = [0u32; FIELDS];
        let mut add_text = |field: usize, source: &str| {
            for_each_token(source, |token| {
                if lens[field] >= MAX_FIELD_TOKENS || text.len() + token.len() > u32::MAX as usize {
                    return;
                }
                lens[field] += 1;
                let hash = term_hash(token);
                let slice = |at: u32| {
                    let start = if at == terms_start {
                        text_start
                    } else {
                        terms[at as usize - 1].end
                    };
                    &text[start as usize..terms[at as usize].end as usize]
                };
                if let Some(&(_, at)) =
                    distinct.find(hash, |&(h, at)| h == hash && slice(at) == token)
                {
                    let tf = &mut terms[at as usize].tf[field];
                    *tf = tf.saturating_add(1);
                    return;
                }
                let at = terms.len() as u32;
                text.push_str(token);
                let mut tf = [0u8; FIELDS];
                tf[field] = 1;
                terms.push(TermCount {
                    end: text.len() as u32,
                    hash,
                    tf,
                });
                distinct.insert_unique(hash, (hash, at), |&(h, _)| h);
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
        RecordSpan {
            text_start,
            terms_start,
            terms_end: self.terms.len() as u32,
            lens,
            fingerprint,
        }
    }
}

/// Records tokenized together into one [`TokensChunk`]: the unit of work the tokenizing threads
/// share (small enough that threads finishing at different times still share a batch evenly).
const CHUNK_RECORDS: usize = 256;
/// Smallest batch tokenized on several threads.
const PARALLEL_TOKENIZE_MIN: usize = 4096;
/// Most records tokenized ahead of their insertion.
pub(super) const TOKENIZE_BATCH: usize = 16 * 1024;

/// Threads that tokenize a large batch: the machine's cores, at most 8.
pub(super) fn tokenize_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// A record's fingerprint, and whether the index holds it unchanged (then it is not tokenized).
pub(super) type Fingerprinted = (u64, bool);

/// The tokens of a batch of records, in chunks of [`CHUNK_RECORDS`] records.
#[derive(Debug, Default)]
pub(super) struct BatchTokens {
    chunks: Vec<TokensChunk>,
}

impl BatchTokens {
    /// The tokens of record `at` of the batch, `None` if it was not tokenized.
    pub(super) fn get(&self, at: usize) -> Option<Tokens<'_>> {
        self.chunks[at / CHUNK_RECORDS].get(at % CHUNK_RECORDS)
    }
}

/// The tokenizing of one batch, shared by any number of threads: each [`Self::work`] takes the
/// next untokenized chunk until none is left, so a thread that is done with other work (inserting
/// the previous batch) joins in instead of waiting. [`Self::finish`] collects the chunks in order.
pub(super) struct TokenizeJob<'a> {
    records: &'a [Record],
    held: &'a [Fingerprinted],
    /// The next chunk to take.
    next: AtomicUsize,
    chunks: Vec<OnceLock<TokensChunk>>,
}

impl<'a> TokenizeJob<'a> {
    /// The job of tokenizing `records`, except those held unchanged (see [`Fingerprinted`]).
    pub(super) fn new(records: &'a [Record], held: &'a [Fingerprinted]) -> Self {
        debug_assert_eq!(records.len(), held.len());
        Self {
            records,
            held,
            next: AtomicUsize::new(0),
            chunks: (0..records.len().div_ceil(CHUNK_RECORDS))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Tokenizes chunks until every chunk is taken.
    pub(super) fn work(&self) {
        loop {
            let at = self.next.fetch_add(1, Ordering::Relaxed);
            if at >= self.chunks.len() {
                return;
            }
            let range = at * CHUNK_RECORDS..self.records.len().min((at + 1) * CHUNK_RECORDS);
            let chunk = TokensChunk::of_records(&self.records[range.clone()], &self.held[range]);
            // Each chunk is taken once, so the slot is empty.
            let _ = self.chunks[at].set(chunk);
        }
    }

    /// The tokens of the batch, in order (call after every thread's [`Self::work`] returned). A
    /// chunk that a thread took but did not finish (it panicked) is tokenized here.
    pub(super) fn finish(self) -> BatchTokens {
        let chunks = self
            .chunks
            .into_iter()
            .enumerate()
            .map(|(at, slot)| {
                slot.into_inner().unwrap_or_else(|| {
                    let range =
                        at * CHUNK_RECORDS..self.records.len().min((at + 1) * CHUNK_RECORDS);
                    TokensChunk::of_records(&self.records[range.clone()], &self.held[range])
                })
            })
            .collect();
        BatchTokens { chunks }
    }
}

/// Tokenizes `records`, except those held unchanged (see [`Fingerprinted`]), on this thread and
/// (for a large batch) `threads - 1` more.
pub(super) fn tokenize_all(
    records: &[Record],
    held: &[Fingerprinted],
    threads: usize,
) -> BatchTokens {
    let job = TokenizeJob::new(records, held);
    let helpers = if records.len() < PARALLEL_TOKENIZE_MIN {
        0
    } else {
        threads.saturating_sub(1)
    };
    std::thread::scope(|scope| {
        let job = &job;
        let helpers: Vec<_> = (0..helpers).map(|_| scope.spawn(|| job.work())).collect();
        job.work();
        for helper in helpers {
            // A helper that panicked left its chunk to `finish`.
            let _ = helper.join();
        }
    });
    job.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ParameterText;

    #[test]
    fn distinct_tokens_count_per_field_in_first_occurrence_order() {
        let record = Record {
            key: "crm__get_user".to_owned(),
            group: "crm".to_owned(),
            tool: "get_user".to_owned(),
            description: "Get the user, the user's name".to_owned(),
            parameter_text: ParameterText {
                names: vec!["user".to_owned()],
                texts: Vec::new(),
            },
        };
        let chunk = TokensChunk::of_record(&record);
        let tokens = chunk.get(0).unwrap();
        let terms: Vec<(&str, [u8; FIELDS])> = tokens
            .each_term()
            .map(|(token, _, tf)| (token, tf))
            .collect();
        assert_eq!(
            terms,
            [
                ("get", [1, 0, 1, 0, 0]),
                ("user", [1, 0, 2, 1, 0]),
                ("get_user", [1, 0, 0, 0, 0]),
                ("crm", [0, 1, 0, 0, 0]),
                ("the", [0, 0, 2, 0, 0]),
                ("s", [0, 0, 1, 0, 0]),
                ("name", [0, 0, 1, 0, 0]),
            ]
        );
        assert_eq!(tokens.lens, [3, 1, 7, 1, 0]);
        assert_eq!(tokens.fingerprint, record.fingerprint());
        assert!(tokens
            .each_term()
            .all(|(token, hash, _)| hash == term_hash(token)));
    }

    /// A record's distinct tokens (with hashes and frequencies) and field lengths.
    type Counted<'a> = (Vec<(&'a str, u64, [u8; FIELDS])>, [u32; FIELDS]);

    fn terms(tokens: Option<Tokens<'_>>) -> Option<Counted<'_>> {
        tokens.map(|tokens| (tokens.each_term().collect(), tokens.lens))
    }

    #[test]
    fn a_batch_tokenized_on_several_threads_equals_one_thread() {
        let records: Vec<Record> = (0..PARALLEL_TOKENIZE_MIN + 3 * CHUNK_RECORDS / 2)
            .map(|i| Record {
                key: format!("g__tool_{i}"),
                group: "g".to_owned(),
                tool: format!("tool_{i}"),
                description: format!("finds item {} of {}", i % 7, i % 13),
                parameter_text: ParameterText::default(),
            })
            .collect();
        // Every third record is held unchanged: not tokenized.
        let held: Vec<Fingerprinted> = records
            .iter()
            .enumerate()
            .map(|(i, record)| (record.fingerprint(), i % 3 == 0))
            .collect();
        let one = tokenize_all(&records, &held, 1);
        let several = tokenize_all(&records, &held, 3);
        for (at, record) in records.iter().enumerate() {
            assert_eq!(terms(one.get(at)), terms(several.get(at)));
            assert_eq!(one.get(at).is_none(), held[at].1);
            if let Some(tokens) = several.get(at) {
                let alone = TokensChunk::of_record(record);
                assert_eq!(terms(Some(tokens)), terms(alone.get(0)));
            }
        }
    }
}
