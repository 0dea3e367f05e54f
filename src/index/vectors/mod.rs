//! Tool vectors (embeddings) for hybrid ranking: storage, quantization and the exact top-`k`
//! by cosine.
//!
//! Each vector is L2-normalized and quantized to `i8` codes (`round(127 * x / max |x|)`); the
//! cosine of a query with a tool is the cosine between the query's codes and the tool's codes,
//! `dot(q, t) * inverse_norm(q) * inverse_norm(t)`, with the dot product computed exactly in
//! integers. So a cosine is the same on every machine and for every evaluation order, and equal
//! inputs rank equally. The query is quantized finer, to `i16` codes (as many levels as keep the
//! `i32` dot product from overflowing), so nearly all of the error is the tools' quantization.
//!
//! Storage, per tool with a vector at `d` dimensions: the codes as a sign plane and packed low
//! bits ([`codes`], `d` bytes when `d` is a multiple of 64), a 4-byte inverse norm,
//! the slot's document (4 bytes) and the document's slot (4 bytes, per document slot): `d + 12`
//! bytes, 396 B at 384 dimensions and 1,548 B at 1,536. Slots are dense (a dropped vector's slot is
//! filled by the last one), so the scan reads one contiguous array.
//!
//! The nearest documents of a query: above [`PREFILTER_POOL`] selected vectors, the prefilter
//! ([`prefilter`]) reads the sign planes alone and keeps a pool of at least
//! [`PREFILTER_POOL`] slots, which are decoded and ranked by their exact cosine; at most that many
//! are all ranked by their exact cosine. The pool was sized on real embeddings (see
//! [`PREFILTER_POOL`]).

mod codes;
mod dots;
mod nearest;
mod prefilter;
mod quantize;
#[cfg(target_arch = "x86_64")]
mod simd;
mod slots;

pub(super) use nearest::QueryVector;
pub(super) use slots::Vectors;

use quantize::codes_of;

/// Slots the prefilter keeps for the exact rerank (at least; all when fewer are selected).
/// Chosen on the all-MiniLM-L6-v2 vectors of the 1,582 BFCL tools replicated to 100,000
/// (`bench_hybrid.rs`, 501 questions), recall@50 against the exact `f32` top-50: 0.9906 for the
/// exact scan of every code; with the prefilter 0.9860 / 0.9899 / 0.9903 / 0.9905 for pools of
/// 1,024 / 2,048 / 3,072 / 4,096 (the floor asked for is 0.99; the rerank of 3,072 costs about
/// 0.1 ms).
pub const PREFILTER_POOL: usize = 3072;

/// The least sign balance ([`Vectors::signs_balanced`]) at which the prefilter runs; below it the
/// nearest are found by the exact cosine of every vector. all-MiniLM-L6-v2 vectors of the BFCL
/// tools have 0.90 (those of 526 real MCP tools 0.86), where the prefilter's recall@50 is within
/// 0.001 of the exact scan's. On synthetic vectors around a common direction (10,000 x 128, the
/// recall of the prefilter against the exact scan's): balance 0.88, 0.988 against 0.990; 0.80,
/// 0.984 against 0.990; 0.70, 0.966 against 0.984; 0.40, 0.859 against 0.971.
pub const SIGN_BALANCE_FLOOR: f64 = 0.85;

/// Most dimensions a vector may have (the largest `OpenAI` embedding model has 3,072; this leaves room and keeps
/// the query's codes at 8 bits or more, see [`quantize::query_range`]).
pub const MAX_DIMENSIONS: usize = 16_384;

/// Checks a little-endian `f32` buffer of `rows` vectors of `dimensions` and returns the values.
pub(super) fn parse_rows(bytes: &[u8], rows: usize, dimensions: usize) -> crate::Result<Vec<f32>> {
    check_rows(bytes, rows, dimensions)?;
    Ok(bytes.chunks_exact(4).map(value).collect())
}

