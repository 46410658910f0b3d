//! Which neighbour entries are "polluted" and get flushed.

use crate::model::{HostState, HwAddr, NeighState, Neighbor, Scope};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Why a neighbour entry counts as polluted. Reasons are checked in this order and
/// the first that applies is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollutionReason {
    /// The entry is `FAILED`: resolution gave up; it blocks the next attempt.
    Failed,
    /// The entry is `INCOMPLETE`: resolution never finished.
    Incomplete,
    /// The learned MAC is one of this host's own interfaces' MACs.
    LocalMac,
    /// (IPv4) The same neighbour IP resolves to different MACs on different managed
    /// NICs: at least one learned a wrong MAC through ARP flux.
    IpConflict,
    /// (IPv4) One MAC answers for several IPs inside the managed NICs' subnets: the
    /// peer's NIC answered ARP for its other NICs' addresses (ARP flux).
    MacConflict,
    /// (IPv4) The neighbour's IP is outside every subnet of the interface that holds
    /// the entry and is not a gateway of any route through that interface: it was
    /// learned on the wrong rail.
    OffSubnet,
}

/// A neighbour entry picked for flushing, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollutedNeighbor {
    /// The entry.
    pub neighbor: Neighbor,
    /// Why it is polluted.
    pub reason: PollutionReason,
}

/// True for entries roce-net never flushes: PERMANENT (static, configured by an
/// administrator) and NOARP ones.
pub fn is_static(n: &Neighbor) -> bool {
    n.state
        .iter()
        .any(|s| matches!(s, NeighState::Permanent | NeighState::Noarp))
}

/// The polluted dynamic neighbour entries on the given interfaces, in snapshot
/// order. See [`PollutionReason`] for the rules.
pub fn polluted_neighbors(host: &HostState, nics: &[String]) -> Vec<PollutedNeighbor> {
    let in_scope: Vec<&Neighbor> = host
        .neighbors
        .iter()
        .filter(|n| nics.contains(&n.ifname) && !is_static(n))
        .collect();
    let local_macs: BTreeSet<&HwAddr> = host
        .interfaces
        .iter()
        .filter_map(|i| i.mac.as_ref())
        .filter(|m| !m.is_zero() && !m.as_bytes().is_empty())
        .collect();
    let subnets_of = |ifname: &str| -> Vec<ipnet::IpNet> {
        host.addresses_of(ifname)
            .filter(|a| a.address.is_ipv4() && a.scope != Scope::Host)
            .map(|a| a.network())
            .collect()
    };
    let all_subnets: Vec<ipnet::IpNet> = nics.iter().flat_map(|n| subnets_of(n)).collect();
    let is_gateway_on = |ip: &IpAddr, dev: &str| {
        host.routes.iter().any(|r| {
            (r.gateway.as_ref() == Some(ip) && r.dev.as_deref() == Some(dev))
                || r.multipath
                    .iter()
                    .any(|h| h.gateway.as_ref() == Some(ip) && h.dev.as_deref() == Some(dev))
        })
    };

    // IPv4, resolved entries only take part in the conflict rules.
    let resolved_v4: Vec<&&Neighbor> = in_scope
        .iter()
        .filter(|n| n.ip.is_ipv4() && n.is_resolved())
        .collect();
    let mut macs_by_ip: BTreeMap<IpAddr, BTreeSet<&HwAddr>> = BTreeMap::new();
    let mut ips_by_mac: BTreeMap<&HwAddr, BTreeSet<IpAddr>> = BTreeMap::new();
    for n in &resolved_v4 {
        if let Some(m) = &n.mac {
            macs_by_ip.entry(n.ip).or_default().insert(m);
            if all_subnets.iter().any(|s| s.contains(&n.ip)) {
                ips_by_mac.entry(m).or_default().insert(n.ip);
            }
        }
    }

    let mut out = Vec::new();
    for n in in_scope {
        let has = |s: NeighState| n.state.contains(&s);
        let v4_resolved = n.ip.is_ipv4() && n.is_resolved();
        let reason = if has(NeighState::Failed) {
            Some(PollutionReason::Failed)
        } else if has(NeighState::Incomplete) {
            Some(PollutionReason::Incomplete)
        } else if n.mac.as_ref().is_some_and(|m| local_macs.contains(m)) {
            Some(PollutionReason::LocalMac)
        } else if v4_resolved && macs_by_ip.get(&n.ip).is_some_and(|s| s.len() > 1) {
            Some(PollutionReason::IpConflict)
        } else if v4_resolved
            && n.mac
                .as_ref()
                .and_then(|m| ips_by_mac.get(m))
                .is_some_and(|s| s.len() > 1)
        {
            Some(PollutionReason::MacConflict)
        } else if n.ip.is_ipv4()
            && !subnets_of(&n.ifname).iter().any(|s| s.contains(&n.ip))
            && !is_gateway_on(&n.ip, &n.ifname)
        {
            Some(PollutionReason::OffSubnet)
        } else {
            None
        };
        if let Some(reason) = reason {
            out.push(PollutedNeighbor {
                neighbor: n.clone(),
                reason,
            });
        }
    }
    out
}
