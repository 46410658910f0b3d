//! `render_persistence(plan, backend)` and `write_persistence(files, root, dry_run)`.

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::plan::native_plan;
use pyo3::prelude::*;
use roce_net::{Backend, RenderOptions, RenderedFile};
use roce_net::{Error, ErrorKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `render_persistence(plan, backend, *, networkd_files=None, nm_connections=None,
/// netplan_devices=None)`: the boot-persistent files for the plan's desired state.
#[pyfunction]
#[pyo3(signature = (plan, backend, *, networkd_files=None, nm_connections=None, netplan_devices=None))]
pub fn render_persistence<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    backend: &str,
    networkd_files: Option<BTreeMap<String, String>>,
    nm_connections: Option<BTreeMap<String, String>>,
    netplan_devices: Option<BTreeMap<String, (String, String)>>,
) -> PyResult<Bound<'py, PyAny>> {
    let b: Backend = backend.parse().py()?;
    let p = native_plan(plan)?;
    let mut opts = RenderOptions::default();
    opts.networkd_files = networkd_files.unwrap_or_default();
    opts.nm_connections = nm_connections.unwrap_or_default();
    opts.netplan_devices = netplan_devices
        .unwrap_or_default()
        .into_iter()
        .map(|(k, (kind, id))| (k, roce_net::NetplanDevice { kind, id }))
        .collect();
    let files = roce_net::render_persistence(&p.desired, b, &opts).py()?;
    to_py(py, &files)
}

/// `write_persistence(files, root=None, dry_run=False)` (root None: `/`): write rendered files safely
/// (checked first, temp file + rename, backups); returns a WriteReport.
#[pyfunction]
#[pyo3(signature = (files, root=None, dry_run=false))]
pub fn write_persistence<'py>(
    py: Python<'py>,
    files: &Bound<'py, PyAny>,
    root: Option<PathBuf>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mut v: Vec<RenderedFile> = Vec::new();
    for f in files.try_iter()? {
        let text: String = f?.call_method0("to_json")?.extract()?;
        v.push(serde_json::from_str(&text).map_err(|e| {
            py_err(Error::new(
                ErrorKind::InvalidInput,
                format!("not a rendered file: {e}"),
            ))
        })?);
    }
    let root = root.unwrap_or_else(|| PathBuf::from("/"));
    let report = py
        .detach(move || roce_net::write_persistence(&v, &root, dry_run))
        .py()?;
    to_py(py, &report)
}

/// The backend names `render_persistence` accepts.
#[pyfunction]
pub fn persistence_backends() -> Vec<&'static str> {
    Backend::all().iter().map(|b| b.name()).collect()
}
