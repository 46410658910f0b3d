//! The cluster mesh for Python (docs/mesh.md): `mesh_node`, `mesh_plan`,
//! `mesh_node_plan`, `mesh_node_plans`, `mesh_run` (GIL released while the
//! node runs its part) and `mesh_report`, the steps of `roce-net mesh
//! node/plan/run/report`. Plans and results come back as the frozen classes of
//! `roce_net._types`; the functions take those classes, their plain data
//! (`to_dict()`, what Ansible registers) or JSON text.

use crate::convert::{record_json, to_py};
use crate::errors::{py_err, IntoPyResult};
use crate::host::Host;
use crate::state::native_state;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use roce_net::{
    Error, ErrorKind, Family, HostState, MeshInventory, MeshNode, MeshNodePlan, MeshNodeResult,
    MeshOptions, MeshPlan, MeshPlanFile, MeshRunOptions, RailBy,
};
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::sync::Arc;

/// The JSON text of a mesh document from Python: a roce_net record, a dict of
/// plain data, or JSON text.
fn doc_text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_string());
    }
    if obj.cast::<PyDict>().is_ok() {
        let v: serde_json::Value = pythonize::depythonize(obj).map_err(|e| {
            py_err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: not plain JSON data ({e})"),
            ))
        })?;
        return Ok(v.to_string());
    }
    record_json(obj, what)
}

/// A mesh document from Python, parsed and validated by the library
/// (`ParseError` naming what it should have been).
fn doc<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let text = doc_text(obj, what)?;
    serde_json::from_str(&text).map_err(|e| {
        py_err(Error::new(
            ErrorKind::Parse,
            format!("not a valid {what}: {e}"),
        ))
    })
}

/// The Rust struct a roce_net record mirrors (`_RUST`), if `obj` is one.
fn rust_name(obj: &Bound<'_, PyAny>) -> Option<String> {
    obj.getattr("_RUST")
        .and_then(|x| x.extract::<String>())
        .ok()
}

fn rail_by(s: &str) -> PyResult<RailBy> {
    match s {
        "auto" => Ok(RailBy::Auto),
        "subnet" => Ok(RailBy::Subnet),
        "index" => Ok(RailBy::Index),
        _ => Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("rail_by {s:?}: give auto, subnet or index"),
        ))),
    }
}

fn family(s: Option<&str>) -> PyResult<Option<Family>> {
    match s {
        None => Ok(None),
        Some("ipv4") => Ok(Some(Family::Inet)),
        Some("ipv6") => Ok(Some(Family::Inet6)),
        Some(x) => Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("family {x:?}: give ipv4 or ipv6 (or None)"),
        ))),
    }
}

/// One entry of `mesh_plan`'s `nodes`: a snapshot (a `HostState`, or its plain
/// data: it has `interfaces`) becomes its node's entry, anything else is read
/// as a `MeshNode`.
fn node_entry(n: &Bound<'_, PyAny>, r: RailBy, f: Option<Family>) -> PyResult<MeshNode> {
    let is_state = match rust_name(n).as_deref() {
        Some("HostState") => true,
        Some(_) => false,
        None => {
            n.getattr("_native").is_ok()
                || n.cast::<PyDict>()
                    .is_ok_and(|d| d.contains("interfaces").unwrap_or(false))
        }
    };
    if !is_state {
        return doc(n, "MeshNode (or HostState)");
    }
    let st: Arc<HostState> = if n.cast::<PyDict>().is_ok() {
        let text = doc_text(n, "HostState")?;
        Arc::new(HostState::from_json(&text).py()?)
    } else {
        native_state(n)?
    };
    Ok(roce_net::mesh_node(&st, r, f))
}

/// ``mesh_node(state, *, rail_by="auto", family=None, nics=None)``: the node's
/// entry of a mesh inventory from its snapshot (``roce-net mesh node``): its
/// NICs in scope with an address, MAC, MTU and rail, and those without an
/// address (``unprobed``); ``nics`` names NICs beyond the scope (``--nic``).
#[pyfunction]
#[pyo3(signature = (state, *, rail_by="auto", family=None, nics=None))]
pub fn mesh_node<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    rail_by: &str,
    family: Option<&str>,
    nics: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let (r, f) = (self::rail_by(rail_by)?, self::family(family)?);
    let nics = nics.unwrap_or_default();
    let node = py.detach(move || roce_net::mesh_node_with(&st, r, f, &nics));
    to_py(py, &node)
}

