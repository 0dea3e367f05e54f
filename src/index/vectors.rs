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
//! bits ([`super::vector_codes`], `d` bytes when `d` is a multiple of 64), a 4-byte inverse norm,
//! the slot's document (4 bytes) and the document's slot (4 bytes, per document slot): `d + 12`
//! bytes, 396 B at 384 dimensions and 1,548 B at 1,536. Slots are dense (a dropped vector's slot is
//! filled by the last one), so the scan reads one contiguous array.
//!
//! The nearest documents of a query: above [`PREFILTER_POOL`] selected vectors, the prefilter
//! ([`super::vector_scan`]) reads the sign planes alone and keeps a pool of at least
//! [`PREFILTER_POOL`] slots, which are decoded and ranked by their exact cosine; at most that many
//! are all ranked by their exact cosine. The pool was sized on real embeddings (see
//! [`PREFILTER_POOL`]).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::vector_codes::{self, low_bytes, sign_words};
use super::vector_dots::{dots, Planes};
use super::vector_scan::{self, ScanQuery};

/// No slot / no document.
const NONE: u32 = u32::MAX;
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
/// the query's codes at 8 bits or more, see [`query_range`]).
pub const MAX_DIMENSIONS: usize = 16_384;

thread_local! {
    /// The prefilter's distances, reused by this thread's queries.
    static DISTANCES: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The quantized vectors of the live documents that have one.
#[derive(Debug, Default)]
pub(super) struct Vectors {
    /// The one dimensionality (`None` until the first vector after a clear).
    dimensions: Option<usize>,
    /// Sign planes of the codes, [`sign_words`] per slot, row-major.
    signs: Vec<u64>,
    /// Packed low bits of the codes, [`low_bytes`] per slot, row-major.
    low: Vec<u8>,
    /// `1 / ||codes||` per slot (0 for a zero vector).
    inverse_norms: Vec<f32>,
    /// The document of each slot.
    slot_doc: Vec<u32>,
    /// The slot of each document ([`NONE`]: no vector); may be shorter than the documents.
    doc_slot: Vec<u32>,
    /// Per dimension, the slots whose code is negative (for [`Self::signs_balanced`]).
    negatives: Vec<u32>,
}

/// A query vector, quantized for [`Vectors::cosines`].
#[derive(Debug, Clone)]
pub(super) struct QueryVector {
    codes: Vec<i16>,
    inverse_norm: f64,
    scan: ScanQuery,
}

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

/// The codes of `vector` scaled so its largest magnitude is `range`, rounded half away from zero
/// (all zero for a zero vector). Normalizing first does not change them (the scale is relative to
/// the maximum), so the codes are those of the L2-normalized vector. `f32` arithmetic and a
/// truncating conversion: no library call per value, the same result on every machine.
fn quantize<T>(vector: &[f32], range: f32, cast: impl Fn(i32) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(vector.len());
    quantize_into(vector, range, cast, &mut out);
    out
}

/// [`quantize`] into `out` (cleared first).
fn quantize_into<T>(vector: &[f32], range: f32, cast: impl Fn(i32) -> T, out: &mut Vec<T>) {
    let (magnify, scale) = scales(vector, range);
    out.clear();
    out.extend(vector.iter().map(|&x| {
        let scaled = (x * magnify * scale).clamp(-range, range);
        cast((scaled + 0.5f32.copysign(scaled)) as i32)
    }));
}

/// Below this largest magnitude `range / largest` may overflow `f32` (a vector of subnormal
/// values), which would turn every nonzero value into `+-range`.
const TINY: f32 = 1e-30;

/// `(magnify, scale)` for quantizing `vector` to `range`: `x * magnify * scale` maps the largest
/// magnitude to `range` (`scale` 0 for a zero vector). `magnify` is 1, or `2^100` for a vector whose
/// largest magnitude is below [`TINY`] (a power of two: exact, so it changes no direction; and
/// `x * 1` is `x`, so other vectors get the codes they always had).
pub(super) fn scales(vector: &[f32], range: f32) -> (f32, f32) {
    let largest = vector.iter().fold(0.0f32, |most, &x| most.max(x.abs()));
    let magnify = if largest < TINY {
        f32::from_bits((127 + 100) << 23)
    } else {
        1.0
    };
    let largest = largest * magnify;
    (magnify, if largest > 0.0 { range / largest } else { 0.0 })
}

/// The int8 codes of `vector` into `codes` (cleared first) and their inverse norm: what a
/// stored vector is.
fn codes_of(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    quantize_into(vector, 127.0, |x| x as i8, codes);
    inverse_norm(codes.iter().map(|&c| i64::from(c))) as f32
}

/// `1 / ||codes||` (0 for all-zero codes).
fn inverse_norm(codes: impl Iterator<Item = i64>) -> f64 {
    let squares: i64 = codes.map(|c| c * c).sum();
    if squares == 0 {
        0.0
    } else {
        1.0 / (squares as f64).sqrt()
    }
}

/// The query's code range at `dimensions`: the largest `r <= 32767` with
/// `r * 127 * dimensions < 2^31`, so the `i32` dot product cannot overflow.
fn query_range(dimensions: usize) -> f32 {
    let limit = (i32::MAX as usize) / (127 * dimensions.max(1));
    limit.min(i16::MAX as usize) as f32
}

/// A document with its cosine, ordered by cosine then by document (for the top-`k` heap: a
/// greater entry ranks lower).
#[derive(Debug, Clone, Copy)]
pub(super) struct Nearest {
    pub(super) doc: u32,
    pub(super) cosine: f32,
}

struct Worse(Nearest);

impl Ord for Worse {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .cosine
            .total_cmp(&self.0.cosine)
            .then_with(|| self.0.doc.cmp(&other.0.doc))
    }
}

