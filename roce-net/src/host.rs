//! The host handle: one namespace's networking, read into a [`HostState`] and
//! driven through the kernel I/O layer.
//!
//! [`Host`] is a namespace-scoped handle (docs/architecture.md, decision 3): `Host::current()`,
//! `Host::netns(name)`, `Host::netns_path(path)`. Netlink and `/proc/sys/net` I/O
//! runs on a thread inside that namespace; RDMA sysfs is read from an injectable
//! root (`/sys` by default), routing table names from an injectable `/etc`.

use crate::error::Result;
use crate::kernel::{netlink, procfs, sysfs};
use crate::model::{HostState, Sysctl};
use crate::netns::NetnsTarget;
use crate::rt_tables;
use std::path::{Path, PathBuf};

/// A handle on one host's networking, scoped to a network namespace.
#[derive(Debug, Clone)]
pub struct Host {
    target: NetnsTarget,
    sysfs_root: PathBuf,
    etc_root: PathBuf,
}

impl Host {
    /// The namespace of the calling thread.
    pub fn current() -> Host {
        Host {
            target: NetnsTarget::Current,
            sysfs_root: PathBuf::from("/sys"),
            etc_root: PathBuf::from("/etc"),
        }
    }

    /// A named namespace (`/run/netns/<name>`). Fails with `NotFound` if missing.
    pub fn netns(name: &str) -> Result<Host> {
        Ok(Host {
            target: NetnsTarget::named(name)?,
            ..Host::current()
        })
    }

    /// A namespace by file (`/proc/<pid>/ns/net`). Fails with `NotFound` if missing.
    pub fn netns_path(path: &Path) -> Result<Host> {
        Ok(Host {
            target: NetnsTarget::path(path)?,
            ..Host::current()
        })
    }

    /// Read RDMA devices from `<root>/class/infiniband` instead of `/sys`.
    pub fn with_sysfs_root(mut self, root: impl Into<PathBuf>) -> Host {
        self.sysfs_root = root.into();
        self
    }

    /// Read `iproute2/rt_tables*` from `<root>` instead of `/etc`.
    pub fn with_etc_root(mut self, root: impl Into<PathBuf>) -> Host {
        self.etc_root = root.into();
        self
    }

    /// The namespace this handle works in.
    pub fn target(&self) -> &NetnsTarget {
        &self.target
    }

    /// The sysfs root.
    pub fn sysfs_root(&self) -> &Path {
        &self.sysfs_root
    }

    /// The `/etc` root.
    pub fn etc_root(&self) -> &Path {
        &self.etc_root
    }

    /// Run `f` with a netlink socket opened inside this host's namespace.
    pub fn with_netlink<T, F>(&self, f: F) -> Result<T>
    where
        T: Send,
        F: FnOnce(&mut netlink::Netlink) -> Result<T> + Send,
    {
        self.target.run(|| {
            let mut nl = netlink::Netlink::open()?;
            f(&mut nl)
        })
    }

    /// Where a packet to `dst` (sourced from `src`) would go in this namespace,
    /// as `ip route get DST from SRC` answers it: the table that matched (policy
    /// rules included), the device, the source address and the gateway.
    pub fn route_get(
        &self,
        dst: std::net::IpAddr,
        src: Option<std::net::IpAddr>,
    ) -> Result<crate::model::RouteDecision> {
        self.with_netlink(|nl| nl.route_get(dst, src, None))
    }

    /// `ip route get` with every selector (`from`, `iif`, `oif`, `mark`, `ipproto`,
    /// `sport`, `dport`), answered exactly as the kernel answered, with the
    /// matched table's name from this host's `rt_tables` (see
    /// [`RouteReply::render`](crate::model::RouteReply::render) for iproute2's
    /// text). A refused lookup (prohibit, unreachable, blackhole) is an answer.
    pub fn route_query(&self, q: &crate::model::RouteQuery) -> Result<crate::model::RouteReply> {
        let mut r = self.with_netlink(|nl| nl.route_query(q))?;
        if let Some(t) = r.table {
            let mut w = Vec::new();
            let names = rt_tables::read_table_names(&self.etc_root, &mut w);
            let mut st = HostState::empty("");
            st.table_names = names;
            r.table_name = Some(st.table_name(t));
        }
        Ok(r)
    }

