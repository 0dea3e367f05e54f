//! The `pydantic_ai_toolproxy._core` extension module: conversions and error mapping only.

mod convert;
mod embedding;
mod fingerprint;
mod index;
mod schema;

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::{names, page};
use convert::{guard, saturating_i64, text, value_error};

/// Raise `ValueError` unless `name` is a valid `ToolProxy` group name.
#[pyfunction]
fn validate_group_name(name: &Bound<'_, PyString>) -> PyResult<()> {
    guard(|| names::validate_group_name(&text(name)).map_err(value_error))
}

/// Raise `ValueError` if the description of `group` is blank, too long, or not valid Unicode text.
#[pyfunction]
fn validate_group_description(
    group: &Bound<'_, PyString>,
    description: &Bound<'_, PyString>,
) -> PyResult<()> {
    guard(|| {
        names::validate_group_description(&text(group), &text(description)).map_err(value_error)?;
        if description.to_str().is_err() {
            return Err(value_error(names::description_not_unicode(&text(group))));
        }
        Ok(())
    })
}

/// `True` when `name` is acceptable as a model-facing function name.
#[pyfunction]
fn validate_tool_name(name: &Bound<'_, PyAny>) -> PyResult<bool> {
    guard(|| {
        Ok(name
            .cast::<PyString>()
            .is_ok_and(|name| names::validate_tool_name(&text(name))))
    })
}

/// An int config field: `ValueError` (with the exact value) when beyond `i64`.
fn config_int(field: &str, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match value.extract::<i64>() {
        Ok(number) => Ok(number),
        Err(err) if err.is_instance_of::<PyOverflowError>(value.py()) => {
            let shown = value
                .str()
                .map(|s| text(&s).into_owned())
                .unwrap_or_default();
            Err(value_error(names::int_out_of_range(field, &shown)))
        }
        Err(_) => Err(PyTypeError::new_err(format!(
            "invalid ToolProxy config: {field} must be an int, got {}",
            value
                .get_type()
                .name()
                .map_or_else(|_| "an object".to_owned(), |name| name.to_string())
        ))),
    }
}

/// Raise `ValueError` naming the offending field unless the configuration is valid.
#[pyfunction]
fn validate_config(
    search_name: &Bound<'_, PyString>,
    call_name: &Bound<'_, PyString>,
    max_results: &Bound<'_, PyAny>,
    max_search_bytes: &Bound<'_, PyAny>,
) -> PyResult<()> {
    guard(|| {
        let max_results = config_int("max_results", max_results)?;
        let max_search_bytes = config_int("max_search_bytes", max_search_bytes)?;
        names::validate_config(
            &text(search_name),
            &text(call_name),
            max_results,
            max_search_bytes,
        )
        .map_err(value_error)
    })
}

/// `f"{group}__{tool}"`.
#[pyfunction]
fn canonical_name(group: &Bound<'_, PyString>, tool: &Bound<'_, PyString>) -> PyResult<String> {
    guard(|| Ok(names::canonical_name(&text(group), &text(tool))))
}

/// Split at the first `__`; `None` without a separator or with an empty side.
#[pyfunction]
fn split_canonical_name(name: &Bound<'_, PyString>) -> PyResult<Option<(String, String)>> {
    guard(|| {
        Ok(names::split_canonical_name(&text(name))
            .map(|(group, tool)| (group.to_owned(), tool.to_owned())))
    })
}

/// Whether `query` has nothing to look for (no alphanumeric character): the index browses it
/// unless it is a tool's exact name, and it is never ranked by meaning.
#[pyfunction]
fn nothing_to_find(query: &Bound<'_, PyString>) -> PyResult<bool> {
    guard(|| Ok(crate::index::nothing_to_find(&text(query))))
}

