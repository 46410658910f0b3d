//! Snapshots: loading, parsing, and the native copy kept behind every `HostState`.
//!
//! A `HostState` that came from Rust carries its Rust original in the hidden
//! `_native` slot (a [`NativeState`]), so handing it back to `doctor`, `plan`, ...
//! costs nothing. One built in Python (`HostState.from_dict`) has none and is
//! converted through its JSON form once.

use crate::convert::{set_slot, to_py};
use crate::errors::IntoPyResult;
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
    /// JSON exactly as the library writes it: pretty (the library's `to_json`) or compact.
    #[pyo3(signature = (pretty=true))]
    fn to_json(&self, py: Python<'_>, pretty: bool) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || {
            if pretty {
                Ok(inner.to_json())
            } else {
                serde_json::to_string(&*inner)
            }
        })
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
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

/// Set the hidden `_native` slot of a frozen dataclass instance.
pub fn attach_native(obj: &Bound<'_, PyAny>, native: Bound<'_, PyAny>) -> PyResult<()> {
    let py = obj.py();
    // The dataclass is frozen; object.__setattr__ is how its own __init__ sets fields.
    py.import("builtins")?
        .getattr("object")?
        .getattr("__setattr__")?
        .call1((obj, PyString::new(py, "_native"), native))?;
    Ok(())
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
    let text: String = obj.call_method0("to_json")?.extract()?;
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

/// Parse JSON into the named library type and return it as its dataclass.
fn typed<'py, T>(py: Python<'py>, name: &str, text: &str) -> PyResult<Bound<'py, PyAny>>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let v: T = serde_json::from_str(text)
        .map_err(|e| {
            roce_net::Error::new(
                roce_net::ErrorKind::Parse,
                format!("not a valid {name}: {e}"),
            )
        })
        .py()?;
    to_py(py, &v)
}

/// `_from_json(type_name, text)`: build a dataclass from JSON, validated by serde.
#[pyfunction]
#[pyo3(name = "_from_json")]
pub fn from_json<'py>(
    py: Python<'py>,
    type_name: &str,
    text: String,
) -> PyResult<Bound<'py, PyAny>> {
    use roce_net as m;
    match type_name {
        "HostState" => parse_snapshot(py, text),
        "LinkStats" => typed::<m::LinkStats>(py, type_name, &text),
        "Interface" => typed::<m::Interface>(py, type_name, &text),
        "Address" => typed::<m::Address>(py, type_name, &text),
        "Neighbor" => typed::<m::Neighbor>(py, type_name, &text),
        "NextHop" => typed::<m::NextHop>(py, type_name, &text),
        "Route" => typed::<m::Route>(py, type_name, &text),
        "Rule" => typed::<m::Rule>(py, type_name, &text),
        "ConfValues" => typed::<m::ConfValues>(py, type_name, &text),
        "InterfaceConf" => typed::<m::InterfaceConf>(py, type_name, &text),
        "Tuning" => typed::<m::Tuning>(py, type_name, &text),
        "SysctlView" => typed::<m::SysctlView>(py, type_name, &text),
        "GidEntry" => typed::<m::GidEntry>(py, type_name, &text),
        "RdmaPort" => typed::<m::RdmaPort>(py, type_name, &text),
        "RdmaDevice" => typed::<m::RdmaDevice>(py, type_name, &text),
        "Warning" => typed::<m::Warning>(py, type_name, &text),
        "NicDesired" => typed::<roce_net::NicDesired>(py, type_name, &text),
        "DesiredState" => typed::<roce_net::DesiredState>(py, type_name, &text),
        "Change" => typed::<roce_net::Change>(py, type_name, &text),
        "Plan" => crate::plan::plan_from_json(py, &text),
        "RouteDecision" => typed::<m::RouteDecision>(py, type_name, &text),
        "ArpReply" => typed::<roce_net::ArpReply>(py, type_name, &text),
        "ArpProbeResult" => typed::<roce_net::ArpProbeResult>(py, type_name, &text),
        "RenderedFile" => typed::<roce_net::RenderedFile>(py, type_name, &text),
        "FileDiff" => typed::<roce_net::FileDiff>(py, type_name, &text),
        "WriteReport" => typed::<roce_net::WriteReport>(py, type_name, &text),
        "Subject" => typed::<roce_net::Subject>(py, type_name, &text),
        "Remediation" => typed::<roce_net::Remediation>(py, type_name, &text),
        "Finding" => typed::<roce_net::Finding>(py, type_name, &text),
        "Summary" => typed::<roce_net::Summary>(py, type_name, &text),
        "NcclVar" => typed::<roce_net::NcclVar>(py, type_name, &text),
        "NcclAdvice" => typed::<roce_net::NcclAdvice>(py, type_name, &text),
        "HostSummary" => typed::<roce_net::HostSummary>(py, type_name, &text),
        "FleetReport" => typed::<roce_net::FleetReport>(py, type_name, &text),
        "ApplyReport" => typed::<roce_net::ApplyReport>(py, type_name, &text),
        "RollbackReport" => typed::<roce_net::RollbackReport>(py, type_name, &text),
        "FibDecision" => typed::<roce_net::FibDecision>(py, type_name, &text),
        other => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "roce_net: no library type {other:?}"
        ))),
    }
}

/// `save_snapshot(state, path)`: write a snapshot as the library's JSON (what
/// `load_snapshot` and `roce-net --snapshot` read).
#[pyfunction]
pub fn save_snapshot(py: Python<'_>, state: &Bound<'_, PyAny>, path: PathBuf) -> PyResult<()> {
    let st = native_state(state)?;
    py.detach(move || {
        std::fs::write(&path, st.to_json())
            .map_err(|e| roce_net::Error::io(e, format!("writing snapshot {}", path.display())))
    })
    .py()
}
