//! Plans: the dataclass with its Rust original attached, and the way back.

use crate::convert::to_py;
use crate::errors::IntoPyResult;
use crate::native::attach_native;
use pyo3::prelude::*;
use roce_net::Plan;
use std::sync::Arc;

/// The Rust plan behind a Python `Plan` (opaque).
#[pyclass(frozen, module = "roce_net._roce_net")]
pub struct NativePlan {
    pub(crate) inner: Arc<Plan>,
}

#[pymethods]
impl NativePlan {
    /// Compact JSON, exactly as the library writes it.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&*self.inner)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }
    fn __repr__(&self) -> String {
        format!("<NativePlan changes={}>", self.inner.changes.len())
    }
}

/// A Rust plan as a Python `Plan` dataclass with its native copy attached.
pub fn plan_to_py(py: Python<'_>, plan: Plan) -> PyResult<Bound<'_, PyAny>> {
    let inner = Arc::new(plan);
    let obj = to_py(py, &*inner)?;
    attach_native(&obj, Bound::new(py, NativePlan { inner })?.into_any())?;
    Ok(obj)
}

/// The Rust plan for a Python `Plan` (used by the apply binding).
pub fn native_plan(obj: &Bound<'_, PyAny>) -> PyResult<Arc<Plan>> {
    if let Ok(n) = obj.cast::<NativePlan>() {
        return Ok(n.get().inner.clone());
    }
    if let Ok(n) = obj.getattr("_native") {
        if let Ok(n) = n.cast::<NativePlan>() {
            return Ok(n.get().inner.clone());
        }
    }
    let text = crate::convert::record_json(obj, "Plan")?;
    Ok(Arc::new(parse(&text).py()?))
}

fn parse(text: &str) -> roce_net::Result<Plan> {
    serde_json::from_str(text).map_err(|e| {
        roce_net::Error::new(roce_net::ErrorKind::Parse, format!("not a valid plan: {e}"))
    })
}

/// Parse a plan's JSON.
pub fn plan_from_json<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let p = parse(text).py()?;
    plan_to_py(py, p)
}
