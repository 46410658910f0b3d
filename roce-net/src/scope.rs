//! Which NICs the checks (and the planner's `nics: auto`) look at.
//!
//! When some RDMA port's netdev is present in the snapshot, the NICs in scope are
//! the netdevs backing RDMA ports ([`ScopeMode::Rdma`]). Otherwise (no RDMA devices,
//! as in a lab, or RDMA netdevs living in another namespace) they are the
//! interfaces that share an IPv4 subnet with another interface
//! ([`ScopeMode::SharedSubnet`]): interfaces are
//! grouped by the networks of their global IPv4 addresses, `lo` and enslaved ports
//! (bridge or bond members) are left out, and every group of two or more interfaces
//! is in scope, because that is where ARP flux and asymmetric routing happen.

use crate::model::{Address, HostState, Scope};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// One port of an RDMA device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortRef {
    /// RDMA device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u32,
}

impl std::fmt::Display for PortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.device, self.port)
    }
}

/// Why the NICs in scope were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeMode {
    /// Netdevs backing RDMA ports.
    Rdma,
    /// No RDMA devices: interfaces sharing an IPv4 subnet with another one.
    SharedSubnet,
    /// Nothing qualifies.
    Empty,
}

/// A NIC in scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopedNic {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// RDMA ports this netdev backs (empty in [`ScopeMode::SharedSubnet`]).
    pub rdma_ports: Vec<PortRef>,
    /// Its global IPv4 addresses, in the kernel's list order (primary first).
    pub ipv4: Vec<Address>,
}

impl ScopedNic {
    /// The first primary global IPv4 address (the one the kernel uses as source).
    pub fn primary_ipv4(&self) -> Option<&Address> {
        self.ipv4.iter().find(|a| !a.secondary)
    }
}

/// The NICs in scope and how they were chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicScope {
    /// Selection mode.
    pub mode: ScopeMode,
    /// The NICs, ordered by interface index.
    pub nics: Vec<ScopedNic>,
}

impl NicScope {
    /// Look a NIC up by name.
    pub fn get(&self, ifname: &str) -> Option<&ScopedNic> {
        self.nics.iter().find(|n| n.ifname == ifname)
    }

    /// Interface names, in scope order.
    pub fn names(&self) -> Vec<String> {
        self.nics.iter().map(|n| n.ifname.clone()).collect()
    }

    /// For each NIC, the other NICs in scope that have an address in one of its
    /// IPv4 subnets (empty vector when the NIC is alone in its subnets).
    pub fn subnet_peers(&self) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        for n in &self.nics {
            let mut peers: Vec<String> = self
                .nics
                .iter()
                .filter(|o| o.ifname != n.ifname)
                .filter(|o| {
                    n.ipv4
                        .iter()
                        .any(|a| o.ipv4.iter().any(|b| a.network() == b.network()))
                })
                .map(|o| o.ifname.clone())
                .collect();
            peers.dedup();
            out.insert(n.ifname.clone(), peers);
        }
        out
    }
}

/// Global-scope IPv4 addresses of an interface, in list order.
pub fn global_ipv4<'a>(state: &'a HostState, ifname: &str) -> Vec<&'a Address> {
    state
        .addresses
        .iter()
        .filter(|a| a.ifname == ifname && a.address.is_ipv4() && a.scope == Scope::Universe)
        .collect()
}

/// Every netdev that backs an RDMA port and exists in the snapshot, with its ports.
/// A port's netdev is its own `netdev` field, else the device's only netdev when the
/// device has a single port.
pub fn rdma_netdevs(state: &HostState) -> BTreeMap<String, Vec<PortRef>> {
    let mut out: BTreeMap<String, Vec<PortRef>> = BTreeMap::new();
    for d in &state.rdma {
        for p in &d.ports {
            let nd = p.netdev.clone().or_else(|| {
                if d.ports.len() == 1 && d.netdevs.len() == 1 {
                    d.netdevs.first().cloned()
                } else {
                    None
                }
            });
            if let Some(nd) = nd {
                if state.interface(&nd).is_some() {
                    out.entry(nd).or_default().push(PortRef {
                        device: d.name.clone(),
                        port: p.port,
                    });
                }
            }
        }
    }
    out
}