impl PartialOrd for Worse {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Worse {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worse {}

impl Vectors {
    /// The dimensionality, once a vector is stored (until [`Self::clear`]).
    pub(super) fn dimensions(&self) -> Option<usize> {
        self.dimensions
    }

    /// Number of documents with a vector.
    pub(super) fn len(&self) -> usize {
        self.slot_doc.len()
    }

    /// Whether `doc` has a vector.
    pub(super) fn has(&self, doc: u32) -> bool {
        self.slot(doc).is_some()
    }

    fn slot(&self, doc: u32) -> Option<usize> {
        self.doc_slot
            .get(doc as usize)
            .copied()
            .filter(|&slot| slot != NONE)
            .map(|slot| slot as usize)
    }

    /// Checks that `dimensions` is the index's dimensionality (or that none is fixed yet).
    pub(super) fn check_dimensions(&self, dimensions: usize) -> crate::Result<()> {
        match self.dimensions {
            Some(fixed) if fixed != dimensions => Err(crate::Error::new(format!(
                "the index holds vectors of {fixed} dimensions, got {dimensions} \
                 (clear_vectors() first to change the dimensionality)"
            ))),
            _ => Ok(()),
        }
    }

    /// Stores `vector` (checked: finite, of the index's dimensionality) for `doc`, replacing its
    /// vector.
    #[cfg(test)]
    pub(super) fn set(&mut self, doc: u32, vector: &[f32]) {
        self.set_with(doc, vector, &mut Vec::new());
    }

    /// Stores `vector` (checked: finite, of the index's dimensionality) for `doc`, replacing its
    /// vector; `codes` is scratch for the quantized codes, reused across calls.
    pub(super) fn set_with(&mut self, doc: u32, vector: &[f32], codes: &mut Vec<i8>) {
        let norm = codes_of(vector, codes);
        self.store_codes(doc, codes, norm);
    }

