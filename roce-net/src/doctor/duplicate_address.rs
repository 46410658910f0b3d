//! `duplicate-address`: one IP address configured on more than one local interface.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::Scope;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Check id.
pub const ID: &str = "duplicate-address";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut by_ip: BTreeMap<IpAddr, Vec<&crate::model::Address>> = BTreeMap::new();
    for a in &ctx.state.addresses {
        if a.ifname == "lo" || a.scope != Scope::Universe {
            continue;
        }
        by_ip.entry(a.address).or_default().push(a);
    }
    let mut out = Vec::new();
    for (ip, v) in by_ip {
        let mut devs: Vec<&str> = v.iter().map(|a| a.ifname.as_str()).collect();
        devs.dedup();
        if devs.len() < 2 {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                Subject::default().with_address(ip),
                format!(
                    "{ip} is configured on {} interfaces: {}",
                    devs.len(),
                    devs.join(", ")
                ),
            )
            .evidence("interfaces", &devs)
            .fix(
                v.iter()
                    .skip(1)
                    .map(|a| a.ip_command(crate::model::IpVerb::Delete))
                    .collect(),
                None,
            ),
        );
    }
    out
}
