//! `arp-announce`: a NIC in scope may announce another NIC's address as ARP source.

use super::{max_sysctl_fix, sysctl_evidence, Ctx, Finding, Subject};
use crate::model::{ConfKey, Family};

/// Check id.
pub const ID: &str = "arp-announce";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    // IPv4 sysctls: only NICs with IPv4 to answer ARP for, or to filter.
    for nic in ctx
        .scope
        .nics
        .iter()
        .filter(|n| n.global_of(Family::Inet).next().is_some())
    {
        let Some(eff) = ctx
            .state
            .sysctls
            .effective(&nic.ifname, ConfKey::ArpAnnounce)
        else {
            continue;
        };
        if eff == 2 {
            continue;
        }
        let f = Finding::new(
            ID,
            ctx.flux_severity_in(&nic.ifname, Family::Inet),
            Subject::interface(&nic.ifname),
            format!(
                "{} uses arp_announce={eff}: its ARP requests may carry another NIC's address, \
                 teaching peers the wrong MAC (want arp_announce=2)",
                nic.ifname
            ),
        );
        let f = sysctl_evidence(f, ctx.state, &nic.ifname, ConfKey::ArpAnnounce)
            .evidence(
                "shares_subnet_with",
                ctx.peers_in(&nic.ifname, Family::Inet),
            )
            .fix(
                max_sysctl_fix(ctx.state, &nic.ifname, ConfKey::ArpAnnounce, 2),
                Some("arp.arp_announce: 2"),
            );
        out.push(f);
    }
    out
}