    /// Stores the `codes` of a vector (of the index's dimensionality) and their inverse norm for
    /// `doc`, replacing its vector: the second half of [`Self::set_with`].
    pub(super) fn store_codes(&mut self, doc: u32, codes: &[i8], norm: f32) {
        let dimensions = codes.len();
        debug_assert!(self.check_dimensions(dimensions).is_ok());
        self.dimensions = Some(dimensions);
        let (words, bytes) = (sign_words(dimensions), low_bytes(dimensions));
        if self.negatives.len() != dimensions {
            self.negatives = vec![0; dimensions];
        }
        let slot = if let Some(slot) = self.slot(doc) {
            self.count_signs(slot, false);
            slot
        } else {
            self.signs.resize(self.signs.len() + words, 0);
            self.low.resize(self.low.len() + bytes, 0);
            self.inverse_norms.push(0.0);
            self.slot_doc.push(doc);
            if self.doc_slot.len() <= doc as usize {
                self.doc_slot.resize(doc as usize + 1, NONE);
            }
            let slot = self.slot_doc.len() - 1;
            self.doc_slot[doc as usize] = slot as u32;
            slot
        };
        vector_codes::encode(
            codes,
            &mut self.signs[slot * words..(slot + 1) * words],
            &mut self.low[slot * bytes..(slot + 1) * bytes],
        );
        self.inverse_norms[slot] = norm;
        self.count_signs(slot, true);
    }

    /// Adds (or takes away) the negative codes of `slot` to the per-dimension counts.
    fn count_signs(&mut self, slot: usize, add: bool) {
        let words = sign_words(self.negatives.len());
        for (w, &word) in self.signs[slot * words..(slot + 1) * words]
            .iter()
            .enumerate()
        {
            let mut bits = word;
            while bits != 0 {
                let count = &mut self.negatives[64 * w + bits.trailing_zeros() as usize];
                *count = if add { *count + 1 } else { *count - 1 };
                bits &= bits - 1;
            }
        }
    }

    /// Whether the sign planes carry enough to prefilter by: the mean over dimensions of
    /// `4 p (1 - p)`, `p` the share of vectors whose code is negative there, is at least
    /// [`SIGN_BALANCE_FLOOR`] (1 when every dimension splits the vectors in halves, 0 when every
    /// vector has the same signs). Embeddings that share a strong common direction have most signs
    /// alike, and a prefilter by signs then misses many of the nearest. A function of the stored
    /// codes alone (integer counts), so it does not depend on the order vectors came in.
    pub(super) fn signs_balanced(&self) -> bool {
        let total = self.slot_doc.len() as f64;
        if total == 0.0 || self.negatives.is_empty() {
            return true;
        }
        let balance: f64 = self
            .negatives
            .iter()
            .map(|&negative| {
                let p = f64::from(negative) / total;
                4.0 * p * (1.0 - p)
            })
            .sum::<f64>()
            / self.negatives.len() as f64;
        balance >= SIGN_BALANCE_FLOOR
    }

    /// Makes room for `added` more vectors of `dimensions` (exactly: a bulk load allocates no
    /// spare capacity) and for the slots of `docs` documents.
    pub(super) fn reserve(&mut self, added: usize, dimensions: usize, docs: usize) {
        self.signs.reserve_exact(added * sign_words(dimensions));
        self.low.reserve_exact(added * low_bytes(dimensions));
        self.inverse_norms.reserve_exact(added);
        self.slot_doc.reserve_exact(added);
        if self.doc_slot.len() < docs {
            self.doc_slot.reserve_exact(docs - self.doc_slot.len());
            self.doc_slot.resize(docs, NONE);
        }
    }

    /// Drops the vector of `doc` (none: nothing happens). The last slot moves into its place.
    pub(super) fn drop_doc(&mut self, doc: u32) {
        let Some(slot) = self.slot(doc) else { return };
        self.count_signs(slot, false);
        let dimensions = self.dimensions.unwrap_or(0);
        let (words, bytes) = (sign_words(dimensions), low_bytes(dimensions));
        let last = self.slot_doc.len() - 1;
        if slot != last {
            self.signs
                .copy_within(last * words..(last + 1) * words, slot * words);
            self.low
                .copy_within(last * bytes..(last + 1) * bytes, slot * bytes);
            self.inverse_norms[slot] = self.inverse_norms[last];
            let moved = self.slot_doc[last];
            self.slot_doc[slot] = moved;
            self.doc_slot[moved as usize] = slot as u32;
        }
        self.signs.truncate(last * words);
        self.low.truncate(last * bytes);
        self.inverse_norms.truncate(last);
        self.slot_doc.truncate(last);
        self.doc_slot[doc as usize] = NONE;
    }

