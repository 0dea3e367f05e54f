//! Postings: one [`PostingList`] per term, sorted by document, each [`Posting`] a document and
//! the term's frequency in each field.
//!
//! Most terms of a large collection are identifiers found in one document (a tool's compound
//! name), so a list of one posting is stored inline, without a heap allocation of its own.

use super::bm25f::FIELDS;

/// Highest term frequency a posting records per field. BM25 saturates well before: with
/// `k1 = 1.2`, a term's 8th occurrence in a field adds under 3% to its gain.
const MAX_TF: u8 = 7;

/// One document of a posting list and the term's frequency in each of its fields, 3 bits a
/// field, saturating at [`MAX_TF`]. Packed to 6 bytes: queries stream whole posting lists, so
/// their size is their speed, and they are most of the index's memory.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(2))]
pub(super) struct Posting {
    pub(super) doc: u32,
    packed_tf: u16,
}

impl Posting {
    pub(super) fn new(doc: u32, tf: [u8; FIELDS]) -> Self {
        let mut packed_tf = 0u16;
        for (field, &count) in tf.iter().enumerate() {
            packed_tf |= u16::from(count.min(MAX_TF)) << (3 * field);
        }
        Self { doc, packed_tf }
    }

    /// Term frequency per field.
    #[inline]
    pub(super) fn tf(self) -> [u16; FIELDS] {
        let packed = self.packed_tf;
        std::array::from_fn(|field| (packed >> (3 * field)) & 7)
    }
}

/// The documents holding one term, in ascending document order.
#[derive(Debug, Default)]
pub(super) enum PostingList {
    #[default]
    Empty,
    One(Posting),
    Many(Vec<Posting>),
}

impl PostingList {
    pub(super) fn as_slice(&self) -> &[Posting] {
        match self {
            Self::Empty => &[],
            Self::One(posting) => std::slice::from_ref(posting),
            Self::Many(postings) => postings,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Self::Empty)
    }

    /// Appends `posting` (whose document must be above every listed one).
    pub(super) fn push(&mut self, posting: Posting) {
        match self {
            Self::Empty => *self = Self::One(posting),
            Self::One(first) => *self = Self::Many(vec![*first, posting]),
            Self::Many(postings) => postings.push(posting),
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        if let Self::Many(postings) = self {
            postings.shrink_to_fit();
        }
    }

    /// Keeps the postings for which `keep` returns true (it may change them, keeping the order).
    pub(super) fn retain_mut(&mut self, mut keep: impl FnMut(&mut Posting) -> bool) {
        match self {
            Self::Empty => {}
            Self::One(posting) => {
                if !keep(posting) {
                    *self = Self::Empty;
                }
            }
            Self::Many(postings) => {
                postings.retain_mut(keep);
                match postings[..] {
                    [] => *self = Self::Empty,
                    [only] => *self = Self::One(only),
                    _ => {}
                }
            }
        }
    }
}

/// The first position in `postings[from..]` (sorted by document) whose document is `>= doc`,
/// found by galloping (exponential, then binary) search.
pub(super) fn gallop(postings: &[Posting], from: usize, doc: u32) -> usize {
    let below = |at: usize| postings.get(at).is_some_and(|posting| posting.doc < doc);
    if !below(from) {
        return from;
    }
    // Invariant: postings[low].doc < doc.
    let mut low = from;
    let mut step = 1;
    while below(low + step) {
        low += step;
        step *= 2;
    }
    let high = (low + step).min(postings.len());
    low + 1 + postings[low + 1..high].partition_point(|posting| posting.doc < doc)
}

/// The posting of `doc` in `postings` (sorted by document), by binary search.
pub(super) fn find(postings: &[Posting], doc: u32) -> Option<Posting> {
    postings
        .binary_search_by_key(&doc, |posting| posting.doc)
        .ok()
        .map(|at| postings[at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_pack_term_frequencies_into_six_bytes() {
        assert_eq!(std::mem::size_of::<Posting>(), 6);
        let posting = Posting::new(u32::MAX, [0, 1, 6, 7, 200]);
        assert_eq!({ posting.doc }, u32::MAX);
        assert_eq!(posting.tf(), [0, 1, 6, 7, 7]);
        assert_eq!(Posting::new(3, [0; FIELDS]).tf(), [0; FIELDS]);
    }

    #[test]
    fn one_posting_is_inline_and_lists_grow_and_shrink() {
        assert!(std::mem::size_of::<PostingList>() <= 24);
        let posting = |doc| Posting::new(doc, [1; FIELDS]);
        let mut list = PostingList::default();
        assert!(list.is_empty() && list.as_slice().is_empty());
        list.push(posting(1));
        assert!(matches!(list, PostingList::One(_)));
        list.push(posting(4));
        list.push(posting(9));
        let docs: Vec<u32> = list.as_slice().iter().map(|p| p.doc).collect();
        assert_eq!(docs, [1, 4, 9]);
        list.retain_mut(|p| p.doc != 4 && p.doc != 9);
        assert!(matches!(list, PostingList::One(_)) && list.as_slice().len() == 1);
        list.retain_mut(|_| false);
        assert!(list.is_empty());
    }

    #[test]
    fn gallop_finds_the_first_posting_at_or_after_a_document() {
        let postings: Vec<Posting> = [2u32, 3, 5, 8, 13, 21, 34, 55, 89]
            .iter()
            .map(|&doc| Posting::new(doc, [1; FIELDS]))
            .collect();
        for from in 0..=postings.len() {
            for doc in 0..100u32 {
                let expected = from + postings[from..].iter().take_while(|p| p.doc < doc).count();
                assert_eq!(
                    gallop(&postings, from, doc),
                    expected,
                    "from {from}, doc {doc}"
                );
            }
        }
        assert_eq!(gallop(&[], 0, 7), 0);
        assert_eq!(find(&postings, 8).map(|p| p.doc), Some(8));
        assert!(find(&postings, 9).is_none());
    }
}
