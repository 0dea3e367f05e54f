//! Slot storage of the quantized tool vectors: per slot a sign plane, packed low bits and an inverse
//! norm, dense (a dropped vector's slot is filled by the last one), with the per-dimension sign
//! counts the prefilter's balance check reads (see the [`super`] module docs).

use super::codes::{self, low_bytes, sign_words};
use super::quantize::codes_of;
use super::SIGN_BALANCE_FLOOR;

/// No slot / no document.
pub(super) const NONE: u32 = u32::MAX;

/// The quantized vectors of the live documents that have one.
#[derive(Debug, Default)]
pub(in crate::index) struct Vectors {
    /// The one dimensionality (`None` until the first vector after a clear).
    pub(super) dimensions: Option<usize>,
    /// Sign planes of the codes, [`sign_words`] per slot, row-major.
    pub(super) signs: Vec<u64>,
    /// Packed low bits of the codes, [`low_bytes`] per slot, row-major.
    pub(super) low: Vec<u8>,
    /// `1 / ||codes||` per slot (0 for a zero vector).
    pub(super) inverse_norms: Vec<f32>,
    /// The document of each slot.
    pub(super) slot_doc: Vec<u32>,
    /// The slot of each document ([`NONE`]: no vector); may be shorter than the documents.
    pub(super) doc_slot: Vec<u32>,
    /// Per dimension, the slots whose code is negative (for [`Self::signs_balanced`]).
    pub(super) negatives: Vec<u32>,
}

impl Vectors {
    /// The dimensionality, once a vector is stored (until [`Self::clear`]).
    pub(in crate::index) fn dimensions(&self) -> Option<usize> {
        self.dimensions
    }

    /// Number of documents with a vector.
    pub(in crate::index) fn len(&self) -> usize {
        self.slot_doc.len()
    }

    /// Whether `doc` has a vector.
    pub(in crate::index) fn has(&self, doc: u32) -> bool {
        self.slot(doc).is_some()
    }

    pub(super) fn slot(&self, doc: u32) -> Option<usize> {
        self.doc_slot
            .get(doc as usize)
            .copied()
            .filter(|&slot| slot != NONE)
            .map(|slot| slot as usize)
    }

    /// Checks that `dimensions` is the index's dimensionality (or that none is fixed yet).
    pub(in crate::index) fn check_dimensions(&self, dimensions: usize) -> crate::Result<()> {
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
    pub(in crate::index) fn set(&mut self, doc: u32, vector: &[f32]) {
        self.set_with(doc, vector, &mut Vec::new());
    }

    /// Stores `vector` (checked: finite, of the index's dimensionality) for `doc`, replacing its
    /// vector; `codes` is scratch for the quantized codes, reused across calls.
    pub(in crate::index) fn set_with(&mut self, doc: u32, vector: &[f32], codes: &mut Vec<i8>) {
        let norm = codes_of(vector, codes);
        self.store_codes(doc, codes, norm);
    }

    /// Stores the `codes` of a vector (of the index's dimensionality) and their inverse norm for
    /// `doc`, replacing its vector: the second half of [`Self::set_with`].
    pub(in crate::index) fn store_codes(&mut self, doc: u32, codes: &[i8], norm: f32) {
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
        codes::encode(
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
    pub(in crate::index) fn signs_balanced(&self) -> bool {
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
    pub(in crate::index) fn reserve(&mut self, added: usize, dimensions: usize, docs: usize) {
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
    pub(in crate::index) fn drop_doc(&mut self, doc: u32) {
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
    pub(in crate::index) fn move_doc(&mut self, from: u32, to: u32) {
        let Some(slot) = self.slot(from) else { return };
        self.doc_slot[from as usize] = NONE;
        if self.doc_slot.len() <= to as usize {
            self.doc_slot.resize(to as usize + 1, NONE);
        }
        self.doc_slot[to as usize] = slot as u32;
        self.slot_doc[slot] = to;
    }

    /// Drops every vector and the dimensionality.
    pub(in crate::index) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Renumbers documents after compaction (`remap[old]` is the new id, or `u32::MAX` for a
    /// dropped document, whose vector goes).
    pub(in crate::index) fn remap(&mut self, remap: &[u32]) {
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
    pub(in crate::index) fn shrink_to_fit(&mut self) {
        self.signs.shrink_to_fit();
        self.low.shrink_to_fit();
        self.inverse_norms.shrink_to_fit();
        self.slot_doc.shrink_to_fit();
        self.doc_slot.shrink_to_fit();
    }

    /// Bytes held per stored vector at `dimensions` (sign plane, low bits, inverse norm, slot's
    /// document, document's slot).
    pub(in crate::index) const fn bytes_per_vector(dimensions: usize) -> usize {
        8 * sign_words(dimensions) + low_bytes(dimensions) + 4 + 4 + 4
    }

    /// Bytes allocated for the vectors now (capacities).
    pub(in crate::index) fn heap_bytes(&self) -> usize {
        8 * self.signs.capacity()
            + self.low.capacity()
            + 4 * (self.inverse_norms.capacity()
                + self.slot_doc.capacity()
                + self.doc_slot.capacity()
                + self.negatives.capacity())
    }

    /// Test view: every document with a vector (for consistency checks).
    #[cfg(test)]
    pub(in crate::index) fn docs(&self) -> Vec<u32> {
        let mut docs = self.slot_doc.clone();
        docs.sort_unstable();
        docs
    }
}
