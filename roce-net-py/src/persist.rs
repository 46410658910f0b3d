//! `render_persistence(plan, backend)`, `write_persistence(files, root, dry_run)`
//! and the persist of `Host.persist_for_apply` (recorded for a rollback).

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::plan::native_plan;
use crate::state::native_state;
use pyo3::prelude::*;
use roce_net::{Backend, NetplanRenderer, NmProfile, PersistRoot, RenderOptions, RenderedFile};
use roce_net::{Error, ErrorKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `render_persistence(plan, backend, *, root=None, state=None, networkd_files=None,
/// nm_connections=None, netplan_devices=None, ifupdown_ifaces=None)`: the
/// boot-persistent files for the plan's desired state.
///
/// roce-net extends the node's own definitions and never defines an interface:
/// with `root` (the node's `/`) and `state` (its snapshot, for the NICs' MACs)
/// the names each NIC has in `backend` are discovered from the node's
/// configuration; the keyword maps give them explicitly (and win):
/// `networkd_files` ifname -> `.network` file name, `nm_connections` ifname ->
/// profile UUID, `netplan_devices` ifname -> `(section, id)` or `(section, id,
/// renderer)`, `ifupdown_ifaces` names with an `iface` stanza. A NIC the backend
/// does not configure is an `invalid_input` error naming it.
#[pyfunction]
#[pyo3(signature = (plan, backend, *, root=None, state=None, networkd_files=None, nm_connections=None, netplan_devices=None, ifupdown_ifaces=None))]
#[allow(clippy::too_many_arguments)]
pub fn render_persistence<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    backend: &str,
    root: Option<PathBuf>,
    state: Option<&Bound<'py, PyAny>>,
    networkd_files: Option<BTreeMap<String, String>>,
    nm_connections: Option<BTreeMap<String, String>>,
    netplan_devices: Option<BTreeMap<String, Vec<String>>>,
    ifupdown_ifaces: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let b: Backend = backend.parse().py()?;
    let p = native_plan(plan)?;
    let mut opts = match (&root, state) {
        (Some(r), Some(st)) => {
            let st = native_state(st)?;
            let names: Vec<&str> = p.desired.nics.iter().map(|n| n.ifname.as_str()).collect();
            let cfg = roce_net::discover_config(&PersistRoot::new(r), &st.interfaces, &names);
            RenderOptions::from_config(&cfg, b).py()?.0
        }
        (Some(_), None) => {
            return Err(py_err(Error::new(
                ErrorKind::InvalidInput,
                "render_persistence: root= needs state= (the host's snapshot) to match the \
                 node's configuration to its NICs",
            )))
        }
        _ => RenderOptions::default(),
    };
    opts.networkd_files
        .extend(networkd_files.unwrap_or_default());
    for (k, uuid) in nm_connections.unwrap_or_default() {
        opts.nm_connections.insert(
            k,
            NmProfile {
                uuid: Some(uuid.clone()),
                id: uuid,
            },
        );
    }
    for (k, v) in netplan_devices.unwrap_or_default() {
        let renderer = match v.get(2).map(String::as_str) {
            None | Some("networkd") => NetplanRenderer::Networkd,
            Some(r) if r.eq_ignore_ascii_case("networkmanager") => NetplanRenderer::NetworkManager,
            Some(r) => {
                return Err(py_err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "netplan_devices[{k:?}]: renderer {r:?} is not networkd or NetworkManager"
                    ),
                )))
            }
        };
        let (Some(kind), Some(id)) = (v.first(), v.get(1)) else {
            return Err(py_err(Error::new(
                ErrorKind::InvalidInput,
                format!("netplan_devices[{k:?}] must be (section, id[, renderer])"),
            )));
        };
        opts.netplan_devices.insert(
            k,
            roce_net::NetplanDevice {
                kind: kind.clone(),
                id: id.clone(),
                renderer,
            },
        );
    }
    opts.ifupdown_ifaces
        .extend(ifupdown_ifaces.unwrap_or_default());
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
        let text = crate::convert::record_json(&f?, "RenderedFile")?;
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

/// `Host.persist_for_apply`: the plan's desired state rendered onto the node's
/// configuration under `root` (`backend`, else the policy's, else the one
/// stack that configures the NICs), written by the library's
/// `persist_for_apply` as `roce-net persist` does, so a rollback of the last
/// apply puts the files back. Returns an AppliedPersist.
#[allow(clippy::too_many_arguments)]
pub fn persist_for_apply<'py>(
    py: Python<'py>,
    host: &roce_net::Host,
    opts: &roce_net::ApplyOptions,
    plan: &Bound<'py, PyAny>,
    backend: Option<&str>,
    root: Option<PathBuf>,
    switch_backend: bool,
    dry_run: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let p = native_plan(plan)?;
    let chosen = match backend {
        Some(b) => Some((b.parse::<Backend>().py()?, "given".to_string())),
        None => p
            .policy
            .persistence
            .backend
            .backend()
            .map(|b| (b, "set in the policy".to_string())),
    };
    let target = PersistRoot::new(root.unwrap_or_else(|| PathBuf::from("/")));
    let (h, o) = (host.clone(), opts.clone());
    let done = py
        .detach(move || {
            let st = h.snapshot()?;
            let plan = roce_net::prepare_persistence(&p.desired, &st, &target, chosen)?;
            roce_net::persist_for_apply(&h, &o, &plan, &target, switch_backend, dry_run)
        })
        .py()?;
    to_py(py, &done)
}

/// The backend names `render_persistence` accepts.
#[pyfunction]
pub fn persistence_backends() -> Vec<&'static str> {
    Backend::all().iter().map(|b| b.name()).collect()
}
