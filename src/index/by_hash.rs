//! Documents by a name (a record's key, or its case-folded tool name for exact-name matches).
//!
//! A multimap keyed by a 64-bit hash of the name rather than the name itself: one
//! `hashbrown::HashTable` entry of 12 bytes per `(name hash, document)`, with no allocation per
//! name. A hash can collide, so [`DocsByHash::get`] yields candidates that the caller checks
//! against the documents' own names.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::FoldHashState;

/// One document under one name hash (12 bytes: packed to the alignment of `u32`).
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(4))]
struct Entry {
    hash: u64,
    doc: u32,
}

/// Name -> documents, by hash (see the module docs).
#[derive(Debug, Default)]
pub(super) struct DocsByHash {
    table: HashTable<Entry>,
}

fn hash(name: &str) -> u64 {
    FoldHashState::default().hash_one(name)
}

impl DocsByHash {
    /// Records `doc` under `name`.
    pub(super) fn insert(&mut self, name: &str, doc: u32) {
        let hash = hash(name);
        self.table
            .insert_unique(hash, Entry { hash, doc }, |entry| entry.hash);
    }

    /// Forgets `doc` under `name`.
    pub(super) fn remove(&mut self, name: &str, doc: u32) {
        let hash = hash(name);
        if let Ok(entry) = self
            .table
            .find_entry(hash, |entry| entry.hash == hash && entry.doc == doc)
        {
            entry.remove();
        }
    }

    /// The documents recorded under `name`, plus (rarely) some under another name with the
    /// same hash, in no particular order.
    pub(super) fn get(&self, name: &str) -> impl Iterator<Item = u32> + '_ {
        let hash = hash(name);
        self.table
            .iter_hash(hash)
            .filter(move |entry| entry.hash == hash)
            .map(|entry| entry.doc)
    }

    /// Renumbers documents after compaction (`remap[old]` is the new id of every recorded one).
    pub(super) fn remap(&mut self, remap: &[u32]) {
        for entry in &mut self.table {
            entry.doc = remap[entry.doc as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(names: &DocsByHash, name: &str) -> Vec<u32> {
        let mut docs: Vec<u32> = names.get(name).collect();
        docs.sort_unstable();
        docs
    }

    #[test]
    fn one_and_many_documents_per_name() {
        assert_eq!(std::mem::size_of::<Entry>(), 12);
        let mut names = DocsByHash::default();
        names.insert("get_weather", 1);
        names.insert("send", 2);
        names.insert("send", 5);
        assert_eq!(docs(&names, "get_weather"), [1]);
        assert_eq!(docs(&names, "send"), [2, 5]);
        assert!(docs(&names, "missing").is_empty());
        names.remove("send", 2);
        assert_eq!(docs(&names, "send"), [5]);
        names.remove("send", 9); // unknown: ignored
        names.remove("send", 5);
        assert!(docs(&names, "send").is_empty());
        names.remap(&[0, 0]);
        assert_eq!(docs(&names, "get_weather"), [0]);
    }
}
