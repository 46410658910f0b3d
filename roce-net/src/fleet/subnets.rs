//! Per-subnet comparisons: every IPv4 subnet the NICs in scope sit in is one L2
//! segment (one rail, or the one subnet all rails share), compared across the
//! hosts that have it.
//!
//! - `fleet-subnet-nic-count-differs`: a host serves a subnet with more or fewer
//!   NICs than most hosts that serve it (a rail missing or cabled into the wrong
//!   subnet: NCCL builds fewer rings there, or crosses rails).
//! - `fleet-subnet-mtu-differs`: a NIC's MTU differs from the MTU most NICs on
//!   its subnet have (RDMA path MTU falls to the smaller one and large frames are
//!   dropped on the mismatched link), named per NIC with every MTU on the segment.

use super::majority;
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
    let counts: Vec<usize> = per_host.values().map(Vec::len).collect();
    let Some(common) = majority(&counts) else {
        return;
    };
    let all: BTreeMap<&str, usize> = per_host
        .iter()
        .map(|(h, v)| (labels[*h].as_str(), v.len()))
        .collect();
    // Bounded for a segment of any size (see `fleet::bounded`).
    let (all, counts) = super::bounded(&all, &common);
    for (h, names) in &per_host {
        if names.len() == common {
            continue;
        }
        let host = &labels[*h];
        out.push(
            Finding::new(
                NIC_COUNT_ID,
                Severity::Warning,
                Subject {
                    host: Some(host.clone()),
                    address: Some(net.to_string()),
                    ..Default::default()
                },
                format!(
                    "{host}: {} NIC(s) in {net} ({}), most hosts serving {net} have {common}: \
                     a rail is missing, down or in the wrong subnet on this host, so NCCL \
                     uses fewer or crossed rails here",
                    names.len(),
                    names.join(", ")
                ),
            )
            .evidence("subnet", net.to_string())
            .evidence("nics", names)
            .evidence("value", names.len())
            .evidence("majority", common)
            .evidence("hosts", &all)
            .evidence("counts", &counts)
            .fix(
                vec![
                    super::on_state(&states[*h], "ip -br -4 addr"),
                    super::on_state(&states[*h], "rdma link show"),
                ],
                None,
            ),
        );
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
    let values: Vec<u32> = nics.iter().map(|n| n.mtu).collect();
    let Some(common) = majority(&values) else {
        return;
    };
    let all: BTreeMap<String, u32> = nics
        .iter()
        .map(|n| (format!("{}/{}", labels[n.host], n.ifname), n.mtu))
        .collect();
    let (all, counts) = super::bounded(&all, &common);
    for n in nics.iter().filter(|n| n.mtu != common) {
        let host = &labels[n.host];
        out.push(
            Finding::new(
                MTU_ID,
                Severity::Warning,
                Subject {
                    host: Some(host.clone()),
                    interface: Some(n.ifname.to_string()),
                    address: Some(net.to_string()),
                    ..Default::default()
                },
                format!(
                    "{host}/{}: MTU {} on {net}, where most NICs have {common}: RDMA path MTU \
                     falls to the smaller one and frames larger than {} are dropped on this link",
                    n.ifname,
                    n.mtu,
                    n.mtu.min(common)
                ),
            )
            .evidence("subnet", net.to_string())
            .evidence("value", n.mtu)
            .evidence("majority", common)
            .evidence("nics", &all)
            .evidence("counts", &counts)
            .fix(
                vec![super::on_state(
                    &states[n.host],
                    &format!(
                        "ip link set dev {} mtu {common}",
                        crate::model::ifname_word(n.ifname)
                    ),
                )],
                None,
            ),
        );
    }
}
