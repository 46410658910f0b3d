//! Carrying out one [`Change`] on a host: netlink for routes, rules and
//! neighbours, `/proc/sys` for sysctls, a file for table names.

use crate::error::Result;
use crate::kernel::netlink::Netlink;
use crate::kernel::procfs;
use crate::model::Neighbor;
use crate::plan::Change;
use crate::rt_tables::set_table_name;
use std::path::Path;

/// Where a change is carried out.
pub struct Target<'a> {
    /// Netlink socket inside the namespace.
    pub nl: &'a mut Netlink,
    /// `/proc/sys` as seen from inside the namespace.
    pub proc_sys: &'a Path,
    /// `/etc` root for table names.
    pub etc_root: &'a Path,
}

/// Carry out one change. `tolerant` makes "already there" / "already gone"
/// outcomes succeed, which rollback needs after a crash (a step may or may not
/// have reached the kernel).
pub fn execute(t: &mut Target<'_>, change: &Change, tolerant: bool) -> Result<()> {
    let ok_if = |r: Result<()>, errno: i32| -> Result<()> {
        match r {
            Err(e) if tolerant && e.errno_value() == Some(errno) => Ok(()),
            other => other,
        }
    };
    match change {
        Change::SetSysctl { sysctl, after, .. } => procfs::set_sysctl(t.proc_sys, sysctl, after),
        Change::AddRoute { route } => ok_if(t.nl.route_add(route), libc::EEXIST),
        Change::DeleteRoute { route } => ok_if(t.nl.route_del(route), libc::ESRCH),
        Change::ReplaceRoute { after, .. } => t.nl.route_replace(after),
        Change::AddRule { rule } => ok_if(t.nl.rule_add(rule), libc::EEXIST),
        Change::DeleteRule { rule } => ok_if(t.nl.rule_del(rule), libc::ENOENT),
        Change::FlushNeighbors { entries, .. } => {
            for n in entries {
                match t.nl.neigh_del(n) {
                    // Gone already (expired or flushed by the kernel): that is the goal.
                    Err(e) if e.errno_value() == Some(libc::ENOENT) => {}
                    other => other?,
                }
            }
            Ok(())
        }
        Change::RestoreNeighbors { entries, .. } => {
            for n in entries {
                restore_neighbor(t.nl, n)?;
            }
            Ok(())
        }
        Change::RegisterTableName { id, name, .. } => set_table_name(t.etc_root, *id, Some(name)),
        Change::UnregisterTableName { id, .. } => set_table_name(t.etc_root, *id, None),
    }
}

fn restore_neighbor(nl: &mut Netlink, n: &Neighbor) -> Result<()> {
    match nl.neigh_add(n) {
        Err(e) if e.errno_value() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}