    /// The verbs view of this host's RDMA devices (libibverbs, with this host's
    /// sysfs root for the legacy GID type and to explain an empty list). Never
    /// fails: without RDMA it says why (`VerbsView::unavailable`).
    pub fn verbs_view(&self, opts: &crate::kernel::verbs::VerbsOptions) -> crate::model::VerbsView {
        crate::kernel::verbs::verbs_view(&self.own_verbs(opts))
    }

    /// `opts` with this host's sysfs root: what everything that loads
    /// libibverbs for this host (the verbs view, `probe rdma`, the mesh's
    /// RDMA level) reads the legacy GID type and explains an empty list from.
    pub(crate) fn own_verbs(
        &self,
        opts: &crate::kernel::verbs::VerbsOptions,
    ) -> crate::kernel::verbs::VerbsOptions {
        opts.clone().with_sysfs_root(self.sysfs_root.clone())
    }

    /// Capture the whole snapshot.
    pub fn snapshot(&self) -> Result<HostState> {
        self.target.run(|| {
            let mut nl = netlink::Netlink::open()?;
            self.snapshot_with(&mut nl)
        })
    }

    /// [`Host::snapshot`] on the calling thread, which must already be inside
    /// this host's namespace, through an open socket of that namespace (apply
    /// runs a whole transaction on one such thread and socket).
    pub(crate) fn snapshot_with(&self, nl: &mut netlink::Netlink) -> Result<HostState> {
        self.snapshot_parts(nl, Parts::ALL)
    }

    /// [`Host::snapshot_with`] of only the `parts` a caller needs (links,
    /// addresses, routes, rules and table names are always read).
    pub(crate) fn snapshot_parts(
        &self,
        nl: &mut netlink::Netlink,
        parts: Parts<'_>,
    ) -> Result<HostState> {
        let Parts {
            neighbors,
            sysctls,
            rdma,
            nic_hw,
            families,
        } = parts;
        let mut st = HostState::empty(&hostname());
        let (interfaces, inet): (Vec<_>, Vec<_>) = nl.links_inet()?.into_iter().unzip();
        st.interfaces = interfaces;
        st.addresses = nl.addresses_of(&st.interfaces, families)?;
        if neighbors {
            st.neighbors = nl.neighbors(&st.interfaces)?;
        }
        st.routes = nl.routes_of(&st.interfaces, families)?;
        st.rules = nl.rules_of(families)?;
        let proc_sys = Path::new(procfs::PROC_SYS);
        match sysctls {
            SharedSysctls::None => {}
            SharedSysctls::All => {
                st.sysctls = procfs::read_shared_sysctls(proc_sys, &mut st.warnings);
            }
            SharedSysctls::Only(which) => {
                st.sysctls = procfs::read_shared_sysctls_of(proc_sys, which, &mut st.warnings);
            }
        }
        for (i, c) in st.interfaces.iter().zip(inet) {
            let Some(c) = c else { continue };
            let configured = procfs::interface_conf(|k| c.get(k));
            st.sysctls.interfaces.insert(
                i.name.clone(),
                crate::model::InterfaceConf {
                    configured,
                    effective: configured,
                },
            );
        }
        st.sysctls.recompute_effective();
        st.netns = self.target.name().map(str::to_string);
        st.captured_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        st.table_names = rt_tables::read_table_names(&self.etc_root, &mut st.warnings);
        // A names file that cannot be read is a warning of the read above.
        st.own_table_names = rt_tables::own_table_names(&self.etc_root)
            .ok()
            .filter(|names| !names.is_empty());
        if rdma {
            st.rdma = if nic_hw {
                sysfs::read_rdma_sysfs(&self.sysfs_root, &st.interfaces, &mut st.warnings)
            } else {
                sysfs::read_rdma_topology(&self.sysfs_root, &st.interfaces, &mut st.warnings)
            };
        }
        if nic_hw {
            read_nic_hw(nl, &mut st);
        }
        Ok(st)
    }
}

/// Which of the sysctls only `/proc/sys` shows (`conf/all`, `conf/default`, the
/// host tuning) a snapshot reads. Every interface's settings come with its link
/// whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedSysctls<'a> {
    /// None of them.
    None,
    /// All of them.
    All,
    /// Only these (apply's plan snapshot: the ones its policy sets, as
    /// `plan::shared_sysctls` lists them; the planner reads no others).
    Only(&'a [Sysctl]),
}

