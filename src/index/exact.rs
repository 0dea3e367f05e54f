//! Documents by case-folded tool name, for exact-name matches.
//!
//! Keyed by a 64-bit hash of the folded name rather than the name itself, with the first
//! document stored inline: at 100,000 tools this saves two heap allocations and about 80 bytes
//! per tool over a map of owned names to vectors. A hash can collide, so [`ExactNames::get`]
//! returns candidates that the caller checks against the documents' own names.

use std::hash::BuildHasher;

use super::{FastState, FxMap};

/// The documents sharing one folded-name hash (almost always one).
#[derive(Debug)]
enum Docs {
    One(u32),
    Many(Vec<u32>),
}

/// Case-folded tool name -> documents, by hash (see the module docs).
#[derive(Debug, Default)]
pub(super) struct ExactNames {
    map: FxMap<u64, Docs>,
}

impl ExactNames {
    fn key(folded: &str) -> u64 {
        FastState::default().hash_one(folded)
    }

    /// Records `doc` under `folded`.
    pub(super) fn insert(&mut self, folded: &str, doc: u32) {
        let key = Self::key(folded);
        match self.map.get_mut(&key) {
            None => {
                self.map.insert(key, Docs::One(doc));
            }
            Some(Docs::One(first)) => {
                let first = *first;
                self.map.insert(key, Docs::Many(vec![first, doc]));
            }
            Some(Docs::Many(docs)) => docs.push(doc),
        }
    }

    /// Forgets `doc` under `folded`.
    pub(super) fn remove(&mut self, folded: &str, doc: u32) {
        let key = Self::key(folded);
        match self.map.get_mut(&key) {
            Some(Docs::One(only)) if *only == doc => {
                self.map.remove(&key);
            }
            Some(Docs::Many(docs)) => {
                docs.retain(|&d| d != doc);
                if let [only] = docs[..] {
                    self.map.insert(key, Docs::One(only));
                }
            }
            _ => {}
        }
    }

    /// The documents recorded under `folded`, plus (rarely) some under another name with the
    /// same hash.
    pub(super) fn get(&self, folded: &str) -> &[u32] {
        match self.map.get(&Self::key(folded)) {
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
        let mut names = ExactNames::default();
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
