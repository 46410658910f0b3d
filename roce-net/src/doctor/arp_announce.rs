//! `arp-announce`: a NIC in scope may announce another NIC's address as ARP source.

use super::{inet_sysctl_findings, Ctx, Finding};
use crate::model::ConfKey;

/// Check id.
pub const ID: &str = "arp-announce";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let want = (ConfKey::ArpAnnounce, 2);
    inet_sysctl_findings(ctx, ID, want, "arp.arp_announce: 2", |nic, eff| {
        (eff != 2).then(|| {
            format!(
                "{nic} uses arp_announce={eff}: its ARP requests may carry another NIC's \
                 address, teaching peers the wrong MAC (want arp_announce=2)"
            )
        })
    })
}
