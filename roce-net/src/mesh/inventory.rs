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

use super::result::{causes, NicSeen};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Family, HostState, Interface};
use crate::scope::{natural_cmp, AddressIndex, NicScope, ScopeMode};
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

/// A NIC in scope that has no address to probe on: left out of the
/// schedule (nothing can be sent from or to it) and named by the merge as a
/// `nic` fault with [`MeshUnprobedNic::cause`]. Under systemd-networkd's
/// defaults a NIC that loses its carrier loses its addresses, so a pulled
/// cable looks like this in the entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshUnprobedNic {
    /// Interface name.
    pub name: String,
    /// Why it cannot be probed: `link-down` (not operationally up),
    /// `no-address` (up, no address of the probed family), `absent` (asked
    /// for, no such interface).
    pub cause: String,
    /// The rail it would be on, when the host's other NICs tell (every
    /// addressed NIC of the host in one subnet, or [`RailBy::Index`]); else
    /// the merge takes the rail of the NICs of that name on other nodes.
    pub rail: Option<String>,
    /// It backs an RDMA port.
    pub rdma: bool,
    /// The NIC as the node saw it: state, carrier, MTU, MAC.
    pub seen: NicSeen,
    /// Every address it has (link-local ones, or another family's), as
    /// `address/prefix`: the evidence that it has none to probe on.
    pub addresses: Vec<String>,
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
    /// Its NICs in scope without an address to probe on (absent from the
    /// JSON when there are none, as in entries of earlier versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unprobed: Vec<MeshUnprobedNic>,
}

