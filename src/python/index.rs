//! The `SearchIndex` class.

use std::sync::{PoisonError, RwLock};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::convert::{guard, saturating_i64, text, value_error};
use super::schema::PyNode;
use crate::index::{self, collect_parameter_text, Record};

/// Inverted index over tool records; holds no Python objects.
#[pyclass(name = "SearchIndex", module = "pydantic_ai_toolproxy._core", frozen)]
pub struct PySearchIndex {
    inner: RwLock<index::SearchIndex>,
}

/// Records converted and indexed per batch by `upsert`.
const UPSERT_BATCH: usize = 16 * 1024;

type Fields<'py> = (
    Bound<'py, PyString>,
    Bound<'py, PyString>,
    Bound<'py, PyString>,
    Bound<'py, PyString>,
    Bound<'py, PyAny>,
);

/// One type-checked record, converted to the core's `Record` (needs the GIL).
fn convert((key, group, tool, description, schema): &Fields<'_>) -> Record {
    Record {
        key: text(key).into_owned(),
        group: text(group).into_owned(),
        tool: text(tool).into_owned(),
        description: text(description).into_owned(),
        parameter_text: collect_parameter_text(PyNode(schema.clone())),
    }
}

#[pymethods]
impl PySearchIndex {
    #[new]
    fn new() -> Self {
        Self {
            inner: RwLock::new(index::SearchIndex::new()),
        }
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        // Every lock is taken with the GIL released: a large upsert's worker holds the write lock
        // while the upserting thread needs the GIL to convert its next batch.
        py.detach(|| self.read().len())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("SearchIndex(len={})", self.__len__(py))
    }

    /// Adds or replaces `(key, group, tool, description, parameters_json_schema)` records.
    fn upsert(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| self.upsert_records(py, records))
    }

    /// Removes records by key; unknown keys are ignored.
    fn remove(&self, py: Python<'_>, keys: Vec<Bound<'_, PyString>>) -> PyResult<()> {
        guard(|| {
            let keys: Vec<String> = keys.iter().map(|key| text(key).into_owned()).collect();
            py.detach(|| self.write().remove(&keys));
            Ok(())
        })
    }

    /// Sets the description of `group` (empty removes it): a field shared by the group's members.
    fn set_group_description(
        &self,
        py: Python<'_>,
        group: &Bound<'_, PyString>,
        description: &Bound<'_, PyString>,
    ) -> PyResult<()> {
        guard(|| {
            let (group, description) = (text(group), text(description));
            py.detach(|| self.write().set_group_description(&group, &description));
            Ok(())
        })
    }

    /// Live keys, in no particular order.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let keys = py.detach(|| self.read().keys());
            PyList::new(py, keys.iter().map(|key| &**key))
        })
    }

    /// `(total, keys of ranked results[offset : offset + limit])`.
    #[pyo3(signature = (query, groups, offset, limit))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyString>,
        groups: Option<Vec<Bound<'py, PyString>>>,
        offset: &Bound<'py, PyAny>,
        limit: &Bound<'py, PyAny>,
    ) -> PyResult<(usize, Bound<'py, PyList>)> {
        guard(|| self.search_records(py, query, groups, offset, limit))
    }

    /// `(exact, score, coordination, [(token, field, via_stem, gain), ...])` for the live record
    /// `key`, or `None` for an unknown key.
    #[pyo3(signature = (query, groups, key))]
    fn explain(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyString>,
        groups: Option<Vec<Bound<'_, PyString>>>,
        key: &Bound<'_, PyString>,
    ) -> PyResult<ExplainTuple> {
        guard(|| {
            let query = text(query);
            let key = text(key);
            let groups: Option<Vec<String>> =
                groups.map(|g| g.iter().map(|name| text(name).into_owned()).collect());
            let explained = py.detach(|| {
                let names: Option<Vec<&str>> = groups
                    .as_ref()
                    .map(|g| g.iter().map(String::as_str).collect());
                self.read().explain(&query, names.as_deref(), &key)
            });
            Ok(explained.map(|e| {
                let matches = e
                    .matches
                    .into_iter()
                    .map(|m| (m.token, m.field, m.via_stem, m.gain))
                    .collect();
                (e.exact, e.score, e.coordination, matches)
            }))
        })
    }
}

/// What `explain` returns to Python.
type ExplainTuple = Option<(bool, f32, f32, Vec<(String, &'static str, bool, f32)>)>;

impl PySearchIndex {
    fn upsert_records(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        // Every item is type-checked before the index changes (conversion itself cannot fail).
        // Then this thread converts a batch at a time (it needs the GIL) while a worker thread,
        // without the GIL, indexes the batches already converted: the two overlap, and the
        // converted text alive at once stays within two batches. The worker holds the write lock
        // for the whole upsert, so readers see the index before or after it, never between.
        let items = records
            .try_iter()?
            .map(|item| item?.extract::<Fields<'_>>())
            .collect::<PyResult<Vec<_>>>()?;
        if items.len() <= UPSERT_BATCH {
            let converted = items.iter().map(convert).collect::<Vec<_>>();
            py.detach(|| self.write().upsert(converted));
            return Ok(());
        }
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<Record>>(1);
        // Indexed batches come back to be freed on this thread, which allocated them (freeing
        // them on the worker made every free contend with this thread's allocations).
        let (spent_sender, spent) = std::sync::mpsc::channel::<Vec<Record>>();
        let joined = std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                self.write().upsert_batches_then(receiver, |batch| {
                    let _ = spent_sender.send(batch);
                });
            });
            for batch in items.chunks(UPSERT_BATCH) {
                let converted: Vec<Record> = batch.iter().map(convert).collect();
                if py.detach(|| sender.send(converted)).is_err() {
                    break; // the worker stopped (it panicked): reported by `join` below
                }
                spent.try_iter().for_each(drop);
            }
            drop(sender);
            py.detach(|| worker.join())
        });
        py.detach(move || spent.try_iter().for_each(drop));
        joined.map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "internal error in the pydantic_ai_toolproxy core while indexing (a bug; please report it)",
            )
        })
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, index::SearchIndex> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, index::SearchIndex> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn search_records<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyString>,
        groups: Option<Vec<Bound<'py, PyString>>>,
        offset: &Bound<'py, PyAny>,
        limit: &Bound<'py, PyAny>,
    ) -> PyResult<(usize, Bound<'py, PyList>)> {
        let (offset, limit) = index::search_window(saturating_i64(offset)?, saturating_i64(limit)?)
            .map_err(value_error)?;
        let query = text(query).into_owned();
        let groups: Option<Vec<String>> =
            groups.map(|groups| groups.iter().map(|g| text(g).into_owned()).collect());
        let (total, keys) = py.detach(|| {
            let group_refs: Option<Vec<&str>> = groups
                .as_ref()
                .map(|groups| groups.iter().map(String::as_str).collect());
            self.read()
                .search(&query, group_refs.as_deref(), offset, limit)
        });
        Ok((total, PyList::new(py, keys.iter().map(|key| &**key))?))
    }
}
