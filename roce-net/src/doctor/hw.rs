//! Shared helpers for the checks on NIC statistics, QoS and link health.

use super::{Ctx, Subject};
use crate::model::{Interface, PortRef, Qos};
use crate::scope::find_port;
use std::collections::BTreeMap;

/// A NIC in scope with what the snapshot knows of its hardware.
pub(crate) struct Nic<'a> {
    pub ifname: &'a str,
    pub iface: &'a Interface,
    /// The RDMA port it backs (the first, when several).
    pub port: Option<&'a PortRef>,
}

impl Nic<'_> {
    /// Interface, plus device and port when it backs an RDMA port.
    pub fn subject(&self) -> Subject {
        let s = Subject::interface(self.ifname);
        match self.port {
            Some(r) => s.with_port(&r.device, r.port),
            None => s,
        }
    }
    /// Its ethtool statistics, when read.
    pub fn stats(&self) -> Option<&BTreeMap<String, u64>> {
        self.iface.ethtool_stats.as_ref()
    }
    /// Its QoS, when DCB answered.
    pub fn qos(&self) -> Option<&Qos> {
        self.iface.qos.as_ref().filter(|q| q.dcb_available)
    }
}

/// The NICs in scope present in the snapshot, in scope order.
pub(crate) fn nics<'a>(ctx: &'a Ctx) -> Vec<Nic<'a>> {
    ctx.scope
        .nics
        .iter()
        .filter_map(|n| {
            let iface = ctx.state.interface(&n.ifname)?;
            Some(Nic {
                ifname: &n.ifname,
                iface,
                port: n.rdma_ports.first(),
            })
        })
        .collect()
}

/// The per-priority counters `<prefix><N><suffix>` (`rx_prio3_pause`) that are
/// non-zero, by priority.
pub(crate) fn per_prio(
    stats: &BTreeMap<String, u64>,
    prefix: &str,
    suffix: &str,
) -> BTreeMap<u8, u64> {
    (0..8u8)
        .filter_map(|p| {
            stats
                .get(&format!("{prefix}{p}{suffix}"))
                .copied()
                .filter(|v| *v > 0)
                .map(|v| (p, v))
        })
        .collect()
}

/// The traffic class (TOS byte) RoCE traffic of this port uses for rdma_cm
/// connections, and where it comes from: rdma_cm's `default_roce_tos` when set,
/// else 0 (the kernel's and NCCL's default).
pub(crate) fn roce_tos(ctx: &Ctx, nic: &Nic) -> (u8, &'static str) {
    let tos = nic
        .port
        .and_then(|r| find_port(ctx.state, r)?.rdma_cm.as_ref()?.default_roce_tos);
    match tos {
        Some(t) => (t, "rdma_cm default_roce_tos"),
        None => (
            0,
            "the default traffic class 0 (no rdma_cm default_roce_tos, NCCL_IB_TC unset)",
        ),
    }
}
