//! `arp-ignore`: a NIC in scope answers ARP requests for addresses it does not own.

use super::{inet_sysctl_findings, Ctx, Finding};
use crate::model::ConfKey;

/// Check id.
pub const ID: &str = "arp-ignore";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let want = (ConfKey::ArpIgnore, 1);
    inet_sysctl_findings(ctx, ID, want, "arp.arp_ignore: 1", |nic, eff| {
        let why = match eff {
            1 | 2 => return None,
            0 => "answers ARP for every local address (ARP flux)".to_string(),
            _ => format!(
                "uses arp_ignore={eff}, which does not answer ARP for its own addresses the usual way"
            ),
        };
        Some(format!(
            "{nic} {why}; peers can learn another NIC's MAC for its address (want arp_ignore=1)"
        ))
    })
}
