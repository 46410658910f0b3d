//! `arp-ignore`: a NIC in scope answers ARP requests for addresses it does not own.

use super::{max_sysctl_fix, sysctl_evidence, Ctx, Finding, Subject};
use crate::model::{ConfKey, Family};

/// Check id.
pub const ID: &str = "arp-ignore";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    // IPv4 sysctls: only NICs with IPv4 to answer ARP for, or to filter.
    for nic in ctx
        .scope
        .nics
        .iter()
        .filter(|n| n.global_of(Family::Inet).next().is_some())
    {
        let Some(eff) = ctx.state.sysctls.effective(&nic.ifname, ConfKey::ArpIgnore) else {
            continue;
        };
        if eff == 1 || eff == 2 {
            continue;
        }
        let why = if eff == 0 {
            "answers ARP for every local address (ARP flux)".to_string()
        } else {
            format!("uses arp_ignore={eff}, which does not answer ARP for its own addresses the usual way")
        };
        let f = Finding::new(
            ID,
            ctx.flux_severity_in(&nic.ifname, Family::Inet),
            Subject::interface(&nic.ifname),
            format!(
                "{} {why}; peers can learn another NIC's MAC for its address (want arp_ignore=1)",
                nic.ifname
            ),
        );
        let f = sysctl_evidence(f, ctx.state, &nic.ifname, ConfKey::ArpIgnore)
            .evidence(
                "shares_subnet_with",
                ctx.peers_in(&nic.ifname, Family::Inet),
            )
            .fix(
                max_sysctl_fix(ctx.state, &nic.ifname, ConfKey::ArpIgnore, 1),
                Some("arp.arp_ignore: 1"),
            );
        out.push(f);
    }
    out
}
