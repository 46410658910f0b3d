//! Pure analyses over snapshots: `doctor`, `nccl_env`, `nccl_check`, `fleet_report`.

use crate::convert::to_py;
use crate::errors::py_err;
use crate::errors::IntoPyResult;
use crate::state::native_state;
use pyo3::prelude::*;
use roce_net::{DoctorOptions, InputKind, NcclEnv, NcclVersion};
use roce_net::{Error, ErrorKind, HostState};
use std::path::PathBuf;
use std::sync::Arc;

fn options(opts: Option<&Bound<'_, PyAny>>) -> PyResult<DoctorOptions> {
    match opts {
        None => Ok(DoctorOptions::default()),
        Some(o) => {
            let v: serde_json::Value = pythonize::depythonize(o).map_err(|e| {
                py_err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("doctor options: {e}"),
                ))
            })?;
            serde_json::from_value(v).map_err(|e| {
                py_err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("doctor options: {e}"),
                ))
            })
        }
    }
}

/// `doctor(state, options=None)`: every check over the snapshot, as a tuple of
/// Findings (sorted: errors first). `options` overrides DoctorOptions fields.
#[pyfunction]
#[pyo3(signature = (state, options=None))]
pub fn doctor<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let opts = self::options(options)?;
    let findings = py.detach(move || roce_net::doctor_with(&st, &opts));
    to_py(py, &findings)
}

/// An NCCL release given as text (`"2.30"`, `"2.20.5"`, `"v2.30.7-1"`).
fn nccl_version(v: Option<&str>) -> PyResult<roce_net::NcclOptions> {
    let version = v
        .map(|s| {
            NcclVersion::parse(s).ok_or_else(|| {
                py_err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("nccl_version {s:?} is not an NCCL version (like 2.30 or 2.20.5)"),
                ))
            })
        })
        .transpose()?;
    Ok(roce_net::NcclOptions::for_version(version))
}

/// `nccl_env(state, *, nccl_version=None)`: NCCL settings derived from the GID
/// tables, with reasons (`roce-net nccl-env [--nccl-version V]`).
#[pyfunction]
#[pyo3(signature = (state, *, nccl_version=None))]
pub fn nccl_env<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    nccl_version: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let opts = self::nccl_version(nccl_version)?;
    let advice = py.detach(move || roce_net::nccl_env_with(&st, &opts));
    to_py(py, &advice)
}

/// The NCCL environment to check: `env` (a mapping), the file `env_file`
/// (parsed as NCCL parses nccl.conf), or this process's `NCCL_*` variables
/// (`os.environ`, what NCCL in this process would read).
/// The Python type name of `v`, for messages.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_string())
}

fn check_env(
    py: Python<'_>,
    env: Option<&Bound<'_, PyAny>>,
    env_file: Option<PathBuf>,
) -> PyResult<NcclEnv> {
    let pairs = |m: &Bound<'_, PyAny>| -> PyResult<Vec<(String, String)>> {
        let mut v = Vec::new();
        for item in m.call_method0("items")?.try_iter()? {
            let (k, val): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
            let name = k.extract::<String>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "nccl_check: env keys are variable names (str), got {} {}",
                    type_name(&k),
                    k.repr().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
            let value = val.extract::<String>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "nccl_check: env[{name:?}] is {} {}, not a str: environment values are \
                     strings (write {:?})",
                    type_name(&val),
                    val.repr().map(|r| r.to_string()).unwrap_or_default(),
                    val.str().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
            v.push((name, value));
        }
        Ok(v)
    };
    match (env, env_file) {
        (Some(_), Some(_)) => Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            "nccl_check: give env or env_file, not both",
        ))),
        (Some(m), None) => Ok(NcclEnv::from_pairs(pairs(m)?)),
        (None, Some(p)) => {
            let text = py
                .detach(move || roce_net::read_input_text(&p, InputKind::NcclConf))
                .py()?;
            Ok(NcclEnv::parse_conf(&text))
        }
        (None, None) => {
            let environ = py.import("os")?.getattr("environ")?;
            let vars = pairs(&environ)?
                .into_iter()
                .filter(|(k, _)| k.starts_with("NCCL_"));
            Ok(NcclEnv::from_pairs(vars))
        }
    }
}

/// `nccl_check(state, env=None, *, env_file=None, nccl_version=None)`: the
/// NCCL environment a job has, checked against the host as NCCL would select
/// with it (`roce-net nccl-env --check [--env-file F]`), as Findings.
#[pyfunction]
#[pyo3(signature = (state, env=None, *, env_file=None, nccl_version=None))]
pub fn nccl_check<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    env: Option<&Bound<'py, PyAny>>,
    env_file: Option<PathBuf>,
    nccl_version: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let opts = self::nccl_version(nccl_version)?;
    let env = check_env(py, env, env_file)?;
    let findings = py.detach(move || roce_net::nccl_check(&st, &env, &opts));
    to_py(py, &findings)
}

/// `fleet_report(states, options=None)`: per-host summaries and cross-host findings.
#[pyfunction]
#[pyo3(signature = (states, options=None))]
pub fn fleet_report<'py>(
    py: Python<'py>,
    states: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut v: Vec<Arc<HostState>> = Vec::new();
    for s in states.try_iter()? {
        v.push(native_state(&s?)?);
    }
    let opts = self::options(options)?;
    let report = py.detach(move || {
        let owned: Vec<HostState> = v.iter().map(|s| (**s).clone()).collect();
        roce_net::fleet_report_with(&owned, &opts)
    });
    to_py(py, &report)
}

/// `render_metrics(state, options=None)`: the Prometheus text exposition format
/// (node_exporter textfile collector) for the snapshot and its doctor findings.
#[pyfunction]
#[pyo3(signature = (state, options=None))]
pub fn render_metrics(
    py: Python<'_>,
    state: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let st = native_state(state)?;
    let opts = self::options(options)?;
    Ok(py.detach(move || roce_net::render_metrics(&st, &roce_net::doctor_with(&st, &opts))))
}

/// `route_lookup(state, dst, src=None, *, iif=None, oif=None, fwmark=0)`: where
/// the kernel would send the flow, computed offline from the snapshot (rules,
/// longest-prefix match, source selection), like `ip route get` on that host.
#[pyfunction]
#[pyo3(signature = (state, dst, src=None, *, iif=None, oif=None, fwmark=0))]
pub fn route_lookup<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    src: Option<&Bound<'py, PyAny>>,
    iif: Option<String>,
    oif: Option<String>,
    fwmark: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let dst = crate::host::ip_arg("destination", dst)?;
    let src = src.map(|s| crate::host::ip_arg("source", s)).transpose()?;
    let flow = roce_net::Flow {
        dst,
        src,
        iif,
        oif,
        fwmark,
        tos: 0,
    };
    let res = roce_net::fib_lookup(&st, &flow);
    match res {
        Ok(d) => to_py(py, &d),
        Err(e) => {
            let from = src.map(|s| format!(" from {s}")).unwrap_or_default();
            Err(py_err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no route to {dst}{from} on {}: {e} (offline lookup in the snapshot)",
                    if st.hostname.is_empty() {
                        "the host"
                    } else {
                        &st.hostname
                    }
                ),
            )))
        }
    }
}
