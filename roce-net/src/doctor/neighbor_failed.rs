//! `neighbor-failed`: FAILED neighbour entries on the NICs in scope (peers that did
//! not answer ARP on that NIC).

use super::{Ctx, Finding, Severity, Subject};
use crate::model::ifname_word;
use crate::model::NeighState;

/// Check id.
pub const ID: &str = "neighbor-failed";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for nic in &ctx.scope.nics {
        let mut failed: Vec<_> = ctx
            .state
            .neighbors
            .iter()
            .filter(|n| n.ifname == nic.ifname && n.state.contains(&NeighState::Failed))
            .map(|n| n.ip)
            .collect();
        if failed.is_empty() {
            continue;
        }
        failed.sort();
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::interface(&nic.ifname),
                format!(
                    "{} peer(s) did not answer ARP/ND on {}: {}",
                    failed.len(),
                    nic.ifname,
                    failed
                        .iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .evidence("failed", &failed)
            .fix(
                vec![format!(
                    "ip neigh flush dev {} nud failed",
                    ifname_word(&nic.ifname)
                )],
                Some("neighbors.flush: polluted"),
            ),
        );
    }
    out
}
