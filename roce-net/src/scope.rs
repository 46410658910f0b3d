//! Which NICs roce-net manages, and which address of each: the one answer that
//! the doctor's checks, the planner's `nics: auto`, NCCL advice and the fleet
//! report all use, so the GID NCCL picks, the source rule the planner writes and
//! the doctor's finding are about the same NIC and the same address. IPv4 and
//! IPv6 are one rule, the family data: a NIC carries a managed address of each
//! family it has.
//!
//! **The NICs** ([`nic_scope`]). When some RDMA port's netdev is present in the
//! snapshot, the NICs in scope are the netdevs backing RDMA ports
//! ([`ScopeMode::Rdma`]); a port's netdev is the one the snapshot records for it
//! (the kernel's GID `ndevs`, or the PCI function's netdev with the matching
//! `dev_port`), else the device's only netdev when the device has a single port
//! ([`port_netdev`]). Otherwise (no RDMA devices, as in a lab, or RDMA netdevs
//! living in another namespace) they are the interfaces that share a subnet
//! with another interface ([`ScopeMode::SharedSubnet`]): an IPv4 subnet or an
//! IPv6 prefix (global or unique local, never link-local: every NIC has
//! `fe80::/64`). Loopback and enslaved ports (bridge or bond members) are left
//! out, the others are grouped by the networks of all their global addresses,
//! and every group of two or more is in scope, because that is where ARP flux
//! and asymmetric routing happen.
//!
//! **The addresses** ([`nic_address`]). Each NIC's managed address of a family
//! is, for IPv4, its first primary (not `secondary`) global address in the
//! kernel's list order: the address the kernel itself picks as the source for
//! the NIC's subnet, so the one a RoCE v2 GID, a source rule and NCCL's
//! bootstrap all see first. (A snapshot where every global IPv4 address is
//! marked secondary, which a kernel never reports, falls back to the first.)
//! For IPv6 it is the first global address in the kernel's list order (`ip -6
//! addr` shows the most recently added first) that is neither a privacy
//! (`temporary`) address nor one that failed duplicate address detection
//! (`dadfailed`: the kernel never uses it), preferring one that is not
//! `deprecated`. An address still `tentative` is managed (it is usable once DAD
//! finishes, and the plan must not change when it does); the doctor says when
//! one is. A NIC in scope may have no managed address of either family (an
//! RDMA netdev without an address): it is checked, but not routed.
//!
//! **The order.** NICs come in natural name order (`r2` before `r10`,
//! [`natural_cmp`]), not by interface index: the planner numbers tables and rule
//! priorities in this order (table `table_base + n` for the n-th NIC, the same
//! table for both families), and an index changes when a driver is reloaded
//! while a name does not, so existing hosts keep their tables.
//!
//! Why this rule and not the others the code used to have: the port's own netdev
//! instead of "every netdev of the device" keeps switchdev representors and
//! sibling functions out; leaving enslaved ports out keeps a bridge member's
//! stray address from creating a table nobody routes through; grouping by every
//! address finds flux on a secondary subnet too.