/// The NICs in scope with details (see the module documentation for the rule).
pub fn nic_scope(state: &HostState) -> NicScope {
    let mut ifaces: Vec<_> = state.interfaces.iter().collect();
    ifaces.sort_by_key(|i| i.index);
    let rdma = rdma_netdevs(state);
    let mk = |name: &str, index: u32, ports: Vec<PortRef>| ScopedNic {
        ifname: name.to_string(),
        ifindex: index,
        rdma_ports: ports,
        ipv4: global_ipv4(state, name).into_iter().cloned().collect(),
    };
    if !rdma.is_empty() {
        let nics = ifaces
            .iter()
            .filter_map(|i| {
                rdma.get(&i.name)
                    .map(|ports| mk(&i.name, i.index, ports.clone()))
            })
            .collect();
        return NicScope {
            mode: ScopeMode::Rdma,
            nics,
        };
    }
    let candidates: Vec<_> = ifaces
        .iter()
        .filter(|i| i.name != "lo" && i.master.is_none())
        .collect();
    let mut by_net: BTreeMap<ipnet::IpNet, Vec<&str>> = BTreeMap::new();
    for i in &candidates {
        for a in global_ipv4(state, &i.name) {
            let v = by_net.entry(a.network()).or_default();
            if !v.contains(&i.name.as_str()) {
                v.push(&i.name);
            }
        }
    }
    let chosen: Vec<&str> = by_net
        .values()
        .filter(|v| v.len() >= 2)
        .flatten()
        .copied()
        .collect();
    let nics: Vec<ScopedNic> = candidates
        .iter()
        .filter(|i| chosen.contains(&i.name.as_str()))
        .map(|i| mk(&i.name, i.index, Vec::new()))
        .collect();
    NicScope {
        mode: if nics.is_empty() {
            ScopeMode::Empty
        } else {
            ScopeMode::SharedSubnet
        },
        nics,
    }
}

/// The names of the NICs in scope, ordered by interface index. This is what a
/// policy's `nics: auto` means.
pub fn nics_in_scope(state: &HostState) -> Vec<String> {
    nic_scope(state).names()
}

/// A representative peer address in `addr`'s subnet: the lowest resolved neighbour
/// of that subnet on `ifname`, else on any interface, else the subnet's first
/// usable host, else its last, skipping local addresses. IPv4 only; `None` for a /32 or an IPv6 address.
pub fn representative_peer(state: &HostState, ifname: &str, addr: &Address) -> Option<IpAddr> {
    let net = addr.network();
    let local = |ip: &IpAddr| state.addresses.iter().any(|a| a.address == *ip);
    let pick = |on_dev: bool| {
        state
            .neighbors
            .iter()
            .filter(|n| n.is_resolved() && net.contains(&n.ip) && !local(&n.ip))
            .filter(|n| !on_dev || n.ifname == ifname)
            .map(|n| n.ip)
            .min()
    };
    if let Some(p) = pick(true).or_else(|| pick(false)) {
        return Some(p);
    }
    let ipnet::IpNet::V4(n4) = net else {
        return None;
    };
    if n4.prefix_len() >= 32 {
        return None;
    }
    let (lo, hi) = if n4.prefix_len() == 31 {
        (u32::from(n4.network()), u32::from(n4.broadcast()))
    } else {
        (
            u32::from(n4.network()).saturating_add(1),
            u32::from(n4.broadcast()).saturating_sub(1),
        )
    };
    [lo, hi]
        .into_iter()
        .map(|h| IpAddr::V4(std::net::Ipv4Addr::from(h)))
        .find(|h| !local(h))
}
