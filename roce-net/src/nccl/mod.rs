//! NCCL environment derived from the GID tables and the NICs in scope:
//! `nccl::recommend(&state) -> NcclAdvice`, every value with the reasoning behind it.
//!
//! Which NICs and which address of each come from [`crate::scope`], as for the
//! doctor and the planner: the GID index is the one of the NIC's managed address.

use crate::model::{Family, HostState, RT_TABLE_MAIN};
use crate::scope::{find_port, nic_scope, roce_v2_gid_indices, PortRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One environment variable recommendation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NcclVar {
    /// Variable name (`NCCL_IB_HCA`).
    pub name: String,
    /// Value to set; `None` means "do not set it" (the reason says why and what to do).
    pub value: Option<String>,
    /// Why this value (or why none), for people.
    pub reason: String,
}

/// NCCL settings for one host.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct NcclAdvice {
    /// Variables, in a stable order.
    pub vars: Vec<NcclVar>,
    /// Further remarks (variables deliberately left alone, caveats).
    pub notes: Vec<String>,
}

impl NcclAdvice {
    /// The recommendation for one variable.
    pub fn get(&self, name: &str) -> Option<&NcclVar> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The variables that have a value, as `NAME=value` lines (shell-safe values).
    pub fn env_lines(&self) -> Vec<String> {
        self.vars
            .iter()
            .filter_map(|v| v.value.as_ref().map(|x| format!("{}={}", v.name, x)))
            .collect()
    }
}