    /// Moves the vector of `from` to `to` (a record re-added under a new document).
    pub(super) fn move_doc(&mut self, from: u32, to: u32) {
        let Some(slot) = self.slot(from) else { return };
        self.doc_slot[from as usize] = NONE;
        if self.doc_slot.len() <= to as usize {
            self.doc_slot.resize(to as usize + 1, NONE);
        }
        self.doc_slot[to as usize] = slot as u32;
        self.slot_doc[slot] = to;
    }

    /// Drops every vector and the dimensionality.
    pub(super) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Renumbers documents after compaction (`remap[old]` is the new id, or `u32::MAX` for a
    /// dropped document, whose vector goes).
    pub(super) fn remap(&mut self, remap: &[u32]) {
        let dropped: Vec<u32> = self
            .slot_doc
            .iter()
            .copied()
            .filter(|&doc| remap[doc as usize] == NONE)
            .collect();
        for doc in dropped {
            self.drop_doc(doc);
        }
        let mut doc_slot = vec![NONE; remap.iter().filter(|&&new| new != NONE).count()];
        for (slot, doc) in self.slot_doc.iter_mut().enumerate() {
            *doc = remap[*doc as usize];
            doc_slot[*doc as usize] = slot as u32;
        }
        self.doc_slot = doc_slot;
    }

    /// Releases unused capacity.
    pub(super) fn shrink_to_fit(&mut self) {
        self.signs.shrink_to_fit();
        self.low.shrink_to_fit();
        self.inverse_norms.shrink_to_fit();
        self.slot_doc.shrink_to_fit();
        self.doc_slot.shrink_to_fit();
    }

    /// Bytes held per stored vector at `dimensions` (sign plane, low bits, inverse norm, slot's
    /// document, document's slot).
    pub(super) const fn bytes_per_vector(dimensions: usize) -> usize {
        8 * sign_words(dimensions) + low_bytes(dimensions) + 4 + 4 + 4
    }

    /// Bytes allocated for the vectors now (capacities).
    pub(super) fn heap_bytes(&self) -> usize {
        8 * self.signs.capacity()
            + self.low.capacity()
            + 4 * (self.inverse_norms.capacity()
                + self.slot_doc.capacity()
                + self.doc_slot.capacity()
                + self.negatives.capacity())
    }

    /// Quantizes a query vector (checked: finite, of the index's dimensionality).
    pub(super) fn query(vector: &[f32]) -> QueryVector {
        let range = query_range(vector.len());
        let codes = quantize(vector, range, |x| x as i16);
        let inverse_norm = inverse_norm(codes.iter().map(|&c| i64::from(c)));
        QueryVector {
            codes,
            inverse_norm,
            scan: ScanQuery::new(vector),
        }
    }

    fn planes(&self, dimensions: usize) -> Planes<'_> {
        Planes {
            signs: &self.signs,
            low: &self.low,
            words: sign_words(dimensions),
            bytes: low_bytes(dimensions),
        }
    }

    fn cosine_of(&self, query: &QueryVector, slot: usize, dot: i32) -> f32 {
        (f64::from(dot) * query.inverse_norm * f64::from(self.inverse_norms[slot])) as f32
    }

    /// The cosine of `query` with the vector of `doc` (`None`: no vector).
    pub(super) fn cosine(&self, query: &QueryVector, doc: u32) -> Option<f32> {
        let slot = self.slot(doc)?;
        let mut out = [0i32];
        dots(
            &query.codes,
            self.planes(query.codes.len()),
            &[slot as u32],
            &mut out,
        );
        Some(self.cosine_of(query, slot, out[0]))
    }

    /// The `k` documents nearest to `query` among those `selected` accepts (`None`: every
    /// document), best first (cosine
    /// descending, then document ascending), and how many were scanned (the selected documents
    /// with a vector). Above [`PREFILTER_POOL`] selected vectors, the nearest of the prefilter's
    /// pool (see the module docs).
    pub(super) fn nearest(
        &self,
        query: &QueryVector,
        k: usize,
        selected: Option<&dyn Fn(u32) -> bool>,
    ) -> (Vec<Nearest>, usize) {
        self.nearest_with_pool(query, k, selected, PREFILTER_POOL)
    }

