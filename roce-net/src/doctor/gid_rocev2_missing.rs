//! `gid-rocev2-missing`: a RoCE port's netdev has an IPv4 address but the port's GID
//! table has no RoCE v2 entry for it, so RoCE v2 (what NCCL uses) cannot use it.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{shell_word, PortRef};
use crate::scope::port_netdev;
use std::net::IpAddr;

/// Check id.
pub const ID: &str = "gid-rocev2-missing";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &ctx.state.rdma {
        for p in &d.ports {
            if !p.is_roce() {
                continue;
            }
            let Some(nd) = port_netdev(d, p) else {
                continue;
            };
            for a in crate::scope::global_ipv4(ctx.state, &nd) {
                let IpAddr::V4(v4) = a.address else { continue };
                let v2 = p.gids.iter().any(|g| {
                    g.ipv4 == Some(v4) && g.gid_type == Some(crate::model::GidType::RoceV2)
                });
                if v2 {
                    continue;
                }
                let present: Vec<String> = p
                    .gids
                    .iter()
                    .map(|g| {
                        format!(
                            "{} {} {}",
                            g.index,
                            g.gid_type.as_ref().map(|t| t.short()).unwrap_or("?"),
                            g.gid
                        )
                    })
                    .collect();
                out.push(
                    Finding::new(
                        ID,
                        Severity::Error,
                        Subject::interface(&nd)
                            .with_port(&d.name, p.port)
                            .with_address(v4),
                        format!(
                            "{} has no RoCE v2 GID for {v4} on {nd}: RoCE v2 connections from this address fail",
                        PortRef::of(d, p)
                        ),
                    )
                    .evidence("gids", present)
                    .evidence("port_state", &p.state)
                    .fix(vec![a.ip_command(crate::model::IpVerb::Replace)], None)
                    .checks(vec![format!(
                        "cat /sys/class/infiniband/{}/ports/{}/gid_attrs/types/*",
                        shell_word(&d.name),
                        p.port
                    )]),
                );
            }
        }
    }
    out
}