/// The `f32` of a 4-byte little-endian chunk.
#[inline]
fn value(chunk: &[u8]) -> f32 {
    f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])
}

/// Checks that `bytes` holds `rows` vectors of `dimensions` little-endian `f32`s, all finite
/// (without copying them).
pub(super) fn check_rows(bytes: &[u8], rows: usize, dimensions: usize) -> crate::Result<()> {
    if dimensions == 0 || dimensions > MAX_DIMENSIONS {
        return Err(crate::Error::new(format!(
            "vector dimensions must be between 1 and {MAX_DIMENSIONS}, got {dimensions}"
        )));
    }
    let expected = rows
        .checked_mul(dimensions)
        .and_then(|values| values.checked_mul(4));
    if expected != Some(bytes.len()) {
        return Err(crate::Error::new(format!(
            "vectors must hold {rows} x {dimensions} little-endian float32 values ({} bytes), got {} bytes",
            expected.map_or_else(|| "too many".to_owned(), |e| e.to_string()),
            bytes.len()
        )));
    }
    // Non-finite: all exponent bits set (a branch-free pass that vectorizes).
    let finite = bytes.chunks_exact(4).fold(true, |all, chunk| {
        all & (value(chunk).to_bits() & 0x7f80_0000 != 0x7f80_0000)
    });
    if !finite {
        let at = bytes
            .chunks_exact(4)
            .position(|chunk| !value(chunk).is_finite())
            .unwrap_or(0);
        return Err(crate::Error::new(format!(
            "vector {} holds a non-finite value ({}) at dimension {}",
            at / dimensions,
            value(&bytes[4 * at..4 * at + 4]),
            at % dimensions
        )));
    }
    Ok(())
}
impl super::SearchIndex {
    /// Attaches vectors to the live records `keys` (unknown keys are ignored): `vectors` holds
    /// `keys.len()` rows of `dimensions` little-endian `f32`s, row-major. Each is L2-normalized
    /// and quantized (see the module docs); a record keeps its vector across upserts of its key
    /// and loses it with the record. The first vector fixes the index's dimensionality.
    ///
    /// Errors (nothing is stored then): a buffer of another length, `dimensions` 0 or over
    /// [`MAX_DIMENSIONS`], a non-finite value, another dimensionality than the index's (unless
    /// [`Self::clear_vectors`] ran since).
    pub fn set_vectors<S: AsRef<str>>(
        &mut self,
        keys: &[S],
        vectors: &[u8],
        dimensions: usize,
    ) -> crate::Result<()> {
        check_rows(vectors, keys.len(), dimensions)?;
        self.vectors.check_dimensions(dimensions)?;
        self.attach_rows(keys, vectors.chunks_exact(4 * dimensions), dimensions);
        Ok(())
    }

    /// [`Self::set_vectors`] with one row per key, each its own slice (no buffer of all rows
    /// joined): the same checks (a row of another length counts as a bad length), the same
    /// result.
    pub fn set_vector_rows<S: AsRef<str>, R: AsRef<[u8]>>(
        &mut self,
        keys: &[S],
        rows: &[R],
        dimensions: usize,
    ) -> crate::Result<()> {
        if keys.len() != rows.len() {
            return Err(crate::Error::new(format!(
                "{} keys but {} vector rows",
                keys.len(),
                rows.len()
            )));
        }
        for (at, row) in rows.iter().enumerate() {
            check_rows(row.as_ref(), 1, dimensions)
                .map_err(|e| crate::Error::new(format!("vector row {at}: {e}")))?;
        }
        self.vectors.check_dimensions(dimensions)?;
        self.attach_rows(keys, rows.iter().map(AsRef::as_ref), dimensions);
        Ok(())
    }