    /// [`Self::nearest`] with a prefilter pool of `pool` slots.
    pub(super) fn nearest_with_pool(
        &self,
        query: &QueryVector,
        k: usize,
        selected: Option<&dyn Fn(u32) -> bool>,
        pool: usize,
    ) -> (Vec<Nearest>, usize) {
        if k == 0 || self.dimensions != Some(query.codes.len()) {
            return (Vec::new(), 0);
        }
        let dimensions = query.codes.len();
        let planes = self.planes(dimensions);
        let slots = self.slot_doc.len();
        let (candidates, scanned) = if slots > pool && self.signs_balanced() {
            let by_slot = selected.map(|selected| move |slot: usize| selected(self.slot_doc[slot]));
            let run = |distances: &mut Vec<u32>| {
                distances.clear();
                distances.resize(slots, 0);
                vector_scan::distances(&query.scan, &self.signs, distances);
                vector_scan::pool(
                    distances,
                    planes.words,
                    pool,
                    by_slot.as_ref().map(|f| f as &dyn Fn(usize) -> bool),
                )
            };
            // One buffer per thread: a fresh 400 kB allocation per query is fresh pages from the
            // kernel each time.
            DISTANCES.with(|buffer| match buffer.try_borrow_mut() {
                Ok(mut buffer) => run(&mut buffer),
                Err(_) => run(&mut Vec::new()),
            })
        } else {
            let all: Vec<u32> = (0..slots as u32)
                .filter(|&slot| selected.is_none_or(|keep| keep(self.slot_doc[slot as usize])))
                .collect();
            let count = all.len();
            (all, count)
        };
        let mut dot_products = vec![0i32; candidates.len()];
        dots(&query.codes, planes, &candidates, &mut dot_products);
        let mut heap: BinaryHeap<Worse> = BinaryHeap::with_capacity(k + 1);
        for (&slot, &dot) in candidates.iter().zip(&dot_products) {
            let entry = Nearest {
                doc: self.slot_doc[slot as usize],
                cosine: self.cosine_of(query, slot as usize, dot),
            };
            if heap.len() < k {
                heap.push(Worse(entry));
            } else if let Some(mut worst) = heap.peek_mut() {
                if Worse(entry) < *worst {
                    *worst = Worse(entry);
                }
            }
        }
        let nearest = heap
            .into_sorted_vec()
            .into_iter()
            .map(|worse| worse.0)
            .collect();
        (nearest, scanned)
    }

    /// Test view: every document with a vector (for consistency checks).
    #[cfg(test)]
    pub(super) fn docs(&self) -> Vec<u32> {
        let mut docs = self.slot_doc.clone();
        docs.sort_unstable();
        docs
    }
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
mod tests {
    use super::super::vector_codes;
    use super::super::vector_dots::{dot, dots_portable};
    #[cfg(target_arch = "x86_64")]
    use super::super::vector_dots::{dots_avx2, dots_avx512};
    use super::*;

