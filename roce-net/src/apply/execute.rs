//! The real [`Effects`]: one [`Change`] at a time on a host, through netlink for
//! routes, rules and neighbours, `/proc/sys` for sysctls and roce-net's own
//! names file for table names; snapshots through the same socket.
//!
//! Undo checks that what it restores is what the journal recorded. A step that
//! may or may not have reached the kernel (a crash) counts as undone when the
//! host already holds the recorded state: an `EEXIST` on re-adding a route or
//! rule is accepted only when the object in its place is the recorded one, and
//! anything else there is a failure naming both.

use super::journal::Step;
use super::transaction::Effects;
use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::host::{Parts, SharedSysctls};
use crate::kernel::netlink::Netlink;
use crate::kernel::procfs;
use crate::model::{ConfTarget, Family, HostState, Route, Rule, Sysctl};
use crate::plan::Change;
use crate::rt_tables::{own_table_names, update_table_names, NameUpdate};
use std::collections::BTreeMap;
use std::path::Path;

/// The kernel of one namespace, from a thread inside it.
pub(crate) struct Kernel<'a> {
    /// The host handle (snapshot roots).
    pub host: &'a Host,
    /// Netlink socket inside the namespace.
    pub nl: &'a mut Netlink,
    /// `/proc/sys` as seen from inside the namespace.
    pub proc_sys: &'a Path,
    /// Sysctl writes through `conf/<dir>` descriptors opened once.
    sysctl_files: procfs::SysctlFiles,
    /// What verify reuses of the first snapshot.
    first: Option<FirstRead>,
}

/// Of the first snapshot, what verify takes over instead of reading again: the
/// RDMA devices (apply never sets them), the sysctls the plan does not read,
/// and the IPv6 addresses, routes and rules (for a plan that changes none).
struct FirstRead {
    rdma: Vec<crate::model::RdmaDevice>,
    sysctls: crate::model::SysctlView,
    addresses6: Vec<crate::model::Address>,
    routes6: Vec<Route>,
    rules6: Vec<Rule>,
}

impl<'a> Kernel<'a> {
    pub(crate) fn new(host: &'a Host, nl: &'a mut Netlink) -> Kernel<'a> {
        Kernel {
            host,
            nl,
            proc_sys: Path::new(procfs::PROC_SYS),
            sysctl_files: procfs::SysctlFiles::new(Path::new(procfs::PROC_SYS)),
            first: None,
        }
    }
}

/// The interface an (inverse) change needs, when it names one.
fn needs_interface(c: &Change) -> Option<&str> {
    match c {
        Change::AddRoute { route } | Change::DeleteRoute { route } => route.dev.as_deref(),
        Change::ReplaceRoute { after, .. } => after.dev.as_deref(),
        Change::SetSysctl {
            sysctl:
                Sysctl::Conf {
                    target: ConfTarget::Interface(n),
                    ..
                },
            ..
        } => Some(n),
        Change::RestoreNeighbors { ifname, .. } | Change::FlushNeighbors { ifname, .. } => {
            Some(ifname)
        }
        _ => None,
    }
}

impl Kernel<'_> {
    /// After `EEXIST` on re-adding `want`: fine when the route with its key is
    /// exactly `want`, a failure naming what is there otherwise.
    fn route_in_place(&mut self, want: &Route, err: Error) -> Result<()> {
        let ifs = self.nl.links()?;
        let routes = self.nl.routes(&ifs)?;
        let there: Vec<&Route> = routes.iter().filter(|r| r.key() == want.key()).collect();
        if there.iter().any(|r| r.same(want)) {
            return Ok(());
        }
        let found = there
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        Err(Error::new(
            ErrorKind::RollbackFailed,
            format!(
                "could not restore route {}: a different route holds its place ({}); it is not \
                 the one recorded, so it is left as is",
                want,
                if found.is_empty() {
                    "not shown by a dump".into()
                } else {
                    found
                }
            ),
        )
        .with_source(err))
    }

    /// After `EEXIST` on re-adding `want`: fine when an equal rule is there.
    fn rule_in_place(&mut self, want: &Rule, err: Error) -> Result<()> {
        let rules = self.nl.rules()?;
        if rules.iter().any(|r| r.same(want)) {
            return Ok(());
        }
        let similar: Vec<String> = rules
            .iter()
            .filter(|r| r.family == want.family && r.priority == want.priority)
            .map(|r| r.to_string())
            .collect();
        Err(Error::new(
            ErrorKind::RollbackFailed,
            format!(
                "could not restore rule {}: the kernel reports it exists, but no rule equal to \
                 the recorded one is there (at priority {}: {})",
                want,
                want.priority,
                if similar.is_empty() {
                    "none".into()
                } else {
                    similar.join("; ")
                }
            ),
        )
        .with_source(err))
    }

    fn run(&mut self, change: &Change, undo: bool, append: bool) -> Result<()> {
        let errno = |e: &Error, n: i32| e.errno_value() == Some(n);
        match change {
            // Applying, the value is checked by verify, which re-reads every
            // sysctl of the plan; undoing, nothing follows, so it is read back.
            Change::SetSysctl { sysctl, after, .. } if undo => self.sysctl_files.set(sysctl, after),
            Change::SetSysctl { sysctl, after, .. } => self.sysctl_files.write(sysctl, after),
            // Put back beside the route that shared its key when it was deleted.
            Change::AddRoute { route } if undo && append => match self.nl.route_append(route) {
                Err(e) if errno(&e, libc::EEXIST) => self.route_in_place(route, e),
                other => other,
            },
            Change::AddRoute { route } => match self.nl.route_add(route) {
                Err(e) if undo && errno(&e, libc::EEXIST) => self.route_in_place(route, e),
                other => other,
            },
            // Undoing an add: already gone is the recorded state (absent).
            Change::DeleteRoute { route } => match self.nl.route_del(route) {
                Err(e) if undo && errno(&e, libc::ESRCH) => Ok(()),
                other => other,
            },
            Change::ReplaceRoute { after, .. } => self.nl.route_replace(after),
            Change::AddRule { rule } => match self.nl.rule_add(rule) {
                Err(e) if undo && errno(&e, libc::EEXIST) => self.rule_in_place(rule, e),
                other => other,
            },
            Change::DeleteRule { rule } => match self.nl.rule_del(rule) {
                Err(e) if undo && errno(&e, libc::ENOENT) => Ok(()),
                other => other,
            },
            Change::FlushNeighbors { entries, .. } => {
                for n in entries {
                    match self.nl.neigh_del(n) {
                        // Gone already (expired or flushed by the kernel): that is the goal.
                        Err(e) if errno(&e, libc::ENOENT) => {}
                        other => other?,
                    }
                }
                Ok(())
            }
            // `ip neigh replace`: the recorded entry is put back whatever is there.
            Change::RestoreNeighbors { entries, .. } => {
                for n in entries {
                    self.nl.neigh_add(n)?;
                }
                Ok(())
            }
            Change::RegisterTableName { .. } | Change::UnregisterTableName { .. } => {
                Err(Error::new(
                    ErrorKind::InvalidInput,
                    "internal: table names are written through the names file update",
                ))
            }
        }
    }
}

