//! What the mesh probes: every node's NICs in scope, with the address, MAC,
//! MTU and rail of each ([`MeshInventory`]), read from snapshots
//! ([`mesh_node`]) or written by hand.
//!
//! **Rails.** A NIC probes peers on its own rail. With [`RailBy::Auto`] a NIC's
//! rail is its subnet when it is the host's only NIC in that subnet (the
//! rail-optimised layout: rail `k` is one subnet, one switch), and its subnet
//! plus its position among the host's NICs in that subnet when several share
//! it (the layout of a GPU node with every NIC in one subnet: NIC `k` of every
//! host is on switch `k`): `198.18.0.0/16#2` is the third NIC of each host in
//! 198.18.0.0/16. [`RailBy::Subnet`] puts every NIC of a subnet on one rail,
//! [`RailBy::Index`] the `k`-th NIC of every host on rail `#k` whatever its
//! subnet.

use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, HostState};
use crate::scope::natural_cmp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Most nodes one mesh plan holds.
pub const MESH_MAX_NODES: usize = 100_000;
/// Most NICs of one node in a mesh plan.
pub const MESH_MAX_NICS: usize = 64;

/// How NICs are grouped into rails (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RailBy {
    /// The subnet, plus the NIC's position among the host's NICs of that
    /// subnet when the host has several in it.
    #[default]
    Auto,
    /// The subnet alone.
    Subnet,
    /// The NIC's position among the host's NICs, whatever its subnet.
    Index,
}

/// One NIC of a mesh node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshNic {
    /// Interface name.
    pub name: String,
    /// The address probes go to and come from (the NIC's managed address).
    pub address: IpAddr,
    /// Its prefix length.
    pub prefix_len: u8,
    /// The NIC's MAC, which a neighbour answer for `address` must carry.
    pub mac: Option<String>,
    /// The NIC's MTU (the size of the large IP probe is the smaller of both
    /// ends' MTUs).
    pub mtu: u32,
    /// The rail it probes on (see the module docs).
    pub rail: String,
    /// It backs an RDMA port: the RDMA level applies.
    pub rdma: bool,
}

impl MeshNic {
    /// A NIC with the given name, address and rail; no MAC, MTU 1500, no RDMA.
    pub fn new(name: &str, address: IpAddr, prefix_len: u8, rail: &str) -> MeshNic {
        MeshNic {
            name: name.to_string(),
            address,
            prefix_len,
            mac: None,
            mtu: 1500,
            rail: rail.to_string(),
            rdma: false,
        }
    }
}

/// One node (host) of the mesh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshNode {
    /// How the node is named: [`crate::fleet_host_label`] of its snapshot
    /// (`hostname`, or `hostname:netns` in a lab). A node's run finds itself
    /// in the plan by this name.
    pub host: String,
    /// Its NICs in scope that have an address, in scope order.
    pub nics: Vec<MeshNic>,
}

impl MeshNode {
    /// A node with these NICs.
    pub fn new(host: &str, nics: Vec<MeshNic>) -> MeshNode {
        MeshNode {
            host: host.to_string(),
            nics,
        }
    }

    /// Look a NIC up by name.
    pub fn nic(&self, name: &str) -> Option<&MeshNic> {
        self.nics.iter().find(|n| n.name == name)
    }
}

/// Every node of the mesh.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshInventory {
    /// The nodes.
    pub nodes: Vec<MeshNode>,
}

impl MeshInventory {
    /// An inventory of these nodes.
    pub fn new(nodes: Vec<MeshNode>) -> MeshInventory {
        MeshInventory { nodes }
    }

