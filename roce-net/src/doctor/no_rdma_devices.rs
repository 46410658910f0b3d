//! `no-rdma-devices`: the snapshot has no RDMA devices (a lab, a VM, or missing
//! drivers); NIC selection falls back to interfaces sharing a subnet: an IPv4
//! subnet or an IPv6 prefix, and the message names the one(s) the host has.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::Family;

/// Check id.
pub const ID: &str = "no-rdma-devices";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    if !ctx.state.rdma.is_empty() {
        return Vec::new();
    }
    let shares = |f: Family| {
        ctx.scope
            .nics
            .iter()
            .any(|n| ctx.peers_in(&n.ifname, f).is_some_and(|p| !p.is_empty()))
    };
    let what = match (shares(Family::Inet), shares(Family::Inet6)) {
        (true, false) => "an IPv4 subnet",
        (false, true) => "an IPv6 prefix",
        _ => "an IPv4 subnet or an IPv6 prefix",
    };
    vec![Finding::new(
        ID,
        Severity::Info,
        Subject::default(),
        format!(
            "no RDMA devices found; checking {} interface(s) that share {what} instead",
            ctx.scope.nics.len()
        ),
    )
    .evidence("nics_in_scope", ctx.scope.names())
    .checks(vec![
        "rdma link show".to_string(),
        "ls /sys/class/infiniband".to_string(),
    ])]
}
