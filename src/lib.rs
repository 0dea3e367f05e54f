//! Rust core of `pydantic-ai-toolproxy`.
//!
//! The crate is plain Rust: `cargo test` builds and tests it without Python. The optional
//! `python` feature adds the thin `pydantic_ai_toolproxy._core` extension module
//! (`src/python/`), which only converts values and maps errors; every rule lives here.
//!
//! * [`names`]: group-name, description, tool-name and configuration validation, canonical names.
//! * [`tokenize`]: the one tokenizer used for indexed records and for queries.
//! * [`terms`]: index terms of tokens (English stemming) and query weights of function words.
//! * [`index`]: the incremental inverted index with BM25F ranking.
//! * [`page`]: byte-exact planning of budgeted search-result pages.
//! * [`embedding_text`]: hybrid search's tool text and its `BLAKE2b` fingerprint (as the Python recipe).

use std::fmt;

pub mod embedding_text;
pub mod index;
pub mod names;
pub mod page;
pub mod synonyms;
pub mod terms;
pub mod tokenize;

#[cfg(feature = "python")]
mod python;

/// A rejected input. The binding raises it as Python `ValueError` with [`Error::message`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// Creates an error carrying a complete, user-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The user-facing message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Items from which a bulk operation (fingerprinting or attaching the vectors of a whole tool
/// collection) is split over several threads.
pub const BULK_PARALLEL_FROM: usize = 8_192;

/// Threads for a bulk operation over `items`: 1 below [`BULK_PARALLEL_FROM`], else the
/// machine's parallelism, at most 4.
pub fn bulk_workers(items: usize) -> usize {
    if items < BULK_PARALLEL_FROM {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Result alias used across the core.
pub type Result<T> = std::result::Result<T, Error>;
