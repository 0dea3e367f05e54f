//! Storage of the index: documents, their groups, posting lists, upserts, removal and
//! compaction.
//!
//! Removing a record only marks its document dead (queries skip it); the index compacts
//! itself when dead documents exceed a quarter of all documents. Re-upserting an unchanged
//! record (same content [`Record::fingerprint`]) is a no-op; a changed one is removed and added
//! again, leaving other records alone. After every change the tie-break ordinals (each live
//! document's position in `(group, tool, key)` order) are renumbered.

use std::borrow::Cow;
use std::sync::Arc;

use super::doc_name::{ByTool, DocName};
use super::postings::{Posting, PostingList};
use super::record::Record;
use super::record_tokens::{
    tokenize_all, tokenize_threads, BatchTokens, Fingerprinted, TokenizeJob, Tokens, TokensChunk,
    TOKENIZE_BATCH,
};
use super::SearchIndex;

#[derive(Debug)]
pub(super) struct Doc {
    pub(super) name: DocName,
    fingerprint: u64,
}

#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) name: Arc<str>,
    /// Live members in browse order, `(tool, key)`, with their documents.
    pub(super) members: Members,
}

/// A group's live members in browse order, `(tool, key)`, with their documents: a vector that
/// upserts append to and that is sorted (and cleared of removed members) once after each change,
/// by [`Members::settle`]. A stable sort of a sorted run and an appended tail is a merge, so a
/// small update of a large group costs about one pass.
#[derive(Debug, Default)]
pub(super) struct Members {
    entries: Vec<(ByTool, u32)>,
    live: usize,
    unsettled: bool,
}

impl Members {
    /// Number of live members.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The members' names and documents, in browse order (the members must be settled).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&ByTool, u32)> + '_ {
        debug_assert!(!self.unsettled);
        self.entries.iter().map(|(name, doc)| (name, *doc))
    }

    /// The members' documents, in browse order (the members must be settled).
    pub(super) fn docs(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter().map(|(_, doc)| doc)
    }

    fn add(&mut self, name: DocName, doc: u32) {
        self.entries.push((ByTool(name), doc));
        self.live += 1;
        self.unsettled = true;
    }

    /// Counts a member out; its entry goes at the next [`Self::settle`] (its document is dead).
    fn remove(&mut self) {
        self.live -= 1;
        self.unsettled = true;
    }

    /// Drops the entries of dead documents and sorts the rest into browse order.
    fn settle(&mut self, alive: &[bool]) {
        if !self.unsettled {
            return;
        }
        self.entries.retain(|&(_, doc)| alive[doc as usize]);
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.unsettled = false;
        debug_assert_eq!(self.entries.len(), self.live);
    }
}

/// `tool` case-folded (as exact-name matching compares it, [`crate::tokenize::fold`]), without a
/// copy when it already is.
pub(super) fn folded(tool: &str) -> Cow<'_, str> {
    if tool
        .bytes()
        .any(|b| !b.is_ascii() || b.is_ascii_uppercase())
    {
        Cow::Owned(crate::tokenize::fold(tool))
    } else {
        Cow::Borrowed(tool)
    }
}

impl SearchIndex {
    /// Adds or replaces records by key. Unchanged records are left as they are.
    pub fn upsert(&mut self, records: impl IntoIterator<Item = Record>) {
        let mut records = records.into_iter();
        self.upsert_batches(std::iter::from_fn(|| {
            let batch: Vec<Record> = records.by_ref().take(TOKENIZE_BATCH).collect();
            (!batch.is_empty()).then_some(batch)
        }));
    }

    /// [`Self::upsert`] for records arriving in batches (e.g. converted from another language
    /// while earlier batches are indexed): each batch is tokenized (in parallel when large) and
    /// inserted in order, so a key given twice ends with its last record; while one batch is
    /// inserted, the next is tokenized on another thread, and this thread joins that work once
    /// it is done inserting ([`TokenizeJob`]). The storage is trimmed and the tie-break ordinals
    /// renumbered once, after the last batch.
    pub fn upsert_batches(&mut self, batches: impl IntoIterator<Item = Vec<Record>>) {
        self.upsert_batches_then(batches, drop);
    }

