//! The `SearchIndex` class.

use std::sync::{PoisonError, RwLock};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

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
            let keys = owned_texts(&keys);
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
        guard(|| {
            let (offset, limit) = window(offset, limit)?;
            let query = text(query);
            let (total, keys) = self.read_with_groups(py, groups, |index, groups| {
                index.search(&query, groups, offset, limit)
            });
            Ok((total, PyList::new(py, keys.iter().map(|key| &**key))?))
        })
    }

    /// Attaches little-endian float32 `vectors` (`len(keys) * dimensions * 4` bytes) to the live
    /// records `keys`; `ValueError` for a bad length, dimensionality or non-finite value.
    #[pyo3(signature = (keys, vectors, dimensions))]
    fn set_vectors(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyString>>,
        vectors: &Bound<'_, PyAny>,
        dimensions: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        guard(|| {
            let dimensions = vector_dimensions(dimensions)?;
            let keys = owned_texts(&keys);
            let bytes = buffer_bytes(vectors)?;
            let bytes: &[u8] = &bytes;
            py.detach(|| self.write().set_vectors(&keys, bytes, dimensions))
                .map_err(value_error)
        })
    }

    /// Attaches `rows` (one bytes-like little-endian float32 vector of `dimensions` values per
    /// key: `set_vectors` without joining the rows into one buffer first); `ValueError` for a
    /// count or length that does not match, another dimensionality or a non-finite value.
    #[pyo3(signature = (keys, rows, dimensions))]
    fn set_vector_rows(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyString>>,
        rows: Vec<Bound<'_, PyAny>>,
        dimensions: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        guard(|| {
            let dimensions = vector_dimensions(dimensions)?;
            let keys: Vec<String> = keys.iter().map(|key| text(key).into_owned()).collect();
            let rows = rows
                .iter()
                .map(buffer_bytes)
                .collect::<PyResult<Vec<_>>>()?;
            py.detach(|| self.write().set_vector_rows(&keys, &rows, dimensions))
                .map_err(value_error)
        })
    }

    /// Drops the vectors of `keys` (unknown keys are ignored).
    fn drop_vectors(&self, py: Python<'_>, keys: Vec<Bound<'_, PyString>>) -> PyResult<()> {
        guard(|| {
            let keys = owned_texts(&keys);
            py.detach(|| self.write().drop_vectors(&keys));
            Ok(())
        })
    }

    /// Drops every vector and the dimensionality.
    fn clear_vectors(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            py.detach(|| self.write().clear_vectors());
            Ok(())
        })
    }

    /// Number of live records with a vector.
    fn vector_count(&self, py: Python<'_>) -> PyResult<usize> {
        guard(|| Ok(py.detach(|| self.read().vector_count())))
    }

    /// The vectors' dimensionality, or `None`.
    fn vector_dimensions(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        guard(|| Ok(py.detach(|| self.read().vector_dimensions())))
    }

    /// The live records among `keys` without a vector, in the order given.
    fn vector_keys_missing(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Vec<String>> {
        guard(|| {
            let keys = owned_texts(&keys);
            Ok(py.detach(|| self.read().vector_keys_missing(&keys)))
        })
    }

    /// `(total, keys)` of the hybrid ranking (see `_core.pyi`).
    #[pyo3(signature = (query, query_vector, groups, offset, limit, weight))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn search_hybrid<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyString>,
        query_vector: Option<&Bound<'py, PyAny>>,
        groups: Option<Vec<Bound<'py, PyString>>>,
        offset: &Bound<'py, PyAny>,
        limit: &Bound<'py, PyAny>,
        weight: f64,
    ) -> PyResult<(usize, Bound<'py, PyList>)> {
        guard(|| {
            let (offset, limit) = window(offset, limit)?;
            let query = text(query);
            let vector = query_vector.map(buffer_bytes).transpose()?;
            let vector = vector.as_deref();
            let (total, keys) = self
                .read_with_groups(py, groups, |index, groups| {
                    index.search_hybrid(&query, vector, groups, offset, limit, weight)
                })
                .map_err(value_error)?;
            Ok((total, PyList::new(py, keys.iter().map(|key| &**key))?))
        })
    }

    /// `(total, keys, exact, browsed)`: `search_hybrid`'s window (`search`'s when `query_vector` is
    /// `None`), how many of its keys, from the first, are exact name matches, and whether the query
    /// browsed, in one call and one read of the index (see `_core.pyi`).
    #[pyo3(signature = (query, query_vector, groups, offset, limit, weight))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn rank<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyString>,
        query_vector: Option<&Bound<'py, PyAny>>,
        groups: Option<Vec<Bound<'py, PyString>>>,
        offset: &Bound<'py, PyAny>,
        limit: &Bound<'py, PyAny>,
        weight: f64,
    ) -> PyResult<(usize, Bound<'py, PyList>, usize, bool)> {
        guard(|| {
            let (offset, limit) = window(offset, limit)?;
            let query = text(query);
            let vector = query_vector.map(buffer_bytes).transpose()?;
            let vector = vector.as_deref();
            let ranked = self
                .read_with_groups(py, groups, |index, groups| {
                    index.rank(&query, vector, groups, offset, limit, weight)
                })
                .map_err(value_error)?;
            Ok((
                ranked.total,
                PyList::new(py, ranked.keys.iter().map(|key| &**key))?,
                ranked.exact,
                ranked.browsed,
            ))
        })
    }

    /// `(exact, keyword_score, keyword_share, cosine, semantic_share, weight, fused)` for the
    /// live record `key`, or `None` for an unknown key.
    #[pyo3(signature = (query, query_vector, groups, key, weight))]
    fn explain_hybrid(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyString>,
        query_vector: Option<&Bound<'_, PyAny>>,
        groups: Option<Vec<Bound<'_, PyString>>>,
        key: &Bound<'_, PyString>,
        weight: f64,
    ) -> PyResult<HybridTuple> {
        guard(|| {
            let query = text(query);
            let key = text(key);
            let vector = query_vector.map(buffer_bytes).transpose()?;
            let vector = vector.as_deref();
            let explained = self
                .read_with_groups(py, groups, |index, groups| {
                    index.explain_hybrid(&query, vector, groups, &key, weight)
                })
                .map_err(value_error)?;
            Ok(explained.map(|e| {
                (
                    e.exact,
                    e.keyword_score,
                    e.keyword_share,
                    e.cosine,
                    e.semantic_share,
                    e.weight,
                    e.fused,
                )
            }))
        })
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
            let explained = self.read_with_groups(py, groups, |index, groups| {
                index.explain(&query, groups, &key)
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

/// What `explain_hybrid` returns to Python: `(exact, keyword_score, keyword_share, cosine,
/// semantic_share, weight, fused)`.
type HybridTuple = Option<(bool, f32, f32, Option<f32>, f32, f32, f32)>;

/// The bytes of a bytes-like object (`bytes` without a copy; anything else with the buffer
/// protocol, e.g. `array('f')`, through `memoryview(value).tobytes()`); other values raise
/// `TypeError`.
pub(super) fn buffer_bytes<'a>(
    value: &'a Bound<'_, PyAny>,
) -> PyResult<std::borrow::Cow<'a, [u8]>> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(std::borrow::Cow::Borrowed(bytes.as_bytes()));
    }
    let copied = value
        .py()
        .import("builtins")?
        .getattr("memoryview")?
        .call1((value,))?
        .call_method0("tobytes")?;
    Ok(std::borrow::Cow::Owned(
        copied.cast::<PyBytes>()?.as_bytes().to_vec(),
    ))
}

