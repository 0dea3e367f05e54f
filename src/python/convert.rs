//! Conversions between Python values and the core's Rust values.

use std::any::Any;
use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyValueError};
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

/// Runs `body`, turning a Rust panic into `RuntimeError`.
///
/// pyo3 already stops a panic at the FFI boundary, but raises `PanicException`, a `BaseException`
/// that `except Exception` (and so Pydantic AI's tool error handling) does not catch. Every entry
/// point of the module runs through this guard, so a core bug surfaces as an ordinary exception.
pub fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(PyRuntimeError::new_err(format!(
            "pydantic_ai_toolproxy._core panicked: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a panic without a message"
    }
}
