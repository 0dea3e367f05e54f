//! Documents by a name (a record's key, or its case-folded tool name for exact-name matches).
//!
//! Keyed by a 64-bit hash of the name rather than the name itself, with the first document
//! stored inline: at 100,000 tools this saves heap allocations and tens of bytes per tool over a
//! map of owned names (or shared name pointers) to vectors. A hash can collide, so
//! [`DocsByHash::get`] returns candidates that the caller checks against the documents' own names.

use std::hash::BuildHasher;

use super::{FastState, FxMap};

/// The documents sharing one name hash (almost always one). 16 bytes: the boxed slice's pointer
/// niche tells the variants apart.
#[derive(Debug)]
enum Docs {
    One(u32),
    Many(Box<[u32]>),
}

/// Name -> documents, by hash (see the module docs).
#[derive(Debug, Default)]
pub(super) struct DocsByHash {
    map: FxMap<u64, Docs>,
}

impl DocsByHash {
    fn key(name: &str) -> u64 {
        FastState::default().hash_one(name)
    }

    /// Records `doc` under `name`.
    pub(super) fn insert(&mut self, name: &str, doc: u32) {
        let key = Self::key(name);
        match self.map.get_mut(&key) {
            None => {
                self.map.insert(key, Docs::One(doc));
            }
            Some(Docs::One(first)) => {
                let first = *first;
                self.map.insert(key, Docs::Many(Box::new([first, doc])));
            }
            Some(Docs::Many(docs)) => {
                let mut grown = std::mem::take(docs).into_vec();
                grown.push(doc);
                *docs = grown.into_boxed_slice();
            }
        }
    }

    /// Forgets `doc` under `name`.
    pub(super) fn remove(&mut self, name: &str, doc: u32) {
        let key = Self::key(name);
        match self.map.get_mut(&key) {
            Some(Docs::One(only)) if *only == doc => {
                self.map.remove(&key);
            }
            Some(Docs::Many(docs)) => {
                let kept: Box<[u32]> = docs.iter().copied().filter(|&d| d != doc).collect();
                match kept[..] {
                    [] => {
                        self.map.remove(&key);
                    }
                    [only] => {
                        self.map.insert(key, Docs::One(only));
                    }
                    _ => *docs = kept,
                }
            }
            _ => {}
        }
    }

    /// The documents recorded under `name`, plus (rarely) some under another name with the
    /// same hash.
    pub(super) fn get(&self, name: &str) -> &[u32] {
        match self.map.get(&Self::key(name)) {
            None => &[],
            Some(Docs::One(doc)) => std::slice::from_ref(doc),
            Some(Docs::Many(docs)) => docs,
        }
    }

    /// Renumbers documents after compaction (`remap[old]` is the new id of every recorded one).
    pub(super) fn remap(&mut self, remap: &[u32]) {
        for docs in self.map.values_mut() {
            match docs {
                Docs::One(doc) => *doc = remap[*doc as usize],
                Docs::Many(docs) => docs.iter_mut().for_each(|doc| *doc = remap[*doc as usize]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_and_many_documents_per_name() {
        assert_eq!(std::mem::size_of::<Docs>(), 16);
        let mut names = DocsByHash::default();
        names.insert("get_weather", 1);
        names.insert("send", 2);
        names.insert("send", 5);
        assert_eq!(names.get("get_weather"), [1]);
        assert_eq!(names.get("send"), [2, 5]);
        assert!(names.get("missing").is_empty());
        names.remove("send", 2);
        assert_eq!(names.get("send"), [5]);
        names.remove("send", 9); // unknown: ignored
        names.remove("send", 5);
        assert!(names.get("send").is_empty());
        names.remap(&[0, 0]);
        assert_eq!(names.get("get_weather"), [0]);
    }
}
