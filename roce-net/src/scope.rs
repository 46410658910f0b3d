//! Which NICs roce-net manages, and which address of each: the one answer that
//! the doctor's checks, the planner's `nics: auto`, NCCL advice and the fleet
//! report all use, so the GID NCCL picks, the source rule the planner writes and
//! the doctor's finding are about the same NIC and the same address.
//!
//! **The NICs** ([`nic_scope`]). When some RDMA port's netdev is present in the
//! snapshot, the NICs in scope are the netdevs backing RDMA ports
//! ([`ScopeMode::Rdma`]); a port's netdev is the one the snapshot records for it
//! (the kernel's GID `ndevs`, or the PCI function's netdev with the matching
//! `dev_port`), else the device's only netdev when the device has a single port
//! ([`port_netdev`]). Otherwise (no RDMA devices, as in a lab, or RDMA netdevs
//! living in another namespace) they are the interfaces that share a global
//! IPv4 subnet with another interface ([`ScopeMode::SharedSubnet`]): loopback and
//! enslaved ports (bridge or bond members) are left out, the others are grouped
//! by the networks of all their global IPv4 addresses, and every group of two or
//! more is in scope, because that is where ARP flux and asymmetric routing happen.
//!
//! **The address** ([`nic_address`]). Each NIC's managed address is its first
//! primary (not `secondary`) global IPv4 address in the kernel's list order:
//! the address the kernel itself picks as the source for the NIC's subnet, so the
//! one a RoCE v2 GID, a source rule and NCCL's bootstrap all see first. (A
//! snapshot where every global IPv4 address is marked secondary, which a kernel
//! never reports, falls back to the first.) A NIC in scope may have none (an
//! RDMA netdev without IPv4): it is checked, but not routed.
//!
//! **The order.** NICs come in natural name order (`r2` before `r10`,
//! [`natural_cmp`]), not by interface index: the planner numbers tables and rule
//! priorities in this order (table `table_base + n` for the n-th NIC), and an
//! index changes when a driver is reloaded while a name does not, so existing
//! hosts keep their tables.
//!
//! Why this rule and not the others the code used to have: the port's own netdev
//! instead of "every netdev of the device" keeps switchdev representors and
//! sibling functions out; leaving enslaved ports out keeps a bridge member's
//! stray address from creating a table nobody routes through; grouping by every
//! address finds flux on a secondary subnet too.

use crate::model::{Address, GidType, HostState, PortRef, RdmaDevice, RdmaPort, Scope};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

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
#[non_exhaustive]
pub struct ScopedNic {
    /// Interface name.
    pub ifname: String,
    /// Interface index.
    pub ifindex: u32,
    /// RDMA ports this netdev backs (empty in [`ScopeMode::SharedSubnet`]).
    pub rdma_ports: Vec<PortRef>,
    /// The managed address ([`nic_address`]): the source of its rule, the address
    /// of the GID NCCL uses. `None` when the NIC has no global IPv4 address.
    pub address: Option<Address>,
    /// All its global IPv4 addresses, in the kernel's list order (primary first).
    pub ipv4: Vec<Address>,
}

/// The NICs in scope and how they were chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NicScope {
    /// Selection mode.
    pub mode: ScopeMode,
    /// The NICs, in natural name order.
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

    /// The NICs that have a managed address, with it: what gets a table and a
    /// source rule.
    pub fn addressed(&self) -> impl Iterator<Item = (&ScopedNic, &Address)> {
        self.nics
            .iter()
            .filter_map(|n| n.address.as_ref().map(|a| (n, a)))
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

/// The managed address of an interface: its first primary global IPv4 address
/// (see the module documentation).
pub fn nic_address<'a>(state: &'a HostState, ifname: &str) -> Option<&'a Address> {
    let v4 = global_ipv4(state, ifname);
    v4.iter()
        .find(|a| !a.secondary)
        .or_else(|| v4.first())
        .copied()
}

/// True for the loopback interface: named `lo`, or holding a host-scope
/// loopback address.
pub fn is_loopback(state: &HostState, ifname: &str) -> bool {
    ifname == "lo"
        || state
            .addresses_of(ifname)
            .any(|a| a.address.is_loopback() && a.scope == Scope::Host)
}

