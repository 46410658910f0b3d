//! `roce_net.Lab`: throwaway network-namespace topologies (root only).

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::host::Host;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};
use roce_net::{AddressFamilies, Error, ErrorKind};
use roce_net::{Lab as RLab, LabNic};
use std::sync::Mutex;

/// A set of lab namespaces (`rnt-<tag>-<pid>-<n>-<role>`), removed by `close()`,
/// by leaving the `with` block, or when the object is garbage-collected.
#[pyclass(frozen, module = "roce_net", name = "Lab")]
pub struct Lab {
    inner: Mutex<Option<RLab>>,
}

fn closed() -> PyErr {
    py_err(Error::new(
        ErrorKind::InvalidInput,
        "this lab was closed; its namespaces are gone",
    ))
}

/// A count argument (`nics`, `hosts`): a negative one is refused as the
/// library refuses 0 or too many (InvalidInputError naming it), not with the
/// OverflowError of converting it to an unsigned number.
fn count(what: &str, n: i64) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| {
        py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what} must be a positive number, not {n}"),
        ))
    })
}

/// A seed lab's address families, named as a policy's `family` key names them.
fn families(family: &str) -> PyResult<AddressFamilies> {
    match family {
        "ipv4" => Ok(AddressFamilies::Ipv4),
        "ipv6" => Ok(AddressFamilies::Ipv6),
        "both" => Ok(AddressFamilies::Both),
        x => Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("lab family {x:?}: give ipv4, ipv6 or both"),
        ))),
    }
}

fn nic<'py>(py: Python<'py>, n: &LabNic) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, n)
}

/// SIGTERM and SIGHUP remove the process's lab namespaces (see
/// `roce_net/_lab_signals.py`).
fn clean_up_on_signals(py: Python<'_>) -> PyResult<()> {
    py.import("roce_net._lab_signals")?
        .call_method0("install")?;
    Ok(())
}

impl Lab {
    fn with<T>(&self, f: impl FnOnce(&RLab) -> PyResult<T>) -> PyResult<T> {
        let g = self
            .inner
            .lock()
            .map_err(|_| py_err(Error::new(ErrorKind::Io, "lab lock poisoned")))?;
        match g.as_ref() {
            Some(l) => f(l),
            None => Err(closed()),
        }
    }
}

#[pymethods]
impl Lab {
    /// The seed scenario: a host namespace with `nics` NICs `r0..` at
    /// 198.18.0.11/24, .12/24, ..., a peer `p0` at 198.18.0.100/24, all on one
    /// bridge. `family` (a policy's vocabulary): `"ipv4"` as said, `"ipv6"`
    /// addresses the NICs `fd00:198:18::11/64`, `::12/64`, ... and the peer
    /// `fd00:198:18::100/64` instead (`roce-net lab --ipv6`), `"both"` gives
    /// each NIC one of each. Kernel defaults, nothing fixed. Needs root.
    #[classmethod]
    #[pyo3(signature = (nics=4, *, tag="py", family="ipv4"))]
    fn seed(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        nics: i64,
        tag: &str,
        family: &str,
    ) -> PyResult<Lab> {
        let nics = count("nics", nics)?;
        let families = families(family)?;
        let tag = tag.to_string();
        clean_up_on_signals(py)?;
        let lab = py
            .detach(move || RLab::seed_families(&tag, nics, families))
            .py()?;
        Ok(Lab {
            inner: Mutex::new(Some(lab)),
        })
    }

    /// A fleet: `hosts` host namespaces `...-h1`.. on one bridge, each with
    /// `nics` NICs `r0..` at 198.18.<k>.11/16, .12/16, ... on host k. Kernel
    /// defaults, nothing fixed. Needs root.
    #[classmethod]
    #[pyo3(signature = (hosts=8, nics=2, *, tag="py-fleet"))]
    fn fleet(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        hosts: i64,
        nics: i64,
        tag: &str,
    ) -> PyResult<Lab> {
        let (hosts, nics) = (count("hosts", hosts)?, count("nics", nics)?);
        let tag = tag.to_string();
        clean_up_on_signals(py)?;
        let lab = py.detach(move || RLab::fleet(&tag, hosts, nics)).py()?;
        Ok(Lab {
            inner: Mutex::new(Some(lab)),
        })
    }

    /// Remove the namespaces of every lab of this process that is not closed,
    /// and refuse to build more: what the SIGTERM/SIGHUP handler
    /// (`roce_net._lab_signals`) does. `(removed, [(not removed, why)])`.
    #[staticmethod]
    fn _interrupt(py: Python<'_>) -> (Vec<String>, Vec<(String, String)>) {
        let r = py.detach(RLab::interrupt);
        (
            r.removed,
            r.failed
                .into_iter()
                .map(|(n, e)| (n, e.to_string()))
                .collect(),
        )
    }

    /// The fleet lab's host namespaces, `...-h1` first (empty for a seed lab).
    #[getter]
    fn fleet_hosts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.with(|l| PyTuple::new(py, l.fleet_hosts()))
    }

    /// The common name prefix of the lab's namespaces.
    #[getter]
    fn prefix(&self) -> PyResult<String> {
        self.with(|l| Ok(l.prefix().to_string()))
    }

    /// Every namespace of the lab.
    #[getter]
    fn namespaces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.with(|l| PyTuple::new(py, l.namespaces()))
    }

    /// The host namespace (the one with the NICs).
    #[getter]
    fn host_ns(&self) -> PyResult<Option<String>> {
        self.with(|l| Ok(l.host_ns().map(str::to_string)))
    }

    /// The peer namespace.
    #[getter]
    fn peer_ns(&self) -> PyResult<Option<String>> {
        self.with(|l| Ok(l.peer_ns().map(str::to_string)))
    }

    /// The switch (bridge) namespace.
    #[getter]
    fn switch_ns(&self) -> PyResult<Option<String>> {
        self.with(|l| Ok(l.switch_ns().map(str::to_string)))
    }

    /// The host's NICs.
    #[getter]
    fn nics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.with(|l| {
            let v = l
                .nics()
                .iter()
                .map(|n| nic(py, n))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, v)
        })
    }

    /// The peer's NIC.
    #[getter]
    fn peer_nic<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(|l| l.peer_nic().map(|n| nic(py, n)).transpose())
    }

    /// A Host handle on the host namespace.
    fn host(&self) -> PyResult<Host> {
        self.with(|l| {
            Ok(Host {
                inner: l.host().py()?,
            })
        })
    }

    /// A Host handle on the peer namespace.
    fn peer(&self) -> PyResult<Host> {
        self.with(|l| {
            let ns = l.peer_ns().ok_or_else(|| {
                py_err(Error::new(
                    ErrorKind::NotFound,
                    "this lab has no peer namespace",
                ))
            })?;
            Ok(Host {
                inner: roce_net::Host::netns(ns).py()?,
            })
        })
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().map(|g| g.is_none()).unwrap_or(true)
    }

    /// Remove every namespace of the lab (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let lab = self
            .inner
            .lock()
            .map_err(|_| py_err(Error::new(ErrorKind::Io, "lab lock poisoned")))?
            .take();
        match lab {
            Some(l) => py.detach(move || l.destroy()).py(),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self
            .inner
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|l| l.prefix().to_string()))
        {
            Some(p) => format!("<Lab {p}>"),
            None => "<Lab closed>".to_string(),
        }
    }
}