/// Derive the NCCL settings for a host.
pub fn recommend(state: &HostState) -> NcclAdvice {
    let mut adv = NcclAdvice::default();
    let scope = nic_scope(state);
    let mut active: Vec<PortRef> = Vec::new();
    let mut inactive: Vec<PortRef> = Vec::new();
    let mut ib: Vec<PortRef> = Vec::new();
    for nic in &scope.nics {
        for r in &nic.rdma_ports {
            let Some(p) = find_port(state, r) else {
                continue;
            };
            if !p.is_roce() {
                ib.push(r.clone());
            } else if p.is_active() {
                active.push(r.clone());
            } else {
                inactive.push(r.clone());
            }
        }
    }
    let list = |v: &[PortRef]| {
        v.iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };

    // NCCL_IB_HCA
    if active.is_empty() {
        adv.vars.push(NcclVar {
            name: "NCCL_IB_HCA".into(),
            value: None,
            reason: if state.rdma.is_empty() {
                "no RDMA devices on this host: NCCL will use sockets".into()
            } else {
                "no active RoCE port: bring the ports up (see the port-down findings) first".into()
            },
        });
    } else {
        let mut reason = format!(
            "the {} active RoCE port(s) backing the NICs in scope; the leading '=' makes NCCL \
             match these names exactly (without it each entry is a prefix, so mlx5_1 would also \
             select mlx5_10..mlx5_17)",
            active.len()
        );
        if !inactive.is_empty() {
            reason.push_str(&format!(
                "; left out because not active: {}",
                list(&inactive)
            ));
        }
        adv.vars.push(NcclVar {
            name: "NCCL_IB_HCA".into(),
            value: Some(format!("={}", list(&active))),
            reason,
        });
    }
    if !ib.is_empty() {
        adv.notes.push(format!(
            "InfiniBand ports {} are not RoCE; GID advice here applies to RoCE ports only",
            list(&ib)
        ));
    }

    // NCCL_IB_GID_INDEX
    let all_idx = roce_v2_gid_indices(state);
    let idx: BTreeMap<&PortRef, Option<u32>> = active
        .iter()
        .map(|r| (r, all_idx.get(r).copied().flatten()))
        .collect();
    let missing: Vec<PortRef> = active
        .iter()
        .filter(|r| idx.get(r).copied().flatten().is_none())
        .cloned()
        .collect();
    let distinct: BTreeSet<u32> = idx.values().flatten().copied().collect();
    if active.is_empty() {
        // Nothing to say beyond NCCL_IB_HCA.
    } else if !missing.is_empty() {
        adv.vars.push(NcclVar {
            name: "NCCL_IB_GID_INDEX".into(),
            value: None,
            reason: format!(
                "{} ha(s|ve) no RoCE v2 GID for the netdev's IPv4 address: fix the address or \
                 GID table first (see gid-rocev2-missing), then re-run",
                list(&missing)
            )
            .replace("ha(s|ve)", if missing.len() == 1 { "has" } else { "have" }),
        });
    } else if distinct.len() == 1 {
        let i = distinct.iter().next().copied().unwrap_or(0);
        adv.vars.push(NcclVar {
            name: "NCCL_IB_GID_INDEX".into(),
            value: Some(i.to_string()),
            reason: format!(
                "index {i} holds the RoCE v2 GID of the NIC's IPv4 address on every active port \
                 ({})",
                list(&active)
            ),
        });
    } else {
        let detail: Vec<String> = idx
            .iter()
            .map(|(r, i)| format!("{r}={}", i.map(|x| x.to_string()).unwrap_or("-".into())))
            .collect();
        adv.vars.push(NcclVar {
            name: "NCCL_IB_GID_INDEX".into(),
            value: None,
            reason: format!(
                "the RoCE v2 IPv4 GID sits at different indices ({}): one value cannot fit every \
                 NIC; leave it unset and let NCCL (>= 2.21) pick per device with the two \
                 variables below, or give every NIC its addresses in the same order so the \
                 tables line up",
                detail.join(", ")
            ),
        });
        adv.vars.push(NcclVar {
            name: "NCCL_IB_ROCE_VERSION_NUM".into(),
            value: Some("2".into()),
            reason: "with NCCL_IB_GID_INDEX unset, NCCL selects the GID per device; this makes it \
                     choose a RoCE v2 GID"
                .into(),
        });
        adv.vars.push(NcclVar {
            name: "NCCL_IB_ADDR_FAMILY".into(),
            value: Some("AF_INET".into()),
            reason: "and this makes the automatic selection choose the IPv4-mapped GID".into(),
        });
    }

    // NCCL_SOCKET_IFNAME
    let rdma_nd: BTreeSet<String> = crate::scope::rdma_netdevs(state).into_keys().collect();
    let default_dev = state
        .routes
        .iter()
        .filter(|r| {
            r.family == Family::Inet
                && r.table == RT_TABLE_MAIN
                && r.dst.prefix_len() == 0
                && r.kind == crate::model::RouteType::Unicast
        })
        .min_by_key(|r| r.metric.unwrap_or(0))
        .and_then(|r| r.dev.clone());
    let mut ifaces: Vec<_> = state.interfaces.iter().collect();
    ifaces.sort_by_key(|i| i.index);
    let fallback = ifaces
        .iter()
        .find(|i| {
            i.name != "lo"
                && i.admin_up
                && !rdma_nd.contains(&i.name)
                && !crate::scope::global_ipv4(state, &i.name).is_empty()
        })
        .map(|i| i.name.clone());
    let sock = match &default_dev {
        Some(d) if !rdma_nd.contains(d) => Some((
            d.clone(),
            format!(
                "{d} carries the default route and is not an RDMA NIC: NCCL's bootstrap and \
                 socket traffic stays on the management network; '=' matches the name exactly"
            ),
        )),
        _ => fallback.map(|f| {
            (
                f.clone(),
                format!(
                    "{f} is the first non-RDMA interface with an IPv4 address{}; '=' matches the \
                     name exactly",
                    match &default_dev {
                        Some(d) => format!(" (the default route uses RDMA NIC {d})"),
                        None => " (there is no default route)".into(),
                    }
                ),
            )
        }),
    };
    adv.vars.push(match sock {
        Some((n, reason)) => NcclVar {
            name: "NCCL_SOCKET_IFNAME".into(),
            value: Some(format!("={n}")),
            reason,
        },
        None => NcclVar {
            name: "NCCL_SOCKET_IFNAME".into(),
            value: None,
            reason: "no non-RDMA interface with an IPv4 address: NCCL picks one itself".into(),
        },
    });

    adv.notes.push(
        "NCCL_IB_TC and NCCL_IB_TIMEOUT are left at NCCL's defaults: set NCCL_IB_TC only to \
         match the fabric's lossless (PFC/ECN) traffic class"
            .into(),
    );
    let retrans: Vec<String> = state
        .rdma
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| {
            ["local_ack_timeout_err", "req_transport_retries_exceeded"]
                .iter()
                .any(|c| p.hw_counters.get(*c).copied().unwrap_or(0) > 0)
        })
        .map(|(d, p)| format!("{}:{}", d.name, p.port))
        .collect();
    if !retrans.is_empty() {
        adv.notes.push(format!(
            "{} counted ACK timeouts: fix neighbours, routing and PFC/ECN first; raising \
             NCCL_IB_TIMEOUT (e.g. 22) only hides a lossy path",
            retrans.join(", ")
        ));
    }
    adv
}
