//! `rp-filter-strict`: strict reverse-path filtering drops replies that arrive on a
//! NIC other than the one the main table would use to reach the sender.

use super::{max_sysctl_fix, sysctl_evidence, Ctx, Finding, Subject};
use crate::model::{ConfKey, Family};

/// Check id.
pub const ID: &str = "rp-filter-strict";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    // IPv4 sysctls: only NICs with IPv4 to answer ARP for, or to filter.
    for nic in ctx
        .scope
        .nics
        .iter()
        .filter(|n| n.global_of(Family::Inet).next().is_some())
    {
        if ctx.state.sysctls.effective(&nic.ifname, ConfKey::RpFilter) != Some(1) {
            continue;
        }
        let f = Finding::new(
            ID,
            ctx.flux_severity_in(&nic.ifname, Family::Inet),
            Subject::interface(&nic.ifname),
            format!(
                "{} has strict rp_filter (1): packets whose reverse route leaves by another \
                 NIC are dropped (want loose, 2)",
                nic.ifname
            ),
        );
        // max(all, iface): raising the interface to 2 is enough.
        let f = sysctl_evidence(f, ctx.state, &nic.ifname, ConfKey::RpFilter)
            .evidence(
                "shares_subnet_with",
                ctx.peers_in(&nic.ifname, Family::Inet),
            )
            .fix(
                max_sysctl_fix(ctx.state, &nic.ifname, ConfKey::RpFilter, 2),
                Some("rp_filter: loose"),
            );
        out.push(f);
    }
    out
}
