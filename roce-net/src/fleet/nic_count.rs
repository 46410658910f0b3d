//! `fleet-nic-count-differs`: a host with more or fewer NICs in scope (see
//! [`crate::nic_scope`]) than the others, and from which side.
//!
//! Fewer NICs than the others is the usual fault (a rail missing or down, so
//! NCCL builds fewer rings there); more is a different one (the others may be
//! the ones missing a rail, or this host has a NIC in scope that should not
//! be, such as a management NIC in the RoCE subnet). When counts tie for most
//! common (a 4-NIC host and an 8-NIC one) neither is taken as right: both are
//! named, each with the side it is on. The per-subnet count
//! (`fleet-subnet-nic-count-differs`, [`super::subnets`]) says it the same way.

use super::consensus::{count_evidence, side, Consensus, Side};
use super::{bounded, host_subject, on_state, HostSummary};
use crate::doctor::{Finding, Severity};
use crate::model::HostState;
use std::collections::BTreeMap;

/// Check id.
pub const ID: &str = "fleet-nic-count-differs";

/// What a count on `side` of the others means. `place` narrows it (" in
/// 198.18.0.0/24" for a subnet, empty for the whole host).
pub(super) fn meaning(side: Side, count: usize, place: &str) -> String {
    if count == 0 {
        return format!(
            "no NIC is in scope{place} on this host (no RDMA device, and no IPv4 subnet \
             two NICs share): every rail is missing or down here, or this is not the kind \
             of host the others are"
        );
    }
    match side {
        Side::Fewer => format!(
            "fewer here: a NIC is missing, down or out of scope{place} on this host (no RDMA \
             device, or addressed in another subnet), so NCCL uses fewer rails here"
        ),
        Side::More => format!(
            "more here: this host has NICs in scope{place} that the others lack, so either \
             the others are missing a rail, or a NIC here should not be in scope (a \
             management NIC in the RoCE subnet, a port cabled by mistake)"
        ),
        Side::Between => format!(
            "neither the fewest nor the most: compare the hosts' NICs{place} (a NIC missing \
             or down on the hosts with fewer, or one too many in scope on those with more)"
        ),
    }
}

/// The finding for every host whose count differs (every host on a tie).
pub(super) fn check(hosts: &[HostSummary], states: &[HostState], out: &mut Vec<Finding>) {
    let counts: BTreeMap<&str, usize> = hosts
        .iter()
        .map(|h| (h.hostname.as_str(), h.nics.len()))
        .collect();
    let lens: Vec<usize> = hosts.iter().map(|h| h.nics.len()).collect();
    let Some(agreed) = Consensus::of(&lens) else {
        return;
    };
    if !agreed.disagrees() {
        return;
    }
    let says = agreed.says("hosts", &counts, |v| v.to_string());
    let (sample, tally) = bounded(&counts, agreed.common().unwrap_or(&usize::MAX));
    for (h, s) in hosts.iter().zip(states) {
        let k = h.nics.len();
        if agreed.is_common(&k) {
            continue;
        }
        let name = &h.hostname;
        let mut f = Finding::new(
            ID,
            Severity::Warning,
            host_subject(name),
            format!(
                "{name}: {k} NIC(s) in scope ({}); {says}: {}",
                if h.nics.is_empty() {
                    "none".to_string()
                } else {
                    h.nics.join(", ")
                },
                meaning(side(k, &agreed), k, "")
            ),
        )
        .evidence("value", k)
        .evidence("nics", &h.nics)
        .evidence("hosts", &sample)
        .evidence("counts", &tally);
        for (key, v) in count_evidence(&agreed) {
            f = f.evidence(key, v);
        }
        out.push(
            // Nothing to run that adds a NIC: the commands show them.
            f.checks(vec![
                on_state(s, "rdma link show"),
                on_state(s, "ip -br link"),
            ]),
        );
    }
}
