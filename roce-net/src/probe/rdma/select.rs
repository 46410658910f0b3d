//! Which device, port and GID index a probe from a source address uses.
//!
//! The rule is the NCCL advice's (`scope::roce_v2_gid_index`): the RDMA port
//! behind the netdev that holds the address (the NIC scope's `rdma_ports`), and
//! the lowest-index RoCE v2 GID whose IPv4-mapped address is that address. A
//! RoCE v2 GID is what makes the NIC send from that address: it is the one a job
//! should use, and the one whose path the fix changed.

use crate::error::{Error, ErrorKind, Result};
use crate::model::PortRef;
use crate::model::{
    port_is_active, GidEntry, GidType, HostState, LinkLayer, PhysState, PortState, RdmaPort,
};
use crate::scope::{nic_scope, rdma_netdevs};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv6Addr};

/// The chosen device, port and GID, with what the snapshot says about them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaSelection {
    /// RDMA device.
    pub device: String,
    /// Port.
    pub port: u32,
    /// GID index.
    pub gid_index: u32,
    /// The GID at that index.
    pub gid: Ipv6Addr,
    /// Its type.
    pub gid_type: Option<GidType>,
    /// The source address.
    pub address: IpAddr,
    /// The netdev holding the address.
    pub netdev: String,
    /// Its MAC.
    pub mac: Option<String>,
    /// Its MTU.
    pub netdev_mtu: Option<u32>,
    /// The port's state (`ACTIVE`, `DOWN`).
    pub port_state: Option<PortState>,
    /// The port's physical state (`LinkUp`).
    pub phys_state: Option<PhysState>,
    /// `Ethernet` (RoCE) or `InfiniBand`.
    pub link_layer: Option<LinkLayer>,
    /// Active MTU from the snapshot (derived from the netdev MTU for RoCE).
    pub active_mtu: Option<u32>,
    /// The index the NCCL advice names for this port (`None` when it names none).
    pub nccl_gid_index: Option<u32>,
    /// Remarks for the report.
    pub notes: Vec<String>,
}

impl RdmaSelection {
    /// True for an InfiniBand port (LID addressing, no IP).
    pub fn is_infiniband(&self) -> bool {
        self.link_layer == Some(LinkLayer::InfiniBand)
    }
    /// The port is active ([`port_is_active`], the snapshot's rule).
    pub fn port_active(&self) -> bool {
        port_is_active(self.port_state.as_ref(), self.phys_state.as_ref())
    }
}

/// `fe80::/10`.
pub(crate) fn is_link_local(g: &Ipv6Addr) -> bool {
    (g.segments()[0] & 0xffc0) == 0xfe80
}

/// The IPv4 address of an IPv4-mapped GID.
pub(crate) fn gid_ipv4(g: &Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    g.to_ipv4_mapped()
}