/// What a snapshot reads besides links, addresses, routes, rules and table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    /// The neighbour tables.
    pub neighbors: bool,
    /// The shared sysctls under `/proc/sys`.
    pub sysctls: SharedSysctls<'a>,
    /// The RDMA devices in sysfs (ports, GID tables, counters).
    pub rdma: bool,
    /// NIC driver statistics (`ethtool -S`), DCB QoS, and of the RDMA devices
    /// everything beyond what decides each port's netdev (GID tables, counters,
    /// VPD, rdma_cm: `sysfs::read_rdma_topology` without it).
    pub nic_hw: bool,
    /// Whose addresses, routes and rules: both families, or IPv4 only (the
    /// neighbour tables, when read, always have both).
    pub families: netlink::Families,
}

impl Parts<'_> {
    /// The whole host ([`Host::snapshot`]).
    pub const ALL: Parts<'static> = Parts {
        neighbors: true,
        sysctls: SharedSysctls::All,
        rdma: true,
        nic_hw: true,
        families: netlink::Families::Both,
    };
    /// What the planner reads: everything but the NIC statistics and QoS, and
    /// of the RDMA devices only which netdev backs each port (apply's plan under
    /// the lock; the planner's NIC scope reads no more of them).
    pub const PLAN: Parts<'static> = Parts {
        nic_hw: false,
        ..Parts::ALL
    };
    /// Only links, addresses, routes, rules and table names (apply's verify
    /// re-reads the sysctls it needs itself, see `procfs::reread_sysctls`).
    pub const NETLINK: Parts<'static> = Parts {
        neighbors: false,
        sysctls: SharedSysctls::None,
        rdma: false,
        nic_hw: false,
        families: netlink::Families::Both,
    };
    /// [`Parts::NETLINK`] of IPv4 only (apply's verify of a plan that changes
    /// no IPv6 object keeps the IPv6 ones of its first read).
    pub const NETLINK_IPV4: Parts<'static> = Parts {
        families: netlink::Families::Ipv4,
        ..Parts::NETLINK
    };
}

/// The driver statistics (`ethtool -S`) and DCB QoS of every NIC in scope, read
/// on the namespace's socket. What cannot be read is a warning; a driver without
/// statistics or DCB leaves `None` / "not available".
fn read_nic_hw(nl: &mut netlink::Netlink, st: &mut HostState) {
    let names = crate::scope::nic_scope(st).names();
    for name in names {
        let stats = nl.ethtool_stats(&name);
        let qos = nl.dcb_qos(&name);
        let Some(i) = st.interfaces.iter_mut().find(|i| i.name == name) else {
            continue;
        };
        match stats {
            Ok(v) => {
                i.ethtool_stats = v.map(|v| {
                    let (names, values): (Vec<String>, Vec<u64>) = v.into_iter().unzip();
                    crate::kernel::ethtool::pair(names, &values)
                })
            }
            Err(e) => st.warnings.push(crate::model::Warning {
                source: format!("ethtool -S {name}"),
                message: e.to_string(),
            }),
        }
        match qos {
            Ok(q) => i.qos = Some(q),
            Err(e) => st.warnings.push(crate::model::Warning {
                source: format!("dcb {name}"),
                message: e.to_string(),
            }),
        }
    }
}

/// This machine's host name (`uname -n`: the node name of the calling thread's
/// UTS namespace, which `/proc/sys/kernel/hostname` also shows), empty if
/// unavailable. One `uname(2)` instead of opening and reading the procfs file
/// (about 0.6 us against 10 us here; a snapshot asks for it every time).
pub fn hostname() -> String {
    // SAFETY: an all-zero utsname is valid; uname fills it, NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to an owned utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let raw: Vec<u8> = u
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| u8::from_ne_bytes(c.to_ne_bytes()))
        .collect();
    String::from_utf8_lossy(raw.trim_ascii()).into_owned()
}

#[cfg(test)]
mod tests {
    /// `uname -n` is the name `/proc/sys/kernel/hostname` shows (both are the
    /// UTS namespace's node name).
    #[test]
    fn hostname_is_the_procfs_host_name() {
        let procfs = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::hostname(), procfs.trim());
        assert!(!super::hostname().is_empty());
    }
}