use crate::model::{
    Address, AddressFlag, Family, GidType, HostState, PortRef, RdmaDevice, RdmaPort, Scope,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Why the NICs in scope were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeMode {
    /// Netdevs backing RDMA ports.
    Rdma,
    /// No RDMA devices: interfaces sharing an IPv4 subnet or an IPv6 prefix with
    /// another one.
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
    /// Its managed addresses ([`nic_address`]), at most one per family, IPv4
    /// first: the source of its rules, the addresses of the GIDs NCCL uses.
    /// Empty when the NIC has no global address. [`ScopedNic::address`] picks one
    /// family's.
    pub addresses: Vec<Address>,
    /// All its global addresses ([`Address::is_global`]), IPv4 ones first, each
    /// family in the kernel's list order (IPv4 primary first).
    pub global: Vec<Address>,
}

impl ScopedNic {
    /// The managed address of `family`, if it has one.
    pub fn address(&self, family: Family) -> Option<&Address> {
        self.addresses
            .iter()
            .find(|a| Family::of(&a.address) == family)
    }

    /// Its global addresses of `family`, in the kernel's list order.
    pub fn global_of(&self, family: Family) -> impl Iterator<Item = &Address> {
        self.global
            .iter()
            .filter(move |a| Family::of(&a.address) == family)
    }
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

    /// Every NIC with each of its managed addresses, NIC by NIC (IPv4 before
    /// IPv6): what gets a source rule in the NIC's table.
    pub fn addressed(&self) -> impl Iterator<Item = (&ScopedNic, &Address)> {
        self.nics
            .iter()
            .flat_map(|n| n.addresses.iter().map(move |a| (n, a)))
    }

    /// [`NicScope::addressed`] of one family.
    pub fn addressed_in(&self, family: Family) -> impl Iterator<Item = (&ScopedNic, &Address)> {
        self.nics
            .iter()
            .filter_map(move |n| n.address(family).map(|a| (n, a)))
    }

    /// For each NIC, the other NICs in scope that have an address in one of its
    /// subnets or prefixes, either family (empty vector when the NIC is alone
    /// in its subnets).
    pub fn subnet_peers(&self) -> BTreeMap<String, Vec<String>> {
        self.peers_where(|_| true)
    }

    /// [`NicScope::subnet_peers`] counting only subnets of `family` (ARP flux
    /// needs a shared IPv4 subnet; IPv6 egress a shared IPv6 prefix).
    pub fn subnet_peers_in(&self, family: Family) -> BTreeMap<String, Vec<String>> {
        self.peers_where(|a| Family::of(&a.address) == family)
    }

    fn peers_where(&self, counts: impl Fn(&Address) -> bool) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        for n in &self.nics {
            let mut peers: Vec<String> = self
                .nics
                .iter()
                .filter(|o| o.ifname != n.ifname)
                .filter(|o| {
                    n.global.iter().filter(|a| counts(a)).any(|a| {
                        o.global
                            .iter()
                            .any(|b| counts(b) && a.network() == b.network())
                    })
                })
                .map(|o| o.ifname.clone())
                .collect();
            peers.dedup();
            out.insert(n.ifname.clone(), peers);
        }
        out
    }
}

/// Global addresses ([`Address::is_global`]) of an interface of one family, in
/// the kernel's list order.
pub fn global_addresses<'a>(
    state: &'a HostState,
    ifname: &str,
    family: Family,
) -> Vec<&'a Address> {
    global_of(
        state.addresses.iter().filter(|a| a.ifname == ifname),
        family,
    )
}

/// Of one interface's addresses (`of`), the global ones of `family`, in order.
fn global_of<'a>(of: impl Iterator<Item = &'a Address>, family: Family) -> Vec<&'a Address> {
    of.filter(|a| Family::of(&a.address) == family && a.is_global())
        .collect()
}

/// Every interface's addresses, in the kernel's list order, grouped once: a
/// look-up per NIC instead of a pass over every address of the host (which
/// made the scope, and the policy's NIC resolution, quadratic in the NICs: 12%
/// and 10% of a 64-NIC apply).
pub(crate) struct AddressIndex<'a>(BTreeMap<&'a str, Vec<&'a Address>>);

impl<'a> AddressIndex<'a> {
    /// Group `state`'s addresses by interface.
    pub(crate) fn new(state: &'a HostState) -> Self {
        let mut by: BTreeMap<&str, Vec<&Address>> = BTreeMap::new();
        for a in &state.addresses {
            by.entry(a.ifname.as_str()).or_default().push(a);
        }
        AddressIndex(by)
    }

    /// The addresses of `ifname`, in list order.
    pub(crate) fn of(&self, ifname: &str) -> impl Iterator<Item = &'a Address> + '_ {
        self.0.get(ifname).into_iter().flatten().copied()
    }

    /// [`nic_address`] of `ifname`.
    pub(crate) fn nic_address(&self, ifname: &str, family: Family) -> Option<&'a Address> {
        nic_address_of(self.of(ifname), family)
    }

    /// True for the loopback interface: named `lo`, or holding a host-scope
    /// loopback address.
    pub(crate) fn is_loopback(&self, ifname: &str) -> bool {
        loopback_of(ifname, self.of(ifname))
    }
}