    /// One node per snapshot ([`mesh_node`]).
    pub fn from_states<'a>(
        states: impl IntoIterator<Item = &'a HostState>,
        rail_by: RailBy,
        family: Option<Family>,
    ) -> MeshInventory {
        MeshInventory {
            nodes: states
                .into_iter()
                .map(|s| mesh_node(s, rail_by, family))
                .collect(),
        }
    }

    /// Check what a plan relies on: host names unique and not empty, NIC names
    /// unique per node, every address once in the whole inventory (a
    /// duplicate cannot be probed: who answers is not defined), bounded sizes.
    /// `InvalidInput` naming the first problem.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidInput, m));
        if self.nodes.len() > MESH_MAX_NODES {
            return bad(format!(
                "the mesh inventory has {} nodes, more than {MESH_MAX_NODES}",
                self.nodes.len()
            ));
        }
        let mut hosts = BTreeSet::new();
        let mut addrs: BTreeMap<IpAddr, (&str, &str)> = BTreeMap::new();
        for n in &self.nodes {
            if n.host.is_empty() || n.host.len() > 255 || n.host.chars().any(char::is_control) {
                return bad(format!(
                    "mesh node name \"{}\": give 1 to 255 printable characters",
                    crate::input::excerpt(&n.host, 64)
                ));
            }
            if !hosts.insert(n.host.as_str()) {
                return bad(format!(
                    "mesh node {} is listed twice: every node once (lab hosts are named \
                     hostname:netns)",
                    n.host
                ));
            }
            if n.nics.len() > MESH_MAX_NICS {
                return bad(format!(
                    "mesh node {} has {} NICs, more than {MESH_MAX_NICS}",
                    n.host,
                    n.nics.len()
                ));
            }
            let mut names = BTreeSet::new();
            for nic in &n.nics {
                if !crate::model::ifname_is_valid(nic.name.as_bytes()) {
                    return bad(format!(
                        "mesh node {}: \"{}\" is not an interface name",
                        n.host,
                        crate::input::excerpt(&nic.name, 64)
                    ));
                }
                if !names.insert(nic.name.as_str()) {
                    return bad(format!(
                        "mesh node {}: NIC {} listed twice",
                        n.host, nic.name
                    ));
                }
                let max_prefix = if nic.address.is_ipv4() { 32 } else { 128 };
                if nic.prefix_len > max_prefix {
                    return bad(format!(
                        "mesh node {} NIC {}: prefix length {} is more than {max_prefix}",
                        n.host, nic.name, nic.prefix_len
                    ));
                }
                if nic.rail.is_empty() || nic.rail.len() > 128 {
                    return bad(format!(
                        "mesh node {} NIC {}: the rail name must have 1 to 128 characters",
                        n.host, nic.name
                    ));
                }
                if !(68..=65535).contains(&nic.mtu) {
                    return bad(format!(
                        "mesh node {} NIC {}: MTU {} is not an IP MTU (68 to 65535)",
                        n.host, nic.name, nic.mtu
                    ));
                }
                if let Some((h, i)) = addrs.insert(nic.address, (&n.host, &nic.name)) {
                    return bad(format!(
                        "address {} is on {h} {i} and on {} {}: a mesh probes each address \
                         once; fix the duplicate first (roce-net fleet: \
                         fleet-duplicate-address)",
                        nic.address, n.host, nic.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The mesh node of a snapshot: the NICs in scope ([`crate::nic_scope`]) that
/// have a managed address, with their MAC, MTU, rail (`rail_by`) and whether
/// they back an RDMA port; named by [`crate::fleet_host_label`]. Each NIC is
/// probed on one address: of `family` when given (NICs without one are left
/// out), else its IPv4 one, or its IPv6 one when it has no IPv4 (an IPv6 rail).
pub fn mesh_node(state: &HostState, rail_by: RailBy, family: Option<Family>) -> MeshNode {
    let scope = crate::scope::nic_scope(state);
    let mut nics: Vec<MeshNic> = scope
        .nics
        .iter()
        .filter_map(|n| {
            let a = match family {
                Some(f) => n.address(f),
                None => n.address(Family::Inet).or_else(|| n.address(Family::Inet6)),
            }?;
            Some((n, a))
        })
        .map(|(n, a)| {
            let iface = state.interface(&n.ifname);
            MeshNic {
                name: n.ifname.clone(),
                address: a.address,
                prefix_len: a.prefix_len,
                mac: iface.and_then(|i| i.mac.as_ref()).map(|m| m.to_string()),
                mtu: iface.map_or(1500, |i| i.mtu),
                rail: String::new(),
                rdma: !n.rdma_ports.is_empty(),
            }
        })
        .collect();
    assign_rails(&mut nics, rail_by);
    MeshNode {
        host: crate::fleet::fleet_host_label(state),
        nics,
    }
}

/// Name each NIC's rail (the NICs in scope order).
pub(crate) fn assign_rails(nics: &mut [MeshNic], rail_by: RailBy) {
    let subnet = |n: &MeshNic| {
        ipnet::IpNet::new(n.address, n.prefix_len)
            .map(|x| x.trunc().to_string())
            .unwrap_or_else(|_| n.address.to_string())
    };
    let mut per_subnet: BTreeMap<String, usize> = BTreeMap::new();
    for n in nics.iter() {
        *per_subnet.entry(subnet(n)).or_default() += 1;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, n) in nics.iter_mut().enumerate() {
        let s = subnet(n);
        let k = seen.entry(s.clone()).or_default();
        n.rail = match rail_by {
            RailBy::Subnet => s,
            RailBy::Index => format!("#{i}"),
            RailBy::Auto if per_subnet.get(&s).copied().unwrap_or(0) > 1 => format!("{s}#{k}"),
            RailBy::Auto => s,
        };
        *k += 1;
    }
}

/// Nodes in natural name order, each node's NICs in natural name order: the
/// order the schedule numbers them in, whatever order the inventory came in.
pub(crate) fn sorted(inv: &MeshInventory) -> MeshInventory {
    let mut nodes = inv.nodes.clone();
    nodes.sort_by(|a, b| natural_cmp(&a.host, &b.host));
    for n in &mut nodes {
        n.nics.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    }
    MeshInventory { nodes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic(name: &str, ip: &str, plen: u8) -> MeshNic {
        MeshNic::new(name, ip.parse().unwrap(), plen, "")
    }

    #[test]
    fn auto_rails_are_subnets_or_the_position_within_a_shared_subnet() {
        let mut one_subnet = vec![
            nic("r0", "198.18.1.11", 16),
            nic("r1", "198.18.1.12", 16),
            nic("r2", "198.18.1.13", 16),
        ];
        assign_rails(&mut one_subnet, RailBy::Auto);
        let rails: Vec<&str> = one_subnet.iter().map(|n| n.rail.as_str()).collect();
        assert_eq!(
            rails,
            ["198.18.0.0/16#0", "198.18.0.0/16#1", "198.18.0.0/16#2"]
        );

        let mut per_rail = vec![
            nic("r0", "198.18.0.11", 24),
            nic("r1", "198.18.1.11", 24),
            nic("v0", "fd00:198:18:2::11", 64),
        ];
        assign_rails(&mut per_rail, RailBy::Auto);
        let rails: Vec<&str> = per_rail.iter().map(|n| n.rail.as_str()).collect();
        assert_eq!(
            rails,
            ["198.18.0.0/24", "198.18.1.0/24", "fd00:198:18:2::/64"]
        );

        assign_rails(&mut per_rail, RailBy::Index);
        let rails: Vec<&str> = per_rail.iter().map(|n| n.rail.as_str()).collect();
        assert_eq!(rails, ["#0", "#1", "#2"]);
        assign_rails(&mut one_subnet, RailBy::Subnet);
        assert!(one_subnet.iter().all(|n| n.rail == "198.18.0.0/16"));
    }

    #[test]
    fn validate_names_duplicates_and_bad_values() {
        let node = |h: &str, ip: &str| {
            let mut n = nic("r0", ip, 24);
            n.rail = "x".into();
            MeshNode::new(h, vec![n])
        };
        assert!(
            MeshInventory::new(vec![node("a", "198.18.0.1"), node("b", "198.18.0.2")])
                .validate()
                .is_ok()
        );
        let e = MeshInventory::new(vec![node("a", "198.18.0.1"), node("a", "198.18.0.2")])
            .validate()
            .unwrap_err();
        assert!(e.message().contains("listed twice"), "{e}");
        let e = MeshInventory::new(vec![node("a", "198.18.0.1"), node("b", "198.18.0.1")])
            .validate()
            .unwrap_err();
        assert!(e.message().contains("on a r0 and on b r0"), "{e}");
        let mut n = node("a", "198.18.0.1");
        n.nics[0].mtu = 12;
        let e = MeshInventory::new(vec![n]).validate().unwrap_err();
        assert!(e.message().contains("MTU 12"), "{e}");
    }
}