/// The netdev behind an RDMA port: the port's own `netdev`, else the device's
/// only netdev when it has a single port.
pub fn port_netdev(dev: &RdmaDevice, port: &RdmaPort) -> Option<String> {
    port.netdev.clone().or_else(|| {
        if dev.ports.len() == 1 && dev.netdevs.len() == 1 {
            dev.netdevs.first().cloned()
        } else {
            None
        }
    })
}

/// Every netdev that backs an RDMA port and exists in the snapshot, with its
/// ports ([`port_netdev`]).
pub fn rdma_netdevs(state: &HostState) -> BTreeMap<String, Vec<PortRef>> {
    let mut out: BTreeMap<String, Vec<PortRef>> = BTreeMap::new();
    for d in &state.rdma {
        for p in &d.ports {
            if let Some(nd) = port_netdev(d, p) {
                if state.interface(&nd).is_some() {
                    out.entry(nd).or_default().push(PortRef::of(d, p));
                }
            }
        }
    }
    out
}

/// The NICs in scope with details (see the module documentation for the rule).
pub fn nic_scope(state: &HostState) -> NicScope {
    let mut ifaces: Vec<_> = state.interfaces.iter().collect();
    ifaces.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    let rdma = rdma_netdevs(state);
    let mk = |name: &str, index: u32, ports: Vec<PortRef>| ScopedNic {
        ifname: name.to_string(),
        ifindex: index,
        rdma_ports: ports,
        address: nic_address(state, name).cloned(),
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
        .filter(|i| !is_loopback(state, &i.name) && i.master.is_none())
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

/// The names of the NICs in scope, in natural name order. This is what a
/// policy's `nics: auto` selects (those with an address get a table).
pub fn nics_in_scope(state: &HostState) -> Vec<String> {
    nic_scope(state).names()
}

/// The GID index of the RoCE v2 GID of an IPv4 address on a port (the lowest,
/// should the table hold it twice), `None` when the table lacks it.
pub fn roce_v2_gid_index(port: &RdmaPort, address: Ipv4Addr) -> Option<u32> {
    port.gids
        .iter()
        .filter(|g| g.ipv4 == Some(address) && g.gid_type == Some(GidType::RoceV2))
        .map(|g| g.index)
        .min()
}

/// For every RoCE port of a NIC in scope that has a managed address: the GID
/// index of the RoCE v2 GID of that address ([`roce_v2_gid_index`]), or `None`
/// when the table lacks it. Ports of NICs without an address are left out.
pub fn roce_v2_gid_indices(state: &HostState) -> BTreeMap<PortRef, Option<u32>> {
    let mut out = BTreeMap::new();
    for (nic, addr) in nic_scope(state).addressed() {
        let IpAddr::V4(v4) = addr.address else {
            continue;
        };
        for r in &nic.rdma_ports {
            let Some(p) = find_port(state, r) else {
                continue;
            };
            if p.is_roce() {
                out.insert(r.clone(), roce_v2_gid_index(p, v4));
            }
        }
    }
    out
}

/// The port a [`PortRef`] names.
pub fn find_port<'a>(state: &'a HostState, r: &PortRef) -> Option<&'a RdmaPort> {
    state
        .rdma
        .iter()
        .find(|d| d.name == r.device)?
        .ports
        .iter()
        .find(|p| p.port == r.port)
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

/// Compare interface names in natural order (`r2` before `r10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    if a.is_empty() || b.is_empty() {
        return a.cmp(b);
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for ((da, xa), (db, xb)) in ca.iter().zip(cb.iter()) {
        let ord = if *da && *db {
            let ta = xa.trim_start_matches('0');
            let tb = xb.trim_start_matches('0');
            ta.len().cmp(&tb.len()).then(ta.cmp(tb))
        } else {
            xa.cmp(xb)
        };
        if ord != std::cmp::Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then(a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec!["r10", "r2", "r1", "mlx5_10", "mlx5_9", "eth0"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["eth0", "mlx5_9", "mlx5_10", "r1", "r2", "r10"]);
    }
}
