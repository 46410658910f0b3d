//! `port-down`: an RDMA port is not ACTIVE/LinkUp.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{ifname_word, shell_word, PortRef};
use crate::scope::port_netdev;

/// Check id.
pub const ID: &str = "port-down";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &ctx.state.rdma {
        for p in &d.ports {
            if p.is_active() {
                continue;
            }
            let nd = port_netdev(d, p);
            let iface = nd.as_deref().and_then(|n| ctx.state.interface(n));
            let admin_up = iface.map(|i| i.admin_up);
            // Somebody configured the netdev up: a down port there is an outage.
            let sev = if admin_up == Some(true) {
                Severity::Error
            } else {
                Severity::Warning
            };
            let mut subject = Subject::default().with_port(&d.name, p.port);
            subject.interface = nd.clone();
            let mut cmds = Vec::new();
            let mut checks = Vec::new();
            if let Some(n) = &nd {
                if admin_up == Some(false) {
                    cmds.push(format!("ip link set dev {} up", ifname_word(n)));
                }
                checks.push(format!("ethtool {}", ifname_word(n)));
            }
            checks.push(format!("rdma link show {}/{}", shell_word(&d.name), p.port));
            out.push(
                Finding::new(
                    ID,
                    sev,
                    subject,
                    format!(
                        "{} is {} / {}{}",
                        PortRef::of(d, p),
                        p.state.as_deref().unwrap_or("unknown"),
                        p.phys_state.as_deref().unwrap_or("unknown"),
                        match (&nd, admin_up) {
                            (Some(n), Some(false)) =>
                                format!(" (netdev {n} is administratively down)"),
                            (Some(n), _) => format!(" (netdev {n})"),
                            _ => String::new(),
                        }
                    ),
                )
                .evidence("state", &p.state)
                .evidence("phys_state", &p.phys_state)
                .evidence("netdev", &nd)
                .evidence("netdev_admin_up", admin_up)
                .evidence("netdev_carrier", iface.and_then(|i| i.carrier))
                .fix(cmds, None)
                .checks(checks),
            );
        }
    }
    out
}
