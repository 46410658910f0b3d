//! `HostState.routes` of a snapshot that came from Rust: a lazy, immutable sequence.
//!
//! Building 100k frozen `Route` dataclasses (and their strings) used to be more
//! than half of `Host.snapshot()` on a big routing table, and most of its memory.
//! A [`RouteSeq`] instead holds the same `Arc<HostState>` as the hidden `_native`
//! slot and builds a `Route` (with the usual converter, so it is the same frozen
//! dataclass) only when an element is asked for. A caller that filters by table
//! pays only for the routes it reads; `len()`, `in`, `count` and `index` (for
//! `Route` values) and comparing two sequences over the same snapshot never
//! build Python objects at all.

use crate::convert::to_py;
use crate::registry::registered_class;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyByteArray, PyBytes, PyList, PySlice, PyString, PyTuple};
use roce_net::HostState;
use roce_net::Route;
use std::sync::Arc;

/// The routes of a Rust snapshot, each built into a Python `Route` on access.
#[pyclass(frozen, sequence, module = "roce_net._roce_net")]
pub struct RouteSeq {
    inner: Arc<HostState>,
}

impl RouteSeq {
    /// The sequence over `state.routes`.
    pub fn new(inner: Arc<HostState>) -> Self {
        RouteSeq { inner }
    }

    fn routes(&self) -> &[Route] {
        &self.inner.routes
    }

