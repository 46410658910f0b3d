//! What a new rendering does with the files an earlier `persist` wrote and this
//! one does not: persist never takes away what it did not render without being
//! asked (docs/persistence.md).
//!
//! - A rendering of the same routing backend removes its own files it no longer
//!   writes (a drop-in of a NIC that left the policy).
//! - A rendering that covers only part of the fix (`sysctl.d`, `rt_tables.d`)
//!   removes nothing: the routing persistence another backend wrote (its hooks,
//!   drop-ins, profiles' script, and the names it uses) stays, listed as kept.
//! - A rendering of another routing backend (ifupdown -> networkd) removes the
//!   old backend's files only when asked (`switch_backend`, `persist
//!   --switch-backend`); without it they stay, listed with how to remove them
//!   (the dry run shows the same).

use super::write::{remove_where, Decide, PersistRoot, RemoveReport};
use super::{Backend, PersistPlan};
use crate::error::Result;
use std::path::Path;

/// The routing backend a path of roce-net's belongs to; `None` for the files
/// every backend writes (sysctls, table and protocol names).
fn routing_backend_of(host: &Path) -> Option<Backend> {
    let p = host.to_string_lossy();
    if host == Path::new(super::NETWORKD_CONF_PATH)
        || (p.starts_with("/etc/systemd/network/") && p.contains(".network.d/"))
    {
        Some(Backend::Networkd)
    } else if host == Path::new(super::NETPLAN_PATH) {
        Some(Backend::Netplan)
    } else if host == Path::new(super::NM_SCRIPT_PATH) || host == Path::new(super::NM_REMOVE_PATH) {
        Some(Backend::NetworkManager)
    } else if host == Path::new(super::IFUP_HOOK_PATH) || host == Path::new(super::IFDOWN_HOOK_PATH)
    {
        Some(Backend::Ifupdown)
    } else {
        None
    }
}

/// After `plan`'s files are written under `target`: remove, or keep and list,
/// the files of roce-net's earlier persistence that `plan` does not write (see
/// the module docs). With `dry_run`, changes nothing and reports what it would
/// do.
pub fn remove_stale_persistence(
    target: &PersistRoot,
    plan: &PersistPlan,
    switch_backend: bool,
    dry_run: bool,
) -> Result<RemoveReport> {
    let rendered: Vec<&Path> = plan.files.iter().map(|f| f.path.as_path()).collect();
    let backend = plan.backend;
    let partial = matches!(backend, Backend::SysctlD | Backend::RtTablesD);
    remove_where(target, &plan.files, dry_run, &|host: &Path| {
        // The boot-time repair serves every set: only a full removal takes it.
        if rendered.contains(&host) || host == Path::new(super::BOOT_REPAIR_PATH) {
            return Decide::Skip;
        }
        match routing_backend_of(host) {
            _ if partial => Decide::Keep(format!(
                "written by {}; the {} rendering covers only part of the fix, so the rest \
                 stays (`roce-net persist --remove` removes all of roce-net's persistence)",
                if host == Path::new(super::RT_TABLES_PATH) {
                    "an earlier persist, or by apply, which names its tables there"
                } else {
                    "an earlier persist"
                },
                backend.name()
            )),
            Some(b) if b != backend && !switch_backend => Decide::Keep(format!(
                "written for the {} backend by an earlier persist: kept, so both may act at \
                 boot; `roce-net persist --backend {} --switch-backend` removes it",
                b.name(),
                backend.name()
            )),
            _ => Decide::Remove,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_belong_to_their_backend() {
        for (p, b) in [
            (super::super::IFUP_HOOK_PATH, Some(Backend::Ifupdown)),
            (super::super::IFDOWN_HOOK_PATH, Some(Backend::Ifupdown)),
            (super::super::NETPLAN_PATH, Some(Backend::Netplan)),
            (super::super::NM_REMOVE_PATH, Some(Backend::NetworkManager)),
            (super::super::NETWORKD_CONF_PATH, Some(Backend::Networkd)),
            (
                "/etc/systemd/network/20-r0.network.d/90-roce-net.conf",
                Some(Backend::Networkd),
            ),
            (super::super::SYSCTL_PATH, None),
            (super::super::RT_TABLES_PATH, None),
            (super::super::RT_PROTOS_PATH, None),
            (super::super::BOOT_REPAIR_PATH, None),
        ] {
            assert_eq!(routing_backend_of(Path::new(p)), b, "{p}");
        }
        // Every fixed path is classified on purpose: a new one must be added above.
        assert_eq!(super::super::OWNED_PATHS.len(), 10);
    }
}