/// ``mesh_plan(nodes, *, ...)``: the schedule over ``nodes`` (snapshots,
/// ``MeshNode`` entries or their plain data), round 1 ``start_in`` seconds
/// from now, with a fresh token (``roce-net mesh plan``); ``levels`` None is
/// all three. The defaults are the CLI's (``port`` is
/// `roce_net::MESH_DEFAULT_PORT`, checked by the binding's tests).
#[pyfunction]
#[pyo3(signature = (
    nodes, *, peers=2, rounds=3, all_pairs=false, intra_host=true, rotation=0,
    levels=None, port=18530, start_in=15.0, neighbor_ms=1000, ip_ms=1000,
    rdma_ms=10000, rdma_size=65536, rdma_iterations=4, rdma_latency_iterations=16,
    rail_by="auto", family=None
))]
#[allow(clippy::too_many_arguments)]
pub fn mesh_plan<'py>(
    py: Python<'py>,
    nodes: &Bound<'py, PyAny>,
    peers: u32,
    rounds: u32,
    all_pairs: bool,
    intra_host: bool,
    rotation: u32,
    levels: Option<Vec<String>>,
    port: u16,
    start_in: f64,
    neighbor_ms: u64,
    ip_ms: u64,
    rdma_ms: u64,
    rdma_size: u32,
    rdma_iterations: u32,
    rdma_latency_iterations: u32,
    rail_by: &str,
    family: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let (r, f) = (self::rail_by(rail_by)?, self::family(family)?);
    let levels = levels.unwrap_or_else(|| vec!["neighbor".into(), "ip".into(), "rdma".into()]);
    for l in &levels {
        if !["neighbor", "ip", "rdma"].contains(&l.as_str()) {
            return Err(py_err(Error::new(
                ErrorKind::InvalidInput,
                format!("levels: {l:?} is not a level (give neighbor, ip, rdma)"),
            )));
        }
    }
    let mut list = Vec::new();
    for n in nodes.try_iter()? {
        list.push(node_entry(&n?, r, f)?);
    }
    let mut o = MeshOptions::default();
    o.peers = peers;
    o.rounds = rounds;
    o.all_pairs = all_pairs;
    o.intra_host = intra_host;
    o.rotation = rotation;
    o.levels.neighbor = levels.iter().any(|l| l == "neighbor");
    o.levels.ip = levels.iter().any(|l| l == "ip");
    o.levels.rdma = levels.iter().any(|l| l == "rdma");
    o.port = port;
    o.neighbor_ms = neighbor_ms;
    o.ip_ms = ip_ms;
    o.rdma_ms = rdma_ms;
    o.rdma_workload.write_size = rdma_size;
    o.rdma_workload.write_iterations = rdma_iterations;
    o.rdma_workload.latency_iterations = rdma_latency_iterations;
    o.start_in(start_in).py()?;
    let inv = MeshInventory::new(list);
    let plan = py.detach(move || roce_net::mesh_plan(&inv, &o)).py()?;
    to_py(py, &plan)
}

/// A plan from Python: the whole plan (a ``MeshPlan``, or plain data with an
/// ``inventory``) or one node's part.
fn plan_file(plan: &Bound<'_, PyAny>) -> PyResult<MeshPlanFile> {
    let whole = match rust_name(plan).as_deref() {
        Some(n) => n == "MeshPlan",
        None => {
            let text = doc_text(plan, "MeshPlan or MeshNodePlan")?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                py_err(Error::new(
                    ErrorKind::Parse,
                    format!("not a mesh plan (JSON): {e}"),
                ))
            })?;
            v.get("inventory").is_some()
        }
    };
    Ok(if whole {
        MeshPlanFile::Whole(doc(plan, "MeshPlan")?)
    } else {
        MeshPlanFile::Node(doc(plan, "MeshNodePlan")?)
    })
}

/// ``mesh_node_plan(plan, node)``: one node's part of a plan (its schedule, the
/// options, the MACs of the nodes it meets); ``.schedule`` is what ``mesh run
/// --check`` prints. ``NotFoundError`` for a node the plan lacks.
#[pyfunction]
pub fn mesh_node_plan<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    node: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let file = plan_file(plan)?;
    let node = node.to_string();
    let part = py.detach(move || file.for_node(&node)).py()?;
    to_py(py, &part)
}

/// ``mesh_node_plans(plan)``: every node's part of the plan, node after node
/// (an orchestrator hands each node its own).
#[pyfunction]
pub fn mesh_node_plans<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let plan: MeshPlan = doc(plan, "MeshPlan")?;
    let parts: Vec<MeshNodePlan> = py.detach(move || plan.node_plans().collect());
    to_py(py, &parts)
}

/// ``mesh_run(host, plan, *, node=None, libibverbs=None)``: run this node's
/// part of a plan (``roce-net mesh run``; GIL released): its responder on every
/// NIC and its probes in the plan's time slots; returns when its last slot has
/// ended. The RDMA level reads the host's sysfs root (``Host(sysfs_root=)``)
/// and loads ``libibverbs`` (``mesh run --libibverbs``), as ``probe_rdma``.
#[pyfunction]
#[pyo3(signature = (host, plan, *, node=None, libibverbs=None))]
pub fn mesh_run<'py>(
    py: Python<'py>,
    host: &Host,
    plan: &Bound<'py, PyAny>,
    node: Option<String>,
    libibverbs: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let file = plan_file(plan)?;
    let h = host.inner.clone();
    let r = py
        .detach(move || -> roce_net::Result<MeshNodeResult> {
            let name = match node {
                Some(n) => n,
                None => roce_net::fleet_host_label(&h.snapshot()?),
            };
            let part = file.for_node(&name)?;
            let mut opts = MeshRunOptions::default();
            opts.host = Some(name);
            opts.verbs = crate::rdma::verbs_opts(libibverbs);
            h.mesh_run(&part, &opts)
        })
        .py()?;
    to_py(py, &r)
}

/// ``mesh_report(plan, results)``: the merge of every node's result
/// (``roce-net mesh report``): the verdict and one fault per broken element.
#[pyfunction]
pub fn mesh_report<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    results: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let plan: MeshPlan = doc(plan, "MeshPlan")?;
    let mut list: Vec<MeshNodeResult> = Vec::new();
    for r in results.try_iter()? {
        list.push(doc(&r?, "MeshNodeResult")?);
    }
    let rep = py.detach(move || roce_net::mesh_report(&plan, list)).py()?;
    to_py(py, &rep)
}

/// Register the functions on the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mesh_node, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_plan, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_node_plan, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_node_plans, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_run, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_report, m)?)?;
    Ok(())
}
