//! Tokenizing of records: each field of a [`Record`] through [`crate::tokenize`] into one buffer,
//! a large batch split over the machine's cores.

use super::bm25f::{DESCRIPTION, FIELDS, GROUP, NAME, PARAMETER_NAMES, PARAMETER_TEXT};
use super::record::Record;
use super::schema_text::{truncate_str, MAX_PARAMETER_TEXT_BYTES};
use crate::tokenize::for_each_token;

/// Most text indexed from a description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// Most tokens indexed per field of one record.
pub const MAX_FIELD_TOKENS: u32 = 4096;

/// The tokens of one record, by field, in one buffer (`spans` are `(field, start, end)` byte
/// ranges of `text`), with the per-field token counts and the record's content fingerprint.
pub(super) struct Tokens {
    pub(super) text: String,
    pub(super) spans: Vec<(u8, u32, u32)>,
    pub(super) lens: [u32; FIELDS],
    pub(super) fingerprint: u64,
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
            fingerprint: record.fingerprint(),
        }
    }
}

/// Smallest batch tokenized on several threads.
const PARALLEL_TOKENIZE_MIN: usize = 4096;
/// Most records tokenized ahead of their insertion.
pub(super) const TOKENIZE_BATCH: usize = 16 * 1024;

/// Tokenizes `records` in order, splitting a large batch over the machine's cores (scoped
/// threads; a thread that panics has its share tokenized again on the calling thread).
pub(super) fn tokenize_all(records: &[Record]) -> Vec<Tokens> {
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