/// Global-scope IPv4 addresses of an interface, in list order.
pub fn global_ipv4<'a>(state: &'a HostState, ifname: &str) -> Vec<&'a Address> {
    global_addresses(state, ifname, Family::Inet)
}

/// The managed address of an interface in `family` (see the module
/// documentation): IPv4's first primary global address; IPv6's first global
/// address that is neither `temporary` nor `dadfailed`, not `deprecated` if one
/// is not.
pub fn nic_address<'a>(state: &'a HostState, ifname: &str, family: Family) -> Option<&'a Address> {
    nic_address_of(
        state.addresses.iter().filter(|a| a.ifname == ifname),
        family,
    )
}

/// [`nic_address`] among one interface's addresses (`of`).
fn nic_address_of<'a>(
    of: impl Iterator<Item = &'a Address>,
    family: Family,
) -> Option<&'a Address> {
    let all = global_of(of, family);
    match family {
        Family::Inet => all.iter().find(|a| !a.secondary).or_else(|| all.first()),
        Family::Inet6 => {
            let cands: Vec<&&Address> = all
                .iter()
                .filter(|a| !a.has(AddressFlag::Temporary) && !a.has(AddressFlag::Dadfailed))
                .collect();
            cands
                .iter()
                .find(|a| !a.has(AddressFlag::Deprecated))
                .or_else(|| cands.first())
                .copied()
        }
    }
    .copied()
}

/// The managed addresses of an interface, IPv4's then IPv6's ([`nic_address`]).
pub fn nic_addresses<'a>(state: &'a HostState, ifname: &str) -> Vec<&'a Address> {
    [Family::Inet, Family::Inet6]
        .into_iter()
        .filter_map(|f| nic_address(state, ifname, f))
        .collect()
}

