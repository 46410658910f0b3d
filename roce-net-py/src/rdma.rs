//! `probe rdma` and the verbs view for Python: `roce_net.probe_rdma`,
//! `roce_net.probe_rdma_server` and `roce_net.verbs_view` themselves (no Python
//! wrapper restates their signatures; `_roce_net.pyi` types them). The probe
//! reports come back as the frozen result classes of
//! `roce_net._types` (`RdmaProbeResult`, `RdmaServerResult`, built from the
//! library's structs like every other result); the verbs view is a `VerbsView`
//! (it is also part of a snapshot).
//! Every call releases the GIL, so a thread pool runs many probes at once.

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::host::{ip_arg, Host};
use pyo3::prelude::*;
use roce_net::{Error, ErrorKind, ProbeToken, RdmaProbeOptions, VerbsOptions};
use std::path::PathBuf;
use std::time::Duration;

fn secs(what: &str, v: f64) -> PyResult<Duration> {
    if !(v.is_finite() && v > 0.0 && v <= 86400.0) {
        return Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what} {v} s is not more than 0 and at most 86400"),
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

/// ``libibverbs=`` as the library's option (the probes, the verbs view, `mesh_run`).
pub(crate) fn verbs_opts(lib: Option<PathBuf>) -> VerbsOptions {
    match lib {
        Some(l) => VerbsOptions::default().with_library(l),
        None => VerbsOptions::default(),
    }
}

/// The probe token from ``token`` (str or bytes) or ``token_file`` (not both).
fn token_arg(
    token: Option<&Bound<'_, PyAny>>,
    token_file: Option<PathBuf>,
) -> PyResult<Option<ProbeToken>> {
    let bytes = match token {
        None => None,
        Some(t) => Some(if let Ok(s) = t.extract::<String>() {
            s.into_bytes()
        } else if let Ok(b) = t.extract::<Vec<u8>>() {
            b
        } else {
            return Err(py_err(Error::new(
                ErrorKind::InvalidInput,
                "token must be str or bytes",
            )));
        }),
    };
    match (bytes, token_file) {
        (Some(_), Some(_)) => Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            "give token or token_file, not both",
        ))),
        (Some(b), None) => ProbeToken::new(b).map(Some).py(),
        (None, Some(p)) => ProbeToken::from_file(&p).map(Some).py(),
        (None, None) => Ok(None),
    }
}

#[allow(clippy::too_many_arguments)]
fn options(
    source: Option<&Bound<'_, PyAny>>,
    device: Option<String>,
    port: Option<u32>,
    gid_index: Option<u32>,
    tcp_port: u16,
    size: usize,
    iterations: u32,
    latency_size: usize,
    latency_iterations: u32,
    mtu: Option<u32>,
    timeout: f64,
    libibverbs: Option<PathBuf>,
) -> PyResult<RdmaProbeOptions> {
    let mut o = RdmaProbeOptions::default();
    o.source = source.map(|s| ip_arg("source", s)).transpose()?;
    o.device = device;
    o.port = port;
    o.gid_index = gid_index;
    o.tcp_port = tcp_port;
    o.write_size = size;
    o.write_iterations = iterations;
    o.latency_size = latency_size;
    o.latency_iterations = latency_iterations;
    o.mtu = mtu;
    o.timeout = secs("timeout", timeout)?;
    o.verbs = verbs_opts(libibverbs);
    Ok(o)
}