impl MeshNode {
    /// A node with these NICs.
    pub fn new(host: &str, nics: Vec<MeshNic>) -> MeshNode {
        MeshNode {
            host: host.to_string(),
            nics,
            unprobed: Vec::new(),
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
            if n.nics.len() + n.unprobed.len() > MESH_MAX_NICS {
                return bad(format!(
                    "mesh node {} has {} NICs, more than {MESH_MAX_NICS}",
                    n.host,
                    n.nics.len() + n.unprobed.len()
                ));
            }
            let mut names = BTreeSet::new();
            for u in &n.unprobed {
                if !crate::model::ifname_is_valid(u.name.as_bytes()) || !names.insert(&*u.name) {
                    return bad(format!(
                        "mesh node {}: unprobed NIC \"{}\" is not an interface name or is \
                         listed twice",
                        n.host,
                        crate::input::excerpt(&u.name, 64)
                    ));
                }
            }
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
/// probed on one address: of `family` when given (NICs with only the other
/// family's are left out), else its IPv4 one, or its IPv6 one when it has no
/// IPv4 (an IPv6 rail). A NIC in scope with no managed address at all is in
/// [`MeshNode::unprobed`]. [`mesh_node_with`] names NICs beyond the scope.
pub fn mesh_node(state: &HostState, rail_by: RailBy, family: Option<Family>) -> MeshNode {
    mesh_node_with(state, rail_by, family, &[])
}

/// [`mesh_node`], with `nics` (interface names: the rails a policy or an
/// inventory says the node has) in the entry besides the NICs in scope,
/// whether they have an address or not. This is what names a NIC without an
/// address where the scope cannot: on a host without RDMA devices the scope
/// is the NICs that share a subnet, and a NIC whose address is gone shares
/// none. A name with no such interface is unprobed with cause `absent`.
/// Without `nics`, such a host's entry lists instead its links that look like
/// its NICs in scope, have no address and are administratively up (same link
/// kind, same name but for its digits: `r1` like `r0`), so a NIC that lost
/// its address keeps its position and its siblings their rails.
pub fn mesh_node_with(
    state: &HostState,
    rail_by: RailBy,
    family: Option<Family>,
    nics: &[String],
) -> MeshNode {
    let scope = crate::scope::nic_scope(state);
    let mut probed = Vec::new();
    let mut unprobed = Vec::new();
    let mut names: Vec<&str> = scope.nics.iter().map(|n| n.ifname.as_str()).collect();
    let siblings;
    let nics = if nics.is_empty() {
        siblings = addressless_siblings(state, &scope);
        &siblings
    } else {
        nics
    };
    for n in nics {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names.sort_by(|a, b| natural_cmp(a, b));
    let rdma = crate::scope::rdma_netdevs(state);
    for name in names {
        let addresses = crate::scope::nic_addresses(state, name);
        let pick = |f: Family| addresses.iter().find(|a| Family::of(&a.address) == f);
        let a = match family {
            Some(f) => pick(f),
            None => pick(Family::Inet).or_else(|| pick(Family::Inet6)),
        };
        let iface = state.interface(name);
        let is_rdma = rdma.contains_key(name);
        if let Some(a) = a {
            probed.push(MeshNic {
                name: name.to_string(),
                address: a.address,
                prefix_len: a.prefix_len,
                mac: iface.and_then(|i| i.mac.as_ref()).map(|m| m.to_string()),
                mtu: iface.map_or(1500, |i| i.mtu),
                rail: String::new(),
                rdma: is_rdma,
            });
            continue;
        }
        if !addresses.is_empty() {
            // Only the other family's address: left out, as `family` asks.
            continue;
        }
        let seen = NicSeen::of(state, name);
        let cause = if iface.is_none() {
            causes::ABSENT
        } else if seen.is_down() {
            causes::LINK_DOWN
        } else {
            causes::NO_ADDRESS
        };
        unprobed.push(MeshUnprobedNic {
            name: name.to_string(),
            cause: cause.to_string(),
            rail: None,
            rdma: is_rdma,
            seen,
            addresses: state
                .addresses
                .iter()
                .filter(|a| a.ifname == name)
                .map(|a| format!("{}/{}", a.address, a.prefix_len))
                .collect(),
        });
    }
    assign_rails_with(&mut probed, &mut unprobed, rail_by);
    MeshNode {
        host: crate::fleet::fleet_host_label(state),
        nics: probed,
        unprobed,
    }
}

/// On a host without RDMA devices (the scope is the NICs that share a
/// subnet), its links that look like a NIC in scope and have no address: not
/// loopback, no bridge or bond member, no managed address of either family,
/// of the same link kind as a NIC in scope and with the same name once the
/// digits are taken out (`r1` like `r0`, `ens3f1np1` like `ens3f0np0`, never
/// `veth3a9c` or `docker0` like `r0`), and administratively up. That is the
/// NIC whose addresses networkd dropped when it lost its carrier: the link is
/// still there and still up (`IFF_UP`, no carrier), where a port nobody
/// configured (an uncabled second port) is normally left down. With RDMA
/// devices the scope lists such NICs itself; a host whose scope is empty has
/// nothing to compare with (empty).
fn addressless_siblings(state: &HostState, scope: &NicScope) -> Vec<String> {
    if scope.mode != ScopeMode::SharedSubnet {
        return Vec::new();
    }
    let shape = |i: &Interface| {
        (
            i.name.replace(|c: char| c.is_ascii_digit(), ""),
            i.kind.clone(),
        )
    };
    let shapes: BTreeSet<_> = scope
        .nics
        .iter()
        .filter_map(|n| state.interface(&n.ifname))
        .map(shape)
        .collect();
    let by_if = AddressIndex::new(state);
    state
        .interfaces
        .iter()
        .filter(|i| i.admin_up && i.master.is_none() && scope.get(&i.name).is_none())
        .filter(|i| !by_if.is_loopback(&i.name) && shapes.contains(&shape(i)))
        .filter(|i| {
            [Family::Inet, Family::Inet6]
                .iter()
                .all(|f| by_if.nic_address(&i.name, *f).is_none())
        })
        .map(|i| i.name.clone())
        .collect()
}

/// Name each NIC's rail (the NICs in scope order).
#[cfg(test)]
pub(crate) fn assign_rails(nics: &mut [MeshNic], rail_by: RailBy) {
    assign_rails_with(nics, &mut [], rail_by);
}

/// Name each NIC's rail, the unprobed NICs keeping their positions (in
/// natural name order, the scope's): a NIC whose address is gone must not
/// move its siblings to other rails. An unprobed NIC's rail is known when
/// every addressed NIC of the host is in one subnet (it is taken to be in it
/// too) or rails are by index.
fn assign_rails_with(nics: &mut [MeshNic], unprobed: &mut [MeshUnprobedNic], rail_by: RailBy) {
    let subnet = |n: &MeshNic| {
        ipnet::IpNet::new(n.address, n.prefix_len)
            .map(|x| x.trunc().to_string())
            .unwrap_or_else(|_| n.address.to_string())
    };
    let mut per_subnet: BTreeMap<String, usize> = BTreeMap::new();
    for n in nics.iter() {
        *per_subnet.entry(subnet(n)).or_default() += 1;
    }
    let shared = match (per_subnet.len(), per_subnet.iter_mut().next()) {
        (1, Some((s, count))) => {
            *count += unprobed.len();
            Some(s.clone())
        }
        _ => None,
    };
    // Scope order: natural name order, as `nic_scope` gives it.
    let mut order: Vec<(String, Option<usize>, Option<usize>)> = nics
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), Some(i), None))
        .chain(
            unprobed
                .iter()
                .enumerate()
                .map(|(i, u)| (u.name.clone(), None, Some(i))),
        )
        .collect();
    order.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (_, probed, missing)) in order.into_iter().enumerate() {
        let s = match (probed, &shared) {
            (Some(p), _) => Some(subnet(&nics[p])),
            (None, shared) => shared.clone(),
        };
        let rail = match (rail_by, s) {
            (RailBy::Index, _) => Some(format!("#{i}")),
            (_, None) => None,
            (RailBy::Subnet, Some(s)) => Some(s),
            (RailBy::Auto, Some(s)) => {
                let k = seen.entry(s.clone()).or_default();
                *k += 1;
                if per_subnet.get(&s).copied().unwrap_or(0) > 1 {
                    Some(format!("{s}#{}", *k - 1))
                } else {
                    Some(s)
                }
            }
        };
        match (probed, missing) {
            (Some(p), _) => nics[p].rail = rail.unwrap_or_default(),
            (None, Some(m)) => unprobed[m].rail = rail,
            (None, None) => {}
        }
    }
}