/// True for the loopback interface `ifname` with its addresses `of`: named
/// `lo`, or holding a host-scope loopback address.
fn loopback_of<'a>(ifname: &str, mut of: impl Iterator<Item = &'a Address>) -> bool {
    ifname == "lo" || of.any(|a| a.address.is_loopback() && a.scope == Scope::Host)
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
    let by_if = AddressIndex::new(state);
    let of = |name: &str| by_if.of(name);
    let global = |name: &str| {
        let mut all = global_of(of(name), Family::Inet);
        all.extend(global_of(of(name), Family::Inet6));
        all
    };
    let mk = |name: &str, index: u32, ports: Vec<PortRef>| ScopedNic {
        ifname: name.to_string(),
        ifindex: index,
        rdma_ports: ports,
        addresses: [Family::Inet, Family::Inet6]
            .into_iter()
            .filter_map(|f| by_if.nic_address(name, f))
            .cloned()
            .collect(),
        global: global(name).into_iter().cloned().collect(),
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
        .filter(|i| !by_if.is_loopback(&i.name) && i.master.is_none())
        .collect();
    let mut by_net: BTreeMap<ipnet::IpNet, Vec<&str>> = BTreeMap::new();
    for i in &candidates {
        for a in global(&i.name) {
            let v = by_net.entry(a.network()).or_default();
            if !v.contains(&i.name.as_str()) {
                v.push(&i.name);
            }
        }
    }
    let chosen: std::collections::BTreeSet<&str> = by_net
        .values()
        .filter(|v| v.len() >= 2)
        .flatten()
        .copied()
        .collect();
    let nics: Vec<ScopedNic> = candidates
        .iter()
        .filter(|i| chosen.contains(i.name.as_str()))
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

/// The GID an address gets in a RoCE GID table: an IPv4 address IPv4-mapped
/// (`::ffff:198.18.0.11`), an IPv6 address itself (`ib_cache.c`'s
/// `rdma_ip2gid`).
pub fn gid_of(address: IpAddr) -> std::net::Ipv6Addr {
    match address {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// The GID index of the RoCE v2 GID of an IPv4 or IPv6 address on a port (the
/// lowest, should the table hold it twice), `None` when the table lacks it.
pub fn roce_v2_gid_index(port: &RdmaPort, address: IpAddr) -> Option<u32> {
    let gid = gid_of(address);
    port.gids
        .iter()
        .filter(|g| g.gid == gid && g.gid_type == Some(GidType::RoceV2))
        .map(|g| g.index)
        .min()
}

/// For every RoCE port of a NIC in scope that has a managed address: the GID
/// index of the RoCE v2 GID of its first one ([`roce_v2_gid_index`]; the IPv4
/// address when it has one, as `NCCL_IB_ADDR_FAMILY`'s default `AF_INET`
/// prefers, else the IPv6 one), or `None` when the table lacks it. Ports of
/// NICs without an address are left out.
pub fn roce_v2_gid_indices(state: &HostState) -> BTreeMap<PortRef, Option<u32>> {
    let mut out = BTreeMap::new();
    for nic in &nic_scope(state).nics {
        let Some(addr) = nic.addresses.first() else {
            continue;
        };
        for r in &nic.rdma_ports {
            let Some(p) = find_port(state, r) else {
                continue;
            };
            if p.is_roce() {
                out.insert(r.clone(), roce_v2_gid_index(p, addr.address));
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

/// A representative peer address in `addr`'s subnet or prefix: the lowest
/// resolved neighbour of that subnet on `ifname`, else on any interface, else
/// the subnet's first usable host, else its last, skipping local addresses
/// (for IPv6 the first and last addresses after the subnet-router anycast one).
/// `None` for a host route (/32, /128).
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
    let hosts: [IpAddr; 2] = match net {
        ipnet::IpNet::V4(n4) => {
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
            [lo.into(), hi.into()].map(|h: std::net::Ipv4Addr| IpAddr::V4(h))
        }
        ipnet::IpNet::V6(n6) => {
            if n6.prefix_len() >= 128 {
                return None;
            }
            let (lo, hi) = if n6.prefix_len() == 127 {
                (u128::from(n6.network()), u128::from(n6.broadcast()))
            } else {
                (
                    u128::from(n6.network()).saturating_add(1),
                    u128::from(n6.broadcast()),
                )
            };
            [lo.into(), hi.into()].map(|h: std::net::Ipv6Addr| IpAddr::V6(h))
        }
    };
    hosts.into_iter().find(|h| !local(h))
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

    fn addr(ifname: &str, cidr: &str) -> Address {
        let n: ipnet::IpNet = cidr.parse().unwrap();
        Address {
            ifname: ifname.into(),
            ifindex: 2,
            address: n.addr(),
            prefix_len: n.prefix_len(),
            scope: Scope::Universe,
            label: None,
            secondary: false,
            flags: Vec::new(),
        }
    }

    /// With no neighbour known, the IPv6 stand-in peer is the prefix's first
    /// address after the subnet-router anycast one, else its last, never this
    /// host's own; a known neighbour wins.
    #[test]
    fn the_representative_ipv6_peer_is_a_prefix_address_not_local() {
        let mut st = HostState::empty("h");
        let a = addr("r0", "fd00:198:18::10/64");
        st.addresses.push(a.clone());
        let peer = |st: &HostState| representative_peer(st, "r0", &a);
        assert_eq!(peer(&st), Some("fd00:198:18::1".parse().unwrap()));
        st.addresses.push(addr("r1", "fd00:198:18::1/64"));
        assert_eq!(
            peer(&st),
            Some("fd00:198:18::ffff:ffff:ffff:ffff".parse().unwrap())
        );
        st.neighbors.push(crate::model::Neighbor {
            ifname: "r0".into(),
            ifindex: 2,
            ip: "fd00:198:18::200".parse().unwrap(),
            mac: Some("02:00:00:00:02:00".parse().unwrap()),
            state: vec![crate::model::NeighState::Reachable],
            router: false,
        });
        assert_eq!(peer(&st), Some("fd00:198:18::200".parse().unwrap()));
        assert_eq!(
            representative_peer(&st, "r0", &addr("r0", "fd00::1/128")),
            None
        );
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["r10", "r2", "r1", "mlx5_10", "mlx5_9", "eth0"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["eth0", "mlx5_9", "mlx5_10", "r1", "r2", "r10"]);
    }
}
