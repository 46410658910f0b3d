//! Snapshots: loading, parsing, and the native copy kept behind every `HostState`.
//!
//! A `HostState` that came from Rust carries its Rust original in the hidden
//! `_native` slot (a [`NativeState`]), so handing it back to `doctor`, `plan`, ...
//! costs nothing. One built in Python (`HostState.from_dict`) has none and is
//! converted through its JSON form once.

use crate::convert::to_py;
use crate::errors::IntoPyResult;
use crate::native::attach_native;
use crate::registry::set_slot;
use crate::routes::RouteSeq;
use pyo3::prelude::*;
use pyo3::types::PyString;
use roce_net::HostState;
use std::path::PathBuf;
use std::sync::Arc;

/// The Rust snapshot behind a Python `HostState` (opaque).
#[pyclass(frozen, module = "roce_net._roce_net")]
pub struct NativeState {
    pub(crate) inner: Arc<HostState>,
}

#[pymethods]
impl NativeState {
    /// JSON exactly as the library's serializer writes it: compact (what
    /// `roce-net snapshot` writes) without `indent`, else one value per line
    /// indented by `indent` spaces (2: the library's `HostState::to_json`).
    #[pyo3(signature = (indent=None))]
    fn to_json(&self, py: Python<'_>, indent: Option<usize>) -> PyResult<String> {
        crate::convert::check_indent(indent)?;
        let inner = self.inner.clone();
        py.detach(move || crate::convert::json_text(&*inner, indent))
    }
    fn __repr__(&self) -> String {
        format!(
            "<NativeState {} routes={}>",
            self.inner.hostname,
            self.inner.routes.len()
        )
    }
}

/// A Rust snapshot as a Python `HostState` dataclass with its native copy attached.
///
/// `routes` is not converted: it becomes a [`RouteSeq`] over the same `Arc`, which
/// builds each `Route` on access (the bulk of a big snapshot, see `routes.rs`).
pub fn state_to_py(py: Python<'_>, mut state: HostState) -> PyResult<Bound<'_, PyAny>> {
    let routes = std::mem::take(&mut state.routes);
    let obj = to_py(py, &state);
    state.routes = routes;
    let obj = obj?;
    let inner = Arc::new(state);
    let seq = Bound::new(py, RouteSeq::new(inner.clone()))?;
    set_slot(&obj, &PyString::intern(py, "routes"), seq.as_any())?;
    let native = Bound::new(py, NativeState { inner })?;
    attach_native(&obj, native.into_any())?;
    Ok(obj)
}

/// The Rust snapshot for a Python `HostState` (or a `NativeState`).
pub fn native_state(obj: &Bound<'_, PyAny>) -> PyResult<Arc<HostState>> {
    if let Ok(n) = obj.cast::<NativeState>() {
        return Ok(n.get().inner.clone());
    }
    if let Ok(n) = obj.getattr("_native") {
        if let Ok(n) = n.cast::<NativeState>() {
            return Ok(n.get().inner.clone());
        }
    }
    let text = crate::convert::record_json(obj, "HostState")?;
    let py = obj.py();
    let st = py.detach(move || HostState::from_json(&text)).py()?;
    Ok(Arc::new(st))
}

/// `load_snapshot(path)`: read a snapshot JSON file written by `roce-net snapshot`.
#[pyfunction]
pub fn load_snapshot(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyAny>> {
    let st = py.detach(move || HostState::load(&path)).py()?;
    state_to_py(py, st)
}

/// `parse_snapshot(text)`: parse snapshot JSON text.
#[pyfunction]
pub fn parse_snapshot(py: Python<'_>, text: String) -> PyResult<Bound<'_, PyAny>> {
    let st = py.detach(move || HostState::from_json(&text)).py()?;
    state_to_py(py, st)
}

/// `_from_json(type_name, text)`: build a dataclass from JSON, validated by serde
/// (`type_name` as `_RUST`: any type listed in `exported_types!`).
#[pyfunction]
#[pyo3(name = "_from_json")]
pub fn from_json<'py>(
    py: Python<'py>,
    type_name: &str,
    text: String,
) -> PyResult<Bound<'py, PyAny>> {
    match type_name {
        // These two keep their native original.
        "HostState" => parse_snapshot(py, text),
        "Plan" => crate::plan::plan_from_json(py, &text),
        other => match crate::schema::find(other) {
            Some(t) => (t.parse)(py, other, &text),
            None => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "roce_net: no library type {other:?}"
            ))),
        },
    }
}

/// `save_snapshot(state, path, *, pretty=False)`: write a snapshot as
/// `roce-net snapshot -o PATH` does (what `load_snapshot` and `roce-net
/// --snapshot` read): the library's `HostState::save`, so compact JSON unless
/// `pretty`, gzip when the name ends in `.gz`, and written to a temporary file
/// renamed into place (a reader never sees half a snapshot).
#[pyfunction]
#[pyo3(signature = (state, path, *, pretty = false))]
pub fn save_snapshot(
    py: Python<'_>,
    state: &Bound<'_, PyAny>,
    path: PathBuf,
    pretty: bool,
) -> PyResult<()> {
    let st = native_state(state)?;
    py.detach(move || st.save(&path, roce_net::SnapshotFormat::for_path(&path, pretty)))
        .py()
}
