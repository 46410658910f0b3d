//! `source-table-incomplete`: a NIC address has a source rule, but its table lacks
//! the subnet route through that NIC with `src` = the address (or is empty).

use super::{source_rule_for, Ctx, Finding, Severity, Subject};
use crate::model::{Family, RouteType, Scope};
use std::net::IpAddr;

/// Check id.
pub const ID: &str = "source-table-incomplete";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (nic, a) in ctx.scope.addressed() {
        let Some(rule) = source_rule_for(ctx.state, a.address) else {
            continue;
        };
        if rule.shadowed_by_main {
            continue;
        }
        let routes: Vec<_> = ctx
            .state
            .routes
            .iter()
            .filter(|r| r.table == rule.table && r.family == Family::of(&a.address))
            .collect();
        // Without a `src`, an IPv4 route's source is the one the kernel selects
        // on the NIC; an IPv6 route needs none (the rule already pins the
        // source, and roce-net's own IPv6 routes carry none).
        let selected = || match a.address {
            IpAddr::V4(v4) => {
                crate::fib::inet_select_addr(ctx.state, &nic.ifname, None, Scope::Link) == Some(v4)
            }
            IpAddr::V6(_) => true,
        };
        let good = routes.iter().any(|r| {
            r.dst == a.network()
                && r.kind == RouteType::Unicast
                && r.dev.as_deref() == Some(nic.ifname.as_str())
                && r.gateway.is_none()
                && match r.prefsrc {
                    Some(p) => p == a.address,
                    None => selected(),
                }
        });
        if good {
            continue;
        }
        let subnet: Vec<String> = routes
            .iter()
            .filter(|r| r.dst == a.network())
            .map(|r| {
                format!(
                    "{} dev {} src {}",
                    r.dst,
                    r.dev.as_deref().unwrap_or("-"),
                    r.prefsrc.map(|p| p.to_string()).unwrap_or("-".into())
                )
            })
            .collect();
        let (msg, sev) = if routes.is_empty() {
            (
                    format!(
                        "table {} used by the rule from {} (pref {}) is empty: traffic falls through to main",
                        rule.table, a.address, rule.priority
                    ),
                    Severity::Error,
                )
        } else {
            (
                match a.address {
                    IpAddr::V4(_) => format!(
                        "table {} lacks the route {} dev {} src {}",
                        rule.table,
                        a.network(),
                        nic.ifname,
                        a.address
                    ),
                    IpAddr::V6(_) => format!(
                        "table {} lacks the route {} dev {} (for {})",
                        rule.table,
                        a.network(),
                        nic.ifname,
                        a.address
                    ),
                },
                ctx.flux_severity_in(&nic.ifname, crate::model::Family::of(&a.address)),
            )
        };
        let f = Finding::new(
            ID,
            sev,
            Subject::interface(&nic.ifname).with_address(a.address),
            msg,
        )
        .evidence("table", rule.table)
        .evidence("rule_priority", rule.priority)
        .evidence("table_routes", routes.len())
        .evidence("subnet_routes", subnet);
        // A rule into another table than the planned one, ahead of the
        // planned rule, keeps steering the traffic: the fix removes it.
        let culprit = super::first_source_rule(ctx.state, a.address);
        out.push(ctx.routing_fix(f, &nic.ifname, Family::of(&a.address), culprit.as_ref()));
    }
    out
}
