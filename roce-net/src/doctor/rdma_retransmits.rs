//! `rdma-retransmits`: RDMA hardware counters show timeouts, sequence errors or
//! retransmissions (lossy fabric, wrong neighbour/MAC, PFC/ECN misconfiguration).

use super::{Ctx, Finding, Severity, Subject};
use crate::model::{ifname_word, shell_word, PortRef};
use std::collections::BTreeMap;

/// Check id.
pub const ID: &str = "rdma-retransmits";

/// The `hw_counters` that count RoCE retransmissions and their causes: mlx5's
/// names, then the kernel's Soft-RoCE driver's (`rxe_hw_counters.c`; read off
/// real rxe ports in the VM tier, docs/vm.md, after flux made RC QPs fail).
pub const COUNTERS: &[&str] = &[
    "local_ack_timeout_err",
    "req_transport_retries_exceeded",
    "packet_seq_err",
    "out_of_sequence",
    "implied_nak_seq_err",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    // rxe: requester retransmissions, retries exhausted (status 12), the
    // responder's out-of-sequence PSNs, RNR retries exhausted (status 13).
    "completer_retry_err",
    "retry_exceeded_err",
    "rcvd_seq_err",
    "retry_rnr_exceeded_err",
];

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &ctx.state.rdma {
        for p in &d.ports {
            let seen: BTreeMap<&str, u64> = COUNTERS
                .iter()
                .filter_map(|c| p.hw_counters.get(*c).map(|v| (*c, *v)))
                .filter(|(_, v)| *v >= ctx.opts.rdma_retransmit_min)
                .collect();
            if seen.is_empty() {
                continue;
            }
            let mut subject = Subject::default().with_port(&d.name, p.port);
            subject.interface = crate::scope::port_netdev(d, p);
            let list: Vec<String> = seen.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    subject,
                    format!(
                        "{} counted RDMA retransmissions/timeouts since boot: {}",
                        PortRef::of(d, p),
                        list.join(", ")
                    ),
                )
                .evidence("counters", &seen)
                .checks(vec![
                    format!(
                        "rdma statistic show link {}/{}",
                        shell_word(&d.name),
                        p.port
                    ),
                    format!(
                        "ip neigh show dev {}",
                        ifname_word(&crate::scope::port_netdev(d, p).unwrap_or_default())
                    ),
                ]),
            );
        }
    }
    out
}