/// Nodes in natural name order, each node's NICs in natural name order: the
/// order the schedule numbers them in, whatever order the inventory came in.
pub(crate) fn sorted(inv: &MeshInventory) -> MeshInventory {
    let mut nodes = inv.nodes.clone();
    nodes.sort_by(|a, b| natural_cmp(&a.host, &b.host));
    for n in &mut nodes {
        n.nics.sort_by(|a, b| natural_cmp(&a.name, &b.name));
        n.unprobed.sort_by(|a, b| natural_cmp(&a.name, &b.name));
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

    /// healthy.json (ens1..ens4, each an RDMA port's netdev, in one /24)
    /// with ens2's cable pulled and its address gone (systemd-networkd drops
    /// a NIC's addresses when it loses its carrier) and ens3's address
    /// flushed, its link up.
    fn healthy() -> serde_json::Value {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/doctor/healthy.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn two_nics_without_addresses() -> HostState {
        let mut v = healthy();
        for i in v["interfaces"].as_array_mut().unwrap() {
            if i["name"] == "ens2" {
                i["oper_state"] = "DOWN".into();
                i["carrier"] = false.into();
            }
        }
        v["addresses"]
            .as_array_mut()
            .unwrap()
            .retain(|a| a["ifname"] != "ens2" && a["ifname"] != "ens3");
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn rdma_nics_without_an_address_are_in_the_entry_and_keep_their_rails() {
        let st = two_nics_without_addresses();
        let node = mesh_node(&st, RailBy::Auto, None);
        let probed: Vec<(&str, &str)> = node
            .nics
            .iter()
            .map(|n| (n.name.as_str(), n.rail.as_str()))
            .collect();
        // ens4 stays on rail #3: the NICs without an address keep their
        // positions, so no NIC moves to another NIC's switch.
        assert_eq!(
            probed,
            [("ens1", "198.18.0.0/24#0"), ("ens4", "198.18.0.0/24#3")]
        );
        let unprobed: Vec<(&str, &str, Option<&str>)> = node
            .unprobed
            .iter()
            .map(|u| (u.name.as_str(), u.cause.as_str(), u.rail.as_deref()))
            .collect();
        assert_eq!(
            unprobed,
            [
                ("ens2", "link-down", Some("198.18.0.0/24#1")),
                ("ens3", "no-address", Some("198.18.0.0/24#2"))
            ]
        );
        let ens2 = &node.unprobed[0];
        assert!(ens2.rdma);
        assert_eq!(ens2.seen.carrier, Some(false));
        assert_eq!(ens2.seen.oper_state.as_deref(), Some("DOWN"));
        assert!(ens2.addresses.is_empty(), "{:?}", ens2.addresses);
        let by_index = mesh_node(&st, RailBy::Index, None);
        assert_eq!(by_index.nics[1].rail, "#3");
        assert_eq!(by_index.unprobed[0].rail.as_deref(), Some("#1"));
        // A name beyond the scope: in the entry, `absent` when it is not there.
        let asked = mesh_node_with(&st, RailBy::Auto, None, &["ens9".to_string()]);
        assert_eq!(asked.unprobed.last().unwrap().cause, "absent");
        assert_eq!(
            asked.unprobed.last().unwrap().rail.as_deref(),
            Some("198.18.0.0/24#4")
        );
        // The JSON of an entry without such NICs is as before; old entries read.
        let full = mesh_node(
            &serde_json::from_value(healthy()).unwrap(),
            RailBy::Auto,
            None,
        );
        let text = serde_json::to_string(&full).unwrap();
        assert!(!text.contains("unprobed"), "{text}");
        let back: MeshNode = serde_json::from_str(&text).unwrap();
        assert_eq!(back, full);
        assert!(MeshInventory::new(vec![node]).validate().is_ok());
    }

    /// The same host without RDMA devices (a lab of veths, a node whose RDMA
    /// driver is not loaded): its scope is the NICs that share a subnet, which
    /// ens2 and ens3 no longer do. Their links are still there and look like
    /// their siblings, so they keep their positions; links that do not look
    /// like them (another name, another kind) are not NICs of the mesh, nor is
    /// one that is administratively down (a port nobody configured).
    #[test]
    fn without_rdma_nics_that_lost_their_address_keep_their_positions() {
        let mut v = serde_json::to_value(two_nics_without_addresses()).unwrap();
        v["rdma"] = serde_json::json!([]);
        let ens1 = v["interfaces"][2].clone();
        assert_eq!(ens1["name"], "ens1");
        for (name, kind, up) in [
            ("eno2", None, true),
            ("ens9", Some("veth"), true),
            ("veth3a9c", Some("veth"), true),
            ("ens5", None, false),
        ] {
            let mut i = ens1.clone();
            i["name"] = name.into();
            i["kind"] = serde_json::json!(kind);
            i["admin_up"] = up.into();
            if !up {
                i["oper_state"] = "DOWN".into();
                i["carrier"] = false.into();
            }
            v["interfaces"].as_array_mut().unwrap().push(i);
        }
        let st: HostState = serde_json::from_value(v).unwrap();
        assert_eq!(crate::scope::nic_scope(&st).names(), ["ens1", "ens4"]);
        let node = mesh_node(&st, RailBy::Auto, None);
        let rails = |n: &MeshNode| -> Vec<(String, String)> {
            n.nics
                .iter()
                .map(|n| (n.name.clone(), n.rail.clone()))
                .chain(
                    n.unprobed
                        .iter()
                        .map(|u| (u.name.clone(), format!("{:?} {}", u.rail, u.cause))),
                )
                .collect()
        };
        assert_eq!(
            rails(&node),
            [
                ("ens1".into(), "198.18.0.0/24#0".into()),
                ("ens4".into(), "198.18.0.0/24#3".into()),
                ("ens2".into(), "Some(\"198.18.0.0/24#1\") link-down".into()),
                ("ens3".into(), "Some(\"198.18.0.0/24#2\") no-address".into()),
            ] as [(String, String); 4]
        );
        assert!(!node.unprobed[0].rdma);
        // `--nic` names the rails instead: the look-alikes are not added.
        let asked = mesh_node_with(&st, RailBy::Auto, None, &["ens3".to_string()]);
        let names: Vec<&str> = asked.unprobed.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["ens3"]);
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