    /// Stores checked `rows` (one per key, `dimensions` values each) on the live records `keys`.
    fn attach_rows<'a, S: AsRef<str>>(
        &mut self,
        keys: &[S],
        rows: impl Iterator<Item = &'a [u8]>,
        dimensions: usize,
    ) {
        let docs: Vec<Option<u32>> = keys.iter().map(|key| self.doc_of(key.as_ref())).collect();
        let added = docs
            .iter()
            .flatten()
            .filter(|&&doc| !self.vectors.has(doc))
            .count();
        self.vectors.reserve(added, dimensions, self.docs.len());
        let work: Vec<(u32, &[u8])> = docs
            .into_iter()
            .zip(rows)
            .filter_map(|(doc, bytes)| doc.map(|doc| (doc, bytes)))
            .collect();
        let workers = crate::bulk_workers(work.len());
        if workers > 1 {
            // A bulk load (a restart attaching every cached vector): the rows are quantized by
            // `workers` threads, then stored in order, as the loop below would store them.
            let mut codes = vec![0i8; work.len() * dimensions];
            let mut norms = vec![0f32; work.len()];
            let chunk = work.len().div_ceil(workers);
            std::thread::scope(|scope| {
                for ((part, codes), norms) in work
                    .chunks(chunk)
                    .zip(codes.chunks_mut(chunk * dimensions))
                    .zip(norms.chunks_mut(chunk))
                {
                    scope.spawn(move || {
                        let (mut row, mut scratch) = (
                            Vec::with_capacity(dimensions),
                            Vec::with_capacity(dimensions),
                        );
                        for (((_, bytes), out), norm) in part
                            .iter()
                            .zip(codes.chunks_exact_mut(dimensions))
                            .zip(norms.iter_mut())
                        {
                            row.clear();
                            row.extend(bytes.chunks_exact(4).map(value));
                            *norm = codes_of(&row, &mut scratch);
                            out.copy_from_slice(&scratch);
                        }
                    });
                }
            });
            for (((doc, _), codes), &norm) in
                work.iter().zip(codes.chunks_exact(dimensions)).zip(&norms)
            {
                self.vectors.store_codes(*doc, codes, norm);
            }
            return;
        }
        // One row at a time through reused buffers: no copy of the whole buffer as `f32`s.
        let (mut row, mut codes) = (
            Vec::with_capacity(dimensions),
            Vec::with_capacity(dimensions),
        );
        for (doc, bytes) in work {
            row.clear();
            row.extend(bytes.chunks_exact(4).map(value));
            self.vectors.set_with(doc, &row, &mut codes);
        }
    }

    /// Drops the vectors of `keys` (unknown keys and keys without a vector are ignored).
    pub fn drop_vectors<S: AsRef<str>>(&mut self, keys: impl IntoIterator<Item = S>) {
        for key in keys {
            if let Some(doc) = self.doc_of(key.as_ref()) {
                self.vectors.drop_doc(doc);
            }
        }
    }

    /// Drops every vector and the dimensionality.
    pub fn clear_vectors(&mut self) {
        self.vectors.clear();
    }

    /// Number of live records with a vector.
    pub fn vector_count(&self) -> usize {
        self.vectors.len()
    }

    /// The dimensionality of the vectors (`None` before the first, or after
    /// [`Self::clear_vectors`]).
    pub fn vector_dimensions(&self) -> Option<usize> {
        self.vectors.dimensions()
    }

    /// The live records among `keys` without a vector, in the order given (unknown keys are
    /// left out).
    pub fn vector_keys_missing<S: AsRef<str>>(&self, keys: &[S]) -> Vec<String> {
        keys.iter()
            .map(AsRef::as_ref)
            .filter(|key| self.doc_of(key).is_some_and(|doc| !self.vectors.has(doc)))
            .map(str::to_owned)
            .collect()
    }

    /// Bytes held per record with a vector of `dimensions` (see the module docs).
    pub const fn vector_bytes_per_record(dimensions: usize) -> usize {
        Vectors::bytes_per_vector(dimensions)
    }

    /// Bytes allocated for vectors now.
    pub fn vector_heap_bytes(&self) -> usize {
        self.vectors.heap_bytes()
    }
}

#[cfg(test)]
#[path = "../tests/vectors.rs"]
mod tests;
