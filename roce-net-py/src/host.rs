//! `roce_net.Host`: a namespace-scoped handle; every I/O call releases the GIL.

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::plan::native_plan;
use crate::schema::Exported;
use crate::state::state_to_py;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use roce_net::ApplyOptions;
use roce_net::{Error, ErrorKind};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

/// An IP address from a str or an `ipaddress` object.
pub(crate) fn ip_arg(what: &str, v: &Bound<'_, PyAny>) -> PyResult<IpAddr> {
    let s = v.str()?.to_string();
    s.trim().parse().map_err(|_| {
        py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what} {s:?} is not an IP address"),
        ))
    })
}

fn apply_options(state_dir: Option<PathBuf>) -> ApplyOptions {
    let mut o = ApplyOptions::default();
    if let Some(d) = state_dir {
        o.state_dir = d;
    }
    o
}

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

    /// Pickled (and copied) as the arguments that open it: a worker process
    /// that unpickles it opens the namespace again by its name or file, as
    /// `Host(netns=...)` there would.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let kw = PyDict::new(py);
        match self.inner.target().name() {
            Some(n) => kw.set_item("netns", n)?,
            None => {
                if let Some(p) = self.inner.target().file() {
                    kw.set_item("netns_path", p)?;
                }
            }
        }
        kw.set_item("sysfs_root", self.inner.sysfs_root())?;
        kw.set_item("etc_root", self.inner.etc_root())?;
        Ok((PyTuple::empty(py), kw))
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

    /// Where a packet to `dst` (from `src`) would go, as `ip route get` answers it,
    /// policy rules included: a RouteDecision (table, dev, prefsrc, gateway, type).
    #[pyo3(signature = (dst, src=None))]
    fn route_get<'py>(
        &self,
        py: Python<'py>,
        dst: &Bound<'py, PyAny>,
        src: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dst = ip_arg("destination", dst)?;
        let src = src.map(|s| ip_arg("source", s)).transpose()?;
        let h = self.inner.clone();
        let d = py.detach(move || h.route_get(dst, src)).py()?;
        to_py(py, &d)
    }

    /// Send ARP requests for `target` out of `dev` and report every MAC that
    /// answers (more than one: ARP flux). Needs CAP_NET_RAW.
    #[pyo3(signature = (dev, target, *, count=3, timeout=2.0, source=None))]
    fn probe_arp<'py>(
        &self,
        py: Python<'py>,
        dev: String,
        target: &Bound<'py, PyAny>,
        count: u32,
        timeout: f64,
        source: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.inner.clone();
        let probe = move |timeout, target, source: Option<Ipv4Addr>| {
            let o = roce_net::ArpProbeOptions::new(count, timeout);
            h.probe_arp(&dev, target, source.map_or(o, |s| o.with_source(s)))
        };
        let v4 = |a: IpAddr| match a {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        };
        neighbour_probe(py, "ARP", (target, source), v4, timeout, probe)
    }

    /// Send neighbour solicitations for the IPv6 `target` out of `dev` and
    /// report every MAC advertised for it (IPv6's probe_arp; more than one: a
    /// NIC answers for an address that is not its own). Needs CAP_NET_RAW.
    #[pyo3(signature = (dev, target, *, count=3, timeout=2.0, source=None))]
    fn probe_nd<'py>(
        &self,
        py: Python<'py>,
        dev: String,
        target: &Bound<'py, PyAny>,
        count: u32,
        timeout: f64,
        source: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.inner.clone();
        let probe = move |timeout, target, source: Option<Ipv6Addr>| {
            let o = roce_net::NdProbeOptions::new(count, timeout);
            h.probe_nd(&dev, target, source.map_or(o, |s| o.with_source(s)))
        };
        let v6 = |a: IpAddr| match a {
            IpAddr::V6(a) => Some(a),
            IpAddr::V4(_) => None,
        };
        neighbour_probe(py, "ND", (target, source), v6, timeout, probe)
    }

    /// Apply a plan as a transaction: re-plan under the lock and refuse drift in
    /// what the plan touches (or a change the planner would not make), journal
    /// every change with its inverse, verify (a new plan must be empty), roll back
    /// on any failure. With `confirm_timeout` (seconds) a detached watchdog,
    /// started before the first change, rolls the change back unless `confirm()`
    /// comes in time. Returns an ApplyReport.
    #[pyo3(signature = (plan, *, confirm_timeout=None, state_dir=None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyAny>,
        confirm_timeout: Option<f64>,
        state_dir: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = native_plan(plan)?;
        let mut opts = apply_options(state_dir.clone());
        if let Some(t) = confirm_timeout {
            let max = roce_net::MAX_CONFIRM_TIMEOUT.as_secs_f64();
            if !(t.is_finite() && t >= 1.0 && t <= max) {
                return Err(py_err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("confirm_timeout {t} s is not between 1 and {max}"),
                )));
            }
            // Armed, and its watchdog running in its own session (it outlives this
            // process and the SSH session), before the first change.
            let h = self.inner.clone();
            let t = Duration::from_secs_f64(t);
            let mut guard = py.detach(move || roce_net::arm_confirm(&h, t)).py()?;
            let pid: u32 = py
                .import("roce_net._watchdog")?
                .call_method1(
                    "spawn",
                    (
                        self.netns(),
                        self.netns_path(),
                        self.etc_root(),
                        opts.state_dir.clone(),
                        guard.apply_id.clone(),
                        guard.deadline,
                        guard.namespace.cookie,
                        guard.namespace.boot_id.clone(),
                    ),
                )?
                .extract()?;
            guard.watchdog_pid = Some(pid);
            opts.guard = Some(guard);
        }
        let h = self.inner.clone();
        let o = opts.clone();
        let report = py.detach(move || roce_net::apply(&h, &p, &o));
        match report {
            Ok(r) => to_py(py, &r),
            Err(e) => {
                if let Some(g) = &opts.guard {
                    // Refused before the first change: the watchdog has nothing to guard.
                    let h = self.inner.clone();
                    let started = py.detach(|| {
                        matches!(roce_net::apply_status(&h, &opts), Ok(Some(j)) if j.apply_id == g.apply_id)
                    });
                    if let (false, Some(pid)) = (started, g.watchdog_pid) {
                        let term = py.import("signal")?.getattr("SIGTERM")?;
                        let _ = py.import("os")?.call_method1("kill", (pid, term));
                    }
                }
                Err(py_err(e))
            }
        }
    }

    /// Confirm an apply made with `confirm_timeout`, so the watchdog keeps it.
    #[pyo3(signature = (*, state_dir=None))]
    fn confirm(&self, py: Python<'_>, state_dir: Option<PathBuf>) -> PyResult<()> {
        let h = self.inner.clone();
        let o = apply_options(state_dir);
        py.detach(move || roce_net::confirm(&h, &o)).py()
    }

    /// Where the last apply of this namespace stands: its journal as a dict
    /// (`state`: applying, pending_confirm, committed, rolled_back or
    /// rollback_failed; `steps`, ...), or None when there is none. Reads only.
    #[pyo3(signature = (*, state_dir=None))]
    fn apply_status<'py>(
        &self,
        py: Python<'py>,
        state_dir: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.inner.clone();
        let o = apply_options(state_dir);
        let j = py.detach(move || roce_net::apply_status(&h, &o)).py()?;
        // A plain dict, as documented: the journal's schema belongs to the apply
        // transaction (docs/cli.md), not to the typed mirror.
        let v = serde_json::to_value(&j).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("serialising the journal: {e}"))
        })?;
        pythonize::pythonize(py, &v).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("converting the journal: {e}"))
        })
    }

    /// Undo the last apply from its journal (also after a crash). NotFoundError
    /// when there is nothing to roll back. Returns a RollbackReport.
    #[pyo3(signature = (*, state_dir=None))]
    fn rollback<'py>(
        &self,
        py: Python<'py>,
        state_dir: Option<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.inner.clone();
        let o = apply_options(state_dir);
        let r = py.detach(move || roce_net::rollback(&h, &o)).py()?;
        to_py(py, &r)
    }

    /// Write the boot-persistent configuration for `plan`'s desired state under
    /// `root` (None: `/`) with `backend` (None: the policy's, else the one stack
    /// that configures the NICs), as `roce-net persist` does: under the
    /// namespace's lock, refused while the last apply awaits confirmation or
    /// did not finish, and, when the last apply is committed, what it changed
    /// recorded in `state_dir` so that `rollback()` (or the watchdog's) puts
    /// the files back. `switch_backend` removes another backend's earlier
    /// files; `dry_run` writes and records nothing. Returns an AppliedPersist.
    #[pyo3(signature = (plan, backend=None, *, root=None, state_dir=None, switch_backend=false, dry_run=false))]
    #[allow(clippy::too_many_arguments)]
    fn persist_for_apply<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyAny>,
        backend: Option<&str>,
        root: Option<PathBuf>,
        state_dir: Option<PathBuf>,
        switch_backend: bool,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let o = apply_options(state_dir);
        crate::persist::persist_for_apply(
            py,
            &self.inner,
            &o,
            plan,
            backend,
            root,
            switch_backend,
            dry_run,
        )
    }

    /// Block until the guarded apply's deadline; roll back unless confirmed. Run
    /// by the detached watchdog process with the guard armed before the apply;
    /// returns "confirmed", "nothing_pending", the RollbackReport or the
    /// namespace-changed message.
    #[pyo3(signature = (*, state_dir=None, apply_id=None, deadline=None, cookie=None, boot_id=None))]
    fn _watchdog<'py>(
        &self,
        py: Python<'py>,
        state_dir: Option<PathBuf>,
        apply_id: Option<String>,
        deadline: Option<u64>,
        cookie: Option<u64>,
        boot_id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // The watchdog's own process (`python -m roce_net._watchdog`):
        // SIGTERM, SIGHUP and SIGINT make it roll back instead of dying.
        let stop = roce_net::stop_on_signals();
        let h = self.inner.clone();
        let mut o = apply_options(state_dir);
        if let (Some(apply_id), Some(deadline), Some(cookie), Some(boot_id)) =
            (apply_id, deadline, cookie, boot_id)
        {
            o.guard = Some(roce_net::ConfirmGuard {
                apply_id,
                deadline,
                boot_deadline_ms: None,
                namespace: roce_net::NamespaceId { cookie, boot_id },
                watchdog_pid: Some(std::process::id()),
            });
        }
        let r = py
            .detach(move || roce_net::watchdog_until(&h, &o, stop))
            .py()?;
        to_py(py, &r)
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