impl Effects for Kernel<'_> {
    fn snapshot(&mut self, shared: Option<&[Sysctl]>) -> Result<HostState> {
        let parts = Parts {
            sysctls: shared.map_or(SharedSysctls::All, SharedSysctls::Only),
            ..Parts::PLAN
        };
        let st = self.host.snapshot_parts(self.nl, parts)?;
        self.first = Some(FirstRead {
            rdma: st.rdma.clone(),
            sysctls: st.sysctls.clone(),
            addresses6: st
                .addresses
                .iter()
                .filter(|a| a.address.is_ipv6())
                .cloned()
                .collect(),
            routes6: st
                .routes
                .iter()
                .filter(|r| r.family == Family::Inet6)
                .cloned()
                .collect(),
            rules6: st
                .rules
                .iter()
                .filter(|r| r.family == Family::Inet6)
                .cloned()
                .collect(),
        });
        Ok(st)
    }

    fn snapshot_verify(&mut self, sysctls: &[Sysctl], ipv6: bool) -> Result<HostState> {
        let Some(first) = self.first.take() else {
            return self.snapshot(None);
        };
        // Links (with every interface's IPv4 settings), addresses, routes, rules
        // and table names afresh (the IPv6 ones only when the plan changed some);
        // all/default/tuning: the plan's ones re-read.
        let parts = if ipv6 {
            Parts::NETLINK
        } else {
            Parts::NETLINK_IPV4
        };
        let mut st = self.host.snapshot_parts(self.nl, parts)?;
        if !ipv6 {
            // In the order a whole dump gives: each family's after IPv4's.
            st.addresses.extend(first.addresses6);
            st.routes.extend(first.routes6);
            st.rules.extend(first.rules6);
        }
        st.rdma = first.rdma;
        let fresh = std::mem::take(&mut st.sysctls.interfaces);
        st.sysctls = first.sysctls;
        st.sysctls.interfaces = fresh;
        procfs::reread_sysctls(self.proc_sys, &mut st.sysctls, sysctls)?;
        Ok(st)
    }

    fn own_table_names(&mut self) -> Result<BTreeMap<u32, String>> {
        own_table_names(self.host.etc_root())
    }

    fn change(&mut self, _index: usize, change: &Change) -> Result<()> {
        self.run(change, false, false)
    }

    fn table_names(
        &mut self,
        _first: usize,
        updates: &[NameUpdate<'_>],
        tolerant: bool,
    ) -> Result<Vec<bool>> {
        update_table_names(self.host.etc_root(), updates, tolerant)
    }

    fn undo(&mut self, _index: usize, step: &Step) -> Result<Option<String>> {
        let err = match self.run(&step.inverse, true, step.append) {
            Ok(()) => return Ok(None),
            Err(e) => e,
        };
        // An object that lived on an interface that no longer exists went with
        // it (routes, neighbours, the interface's sysctls): that is the state
        // before it, as far as this namespace can hold it.
        match needs_interface(&step.inverse) {
            Some(dev) if matches!(self.nl.ifindex(dev), Err(e) if e.kind() == ErrorKind::NotFound) => {
                Ok(Some(format!(
                    "nothing to restore: interface {dev} no longer exists (deleted, or renamed: \
                     then what was on it stays with it under its new name)"
                )))
            }
            _ => Err(err),
        }
    }

    fn announce(&mut self, list: &[(String, std::net::IpAddr)]) -> Vec<String> {
        // This thread is in the host's namespace (apply runs there), so the
        // packet socket is the namespace's.
        crate::probe::announce_all(list)
    }
}
