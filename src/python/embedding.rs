//! Bulk helpers of hybrid search's Python pipeline (`_vectors.ToolVectors`): tool texts with their
//! fingerprints ([`crate::embedding_text`]), and the rows of a store's answer that hold a
//! non-finite value. Both read the Python objects with the GIL held, then work without it.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::index::buffer_bytes;
use crate::embedding_text::{blake2b_128, embedding_text};

/// The group, tool and description strings of an index record `(key, group, tool, description,
/// schema)`, or `None` when it is not a tuple of at least four items with `str` (exactly) there.
fn record_fields<'py>(item: &Bound<'py, PyAny>) -> Option<[Bound<'py, PyString>; 3]> {
    let record = item.cast::<PyTuple>().ok()?;
    if record.len() < 4 {
        return None;
    }
    let field = |at: usize| -> Option<Bound<'py, PyString>> {
        record.get_item(at).ok()?.cast_into_exact::<PyString>().ok()
    };
    Some([field(1)?, field(2)?, field(3)?])
}

/// `(texts, fingerprints)` of index `records`: for each, its embedding text (`str`) and the
/// text's 16-byte `BLAKE2b` (`bytes`), or `None` in both lists when the record cannot be done
/// here (not a record of `str`s, a string holding a lone surrogate, or a group missing from
/// `tails`, which maps each group to its folded part of the text): the caller computes those
/// with the Python recipe.
pub fn fingerprints<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyAny>,
    tails: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let mut tail_of: HashMap<String, Option<String>> = HashMap::new();
    for (group, tail) in tails.iter() {
        let (Ok(group), Ok(tail)) = (
            group.cast_exact::<PyString>(),
            tail.cast_exact::<PyString>(),
        ) else {
            continue;
        };
        if let Ok(group) = group.to_str() {
            tail_of.insert(group.to_owned(), tail.to_str().ok().map(str::to_owned));
        }
    }
    let fields = records
        .try_iter()?
        .map(|item| Ok(record_fields(&item?)))
        .collect::<PyResult<Vec<_>>>()?;
    let inputs: Vec<Option<(&str, &str, &str)>> = fields
        .iter()
        .map(|fields| {
            let [group, tool, description] = fields.as_ref()?;
            let tail = tail_of.get(group.to_str().ok()?)?.as_deref()?;
            Some((tool.to_str().ok()?, description.to_str().ok()?, tail))
        })
        .collect();
    let done: Vec<Option<(String, [u8; 16])>> = py.detach(|| {
        let work = |part: &[Option<(&str, &str, &str)>]| -> Vec<Option<(String, [u8; 16])>> {
            part.iter()
                .map(|input| {
                    input.map(|(tool, description, tail)| {
                        let text = embedding_text(tool, description, tail);
                        let hash = blake2b_128(text.as_bytes());
                        (text, hash)
                    })
                })
                .collect()
        };
        let workers = crate::bulk_workers(inputs.len());
        if workers == 1 {
            return work(&inputs);
        }
        let chunk = inputs.len().div_ceil(workers);
        std::thread::scope(|scope| {
            let parts: Vec<_> = inputs
                .chunks(chunk)
                .map(|part| scope.spawn(move || work(part)))
                .collect();
            parts
                .into_iter()
                .flat_map(|part| part.join().expect("a fingerprint worker panicked"))
                .collect()
        })
    });
    let texts = PyList::empty(py);
    let hashes = PyList::empty(py);
    for item in done {
        if let Some((text, hash)) = item {
            texts.append(PyString::new(py, &text))?;
            hashes.append(PyBytes::new(py, &hash))?;
        } else {
            texts.append(py.None())?;
            hashes.append(py.None())?;
        }
    }
    Ok((texts, hashes))
}

/// The positions of the `rows` (bytes-like little-endian float32 vectors) holding a NaN or an
/// infinity (a trailing partial value is not read).
pub fn nonfinite_rows(py: Python<'_>, rows: &[Bound<'_, PyAny>]) -> PyResult<Vec<usize>> {
    let rows = rows
        .iter()
        .map(buffer_bytes)
        .collect::<PyResult<Vec<_>>>()?;
    Ok(py.detach(|| {
        rows.iter()
            .enumerate()
            .filter(|(_, row)| {
                // All exponent bits set: NaN or infinity (a branch-free count that vectorizes).
                row.chunks_exact(4)
                    .map(|value| {
                        let bits = u32::from_le_bytes([value[0], value[1], value[2], value[3]]);
                        u32::from(bits & 0x7f80_0000 == 0x7f80_0000)
                    })
                    .sum::<u32>()
                    > 0
            })
            .map(|(at, _)| at)
            .collect()
    }))
}
