//! `verbs-sysfs-mismatch`: libibverbs (what NCCL, perftest and every RDMA
//! application use) does not see the RDMA devices, ports or GID tables sysfs
//! shows. Only checked when the snapshot carries the verbs view
//! (`roce-net snapshot --verbs`, `roce-net doctor --verbs`).

use super::{Ctx, Finding, Severity, Subject};
use crate::model::shell_word;
use crate::model::{GidType, NoRdmaReason, PortRef, RdmaPort, VerbsPort};

/// Check id.
pub const ID: &str = "verbs-sysfs-mismatch";

fn t(g: &Option<GidType>) -> String {
    g.as_ref()
        .map(|t| t.short().to_string())
        .unwrap_or_else(|| "?".into())
}

/// Differences between one port's two views, as lines.
fn port_diff(s: &RdmaPort, v: &VerbsPort) -> Vec<String> {
    let mut d = Vec::new();
    if s.state.as_ref() != Some(&v.state) {
        d.push(format!(
            "state: sysfs {}, verbs {}",
            s.state.as_deref().unwrap_or("?"),
            v.state
        ));
    }
    if let (Some(a), Some(b)) = (s.active_mtu, v.active_mtu) {
        if a != b {
            d.push(format!(
                "active MTU: {a} from the netdev MTU, verbs reports {b}"
            ));
        }
    }
    let idx: std::collections::BTreeSet<u32> = s
        .gids
        .iter()
        .map(|g| g.index)
        .chain(v.gids.iter().map(|g| g.index))
        .collect();
    for i in idx {
        let a = s.gids.iter().find(|g| g.index == i);
        let b = v.gids.iter().find(|g| g.index == i);
        match (a, b) {
            (Some(a), Some(b)) => {
                let type_differs =
                    a.gid_type.is_some() && b.gid_type.is_some() && a.gid_type != b.gid_type;
                if a.gid != b.gid || type_differs {
                    d.push(format!(
                        "GID {i}: sysfs {} {}, verbs {} {}",
                        a.gid,
                        t(&a.gid_type),
                        b.gid,
                        t(&b.gid_type)
                    ));
                }
            }
            (Some(a), None) => d.push(format!(
                "GID {i}: sysfs {} {}, verbs has none",
                a.gid,
                t(&a.gid_type)
            )),
            (None, Some(b)) => d.push(format!(
                "GID {i}: verbs {} {}, sysfs has none",
                b.gid,
                t(&b.gid_type)
            )),
            (None, None) => {}
        }
    }
    d
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let Some(v) = &ctx.state.verbs else {
        return Vec::new();
    };
    let sys = &ctx.state.rdma;
    let mut out = Vec::new();
    let names: Vec<String> = sys.iter().map(|d| d.name.clone()).collect();
    if let Some(n) = &v.unavailable {
        if !sys.is_empty() && n.reason != NoRdmaReason::NotBuilt {
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    Subject::default(),
                    format!(
                        "sysfs shows {} RDMA device(s) but libibverbs cannot use them ({}): RDMA \
                         applications (NCCL, perftest) see no RDMA here; {}",
                        sys.len(),
                        n.reason,
                        n.detail
                    ),
                )
                .evidence("sysfs_devices", &names)
                .evidence("reason", n.reason)
                .evidence("library", &v.library)
                .checks(vec![
                    "ibv_devinfo".to_string(),
                    "ls -l /dev/infiniband".to_string(),
                    "dpkg -l ibverbs-providers || rpm -q libibverbs".to_string(),
                ]),
            );
        }
        return out;
    }
    for d in sys {
        let Some(vd) = v.devices.iter().find(|x| x.name == d.name) else {
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    Subject {
                        device: Some(d.name.clone()),
                        ..Default::default()
                    },
                    format!(
                        "{} is in sysfs but libibverbs does not list it: its user-space provider \
                         is missing or the device was renamed",
                        d.name
                    ),
                )
                .evidence(
                    "verbs_devices",
                    v.devices.iter().map(|x| x.name.clone()).collect::<Vec<_>>(),
                )
                .checks(vec!["ibv_devices".to_string(), "rdma dev show".to_string()]),
            );
            continue;
        };
        if let Some(e) = &vd.error {
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    Subject {
                        device: Some(d.name.clone()),
                        ..Default::default()
                    },
                    format!("libibverbs lists {} but cannot read it: {e}", d.name),
                )
                .evidence("error", e)
                .checks(vec![
                    format!("ibv_devinfo -d {}", shell_word(&d.name)),
                    "ls -l /dev/infiniband".to_string(),
                ]),
            );
            continue;
        }
        for p in &d.ports {
            let diff = match vd.ports.iter().find(|x| x.port == p.port) {
                Some(vp) => port_diff(p, vp),
                None => vec!["port missing from the verbs view".to_string()],
            };
            if diff.is_empty() {
                continue;
            }
            let mut subject = Subject::default().with_port(&d.name, p.port);
            subject.interface = p.netdev.clone();
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    subject,
                    format!(
                        "{} differs between sysfs and libibverbs: {}",
                        PortRef::of(d, p),
                        diff.join("; ")
                    ),
                )
                .evidence("differences", &diff)
                .evidence("gid_query", v.gid_query)
                .checks(vec![
                    format!("roce-net gids {}", shell_word(&d.name)),
                    format!("ibv_devinfo -v -d {} -i {}", shell_word(&d.name), p.port),
                ]),
            );
        }
    }
    for vd in &v.devices {
        if !sys.iter().any(|d| d.name == vd.name) {
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    Subject {
                        device: Some(vd.name.clone()),
                        ..Default::default()
                    },
                    format!(
                        "libibverbs lists {} but sysfs does not show it (a container whose /sys \
                         belongs to another namespace?)",
                        vd.name
                    ),
                )
                .evidence("sysfs_devices", &names)
                .checks(vec!["ls /sys/class/infiniband".to_string()]),
            );
        }
    }
    out
}
