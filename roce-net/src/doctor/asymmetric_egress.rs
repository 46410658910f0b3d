//! `asymmetric-egress`: traffic sourced from a NIC's address towards its own subnet
//! leaves by another NIC (computed with the offline FIB lookup).

use super::{Ctx, Finding, Severity, Subject};
use crate::fib::{self, Flow};
use crate::scope::representative_peer;

/// Check id.
pub const ID: &str = "asymmetric-egress";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (nic, a) in ctx.scope.addressed() {
        let Some(peer) = representative_peer(ctx.state, &nic.ifname, a) else {
            continue;
        };
        let Ok(d) = fib::fib_lookup(ctx.state, &Flow::to(peer).from(a.address)) else {
            continue;
        };
        if d.dev.as_deref() == Some(nic.ifname.as_str()) {
            continue;
        }
        let egress = d.dev.clone().unwrap_or_else(|| "-".into());
        // The rule whose lookup sent the traffic away, when it comes before
        // the planned rule: the fix must remove it.
        let culprit = crate::fib::rules_in_order(ctx.state, crate::model::Family::of(&a.address))
            .into_iter()
            .find(|r| Some(r.priority) == d.rule_priority && Some(r.table) == d.table);
        // Which destination the check routes to, and why: a neighbour the
        // host knows on that subnet, else an address standing for any peer on
        // it (that address need not exist; only the route to the subnet counts).
        let known = ctx
            .state
            .neighbors
            .iter()
            .any(|n| n.ip == peer && n.is_resolved());
        let to = if known {
            format!("its neighbour {peer}")
        } else {
            format!(
                "{peer} (an address of {}, standing for any peer there: no neighbour \
                 on it is known)",
                a.network()
            )
        };
        let what = match a.address {
            std::net::IpAddr::V4(_) => "RoCE replies and ARP go out the wrong NIC",
            std::net::IpAddr::V6(_) => {
                "RoCE replies, TCP bootstrap and neighbour solicitations go out the wrong NIC"
            }
        };
        let f = Finding::new(
            ID,
            Severity::Error,
            Subject::interface(&nic.ifname).with_address(a.address),
            format!(
                "traffic from {} to {to} leaves by {egress}, not {}: {what}",
                a.address, nic.ifname
            ),
        )
        .evidence("source", a.address)
        .evidence("peer", peer)
        .evidence("peer_is_neighbor", known)
        .evidence("egress", &d.dev)
        .evidence("table", d.table)
        .evidence("rule_priority", d.rule_priority)
        .evidence(
            "route",
            d.route
                .as_ref()
                .map(|r| format!("{} dev {}", r.dst, r.dev.as_deref().unwrap_or("-"))),
        );
        out.push(ctx.routing_fix(
            f,
            &nic.ifname,
            crate::model::Family::of(&a.address),
            culprit.as_ref(),
        ));
    }
    out
}