/// What `probe_arp` and `probe_nd` (`kind`: `ARP`, `ND`) share: the target
/// and source (`addrs`) must be of the probe's family (`pick` gives `None`
/// for the other one, which is refused naming the probe that takes it), the
/// timeout must be in range; then `probe` runs with the GIL released.
fn neighbour_probe<'py, A, R>(
    py: Python<'py>,
    kind: &str,
    addrs: (&Bound<'py, PyAny>, Option<&Bound<'py, PyAny>>),
    pick: fn(IpAddr) -> Option<A>,
    timeout: f64,
    probe: impl FnOnce(Duration, A, Option<A>) -> roce_net::Result<R> + Send,
) -> PyResult<Bound<'py, PyAny>>
where
    A: Send,
    R: Exported + Send,
{
    let addr = |what: &str, v: &Bound<'py, PyAny>| -> PyResult<A> {
        let a = ip_arg(what, v)?;
        pick(a).ok_or_else(|| {
            let (mine, theirs, other) = match a {
                IpAddr::V4(_) => ("IPv6", "IPv4", "probe_arp"),
                IpAddr::V6(_) => ("IPv4", "IPv6", "probe_nd"),
            };
            py_err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{kind} probes {mine} only; {what} {a} is {theirs} ({other} probes {theirs})"
                ),
            ))
        })
    };
    let target = addr("target", addrs.0)?;
    let source = addrs.1.map(|s| addr("source", s)).transpose()?;
    let timeout = probe_timeout(kind, timeout)?;
    let r = py.detach(move || probe(timeout, target, source)).py()?;
    to_py(py, &r)
}

/// A probe's `timeout` in seconds (`what`: "ARP", "ND"), checked: more than 0,
/// less than an hour.
fn probe_timeout(what: &str, timeout: f64) -> PyResult<Duration> {
    if !(timeout.is_finite() && timeout > 0.0 && timeout < 3600.0) {
        return Err(py_err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what} probe timeout {timeout} s is not between 0 and 3600"),
        )));
    }
    Ok(Duration::from_secs_f64(timeout))
}