    /// [`Self::upsert_batches`], handing each batch to `spent` once it is indexed: e.g. back to
    /// the thread that allocated its records, to be freed there (glibc frees a block fastest on
    /// the thread that allocated it; the index copies what it keeps).
    pub fn upsert_batches_then(
        &mut self,
        batches: impl IntoIterator<Item = Vec<Record>>,
        mut spent: impl FnMut(Vec<Record>),
    ) {
        let threads = tokenize_threads();
        let mut batches = batches.into_iter();
        let mut added = 0usize;
        let mut next = batches.next().map(|batch| {
            let held = self.held(&batch);
            let tokens = tokenize_all(&batch, &held, threads);
            (batch, tokens)
        });
        while let Some((batch, tokens)) = next.take() {
            let following = batches.next().map(|batch| {
                let held = self.held(&batch);
                (batch, held)
            });
            let job = following
                .as_ref()
                .map(|(batch, held)| TokenizeJob::new(batch, held));
            std::thread::scope(|scope| {
                // One thread fewer: this one inserts meanwhile, then joins in.
                let helpers: Vec<_> = job
                    .iter()
                    .flat_map(|job| {
                        (0..threads.saturating_sub(1).max(1))
                            .map(move |_| scope.spawn(move || job.work()))
                    })
                    .collect();
                added += self.insert_batch(&batch, &tokens);
                drop(tokens);
                spent(batch);
                if let Some(job) = &job {
                    job.work();
                }
                for helper in helpers {
                    // A helper that panicked left its chunk to `TokenizeJob::finish`.
                    let _ = helper.join();
                }
            });
            let tokens = job.map(TokenizeJob::finish);
            next = following
                .zip(tokens)
                .map(|((batch, _), tokens)| (batch, tokens));
        }
        self.settle_members();
        if added == 0 {
            return;
        }
        if added >= TOKENIZE_BATCH {
            // A bulk build leaves vectors with up to half their capacity unused.
            self.shrink_to_fit();
        }
        self.maybe_compact();
        self.renumber_ordinals();
    }

    /// The fingerprint of each record of `batch`, and whether it is indexed with the same content
    /// now (then it is not tokenized; [`Self::insert_batch`] checks it again, against the index
    /// as it is then).
    fn held(&self, batch: &[Record]) -> Vec<Fingerprinted> {
        batch
            .iter()
            .map(|record| {
                let fingerprint = record.fingerprint();
                (fingerprint, self.holds(record, fingerprint))
            })
            .collect()
    }

    /// Inserts a tokenized batch in order (`None`: not tokenized, as it was held unchanged);
    /// returns the number of records added.
    pub(super) fn insert_batch(&mut self, batch: &[Record], tokens: &BatchTokens) -> usize {
        let mut added = 0;
        for (at, record) in batch.iter().enumerate() {
            let replaced;
            let tokens = match tokens.get(at) {
                Some(tokens) => tokens,
                // Held when the batch was tokenized; an earlier batch of this upsert may have
                // replaced it since.
                None if self.holds(record, record.fingerprint()) => continue,
                None => {
                    replaced = TokensChunk::of_record(record);
                    replaced.get(0).expect("a tokenized record")
                }
            };
            let replaced = self.doc_of(&record.key);
            if let Some(doc) = replaced {
                if self.holds(record, tokens.fingerprint) {
                    continue;
                }
                self.remove_doc(doc);
            }
            let doc = self.add_tokenized(record, tokens);
            // A key's vector stays attached across upserts (the caller replaces it when the
            // embedded text changes).
            if let Some(old) = replaced {
                self.vectors.move_doc(old, doc);
            }
            added += 1;
        }
        added
    }

    /// Releases the unused capacity of the posting lists and per-document vectors.
    fn shrink_to_fit(&mut self) {
        for list in &mut self.postings {
            list.shrink_to_fit();
        }
        for group in &mut self.groups {
            group.members.entries.shrink_to_fit();
        }
        self.postings.shrink_to_fit();
        self.docs.shrink_to_fit();
        self.alive.shrink_to_fit();
        self.doc_group.shrink_to_fit();
        self.doc_lens.shrink_to_fit();
        self.vectors.shrink_to_fit();
    }

    /// The live document with key `key`.
    pub(super) fn doc_of(&self, key: &str) -> Option<u32> {
        self.by_key
            .get(key)
            .find(|&doc| self.docs[doc as usize].name.key() == key)
    }

    /// Whether `record` (with content `fingerprint`) is indexed unchanged.
    fn holds(&self, record: &Record, fingerprint: u64) -> bool {
        self.doc_of(&record.key).is_some_and(|doc| {
            self.docs[doc as usize].fingerprint == fingerprint
                && *self.groups[self.doc_group[doc as usize] as usize].name == *record.group
                && self.docs[doc as usize].name.tool() == record.tool
        })
    }

    /// Removes records by key; unknown keys are ignored.
    pub fn remove<S: AsRef<str>>(&mut self, keys: impl IntoIterator<Item = S>) {
        let mut changed = false;
        for key in keys {
            if let Some(doc) = self.doc_of(key.as_ref()) {
                self.remove_doc(doc);
                self.vectors.drop_doc(doc);
                changed = true;
            }
        }
        if changed {
            self.settle_members();
            self.maybe_compact();
            self.renumber_ordinals();
        }
    }