    fn bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn rows_are_checked() {
        assert_eq!(
            parse_rows(&bytes(&[1.0, 2.0]), 1, 2).unwrap(),
            vec![1.0, 2.0]
        );
        assert!(parse_rows(&bytes(&[1.0, 2.0]), 1, 3).is_err());
        assert!(parse_rows(&bytes(&[1.0, 2.0, 3.0]), 2, 1).is_err());
        assert!(parse_rows(&[0, 0, 0], 1, 1).is_err());
        assert!(parse_rows(&[], 0, 0).is_err());
        assert!(parse_rows(&bytes(&[1.0, f32::NAN]), 1, 2)
            .unwrap_err()
            .message()
            .contains("non-finite"));
        assert!(parse_rows(&bytes(&[f32::INFINITY]), 1, 1).is_err());
        assert!(parse_rows(&[], usize::MAX, 2).is_err());
        assert_eq!(parse_rows(&[], 0, 3).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn cosines_are_close_to_exact_and_zero_for_zero_vectors() {
        let mut vectors = Vectors::default();
        let a = [0.3f32, -0.2, 0.9, 0.05];
        let b = [0.1f32, 0.4, -0.3, 0.8];
        vectors.set(0, &a);
        vectors.set(1, &b);
        vectors.set(2, &[0.0; 4]);
        let exact = |x: &[f32], y: &[f32]| {
            let dot: f32 = x.iter().zip(y).map(|(a, b)| a * b).sum();
            let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>().sqrt();
            dot / (norm(x) * norm(y))
        };
        let query = Vectors::query(&a);
        assert!((vectors.cosine(&query, 0).unwrap() - 1.0).abs() < 1e-3);
        assert!((vectors.cosine(&query, 1).unwrap() - exact(&a, &b)).abs() < 1e-2);
        assert!(vectors.cosine(&query, 2).unwrap().abs() < f32::EPSILON);
        assert_eq!(vectors.cosine(&query, 3), None);
        // Scaling a vector does not change its codes.
        let scaled: Vec<f32> = b.iter().map(|x| x * 1000.0).collect();
        vectors.set(1, &scaled);
        assert!((vectors.cosine(&query, 1).unwrap() - exact(&a, &b)).abs() < 1e-2);
        let zero = Vectors::query(&[0.0; 4]);
        assert!(vectors.cosine(&zero, 0).unwrap().abs() < f32::EPSILON);
    }

    #[test]
    fn slots_stay_dense_through_drops_moves_and_remaps() {
        let mut vectors = Vectors::default();
        for doc in 0..5u32 {
            vectors.set(doc, &[doc as f32 + 1.0, 1.0]);
        }
        vectors.drop_doc(1);
        vectors.drop_doc(1);
        assert_eq!(vectors.docs(), [0, 2, 3, 4]);
        vectors.move_doc(4, 7);
        assert_eq!(vectors.docs(), [0, 2, 3, 7]);
        let query = Vectors::query(&[5.0, 1.0]);
        assert!(vectors.cosine(&query, 7).unwrap() > 0.999);
        assert_eq!(vectors.cosine(&query, 4), None);
        // Documents 1, 3 and 5 go: 0 -> 0, 2 -> 1, 4 -> 2, 6 -> 3, 7 -> 4.
        let remap = [0, NONE, 1, NONE, 2, NONE, 3, 4];
        vectors.remap(&remap);
        assert_eq!(vectors.docs(), [0, 1, 4]);
        assert!(vectors.cosine(&query, 4).unwrap() > 0.999);
        let (nearest, scanned) = vectors.nearest(&query, 2, None);
        assert_eq!(scanned, 3);
        assert_eq!(nearest.iter().map(|n| n.doc).collect::<Vec<_>>(), [4, 1]);
        let (nearest, scanned) = vectors.nearest(&query, 5, Some(&|doc| doc != 4));
        assert_eq!((nearest.len(), scanned), (2, 2));
        vectors.clear();
        assert_eq!((vectors.len(), vectors.dimensions()), (0, None));
    }

    #[test]
    fn the_portable_and_the_avx2_scan_agree() {
        let dimensions = 389; // not a multiple of any vector width
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let query: Vec<i16> = (0..dimensions)
            .map(|_| (next() % 2049) as i16 - 1024)
            .collect();
        let rows: Vec<i8> = (0..dimensions * 37).map(|_| (next() % 255) as i8).collect();
        let (words, bytes) = (sign_words(dimensions), low_bytes(dimensions));
        let (mut signs, mut low) = (vec![0u64; 37 * words], vec![0u8; 37 * bytes]);
        for (slot, row) in rows.chunks(dimensions).enumerate() {
            vector_codes::encode(
                row,
                &mut signs[slot * words..(slot + 1) * words],
                &mut low[slot * bytes..(slot + 1) * bytes],
            );
        }
        let planes = Planes {
            signs: &signs,
            low: &low,
            words,
            bytes,
        };
        // Every slot, in another order, with one twice.
        let slots: Vec<u32> = (0..37u32).rev().chain([5]).collect();
        let expected: Vec<i32> = slots
            .iter()
            .map(|&slot| dot(&query, &rows[slot as usize * dimensions..][..dimensions]))
            .collect();
        let mut portable = vec![0i32; slots.len()];
        dots_portable(&query, planes, &slots, &mut portable);
        assert_eq!(portable, expected);
        let mut dispatched = vec![0i32; slots.len()];
        dots(&query, planes, &slots, &mut dispatched);
        assert_eq!(dispatched, expected);
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            let mut avx2 = vec![0i32; slots.len()];
            // SAFETY: checked just above.
            unsafe { dots_avx2(&query, planes, &slots, &mut avx2) };
            assert_eq!(avx2, expected);
        }
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vbmi")
        {
            let mut wide = vec![0i32; slots.len()];
            // SAFETY: checked just above.
            unsafe { dots_avx512(&query, planes, &slots, &mut wide) };
            assert_eq!(wide, expected);
        }
    }

    /// `count` vectors of `dimensions` from a fixed sequence, half of them near one of the others
    /// (as replicas are), and the vector store holding them for documents `0..count`.
    fn corpus(count: usize, dimensions: usize, order: &[usize]) -> (Vec<Vec<f32>>, Vectors) {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        };
        let mut rows: Vec<Vec<f32>> = Vec::with_capacity(count);
        for i in 0..count {
            let fresh: Vec<f32> = (0..dimensions).map(|_| next()).collect();
            rows.push(if i % 2 == 1 {
                rows[i / 2]
                    .iter()
                    .zip(&fresh)
                    .map(|(a, b)| a + b / 4.0)
                    .collect()
            } else {
                fresh
            });
        }
        let mut vectors = Vectors::default();
        for &doc in order {
            vectors.set(doc as u32, &rows[doc]);
        }
        (rows, vectors)
    }

