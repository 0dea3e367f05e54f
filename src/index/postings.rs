//! Posting lists: one per term, sorted by document.
//!
//! Most terms of a large collection are identifiers found in one document (a tool's compound
//! name), so a list of one posting is stored inline, without a heap allocation of its own.

use super::Posting;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::FIELDS;

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
}
