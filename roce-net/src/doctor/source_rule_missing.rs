//! `source-rule-missing`: no `ip rule from <nic address> lookup <table>` sends a
//! NIC's traffic to its own table, so the main table picks the egress NIC.

use super::{source_rule_for, Ctx, Finding, Subject};

/// Check id.
pub const ID: &str = "source-rule-missing";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (nic, a) in ctx.scope.addressed() {
        let rule = source_rule_for(ctx.state, a.address);
        let shadowed = match &rule {
            Some(r) if !r.shadowed_by_main => continue,
            Some(r) => Some(r.clone()),
            None => None,
        };
        let msg = match &shadowed {
            Some(r) => format!(
                "the source rule for {} (pref {}) runs after the main table's rule, so it never applies",
                a.address, r.priority
            ),
            None => format!(
                "no rule sends traffic from {} ({}) to a per-NIC table; the main table picks the egress NIC",
                a.address, nic.ifname
            ),
        };
        let f = Finding::new(
            ID,
            ctx.flux_severity_in(&nic.ifname, crate::model::Family::of(&a.address)),
            Subject::interface(&nic.ifname).with_address(a.address),
            msg,
        )
        .evidence("address", a.address)
        .evidence("prefix_len", a.prefix_len)
        .evidence("shadowed_rule", &shadowed)
        .evidence(
            "main_rule_priority",
            super::main_rule_priority(ctx.state, a.address),
        )
        .evidence(
            "shares_subnet_with",
            ctx.peers_in(&nic.ifname, crate::model::Family::of(&a.address)),
        );
        out.push(ctx.routing_fix(f, &nic.ifname, crate::model::Family::of(&a.address), None));
    }
    out
}
