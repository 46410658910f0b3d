//! `roce_net.Host`: a namespace-scoped handle; every I/O call releases the GIL.

use crate::errors::IntoPyResult;
use crate::state::state_to_py;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A handle on one host's networking, scoped to a network namespace.
#[pyclass(frozen, module = "roce_net")]
pub struct Host {
    pub(crate) inner: roce_net::Host,
}

#[pymethods]
impl Host {
    /// `Host(netns=None, sysfs_root=None, *, netns_path=None, etc_root=None)`.
    #[new]
    #[pyo3(signature = (netns=None, sysfs_root=None, *, netns_path=None, etc_root=None))]
    fn new(
        netns: Option<String>,
        sysfs_root: Option<PathBuf>,
        netns_path: Option<PathBuf>,
        etc_root: Option<PathBuf>,
    ) -> PyResult<Host> {
        let mut h = match (netns, netns_path) {
            (Some(_), Some(_)) => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "give netns or netns_path, not both",
                ))
            }
            (Some(n), None) => roce_net::Host::netns(&n).py()?,
            (None, Some(p)) => roce_net::Host::netns_path(&p).py()?,
            (None, None) => roce_net::Host::current(),
        };
        if let Some(r) = sysfs_root {
            h = h.with_sysfs_root(r);
        }
        if let Some(r) = etc_root {
            h = h.with_etc_root(r);
        }
        Ok(Host { inner: h })
    }

    /// The namespace name, or None for the current namespace or a pathed one.
    #[getter]
    fn netns(&self) -> Option<String> {
        self.inner.target().name().map(str::to_string)
    }

    /// The namespace file, or None for the current namespace.
    #[getter]
    fn netns_path(&self) -> Option<PathBuf> {
        self.inner.target().file()
    }

    /// The sysfs root RDMA devices are read from.
    #[getter]
    fn sysfs_root(&self) -> PathBuf {
        self.inner.sysfs_root().to_path_buf()
    }

    /// The /etc root routing table names are read from.
    #[getter]
    fn etc_root(&self) -> PathBuf {
        self.inner.etc_root().to_path_buf()
    }

    /// Capture the whole snapshot (releases the GIL while reading).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let h = self.inner.clone();
        let st = py.detach(move || h.snapshot()).py()?;
        state_to_py(py, st)
    }

    fn __repr__(&self) -> String {
        match self.inner.target().file() {
            None => "Host()".to_string(),
            Some(_) if self.inner.target().name().is_some() => {
                format!("Host(netns={:?})", self.inner.target().name().unwrap_or(""))
            }
            Some(p) => format!("Host(netns_path={:?})", p.display().to_string()),
        }
    }
}