/// Probe RDMA to the server at ``peer`` from ``host`` (GIL released): one
/// client session against a ``probe_rdma_server`` (or ``roce-net probe rdma
/// --server``). The device, port and GID index come from ``source`` (default:
/// the route's source for ``peer``); an RC queue pair moves data both ways.
///
/// Raises NoRdmaError when RDMA is unavailable here (no libibverbs, no kernel
/// support, no devices, no /dev/infiniband), InvalidInputError / NotFoundError
/// for options that do not fit the host. An RDMA failure is a result with
/// ``ok=False`` and ``failure`` set (its likely cause, with evidence).
#[pyfunction]
#[pyo3(signature = (
    host, peer, *, source=None, device=None, port=None, gid_index=None, tcp_port=18520,
    size=65536, iterations=1000, latency_size=64, latency_iterations=1000, mtu=None,
    timeout=10.0, libibverbs=None, token=None, token_file=None
))]
#[allow(clippy::too_many_arguments)]
pub fn probe_rdma<'py>(
    py: Python<'py>,
    host: &Host,
    peer: &Bound<'py, PyAny>,
    source: Option<&Bound<'py, PyAny>>,
    device: Option<String>,
    port: Option<u32>,
    gid_index: Option<u32>,
    tcp_port: u16,
    size: usize,
    iterations: u32,
    latency_size: usize,
    latency_iterations: u32,
    mtu: Option<u32>,
    timeout: f64,
    libibverbs: Option<PathBuf>,
    token: Option<&Bound<'py, PyAny>>,
    token_file: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let peer = ip_arg("peer", peer)?;
    let mut o = options(
        source,
        device,
        port,
        gid_index,
        tcp_port,
        size,
        iterations,
        latency_size,
        latency_iterations,
        mtu,
        timeout,
        libibverbs,
    )?;
    o.token = token_arg(token, token_file)?;
    let h = host.inner.clone();
    let r = py.detach(move || h.probe_rdma(peer, &o)).py()?;
    to_py(py, &r)
}

/// Serve ``probe_rdma`` clients from ``source`` until ``clients`` sessions
/// ran or ``duration`` seconds passed (GIL released): an ``RdmaServerResult``.
/// It listens on ``source`` (``listen``: another address, ``"0.0.0.0"`` for
/// all); a connection counts as a client only once it proved the ``token``
/// (or ``token_file``; both ends need the same, or none) and asked for no
/// more than ``size`` / ``latency_size``, which bound what it registers.
#[pyfunction]
#[pyo3(signature = (
    host, *, source, device=None, port=None, gid_index=None, tcp_port=18520, clients=1,
    duration=60.0, timeout=10.0, libibverbs=None, listen=None, token=None, token_file=None,
    size=65536, latency_size=64
))]
#[allow(clippy::too_many_arguments)]
pub fn probe_rdma_server<'py>(
    py: Python<'py>,
    host: &Host,
    source: &Bound<'py, PyAny>,
    device: Option<String>,
    port: Option<u32>,
    gid_index: Option<u32>,
    tcp_port: u16,
    clients: usize,
    duration: f64,
    timeout: f64,
    libibverbs: Option<PathBuf>,
    listen: Option<&Bound<'py, PyAny>>,
    token: Option<&Bound<'py, PyAny>>,
    token_file: Option<PathBuf>,
    size: usize,
    latency_size: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let d = RdmaProbeOptions::default();
    let mut o = options(
        Some(source),
        device,
        port,
        gid_index,
        tcp_port,
        size,
        d.write_iterations,
        latency_size,
        d.latency_iterations,
        None,
        timeout,
        libibverbs,
    )?;
    o.clients = clients;
    o.duration = secs("duration", duration)?;
    o.listen = listen.map(|l| ip_arg("listen", l)).transpose()?;
    o.token = token_arg(token, token_file)?;
    let h = host.inner.clone();
    let r = py.detach(move || h.probe_rdma_server(&o)).py()?;
    to_py(py, &r)
}

/// Devices, ports and GID tables through libibverbs (GIL released); without
/// RDMA, ``unavailable`` holds ``reason`` (``no_library``,
/// ``no_kernel_support``, ``no_devices``, ``no_device_files``) and ``detail``.
#[pyfunction]
#[pyo3(signature = (host, *, libibverbs=None))]
pub fn verbs_view<'py>(
    py: Python<'py>,
    host: &Host,
    libibverbs: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let h = host.inner.clone();
    let o = verbs_opts(libibverbs);
    let v = py.detach(move || h.verbs_view(&o));
    to_py(py, &v)
}

/// Register the functions on the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(probe_rdma, m)?)?;
    m.add_function(wrap_pyfunction!(probe_rdma_server, m)?)?;
    m.add_function(wrap_pyfunction!(verbs_view, m)?)?;
    Ok(())
}
