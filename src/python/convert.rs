//! Conversions between Python values and the core's Rust values.

use std::borrow::Cow;

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Maps a core validation error to `ValueError`.
pub fn value_error(err: crate::Error) -> PyErr {
    PyValueError::new_err(err.message().to_owned())
}

/// The text of a Python `str`. Lone surrogates (not valid UTF-8) become U+FFFD one for one, so
/// the character count matches Python's `len()`. Never fails.
pub fn text<'a>(value: &'a Bound<'_, PyString>) -> Cow<'a, str> {
    match value.to_str() {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(surrogate_lossy(value)),
    }
}

fn surrogate_lossy(value: &Bound<'_, PyString>) -> String {
    // `str.encode` of the base type, so a subclass cannot run its own code here.
    let encoded = value
        .py()
        .get_type::<PyString>()
        .call_method1("encode", (value, "utf-16-le", "surrogatepass"))
        .and_then(|bytes| bytes.cast_into::<PyBytes>().map_err(PyErr::from));
    match encoded {
        Ok(bytes) => {
            let units: Vec<u16> = bytes
                .as_bytes()
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        Err(_) => value.to_string_lossy().into_owned(),
    }
}

/// Extracts a Python `int` into `i64`; values beyond `i64` saturate by sign (they are out of
/// every accepted range anyway, and the core reports them). Non-integers raise `TypeError`.
pub fn saturating_i64(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match value.extract::<i64>() {
        Ok(number) => Ok(number),
        Err(err) if err.is_instance_of::<PyOverflowError>(value.py()) => {
            Ok(if value.lt(0)? { i64::MIN } else { i64::MAX })
        }
        Err(err) => Err(err),
    }
}