    /// Every element as a Python tuple (what `tuple(seq)` gives).
    fn to_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .routes()
            .iter()
            .map(|r| to_py(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
}

/// A Python value as a library `Route`, when it is a `roce_net.Route` that the
/// library accepts; None otherwise.
fn as_route(value: &Bound<'_, PyAny>) -> Option<Route> {
    let cls = registered_class(value.py(), "Route").ok()??;
    if !value.is_instance(&cls).unwrap_or(false) {
        return None;
    }
    let text: String = value.call_method0("to_json").ok()?.extract().ok()?;
    serde_json::from_str(&text).ok()
}

/// A tuple, a list, or any other `collections.abc.Sequence` except text and
/// bytes (what a `RouteSeq` can be compared with element by element).
fn is_sequence(other: &Bound<'_, PyAny>) -> PyResult<bool> {
    if other.is_instance_of::<PyTuple>() || other.is_instance_of::<PyList>() {
        return Ok(true);
    }
    if other.is_instance_of::<PyString>()
        || other.is_instance_of::<PyBytes>()
        || other.is_instance_of::<PyByteArray>()
    {
        return Ok(false);
    }
    let abc = other.py().import("collections.abc")?.getattr("Sequence")?;
    other.is_instance(&abc)
}

/// A Python index (negative counts from the end) into `0..len`, or IndexError.
fn position(i: isize, len: usize) -> PyResult<usize> {
    let len_i = len as isize;
    let j = if i < 0 { i + len_i } else { i };
    if j < 0 || j >= len_i {
        return Err(PyIndexError::new_err("RouteSeq index out of range"));
    }
    Ok(j as usize)
}

/// `start`/`stop` of `index()` clamped to `0..=len` like `tuple.index`.
fn clamp(i: Option<isize>, len: usize, default: usize) -> usize {
    let len_i = len as isize;
    match i {
        None => default,
        Some(i) if i < 0 => (i + len_i).max(0) as usize,
        Some(i) => i.min(len_i) as usize,
    }
}

#[pymethods]
impl RouteSeq {
    fn __len__(&self) -> usize {
        self.routes().len()
    }

    /// `seq[i]` builds one `Route`; `seq[a:b:c]` a tuple of them.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let routes = self.routes();
        if let Ok(slice) = index.cast::<PySlice>() {
            let ind = slice.indices(routes.len() as isize)?;
            let mut items = Vec::with_capacity(ind.slicelength);
            let mut i = ind.start;
            for _ in 0..ind.slicelength {
                items.push(to_py(py, &routes[i as usize])?);
                i += ind.step;
            }
            return Ok(PyTuple::new(py, items)?.into_any());
        }
        let i: isize = match index.extract() {
            Ok(i) => i,
            Err(_) => {
                let tname = index.get_type().name()?;
                return Err(PyTypeError::new_err(format!(
                    "RouteSeq indices must be integers or slices, not {tname}"
                )));
            }
        };
        to_py(py, &routes[position(i, routes.len())?])
    }

    fn __iter__(&self) -> RouteIter {
        RouteIter {
            inner: self.inner.clone(),
            pos: 0,
        }
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // Rare; a reversed tuple keeps this simple.
        let t = self.to_tuple(py)?;
        Ok(py
            .import("builtins")?
            .getattr("reversed")?
            .call1((t,))?
            .unbind())
    }

    /// `route in seq`, compared as library values (no Python objects built).
    fn __contains__(&self, value: &Bound<'_, PyAny>) -> bool {
        match as_route(value) {
            Some(r) => self.routes().contains(&r),
            None => false,
        }
    }

    /// How many elements equal `value`.
    fn count(&self, value: &Bound<'_, PyAny>) -> usize {
        match as_route(value) {
            Some(r) => self.routes().iter().filter(|x| **x == r).count(),
            None => 0,
        }
    }

    /// The first position of `value` in `[start, stop)`, or ValueError.
    #[pyo3(signature = (value, start=None, stop=None))]
    fn index(
        &self,
        value: &Bound<'_, PyAny>,
        start: Option<isize>,
        stop: Option<isize>,
    ) -> PyResult<usize> {
        let routes = self.routes();
        let lo = clamp(start, routes.len(), 0);
        let hi = clamp(stop, routes.len(), routes.len());
        if let Some(r) = as_route(value) {
            if lo < hi {
                if let Some(k) = routes[lo..hi].iter().position(|x| *x == r) {
                    return Ok(lo + k);
                }
            }
        }
        Err(PyValueError::new_err(
            "RouteSeq.index(x): x not in sequence",
        ))
    }

    /// Equal to another `RouteSeq` with equal routes, or to a tuple, list or
    /// other sequence of equal `Route`s.
    fn __richcmp__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let eq = match op {
            CompareOp::Eq => true,
            CompareOp::Ne => false,
            _ => return Ok(py.NotImplemented()),
        };
        let same = if let Ok(o) = other.cast::<RouteSeq>() {
            let o = o.get();
            Arc::ptr_eq(&self.inner, &o.inner) || self.routes() == o.routes()
        } else if is_sequence(other)? {
            let routes = self.routes();
            if other.len()? != routes.len() {
                false
            } else {
                let mut all = true;
                for (r, x) in routes.iter().zip(other.try_iter()?) {
                    if !to_py(py, r)?.eq(x?)? {
                        all = false;
                        break;
                    }
                }
                all
            }
        } else {
            return Ok(py.NotImplemented());
        };
        Ok(pyo3::types::PyBool::new(py, same == eq)
            .to_owned()
            .into_any()
            .unbind())
    }

    /// The hash of the tuple of the same routes (equal objects, equal hashes).
    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.to_tuple(py)?.hash()
    }

    /// Pickled (and copied) as a tuple of `Route`s.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let builtins = py.import("builtins")?;
        let tuple = builtins.getattr("tuple")?;
        let items = PyTuple::new(py, [self.to_tuple(py)?])?;
        PyTuple::new(py, [tuple, items.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("<RouteSeq: {} routes>", self.routes().len())
    }
}

/// Iterator over a [`RouteSeq`], building one `Route` per step.
#[pyclass(module = "roce_net._roce_net")]
pub struct RouteIter {
    inner: Arc<HostState>,
    pos: usize,
}

#[pymethods]
impl RouteIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let i = slf.pos;
        if i >= slf.inner.routes.len() {
            return Ok(None);
        }
        slf.pos = i + 1;
        to_py(py, &slf.inner.routes[i]).map(Some)
    }

    fn __length_hint__(&self) -> usize {
        self.inner.routes.len().saturating_sub(self.pos)
    }
}
