//! `neighbor-conflict`: neighbour entries on the NICs in scope that cannot all be
//! right: one IP resolved to different MACs on different NICs, one MAC learned for
//! different IPs on different NICs (a peer's address resolved to the MAC of another
//! rail; gateways and routers are exempt, as routed fabrics often share one anycast
//! gateway MAC), or a peer resolved to the MAC of one of this host's own NICs.

use super::{Ctx, Finding, Severity, Subject};
use crate::model::Neighbor;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Check id.
pub const ID: &str = "neighbor-conflict";

fn del(n: &Neighbor) -> String {
    n.ip_command(crate::model::IpVerb::Delete)
}

fn entries(ns: &[&Neighbor]) -> Vec<String> {
    ns.iter()
        .map(|n| {
            format!(
                "{} dev {} lladdr {}",
                n.ip,
                n.ifname,
                n.mac.as_ref().map(|m| m.to_string()).unwrap_or_default()
            )
        })
        .collect()
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let policy = Some("neighbors.flush: polluted");
    let ns: Vec<&Neighbor> = ctx
        .state
        .neighbors
        .iter()
        .filter(|n| n.is_resolved() && n.ip.is_ipv4() && ctx.scope.get(&n.ifname).is_some())
        .collect();
    let local_macs: BTreeMap<String, String> = ctx
        .state
        .interfaces
        .iter()
        .filter_map(|i| {
            let m = i.mac.as_ref()?;
            (!m.is_zero()).then(|| (m.to_string(), i.name.clone()))
        })
        .collect();

    // 1. One IP, several MACs across NICs.
    let mut by_ip: BTreeMap<IpAddr, Vec<&Neighbor>> = BTreeMap::new();
    for n in &ns {
        by_ip.entry(n.ip).or_default().push(n);
    }
    for (ip, v) in &by_ip {
        let macs: BTreeSet<String> = v
            .iter()
            .filter_map(|n| n.mac.as_ref().map(|m| m.to_string()))
            .collect();
        if macs.len() < 2 {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                Subject::default().with_address(ip),
                format!(
                    "{ip} is resolved to {} different MACs on different NICs",
                    macs.len()
                ),
            )
            .evidence("kind", "ip-multiple-macs")
            .evidence("macs", &macs)
            .evidence("entries", entries(v))
            .fix(v.iter().map(|n| del(n)).collect(), policy),
        );
    }

    // 2. One MAC, several IPs, on more than one NIC. Gateways are left out: routed
    // fabrics often give every rail's gateway the same (anycast) MAC.
    let gateways: BTreeSet<IpAddr> = ctx
        .state
        .routes
        .iter()
        .flat_map(|r| {
            r.gateway
                .into_iter()
                .chain(r.multipath.iter().filter_map(|h| h.gateway))
        })
        .collect();
    let mut by_mac: BTreeMap<String, Vec<&Neighbor>> = BTreeMap::new();
    for n in ns.iter().filter(|n| !n.router && !gateways.contains(&n.ip)) {
        if let Some(m) = &n.mac {
            by_mac.entry(m.to_string()).or_default().push(n);
        }
    }
    for (mac, v) in &by_mac {
        let ips: BTreeSet<IpAddr> = v.iter().map(|n| n.ip).collect();
        let devs: BTreeSet<&str> = v.iter().map(|n| n.ifname.as_str()).collect();
        if ips.len() < 2 || devs.len() < 2 || local_macs.contains_key(mac) {
            continue;
        }
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                Subject {
                    mac: Some(mac.clone()),
                    ..Default::default()
                },
                format!(
                    "MAC {mac} is learned for {} different addresses on {} NICs: \
                     a peer answered ARP for an address of another rail",
                    ips.len(),
                    devs.len()
                ),
            )
            .evidence("kind", "mac-multiple-ips")
            .evidence("addresses", &ips)
            .evidence("interfaces", &devs)
            .evidence("entries", entries(v))
            .fix(v.iter().map(|n| del(n)).collect(), policy),
        );
    }

    // 3. A peer resolved to one of this host's own MACs.
    for n in &ns {
        let Some(m) = &n.mac else { continue };
        let Some(owner) = local_macs.get(&m.to_string()) else {
            continue;
        };
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                Subject::interface(&n.ifname).with_address(n.ip),
                format!(
                    "{} on {} is resolved to {m}, the MAC of local interface {owner}",
                    n.ip, n.ifname
                ),
            )
            .evidence("kind", "local-mac")
            .evidence("mac", m.to_string())
            .evidence("local_interface", owner)
            .fix(vec![del(n)], policy),
        );
    }
    out
}