fn list(v: impl IntoIterator<Item = String>) -> String {
    let v: Vec<String> = v.into_iter().collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// Choose the device, port and GID index for a probe from `source`.
///
/// `device`, `port` and `gid_index` override the choice (each is checked against
/// the snapshot). Errors: `InvalidInput` when `source` is not an address of the
/// host or an override does not fit it; `NotFound` when no RDMA port backs the
/// address's netdev or the port has no RoCE v2 GID for the address.
pub fn select_rdma_port(
    state: &HostState,
    source: IpAddr,
    device: Option<&str>,
    port: Option<u32>,
    gid_index: Option<u32>,
) -> Result<RdmaSelection> {
    let addr =
        state
            .addresses
            .iter()
            .find(|a| a.address == source)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                    "{source} is not an address of {}; its global addresses: {} (give --source \
                     one of the RDMA NICs' addresses)",
                    if state.hostname.is_empty() { "this host" } else { &state.hostname },
                    list(
                        state
                            .addresses
                            .iter()
                            .filter(|a| a.scope == crate::model::Scope::Universe)
                            .map(|a| format!("{} ({})", a.address, a.ifname))
                    )
                ),
                )
            })?;
    let netdev = addr.ifname.clone();
    let scope = nic_scope(state);
    let mut ports: Vec<PortRef> = scope
        .get(&netdev)
        .map(|n| n.rdma_ports.clone())
        .filter(|p| !p.is_empty())
        .or_else(|| rdma_netdevs(state).remove(&netdev))
        .unwrap_or_default();
    if ports.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "no RDMA port backs {netdev} (which holds {source}); netdevs with RDMA ports: {}",
                list(rdma_netdevs(state).into_iter().map(|(nd, p)| format!(
                    "{nd} ({})",
                    p.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" ")
                )))
            ),
        ));
    }
    if let Some(d) = device {
        let all = ports.clone();
        ports.retain(|r| r.device == d);
        if ports.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "device {d} does not back {netdev} (which holds {source}); its RDMA ports: {}",
                    list(all.iter().map(|r| r.to_string()))
                ),
            ));
        }
    }
    if let Some(p) = port {
        let all = ports.clone();
        ports.retain(|r| r.port == p);
        if ports.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "port {p} does not back {netdev}; its RDMA ports: {}",
                    list(all.iter().map(|r| r.to_string()))
                ),
            ));
        }
    }
    let find = |r: &PortRef| -> Option<&RdmaPort> {
        state
            .rdma
            .iter()
            .find(|d| d.name == r.device)?
            .ports
            .iter()
            .find(|p| p.port == r.port)
    };
    // Prefer an active port, then the lowest.
    ports.sort_by_key(|r| (!find(r).is_some_and(|p| p.is_active()), r.clone()));
    let r = ports[0].clone();
    let Some(p) = find(&r) else {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("{r} is not in the snapshot's RDMA devices"),
        ));
    };
    let iface = state.interface(&netdev);
    let mut notes = Vec::new();
    let infiniband = p.link_layer == Some(LinkLayer::InfiniBand);
    let gid: &GidEntry = match gid_index {
        Some(i) => p.gids.iter().find(|g| g.index == i).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "GID index {i} is empty on {r}; populated: {}",
                    list(p.gids.iter().map(|g| format!(
                        "{} {} {}",
                        g.index,
                        g.gid,
                        g.gid_type.as_ref().map(|t| t.short().to_string()).unwrap_or_default()
                    )))
                ),
            )
        })?,
        None if infiniband => p
            .gids
            .iter()
            .min_by_key(|g| g.index)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("{r} has no GID")))?,
        // The scope's own rule, the one the NCCL advice uses (either family).
        None => crate::scope::roce_v2_gid_index(p, source)
            .and_then(|i| p.gids.iter().find(|g| g.index == i))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "{r} has no RoCE v2 GID for {source}: a RoCE v2 probe cannot send from \
                         it (GIDs: {}); see the doctor's gid-rocev2-missing finding, or give \
                         --gid-index to try another",
                        list(p.gids.iter().map(|g| format!(
                            "{} {} {}",
                            g.index,
                            g.gid,
                            g.gid_type.as_ref().map(|t| t.short().to_string()).unwrap_or_default()
                        )))
                    ),
                )
            })?,
    };
    let nccl = crate::scope::roce_v2_gid_indices(state)
        .get(&r)
        .copied()
        .flatten();
    if !infiniband && nccl != Some(gid.index) {
        notes.push(match nccl {
            Some(n) => format!(
                "the NCCL advice names GID index {n} for {r} (the RoCE v2 GID of {netdev}'s \
                 primary address); this probe uses index {} ({})",
                gid.index, gid.gid
            ),
            None => format!(
                "the NCCL advice names no GID index for {r}; this probe uses index {}",
                gid.index
            ),
        });
    }
    if gid_index.is_some() && !infiniband {
        if is_link_local(&gid.gid) {
            notes.push(format!(
                "GID index {} is link-local ({}): RoCE v2 traffic from it is not routable",
                gid.index, gid.gid
            ));
        }
        if gid.gid_type == Some(GidType::RoceV1) {
            notes.push(format!(
                "GID index {} is RoCE v1: not routable, and NCCL needs RoCE v2",
                gid.index
            ));
        }
    }
    Ok(RdmaSelection {
        device: r.device.clone(),
        port: r.port,
        gid_index: gid.index,
        gid: gid.gid,
        gid_type: gid.gid_type.clone(),
        address: source,
        netdev,
        mac: iface.and_then(|i| i.mac.as_ref().map(|m| m.to_string())),
        netdev_mtu: iface.map(|i| i.mtu),
        port_state: p.state.clone(),
        phys_state: p.phys_state.clone(),
        link_layer: p.link_layer.clone(),
        active_mtu: p.active_mtu,
        nccl_gid_index: nccl,
        notes,
    })
}
