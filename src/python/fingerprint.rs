//! `schema_fingerprints`: a 64-bit fingerprint of each JSON-like Python value of a list, so the
//! Python side can tell a schema edited in place (the same `dict`, other contents) from an
//! unchanged one without keeping a copy of it.
//!
//! The walk reads what the index's parameter walk can read (every node above
//! [`MAX_SCHEMA_DEPTH`]) and more: every key and value of exactly-typed `dict`, `list`, `tuple`,
//! `str`, `int`, `float`, `bool` and `None`, in iteration order, each container with its kind
//! and length. Equal fingerprints therefore mean equal indexed text (up to a 64-bit hash
//! collision). No user code runs: strings are hashed by Python's own cached `str` hash, and a
//! value of any other type (a subclass included) makes the whole value unfingerprintable.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::index::MAX_SCHEMA_DEPTH;

/// Most nodes (containers, keys and leaves) fingerprinted per value; a larger value is
/// unfingerprintable (its fingerprint is 0), as is a value holding an object of another type.
pub const MAX_FINGERPRINT_NODES: usize = 100_000;

const DICT: u64 = 1;
const LIST: u64 = 2;
const TUPLE: u64 = 3;
const STR: u64 = 4;
const INT: u64 = 5;
const BIG_INT: u64 = 6;
const FLOAT: u64 = 7;
const TRUE: u64 = 8;
const FALSE: u64 = 9;
const NONE: u64 = 10;
const DEEP: u64 = 11;

/// splitmix64's finalizer: spreads every input bit over the output.
fn spread(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

struct Hasher(u64);

impl Hasher {
    fn add(&mut self, tag: u64, value: u64) {
        self.0 = (self.0.rotate_left(23) ^ spread(tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ value))
            .wrapping_mul(0xff51_afd7_ed55_8ccd);
    }
}

/// Bit pattern of Python's `hash(value)` (a `Py_hash_t`): the cast keeps all 64 bits.
#[allow(clippy::cast_sign_loss)]
fn hash_bits(value: ffi::Py_hash_t) -> u64 {
    value as u64
}

/// Count of a container from `Py_ssize_t` (never negative for a live list or tuple).
fn count(size: ffi::Py_ssize_t) -> usize {
    usize::try_from(size).unwrap_or(0)
}

/// The exact types the walk reads, compared by pointer (`Py_TYPE(value) == &PyDict_Type`).
struct Types {
    dict: *mut ffi::PyTypeObject,
    list: *mut ffi::PyTypeObject,
    tuple: *mut ffi::PyTypeObject,
    string: *mut ffi::PyTypeObject,
    int: *mut ffi::PyTypeObject,
    float: *mut ffi::PyTypeObject,
}

impl Types {
    fn new() -> Self {
        // Taking the addresses of the interpreter's static type objects reads nothing.
        Types {
            dict: &raw mut ffi::PyDict_Type,
            list: &raw mut ffi::PyList_Type,
            tuple: &raw mut ffi::PyTuple_Type,
            string: &raw mut ffi::PyUnicode_Type,
            int: &raw mut ffi::PyLong_Type,
            float: &raw mut ffi::PyFloat_Type,
        }
    }
}

/// What one node is to the walk.
enum Node {
    /// A leaf, already hashed.
    Leaf,
    /// A `dict`, `list` or `tuple` to walk.
    Container,
    /// A value of another type: the whole value is not fingerprinted.
    Other,
}

/// Hashes `node` when it is a leaf.
///
/// # Safety
/// `node` is a live object and the GIL is held; no Python code runs (exact `str` and `int` hashes
/// are computed by `CPython` itself, cached in a `str` after the first time).
unsafe fn leaf(hasher: &mut Hasher, node: *mut ffi::PyObject, types: &Types) -> Node {
    let kind = unsafe { ffi::Py_TYPE(node) };
    if kind == types.string {
        let hash = unsafe { ffi::PyObject_Hash(node) };
        if hash == -1 {
            unsafe { ffi::PyErr_Clear() };
            return Node::Other;
        }
        hasher.add(STR, hash_bits(hash));
    } else if kind == types.dict || kind == types.list || kind == types.tuple {
        return Node::Container;
    } else if node == unsafe { ffi::Py_True() } {
        hasher.add(TRUE, 0);
    } else if node == unsafe { ffi::Py_False() } {
        hasher.add(FALSE, 0);
    } else if node == unsafe { ffi::Py_None() } {
        hasher.add(NONE, 0);
    } else if kind == types.int {
        let number = unsafe { ffi::PyLong_AsLongLong(node) };
        if number == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            unsafe { ffi::PyErr_Clear() };
            let hash = unsafe { ffi::PyObject_Hash(node) };
            if hash == -1 {
                unsafe { ffi::PyErr_Clear() };
                return Node::Other;
            }
            hasher.add(BIG_INT, hash_bits(hash));
        } else {
            hasher.add(INT, u64::from_ne_bytes(number.to_ne_bytes()));
        }
    } else if kind == types.float {
        hasher.add(FLOAT, unsafe { ffi::PyFloat_AsDouble(node) }.to_bits());
    } else {
        return Node::Other;
    }
    Node::Leaf
}