    /// The `k` nearest by their definition: every selected document's cosine, best first.
    fn by_definition(vectors: &Vectors, query: &QueryVector, k: usize, docs: usize) -> Vec<u32> {
        let mut all: Vec<(f32, u32)> = (0..docs as u32)
            .filter_map(|doc| Some((vectors.cosine(query, doc)?, doc)))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.into_iter().take(k).map(|(_, doc)| doc).collect()
    }

    #[test]
    fn the_prefiltered_nearest_are_exact_within_the_pool_and_find_each_vector_itself() {
        let (count, dimensions) = (600, 72);
        let order: Vec<usize> = (0..count).collect();
        let (rows, vectors) = corpus(count, dimensions, &order);
        let docs = |found: &[Nearest]| found.iter().map(|n| n.doc).collect::<Vec<_>>();
        for (doc, row) in rows.iter().enumerate().step_by(7) {
            let query = Vectors::query(row);
            // A pool as large as the corpus: the exact ranking.
            let (all, scanned) = vectors.nearest_with_pool(&query, 10, None, count);
            assert_eq!(scanned, count);
            assert_eq!(docs(&all), by_definition(&vectors, &query, 10, count));
            // A pool of 24: the stored vector itself is the closest sign plane, so it stays first.
            let (pooled, scanned) = vectors.nearest_with_pool(&query, 10, None, 24);
            assert_eq!(scanned, count);
            assert_eq!(pooled[0].doc, doc as u32);
            assert!(pooled.windows(2).all(|w| w[0].cosine >= w[1].cosine));
            // Cosines are the exact ones.
            for found in &pooled {
                assert_eq!(Some(found.cosine), vectors.cosine(&query, found.doc));
            }
            // A group filter: only selected documents, and the query's own when selected.
            let even = |doc: u32| doc.is_multiple_of(2);
            let (filtered, scanned) = vectors.nearest_with_pool(&query, 10, Some(&even), 24);
            assert_eq!(scanned, count / 2);
            assert!(filtered.iter().all(|n| n.doc.is_multiple_of(2)));
            if doc.is_multiple_of(2) {
                assert_eq!(filtered[0].doc, doc as u32);
            }
        }
    }

    #[test]
    fn the_prefiltered_nearest_do_not_depend_on_insertion_order() {
        let (count, dimensions) = (500, 40);
        let forward: Vec<usize> = (0..count).collect();
        let shuffled: Vec<usize> = (0..count).map(|i| (i * 263) % count).collect();
        let (rows, first) = corpus(count, dimensions, &forward);
        let (_, mut second) = corpus(count, dimensions, &shuffled);
        // Drops and re-adds move slots around too.
        for doc in (0..count as u32).step_by(11) {
            second.drop_doc(doc);
        }
        for doc in (0..count).step_by(11) {
            second.set(doc as u32, &rows[doc]);
        }
        for row in rows.iter().step_by(13) {
            let query = Vectors::query(&row.iter().map(|x| -x * 0.5 + 0.1).collect::<Vec<_>>());
            let a = first.nearest_with_pool(&query, 20, None, 40);
            let b = second.nearest_with_pool(&query, 20, None, 40);
            let docs =
                |found: &[Nearest]| found.iter().map(|n| (n.doc, n.cosine)).collect::<Vec<_>>();
            assert_eq!(docs(&a.0), docs(&b.0));
        }
    }

