//! `multiple-default-routes`: the main table holds several default routes with the
//! same (lowest) metric, so the kernel's choice is not obvious.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{Family, RT_TABLE_MAIN};

/// Check id.
pub const ID: &str = "multiple-default-routes";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for fam in [Family::Inet, Family::Inet6] {
        let defaults: Vec<_> = ctx
            .state
            .routes
            .iter()
            .filter(|r| r.family == fam && r.table == RT_TABLE_MAIN && r.dst.prefix_len() == 0)
            .filter(|r| r.kind == crate::model::RouteType::Unicast)
            .collect();
        let Some(min) = defaults.iter().map(|r| r.metric.unwrap_or(0)).min() else {
            continue;
        };
        let best: Vec<_> = defaults
            .iter()
            .filter(|r| r.metric.unwrap_or(0) == min)
            .collect();
        if best.len() < 2 {
            continue;
        }
        let desc: Vec<String> = best
            .iter()
            .map(|r| {
                format!(
                    "default via {} dev {} metric {min}",
                    r.gateway.map(|g| g.to_string()).unwrap_or("-".into()),
                    r.dev.as_deref().unwrap_or("-")
                )
            })
            .collect();
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                Subject::default(),
                format!(
                    "{} {} default routes share metric {min} in the main table",
                    best.len(),
                    if fam == Family::Inet { "IPv4" } else { "IPv6" }
                ),
            )
            .evidence("routes", &desc)
            .fix(
                best.iter()
                    .skip(1)
                    .map(|r| r.ip_command(crate::model::IpVerb::Delete))
                    .collect(),
                None,
            ),
        );
    }
    out
}
