//! `no-rdma-devices`: the snapshot has no RDMA devices (a lab, a VM, or missing
//! drivers); NIC selection falls back to interfaces sharing a subnet.

use super::{Ctx, Finding, Severity, Subject};

/// Check id.
pub const ID: &str = "no-rdma-devices";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    if !ctx.state.rdma.is_empty() {
        return Vec::new();
    }
    vec![Finding::new(
        ID,
        Severity::Info,
        Subject::default(),
        format!(
            "no RDMA devices found; checking {} interface(s) that share an IPv4 subnet instead",
            ctx.scope.nics.len()
        ),
    )
    .evidence("nics_in_scope", ctx.scope.names())
    .checks(vec![
        "rdma link show".to_string(),
        "ls /sys/class/infiniband".to_string(),
    ])]
}