/// Python strings as owned strings (for use without the GIL).
fn owned_texts(values: &[Bound<'_, PyString>]) -> Vec<String> {
    values
        .iter()
        .map(|value| text(value).into_owned())
        .collect()
}

/// The `(offset, limit)` of a search: Python ints (saturated to `i64`) checked by
/// `index::search_window` (`ValueError` for a negative one).
fn window(offset: &Bound<'_, PyAny>, limit: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    index::search_window(saturating_i64(offset)?, saturating_i64(limit)?).map_err(value_error)
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

    /// `body(index, groups)` without the GIL, on the read-locked index, with `groups` (converted
    /// to owned strings while the GIL is held) as `&str`s.
    fn read_with_groups<T: Send>(
        &self,
        py: Python<'_>,
        groups: Option<Vec<Bound<'_, PyString>>>,
        body: impl FnOnce(&index::SearchIndex, Option<&[&str]>) -> T + Send,
    ) -> T {
        let groups: Option<Vec<String>> = groups.map(|groups| owned_texts(&groups));
        py.detach(|| {
            let names: Option<Vec<&str>> = groups
                .as_ref()
                .map(|groups| groups.iter().map(String::as_str).collect());
            body(&self.read(), names.as_deref())
        })
    }
}

/// A vector dimensionality given from Python (`set_vectors`, `set_vector_rows`): a negative one, or one
/// past what `usize` holds, is a `ValueError` naming the value as given (the core checks the range
/// of the rest).
fn vector_dimensions(dimensions: &Bound<'_, PyAny>) -> PyResult<usize> {
    let given = saturating_i64(dimensions)?;
    match usize::try_from(given) {
        Ok(dimensions) if given != i64::MAX => Ok(dimensions),
        _ => Err(value_error(crate::Error::new(format!(
            "vector dimensions must be between 1 and {}, got {}",
            crate::index::MAX_DIMENSIONS,
            dimensions.str()?
        )))),
    }
}
