//! Tokenizing of records: each field of a [`Record`] through [`crate::tokenize`], counted into
//! its distinct tokens; a large batch split over the machine's cores.

use std::hash::BuildHasher;

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

/// The distinct tokens of one record with their frequency in each field, in order of first
/// occurrence, one after another in one buffer (`terms` holds each one's end in `text`, its start
/// being the previous one's end), with the per-field token counts and the record's content
/// fingerprint. Counted here, on the tokenizing threads, so that inserting a record looks up each
/// distinct token once.
pub(super) struct Tokens {
    pub(super) text: String,
    pub(super) terms: Vec<(u32, [u8; FIELDS])>,
    pub(super) lens: [u32; FIELDS],
    pub(super) fingerprint: u64,
}

impl Tokens {
    /// Each distinct token with its frequency per field, in order of first occurrence.
    pub(super) fn each_term(&self) -> impl Iterator<Item = (&str, [u8; FIELDS])> + '_ {
        let mut start = 0usize;
        self.terms.iter().map(move |&(end, tf)| {
            let token = &self.text[start..end as usize];
            start = end as usize;
            (token, tf)
        })
    }
}

thread_local! {
    /// The distinct tokens of the record being tokenized, `(hash, position in Tokens::terms)`,
    /// kept between records so that its table is allocated once per thread.
    static DISTINCT: std::cell::RefCell<HashTable<(u64, u32)>> =
        const { std::cell::RefCell::new(HashTable::new()) };
}

impl Tokens {
    pub(super) fn of_record(record: &Record) -> Self {
        Self::of_record_with(record, record.fingerprint())
    }

    /// [`Self::of_record`] for a record whose `fingerprint` is known.
    pub(super) fn of_record_with(record: &Record, fingerprint: u64) -> Self {
        DISTINCT.with(|cell| match cell.try_borrow_mut() {
            Ok(mut distinct) => Self::tokenize(record, fingerprint, &mut distinct),
            Err(_) => Self::tokenize(record, fingerprint, &mut HashTable::new()),
        })
    }

    fn tokenize(record: &Record, fingerprint: u64, distinct: &mut HashTable<(u64, u32)>) -> Self {
        distinct.clear();
        // (Buffers sized up front would leave holes in the heap among the index's allocations.)
        let mut text = String::new();
        let mut terms: Vec<(u32, [u8; FIELDS])> = Vec::new();
        let mut lens = [0u32; FIELDS];
        let state = FoldHashState::default();
        let mut add_text = |field: usize, source: &str| {
            for_each_token(source, |token| {
                if lens[field] >= MAX_FIELD_TOKENS || text.len() + token.len() > u32::MAX as usize {
                    return;
                }
                lens[field] += 1;
                let hash = state.hash_one(token);
                let slice = |at: u32| {
                    let start = if at == 0 { 0 } else { terms[at as usize - 1].0 };
                    &text[start as usize..terms[at as usize].0 as usize]
                };
                if let Some(&(_, at)) =
                    distinct.find(hash, |&(h, at)| h == hash && slice(at) == token)
                {
                    let tf = &mut terms[at as usize].1[field];
                    *tf = tf.saturating_add(1);
                    return;
                }
                let at = terms.len() as u32;
                text.push_str(token);
                let mut tf = [0u8; FIELDS];
                tf[field] = 1;
                terms.push((text.len() as u32, tf));
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
        Tokens {
            text,
            terms,
            lens,
            fingerprint,
        }
    }
}

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

/// Tokenizes `records` in order, except those held unchanged (see [`Fingerprinted`]), splitting a large batch over
/// `threads` threads (scoped threads; a thread that panics has its share tokenized again on the
/// calling thread).
pub(super) fn tokenize_all(
    records: &[Record],
    skip: &[Fingerprinted],
    threads: usize,
) -> Vec<Option<Tokens>> {
    let of = |(record, &(fingerprint, skip)): (&Record, &Fingerprinted)| {
        (!skip).then(|| Tokens::of_record_with(record, fingerprint))
    };
    let tokenize = |records: &[Record], skip: &[Fingerprinted]| -> Vec<Option<Tokens>> {
        records.iter().zip(skip).map(of).collect()
    };
    if records.len() < PARALLEL_TOKENIZE_MIN || threads < 2 {
        return tokenize(records, skip);
    }
    let chunk = records.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = records
            .chunks(chunk)
            .zip(skip.chunks(chunk))
            .map(|(part, skip)| (part, skip, scope.spawn(move || tokenize(part, skip))))
            .collect();
        handles
            .into_iter()
            .flat_map(|(part, skip, handle)| handle.join().unwrap_or_else(|_| tokenize(part, skip)))
            .collect()
    })
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
        let tokens = Tokens::of_record(&record);
        let terms: Vec<(&str, [u8; FIELDS])> = tokens.each_term().collect();
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
    }
}