/// Plan a byte-budgeted page: `(count, next_offset, page_size_bytes)`.
#[pyfunction]
fn plan_page(
    entry_sizes: Vec<Bound<'_, PyAny>>,
    total: &Bound<'_, PyAny>,
    offset: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
) -> PyResult<(usize, Option<u64>, u64)> {
    guard(|| {
        let sizes = entry_sizes
            .iter()
            .map(saturating_i64)
            .collect::<PyResult<Vec<i64>>>()?;
        let plan = page::plan_page(
            &sizes,
            saturating_i64(total)?,
            saturating_i64(offset)?,
            saturating_i64(budget)?,
        )
        .map_err(value_error)?;
        Ok((plan.count, plan.next_offset, plan.size))
    })
}

/// Fingerprints of JSON-like values: `(8 * len(values)` bytes, one little-endian `u64` per value
/// (0: not fingerprintable), how many are 0)`. See `fingerprint.rs`.
#[pyfunction]
fn schema_fingerprints<'py>(values: &Bound<'py, PyList>) -> PyResult<(Bound<'py, PyBytes>, usize)> {
    guard(|| Ok(fingerprint::fingerprints(values)))
}

/// `(texts, fingerprints)` of index records: each one's hybrid-search embedding text and its
/// 16-byte `BLAKE2b`, `None` in both where the Python recipe must do it. See `embedding.rs`.
#[pyfunction]
fn embedding_fingerprints<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    tails: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    guard(|| embedding::fingerprints(py, records, tails))
}

/// Positions of the float32 vector rows holding a NaN or an infinity.
#[pyfunction]
fn nonfinite_rows(py: Python<'_>, rows: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<usize>> {
    guard(|| embedding::nonfinite_rows(py, &rows))
}

/// Panics with `message` inside the guard every entry point uses: for tests that a core panic
/// surfaces as `RuntimeError` (not as pyo3's `PanicException`, a `BaseException`). Only in
/// builds with the `test-hooks` feature (`scripts/bootstrap`'s development build), never in a
/// wheel.
#[cfg(feature = "test-hooks")]
#[pyfunction]
fn _panic_for_tests(message: &Bound<'_, PyString>) -> PyResult<()> {
    let message = text(message).into_owned();
    guard(|| panic!("{message}"))
}

/// Rust core of pydantic-ai-toolproxy: validation, canonical names, search index, page planning.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("GROUP_NAME_PATTERN", names::GROUP_NAME_PATTERN)?;
    module.add("CANONICAL_SEPARATOR", names::CANONICAL_SEPARATOR)?;
    module.add("MAX_DESCRIPTION_CHARS", names::MAX_DESCRIPTION_CHARS)?;
    module.add("MIN_SEARCH_BYTES", names::MIN_SEARCH_BYTES)?;
    module.add("MAX_SEARCH_BYTES", names::MAX_SEARCH_BYTES)?;
    module.add("MAX_RESULTS_LIMIT", names::MAX_RESULTS_LIMIT)?;
    module.add("MAX_QUERY_BYTES", crate::index::MAX_QUERY_BYTES)?;
    module.add_function(wrap_pyfunction!(validate_group_name, module)?)?;
    module.add_function(wrap_pyfunction!(validate_group_description, module)?)?;
    module.add_function(wrap_pyfunction!(validate_tool_name, module)?)?;
    module.add_function(wrap_pyfunction!(validate_config, module)?)?;
    module.add_function(wrap_pyfunction!(canonical_name, module)?)?;
    module.add_function(wrap_pyfunction!(split_canonical_name, module)?)?;
    module.add_function(wrap_pyfunction!(plan_page, module)?)?;
    module.add_function(wrap_pyfunction!(nothing_to_find, module)?)?;
    module.add_function(wrap_pyfunction!(schema_fingerprints, module)?)?;
    module.add("MAX_FINGERPRINT_NODES", fingerprint::MAX_FINGERPRINT_NODES)?;
    module.add_function(wrap_pyfunction!(embedding_fingerprints, module)?)?;
    module.add_function(wrap_pyfunction!(nonfinite_rows, module)?)?;
    #[cfg(feature = "test-hooks")]
    module.add_function(wrap_pyfunction!(_panic_for_tests, module)?)?;
    module.add_class::<index::PySearchIndex>()?;
    Ok(())
}