/// The fingerprint of one value, or 0 when it is not fingerprintable (never 0 otherwise).
///
/// Walks borrowed references only and runs no Python code, so nothing can change or free what is
/// walked while the GIL (`_py`) is held. Leaves are hashed where their container lists them; only
/// containers go on the stack.
fn fingerprint(_py: Python<'_>, root: *mut ffi::PyObject, types: &Types) -> u64 {
    let mut hasher = Hasher(0x243f_6a88_85a3_08d3);
    let mut budget = MAX_FINGERPRINT_NODES;
    let mut stack: Vec<(*mut ffi::PyObject, usize)> = Vec::new();
    // SAFETY: every pointer is a borrowed reference into `root`, which the caller holds, read with
    // the GIL held while no Python code runs; the ffi calls are those of the limited API.
    unsafe {
        match leaf(&mut hasher, root, types) {
            Node::Leaf => {}
            Node::Container => stack.push((root, 0)),
            Node::Other => return 0,
        }
        while let Some((node, depth)) = stack.pop() {
            if depth >= MAX_SCHEMA_DEPTH {
                hasher.add(DEEP, 0); // the index reads nothing this deep: only that a container is here
                continue;
            }
            let kind = ffi::Py_TYPE(node);
            if kind == types.dict {
                let size = count(ffi::PyDict_Size(node));
                if 2 * size > budget {
                    return 0;
                }
                budget -= 2 * size;
                hasher.add(DICT, size as u64);
                let mut position: ffi::Py_ssize_t = 0;
                let mut key: *mut ffi::PyObject = std::ptr::null_mut();
                let mut value: *mut ffi::PyObject = std::ptr::null_mut();
                while ffi::PyDict_Next(node, &raw mut position, &raw mut key, &raw mut value) != 0 {
                    if ffi::Py_TYPE(key) != types.string {
                        return 0; // JSON keys are strings; anything else is not fingerprinted
                    }
                    leaf(&mut hasher, key, types);
                    match leaf(&mut hasher, value, types) {
                        Node::Leaf => {}
                        Node::Container => stack.push((value, depth + 1)),
                        Node::Other => return 0,
                    }
                }
            } else {
                let list = kind == types.list;
                let size = count(if list {
                    ffi::PyList_Size(node)
                } else {
                    ffi::PyTuple_Size(node)
                });
                if size > budget {
                    return 0;
                }
                budget -= size;
                hasher.add(if list { LIST } else { TUPLE }, size as u64);
                for index in 0..size {
                    let at = ffi::Py_ssize_t::try_from(index).unwrap_or(0);
                    let item = if list {
                        ffi::PyList_GetItem(node, at)
                    } else {
                        ffi::PyTuple_GetItem(node, at)
                    };
                    if item.is_null() {
                        ffi::PyErr_Clear();
                        return 0;
                    }
                    match leaf(&mut hasher, item, types) {
                        Node::Leaf => {}
                        Node::Container => stack.push((item, depth + 1)),
                        Node::Other => return 0,
                    }
                }
            }
        }
    }
    match spread(hasher.0) {
        0 => 1,
        found => found,
    }
}

/// The fingerprints of `values` as `8 * len(values)` bytes (one little-endian `u64` per value, 0
/// for a value that is not fingerprintable), and how many are 0.
pub fn fingerprints<'py>(values: &Bound<'py, PyList>) -> (Bound<'py, PyBytes>, usize) {
    let mut out = Vec::with_capacity(values.len() * 8);
    let mut unfingerprintable = 0;
    let types = Types::new();
    let py = values.py();
    for value in values.iter() {
        let found = fingerprint(py, value.as_ptr(), &types);
        unfingerprintable += usize::from(found == 0);
        out.extend_from_slice(&found.to_le_bytes());
    }
    (PyBytes::new(values.py(), &out), unfingerprintable)
}
