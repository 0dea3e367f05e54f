//! [`SchemaNode`] for arbitrary Python objects: only `dict`, `list`, `tuple` and `str` are
//! read; nothing is converted wholesale and no user code runs while a `dict` is iterated.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::convert::text;
use crate::index::{truncate_str, SchemaNode, MAX_SCHEMA_STRING_BYTES};

/// One node of a Python parameters schema.
pub struct PyNode<'py>(pub Bound<'py, PyAny>);

impl SchemaNode for PyNode<'_> {
    fn mapping_entries(&self, limit: usize) -> Option<Vec<(Option<String>, Self)>> {
        let dict = self.0.cast::<PyDict>().ok()?;
        // Only pointer checks and reference counting happen during iteration, so the dict
        // cannot change under it; the unwind guard covers pyo3's mutation check regardless.
        let raw = catch_unwind(AssertUnwindSafe(|| {
            dict.iter()
                .take(limit)
                .map(|(key, value)| (key.cast_into::<PyString>().ok(), value))
                .collect::<Vec<_>>()
        }))
        .ok()?;
        Some(
            raw.into_iter()
                .map(|(key, value)| {
                    let key = key
                        .map(|key| truncate_str(&text(&key), MAX_SCHEMA_STRING_BYTES).to_owned());
                    (key, PyNode(value))
                })
                .collect(),
        )
    }

    fn sequence_items(&self, limit: usize) -> Option<Vec<Self>> {
        if let Ok(list) = self.0.cast::<PyList>() {
            let mut items = Vec::new();
            for index in 0..list.len().min(limit) {
                match list.get_item(index) {
                    Ok(item) => items.push(PyNode(item)),
                    Err(_) => break,
                }
            }
            return Some(items);
        }
        let tuple = self.0.cast::<PyTuple>().ok()?;
        Some(tuple.iter().take(limit).map(PyNode).collect())
    }

    fn string(&self, max_bytes: usize) -> Option<String> {
        let value = self.0.cast::<PyString>().ok()?;
        Some(truncate_str(&text(value), max_bytes).to_owned())
    }
}
