//! Per-subnet comparisons: every IPv4 subnet the NICs in scope sit in is one L2
//! segment (one rail, or the one subnet all rails share), compared across the
//! hosts that have it.
//!
//! - `fleet-subnet-nic-count-differs`: a host serves a subnet with more or fewer
//!   NICs than the other hosts that serve it (a rail missing or cabled into the
//!   wrong subnet: NCCL builds fewer rings there, or crosses rails), said from
//!   its side as [`super::nic_count`] says it for the whole host.
//! - `fleet-subnet-mtu-differs`: a NIC's MTU differs from the MTU most NICs on
//!   its subnet have (RDMA path MTU falls to the smaller one and large frames are
//!   dropped on the mismatched link), named per NIC with every MTU on the segment.
//!
//! Neither claims a majority where there is none ([`super::consensus`]): on a
//! tie every host (NIC) is named and no MTU is proposed.

use super::consensus::{count_evidence, side, Consensus};
use crate::doctor::{Finding, Severity, Subject};
use crate::model::HostState;
use ipnet::IpNet;
use std::collections::BTreeMap;

/// Check id: NIC count per subnet.
pub const NIC_COUNT_ID: &str = "fleet-subnet-nic-count-differs";
/// Check id: MTU per subnet.
pub const MTU_ID: &str = "fleet-subnet-mtu-differs";

/// One NIC in scope on a subnet.
struct SegmentNic<'a> {
    host: usize,
    ifname: &'a str,
    mtu: u32,
}

fn segments(states: &[HostState]) -> BTreeMap<IpNet, Vec<SegmentNic<'_>>> {
    let mut by_subnet: BTreeMap<IpNet, Vec<SegmentNic<'_>>> = BTreeMap::new();
    for (h, s) in states.iter().enumerate() {
        let scope = crate::scope::nic_scope(s);
        for n in &scope.nics {
            let Some(i) = s.interface(&n.ifname) else {
                continue;
            };
            let mut nets: Vec<IpNet> = n.global.iter().map(|a| a.network()).collect();
            nets.sort();
            nets.dedup();
            for net in nets {
                by_subnet.entry(net).or_default().push(SegmentNic {
                    host: h,
                    ifname: &i.name,
                    mtu: i.mtu,
                });
            }
        }
    }
    // A dual-stack rail is one segment under two prefixes (its IPv4 subnet and
    // its IPv6 prefix hold the same NICs): checked once, under the first
    // (IPv4 sorts first).
    let mut seen: Vec<Vec<(usize, &str)>> = Vec::new();
    by_subnet.retain(|_, nics| {
        let mut members: Vec<(usize, &str)> = nics.iter().map(|n| (n.host, n.ifname)).collect();
        members.sort();
        if seen.contains(&members) {
            return false;
        }
        seen.push(members);
        true
    });
    by_subnet
}

/// Both per-subnet checks.
pub fn check(states: &[HostState], labels: &[String], out: &mut Vec<Finding>) {
    for (net, nics) in segments(states) {
        nic_counts(&net, &nics, states, labels, out);
        mtus(&net, &nics, states, labels, out);
    }
}

fn nic_counts(
    net: &IpNet,
    nics: &[SegmentNic<'_>],
    states: &[HostState],
    labels: &[String],
    out: &mut Vec<Finding>,
) {
    let mut per_host: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for n in nics {
        per_host.entry(n.host).or_default().push(n.ifname);
    }
    if per_host.len() < 2 {
        return;
    }
    let all: BTreeMap<&str, usize> = per_host
        .iter()
        .map(|(h, v)| (labels[*h].as_str(), v.len()))
        .collect();
    let Some(agreed) = Consensus::of(all.values()) else {
        return;
    };
    if !agreed.disagrees() {
        return;
    }
    let says = agreed.says(&format!("hosts serving {net}"), &all, |v| v.to_string());
    // Bounded for a segment of any size (see `fleet::bounded`).
    let (sample, counts) = super::bounded(&all, agreed.common().unwrap_or(&usize::MAX));
    for (h, names) in &per_host {
        if agreed.is_common(&names.len()) {
            continue;
        }
        let host = &labels[*h];
        let mut f = Finding::new(
            NIC_COUNT_ID,
            Severity::Warning,
            Subject {
                host: Some(host.clone()),
                address: Some(net.to_string()),
                ..Default::default()
            },
            format!(
                "{host}: {} NIC(s) in {net} ({}); {says}: {}",
                names.len(),
                names.join(", "),
                super::nic_count::meaning(
                    side(names.len(), &agreed),
                    names.len(),
                    &format!(" in {net}")
                )
            ),
        )
        .evidence("subnet", net.to_string())
        .evidence("nics", names)
        .evidence("value", names.len())
        .evidence("hosts", &sample)
        .evidence("counts", &counts);
        for (key, v) in count_evidence(&agreed) {
            f = f.evidence(key, v);
        }
        out.push(f.checks(vec![
            super::on_state(&states[*h], "ip -br -4 addr"),
            super::on_state(&states[*h], "rdma link show"),
        ]));
    }
}

fn mtus(
    net: &IpNet,
    nics: &[SegmentNic<'_>],
    states: &[HostState],
    labels: &[String],
    out: &mut Vec<Finding>,
) {
    let hosts: std::collections::BTreeSet<usize> = nics.iter().map(|n| n.host).collect();
    if hosts.len() < 2 {
        return;
    }
    let all: BTreeMap<String, u32> = nics
        .iter()
        .map(|n| (format!("{}/{}", labels[n.host], n.ifname), n.mtu))
        .collect();
    let Some(agreed) = Consensus::of(all.values()) else {
        return;
    };
    if !agreed.disagrees() {
        return;
    }
    let says = agreed.says(&format!("NICs on {net}"), &all, |v| v.to_string());
    let (sample, counts) = super::bounded(&all, agreed.common().unwrap_or(&0));
    for n in nics.iter().filter(|n| !agreed.is_common(&n.mtu)) {
        let host = &labels[n.host];
        let smaller = match agreed.common() {
            Some(c) => n.mtu.min(*c),
            None => all.values().copied().min().unwrap_or(n.mtu),
        };
        let mut f = Finding::new(
            MTU_ID,
            Severity::Warning,
            Subject {
                host: Some(host.clone()),
                interface: Some(n.ifname.to_string()),
                address: Some(net.to_string()),
                ..Default::default()
            },
            format!(
                "{host}/{}: MTU {} on {net}; {says}: RDMA path MTU falls to the smaller \
                 one and frames larger than {smaller} are dropped on mismatched links",
                n.ifname, n.mtu,
            ),
        )
        .evidence("subnet", net.to_string())
        .evidence("value", n.mtu)
        .evidence("nics", &sample)
        .evidence("counts", &counts);
        for (key, v) in agreed.evidence(|v| serde_json::json!(v)) {
            f = f.evidence(key, v);
        }
        out.push(match agreed.common() {
            Some(common) => f.fix(
                vec![super::on_state(
                    &states[n.host],
                    &format!(
                        "ip link set dev {} mtu {common}",
                        crate::model::ifname_word(n.ifname)
                    ),
                )],
                None,
            ),
            // No MTU most NICs share: which is right is the operator's call.
            None => f.checks(vec![super::on_state(&states[n.host], "ip -br link")]),
        });
    }
}