    #[test]
    fn tiny_vectors_keep_their_direction() {
        // `127 / largest` overflows `f32` for subnormal values: without the exact magnification
        // every nonzero value became +-127.
        let tiny = f32::from_bits(1);
        let small = [tiny, -2.0 * tiny, 3.0 * tiny];
        let scaled = [1.0f32, -2.0, 3.0];
        assert_eq!(
            quantize(&small, 127.0, |x| x as i8),
            quantize(&scaled, 127.0, |x| x as i8)
        );
        let query = Vectors::query(&small);
        assert_eq!(query.codes, Vectors::query(&scaled).codes);
        let mut signs = vec![0u64; 1];
        let mut low = vec![0u8; low_bytes(3)];
        vector_codes::encode(&[1, -2, 3], &mut signs, &mut low);
        let (mut from_small, mut from_scaled) = ([0u32], [0u32]);
        vector_scan::distances(&query.scan, &signs, &mut from_small);
        vector_scan::distances(&Vectors::query(&scaled).scan, &signs, &mut from_scaled);
        assert_eq!(from_small, from_scaled);
        let mut vectors = Vectors::default();
        vectors.set(0, &small);
        assert!((vectors.cosine(&Vectors::query(&scaled), 0).unwrap() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn vectors_around_a_common_direction_are_ranked_by_the_exact_cosine_of_every_one() {
        let (count, dimensions) = (900, 48);
        let order: Vec<usize> = (0..count).collect();
        let (rows, balanced) = corpus(count, dimensions, &order);
        assert!(balanced.signs_balanced());
        // The same vectors moved far along one direction: most signs alike.
        let common: Vec<f32> = (0..dimensions)
            .map(|i| if i % 3 == 0 { -4.0 } else { 4.0 })
            .collect();
        let shifted: Vec<Vec<f32>> = rows
            .iter()
            .map(|row| row.iter().zip(&common).map(|(x, c)| x + c).collect())
            .collect();
        let mut skewed = Vectors::default();
        for (doc, row) in shifted.iter().enumerate() {
            skewed.set(doc as u32, row);
        }
        assert!(!skewed.signs_balanced());
        for row in shifted.iter().step_by(17) {
            let query = Vectors::query(row);
            let (found, _) = skewed.nearest_with_pool(&query, 25, None, 40);
            let docs: Vec<u32> = found.iter().map(|n| n.doc).collect();
            assert_eq!(docs, by_definition(&skewed, &query, 25, count));
        }
        // The counts follow replacements and drops: equal to counting afresh.
        for doc in (0..count as u32).step_by(5) {
            skewed.set(doc, &rows[doc as usize]);
        }
        for doc in (0..count as u32).step_by(7) {
            skewed.drop_doc(doc);
        }
        let mut afresh = vec![0u32; dimensions];
        let words = sign_words(dimensions);
        for slot in 0..skewed.len() {
            for (i, count) in afresh.iter_mut().enumerate() {
                *count += (skewed.signs[slot * words + i / 64] >> (i % 64) & 1) as u32;
            }
        }
        assert_eq!(skewed.negatives, afresh);
    }

    #[test]
    fn the_query_dot_product_cannot_overflow() {
        let dimensions = MAX_DIMENSIONS;
        let mut vectors = Vectors::default();
        let ones = vec![1.0f32; dimensions];
        vectors.set(0, &ones);
        let negative: Vec<f32> = ones.iter().map(|x| -x).collect();
        vectors.set(1, &negative);
        let query = Vectors::query(&ones);
        assert!((vectors.cosine(&query, 0).unwrap() - 1.0).abs() < 1e-6);
        assert!((vectors.cosine(&query, 1).unwrap() + 1.0).abs() < 1e-6);
    }
}