    /// Settles every changed group's members ([`Members::settle`]).
    fn settle_members(&mut self) {
        for group in &mut self.groups {
            group.members.settle(&self.alive);
        }
    }

    /// Renumbers the tie-break ordinals in `(group, tool, key)` order.
    fn renumber_ordinals(&mut self) {
        self.tie_break_ordinals.clear();
        self.tie_break_ordinals.resize(self.docs.len(), u32::MAX);
        let mut ordinal = 0u32;
        for &group in self.group_ids.values() {
            for doc in self.groups[group as usize].members.docs() {
                self.tie_break_ordinals[doc as usize] = ordinal;
                ordinal += 1;
            }
        }
    }

    fn group_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.group_ids.get(name) {
            return id;
        }
        let id = self.groups.len() as u32;
        let name: Arc<str> = Arc::from(name);
        self.groups.push(Group {
            name: name.clone(),
            members: Members::default(),
        });
        self.group_ids.insert(name, id);
        id
    }

    /// Adds a tokenized record as a new document; returns it.
    fn add_tokenized(&mut self, record: &Record, tokens: Tokens<'_>) -> u32 {
        let doc = self.docs.len() as u32;
        let group = self.group_id(&record.group);
        let name = DocName::new(&record.key, &record.tool);

        for (token, hash, tf) in tokens.each_term() {
            let term = self.terms.intern_hashed(token, hash);
            if term as usize == self.postings.len() {
                self.postings.push(PostingList::default());
            }
            self.postings[term as usize].push(Posting::new(doc, tf));
        }
        let lens = tokens.lens;

        let doc_lens = lens.map(|len| len.min(u32::from(u16::MAX)) as u16);
        for (total, len) in self.live_field_tokens.iter_mut().zip(doc_lens) {
            *total += u64::from(len);
        }
        self.docs.push(Doc {
            name: name.clone(),
            fingerprint: tokens.fingerprint,
        });
        self.alive.push(true);
        self.doc_group.push(group);
        self.doc_lens.push(doc_lens);
        self.live += 1;
        self.by_key.insert(name.key(), doc);
        self.by_tool_folded.insert(&folded(&record.tool), doc);
        self.groups[group as usize].members.add(name, doc);
        doc
    }

    fn remove_doc(&mut self, doc: u32) {
        let index = doc as usize;
        if !self.alive.get(index).copied().unwrap_or(false) {
            return;
        }
        self.alive[index] = false;
        self.live -= 1;
        self.dead += 1;
        for (total, len) in self.live_field_tokens.iter_mut().zip(self.doc_lens[index]) {
            *total = total.saturating_sub(u64::from(len));
        }
        let name = &self.docs[index].name;
        self.by_key.remove(name.key(), doc);
        self.by_tool_folded.remove(&folded(name.tool()), doc);
        self.groups[self.doc_group[index] as usize].members.remove();
    }

    fn maybe_compact(&mut self) {
        if self.dead > 0 && self.dead * 4 > self.docs.len() {
            self.compact();
        }
    }

    /// Drops dead documents and unused terms, renumbering documents in order.
    pub fn compact(&mut self) {
        if self.dead == 0 {
            return;
        }
        let mut remap = vec![u32::MAX; self.docs.len()];
        let mut next = 0u32;
        for (slot, &alive) in remap.iter_mut().zip(&self.alive) {
            if alive {
                *slot = next;
                next += 1;
            }
        }
        let docs = std::mem::take(&mut self.docs);
        let doc_lens = std::mem::take(&mut self.doc_lens);
        let doc_group = std::mem::take(&mut self.doc_group);
        let alive = std::mem::take(&mut self.alive);
        let columns = docs.into_iter().zip(doc_lens).zip(doc_group).zip(alive);
        for (((entry, lens), group), is_alive) in columns {
            if is_alive {
                self.docs.push(entry);
                self.doc_lens.push(lens);
                self.doc_group.push(group);
                self.alive.push(true);
            }
        }
        self.dead = 0;

        let mut postings = std::mem::take(&mut self.postings);
        for list in &mut postings {
            list.retain_mut(|posting| {
                let new = remap[posting.doc as usize];
                posting.doc = new;
                new != u32::MAX
            });
        }
        let mut term_remap = vec![u32::MAX; postings.len()];
        let mut kept: Vec<PostingList> = Vec::with_capacity(postings.len());
        for (slot, list) in term_remap.iter_mut().zip(postings) {
            if !list.is_empty() {
                *slot = kept.len() as u32;
                kept.push(list);
            }
        }
        self.terms.remap(&term_remap);
        self.postings = kept;

        self.by_key.remap(&remap);
        self.vectors.remap(&remap);
        self.by_tool_folded.remap(&remap);
        for group in &mut self.groups {
            for (_, doc) in &mut group.members.entries {
                *doc = remap[*doc as usize];
            }
        }
        // Document ids moved, so the tie-break ordinals must follow them.
        self.renumber_ordinals();
    }

    /// Number of document slots, dead ones included (for tests of compaction).
    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.docs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{github_index, record, search};
    use super::*;
    #[test]
    fn upsert_replaces_and_remove_forgets() {
        let mut index = github_index();
        assert_eq!(index.len(), 17);
        index.upsert([record("crm", "customer_name", "Find invoices")]);
        assert_eq!(index.len(), 17);
        assert_eq!(search(&index, "display", None, 0, 10).0, 0);
        assert_eq!(
            search(&index, "invoices", None, 0, 10).1,
            ["crm__customer_name"]
        );
        // A key moving to another group is re-filed.
        let mut moved = record("billing", "customer_name", "Find invoices");
        moved.key = "crm__customer_name".into();
        index.upsert([moved]);
        assert_eq!(search(&index, "", Some(&["crm"]), 0, 10).0, 1);
        assert_eq!(
            search(&index, "", Some(&["billing"]), 0, 10).1,
            ["crm__customer_name"]
        );
        index.remove(["crm__customer_name", "unknown", "crm__customer_name"]);
        assert_eq!(index.len(), 16);
        assert_eq!(search(&index, "invoices", None, 0, 10).0, 0);
        assert!(!index
            .keys()
            .iter()
            .any(|key| &**key == "crm__customer_name"));
        assert_eq!(
            search(&index, "customer_name", None, 0, 10).1,
            ["crm__update_customer"]
        );
    }

    #[test]
    fn unchanged_upsert_is_a_no_op() {
        let mut index = github_index();
        let slots = index.slots();
        index.upsert([record(
            "crm",
            "customer_name",
            "Look up the display name for a customer ID.",
        )]);
        assert_eq!(index.slots(), slots);
        index.upsert([record("crm", "customer_name", "Changed")]);
        assert_eq!(index.slots(), slots + 1);
    }

    #[test]
    fn compaction_keeps_results() {
        let mut index = SearchIndex::new();
        index.upsert((0..100).map(|i| {
            record(
                "g",
                &format!("tool_{i:03}"),
                &format!("word{} common", i % 7),
            )
        }));
        let before = search(&index, "word3 common", None, 0, 100);
        index.remove(
            (0..100)
                .filter(|i| i % 2 == 1)
                .map(|i| format!("g__tool_{i:03}")),
        );
        assert_eq!(index.len(), 50);
        assert_eq!(
            index.slots(),
            50,
            "more than a quarter dead triggers compaction"
        );
        let after = search(&index, "word3 common", None, 0, 100);
        let expected: Vec<String> = before
            .1
            .into_iter()
            .filter(|key| {
                key[key.len() - 1..]
                    .parse::<u32>()
                    .is_ok_and(|d| d % 2 == 0)
            })
            .collect();
        assert_eq!(after.1, expected);
        assert_eq!(after.0, 50);
        // A freshly built index gives the same ranking.
        let mut fresh = SearchIndex::new();
        fresh.upsert((0..100).filter(|i| i % 2 == 0).map(|i| {
            record(
                "g",
                &format!("tool_{i:03}"),
                &format!("word{} common", i % 7),
            )
        }));
        assert_eq!(search(&fresh, "word3 common", None, 0, 100).1, after.1);
        assert_eq!(
            search(&fresh, "", None, 0, 100),
            search(&index, "", None, 0, 100)
        );
        // Still usable after compaction.
        index.upsert([record("g", "tool_001", "brand new")]);
        assert_eq!(search(&index, "brand", None, 0, 10).1, ["g__tool_001"]);
        assert_eq!(search(&index, "tool_001", None, 0, 1).1, ["g__tool_001"]);
    }

    #[test]
    fn a_later_batch_restores_what_an_earlier_batch_replaced() {
        // The second batch is checked for records held unchanged before the first is inserted:
        // its record equal to the indexed one must still replace the first batch's.
        let mut index = SearchIndex::new();
        let original = record("crm", "lookup", "find a customer");
        index.upsert([original.clone(), record("crm", "other", "filler")]);
        let changed = record("crm", "lookup", "find an invoice");
        index.upsert_batches([vec![changed], vec![original]]);
        assert_eq!(search(&index, "customer", None, 0, 10).1, ["crm__lookup"]);
        assert_eq!(search(&index, "invoice", None, 0, 10).0, 0);
        assert_eq!(index.len(), 2);
    }
}
