//! `roce_net.Policy` and `roce_net.plan(state, policy)`.

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::plan::{native_plan, plan_to_py};
use crate::state::native_state;
use pyo3::prelude::*;
use pyo3::types::PyType;
use roce_net::Policy as RPolicy;
use roce_net::{Error, ErrorKind};
use std::path::PathBuf;

/// A validated roce-net policy (the desired state a user writes).
#[pyclass(frozen, eq, module = "roce_net", name = "Policy")]
#[derive(PartialEq)]
pub struct Policy {
    pub(crate) inner: RPolicy,
}

fn policy_err(e: impl std::fmt::Display) -> PyErr {
    py_err(Error::new(ErrorKind::Policy, e.to_string()))
}

#[pymethods]
impl Policy {
    /// `Policy()`: the default policy.
    #[new]
    fn new() -> Policy {
        Policy {
            inner: RPolicy::default(),
        }
    }

    /// From a dict (the YAML/JSON document as Python data). Raises PolicyError.
    #[classmethod]
    fn from_dict(_cls: &Bound<'_, PyType>, data: &Bound<'_, PyAny>) -> PyResult<Policy> {
        let v: serde_json::Value = pythonize::depythonize(data).map_err(policy_err)?;
        Ok(Policy {
            inner: RPolicy::from_value(v).py()?,
        })
    }

    /// From YAML text. Raises PolicyError.
    #[classmethod]
    fn from_yaml(_cls: &Bound<'_, PyType>, text: &str) -> PyResult<Policy> {
        Ok(Policy {
            inner: RPolicy::from_yaml(text).py()?,
        })
    }

    /// From JSON text. Raises PolicyError.
    #[classmethod]
    fn from_json(_cls: &Bound<'_, PyType>, text: &str) -> PyResult<Policy> {
        Ok(Policy {
            inner: RPolicy::from_json(text).py()?,
        })
    }

    /// From a file (`.json` as JSON, else YAML). Raises PolicyError / NotFoundError.
    #[classmethod]
    fn load(_cls: &Bound<'_, PyType>, py: Python<'_>, path: PathBuf) -> PyResult<Policy> {
        let inner = py.detach(move || RPolicy::load(&path)).py()?;
        Ok(Policy { inner })
    }

    /// Every field, defaults filled in, as plain data.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.inner.to_value().to_string(),))
    }

    /// Every field, defaults filled in, as JSON: compact, or indented by
    /// `indent` spaces (2: the library's `Policy::to_json`).
    #[pyo3(signature = (*, indent=None))]
    fn to_json(&self, indent: Option<usize>) -> PyResult<String> {
        crate::convert::check_indent(indent)?;
        crate::convert::json_text(&self.inner, indent)
    }

    fn __repr__(&self) -> String {
        format!("Policy.from_json({:?})", self.inner.to_value().to_string())
    }

    /// Pickled (and copied) as its JSON, read back with `Policy.from_json`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let text = crate::convert::json_text(&slf.get().inner, None)?;
        Ok((slf.get_type().getattr("from_json")?, (text,)))
    }
}

/// `plan(state, policy)`: the ordered changes that make `state` comply (pure).
#[pyfunction]
pub fn plan<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    policy: &Bound<'py, Policy>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let pol = policy.get().inner.clone();
    let p = py.detach(move || roce_net::plan(&st, &pol)).py()?;
    plan_to_py(py, p)
}

/// `_render_diff(plan)`: the plan as `+`/`-`/`~` lines in `ip` vocabulary.
#[pyfunction]
#[pyo3(name = "_render_diff")]
pub fn render_diff(plan: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(native_plan(plan)?.render_diff())
}

/// `_notes(plan)`: what the user should know besides the changes
/// (`Plan::notes`: table names kept from the host-wide names file).
#[pyfunction]
#[pyo3(name = "_notes")]
pub fn notes<'py>(py: Python<'py>, plan: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &native_plan(plan)?.notes())
}

/// `_describe(plan)`: one line per change.
#[pyfunction]
#[pyo3(name = "_describe")]
pub fn describe<'py>(py: Python<'py>, plan: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &native_plan(plan)?.describe())
}
