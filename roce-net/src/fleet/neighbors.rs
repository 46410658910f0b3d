//! `fleet-neighbor-wrong-mac`: a peer's neighbour entry for another host's
//! address holds a MAC that is not the MAC of the NIC that owns the address.
//!
//! This is ARP flux seen from the peer (the seed's "ARP table pollution"): the
//! owner answered ARP for its NIC 2 address from NIC 1 (`arp_ignore=0`), or sent
//! an ARP request from NIC 1 with NIC 2's address as the sender (asymmetric
//! routing and `arp_announce=0`), and the peer now sends NIC 2's traffic to NIC
//! 1's MAC. RoCE v2 resolves the destination MAC from that same neighbour table,
//! so one such entry breaks every RDMA connection to that address. Neither host
//! alone can see it: the peer's table looks healthy on its own (one MAC per IP),
//! and the owner's own tables do not hold the entry. The finding carries the
//! evidence from both snapshots: the entry on the peer and the owner's NIC with
//! its real MAC, and which interface of which host the learned MAC belongs to.
//!
//! Only a learned MAC of another NIC of the owner is ARP flux on the owner. A MAC
//! of another host means that host answered for an address it does not hold
//! (proxy ARP, or it held the address before); a MAC no host has is a stale entry
//! (the address moved, a NIC was replaced) or a device outside the report. Those
//! are not the owner's doing, and the finding says so instead of blaming it.

use crate::doctor::{Finding, Severity, Subject};
use crate::model::{HostState, NeighState, Scope};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Check id.
pub const ID: &str = "fleet-neighbor-wrong-mac";

/// Where an address lives: host index, interface and that interface's MAC.
struct Owner<'a> {
    host: usize,
    ifname: &'a str,
    mac: String,
}

/// Findings for every neighbour entry, on any host, that maps another host's
/// address to a MAC other than the owning interface's. Addresses held by more
/// than one host are left to `fleet-duplicate-address`; entries without a MAC,
/// and INCOMPLETE, FAILED or NOARP ones, are skipped.
pub fn check(states: &[HostState], labels: &[String], out: &mut Vec<Finding>) {
    // Every universe-scope address with its owning interface's MAC.
    let mut owners: BTreeMap<IpAddr, Vec<Owner<'_>>> = BTreeMap::new();
    // Every interface MAC in the fleet: which host/interface has it.
    let mut mac_owners: BTreeMap<String, BTreeSet<(usize, String)>> = BTreeMap::new();
    for (h, s) in states.iter().enumerate() {
        for i in &s.interfaces {
            if let Some(m) = i.mac.as_ref().filter(|m| !m.is_zero()) {
                mac_owners
                    .entry(m.to_string())
                    .or_default()
                    .insert((h, format!("{}/{}", labels[h], i.name)));
            }
        }
        for a in &s.addresses {
            if a.ifname == "lo" || a.scope != Scope::Universe {
                continue;
            }
            let Some(mac) = s
                .interface(&a.ifname)
                .and_then(|i| i.mac.as_ref())
                .filter(|m| !m.is_zero() && !m.as_bytes().is_empty())
            else {
                continue;
            };
            owners.entry(a.address).or_default().push(Owner {
                host: h,
                ifname: &a.ifname,
                mac: mac.to_string(),
            });
        }
    }
    for (b, peer) in states.iter().enumerate() {
        for n in &peer.neighbors {
            let Some(learned) = n.mac.as_ref().filter(|m| !m.is_zero()) else {
                continue;
            };
            if !n.is_resolved() || n.state.contains(&NeighState::Noarp) {
                continue;
            }
            let Some(o) = owners.get(&n.ip) else {
                continue;
            };
            // One owner, another host: a duplicate address is another finding,
            // and an entry for a host's own address is the host's own business.
            let [owner] = o.as_slice() else {
                continue;
            };
            if owner.host == b {
                continue;
            }
            let learned = learned.to_string();
            if learned == owner.mac {
                continue;
            }
            let ohost = &labels[owner.host];
            let bhost = &labels[b];
            let holders = mac_owners.get(&learned);
            let belongs: Vec<String> = holders
                .map(|s| s.iter().map(|(_, l)| l.clone()).collect())
                .unwrap_or_default();
            let flux = holders.is_some_and(|s| s.iter().any(|(h, _)| *h == owner.host));
            // Linux answers a neighbour solicitation only on the NIC that
            // holds the target, so an IPv6 entry with another NIC's MAC comes
            // from A's egress: a solicitation or advertisement for that address
            // sent by another NIC carries that NIC's MAC as its link-layer
            // address. Per-NIC IPv6 routing fixes it; ARP sysctls do nothing.
            let (whose, cause) = if flux && n.ip.is_ipv6() {
                (
                    format!("the MAC of {}", belongs.join(", ")),
                    format!(
                        "wrong-NIC egress on {ohost}: its neighbour discovery for that \
                         address left by another NIC with that NIC's MAC; fix per-NIC IPv6 \
                         routing there (policy family both or ipv6)"
                    ),
                )
            } else if flux {
                (
                    format!("the MAC of {}", belongs.join(", ")),
                    format!(
                        "ARP flux on {ohost}: fix ARP there (policy arp_ignore 1, \
                         arp_announce 2, per-NIC routing)"
                    ),
                )
            } else if belongs.is_empty() {
                (
                    "a MAC no host in the fleet has".to_string(),
                    format!(
                        "not {ohost}'s doing: a stale entry (the address moved, or a NIC was \
                         replaced) or a device not in the report answered"
                    ),
                )
            } else {
                (
                    format!("the MAC of {}", belongs.join(", ")),
                    format!(
                        "not {ohost}'s doing: that host answered for an address it does not \
                         hold (proxy ARP), or held it before"
                    ),
                )
            };
            let del = super::on_state(
                peer,
                &format!(
                    "ip neigh del {} dev {}",
                    n.ip,
                    crate::model::ifname_word(&n.ifname)
                ),
            );
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    Subject {
                        host: Some(bhost.clone()),
                        interface: Some(n.ifname.clone()),
                        address: Some(n.ip.to_string()),
                        mac: Some(learned.clone()),
                        ..Default::default()
                    },
                    format!(
                        "{bhost}: the neighbour entry for {ip} on {dev} holds {learned}, \
                         {whose}, but {ip} is {ohost}/{oif} with MAC {omac}: traffic and \
                         RoCE connections from {bhost} to {ip} go to the wrong NIC ({cause}); \
                         flush the entry on {bhost}",
                        ip = n.ip,
                        dev = n.ifname,
                        oif = owner.ifname,
                        omac = owner.mac,
                    ),
                )
                .evidence(
                    "peer",
                    json!({
                        "host": bhost,
                        "interface": n.ifname,
                        "address": n.ip,
                        "mac": learned,
                        "state": n.state,
                    }),
                )
                .evidence(
                    "owner",
                    json!({
                        "host": ohost,
                        "interface": owner.ifname,
                        "address": n.ip,
                        "mac": owner.mac,
                    }),
                )
                .evidence("learned_mac_belongs_to", &belongs)
                .fix(
                    vec![del],
                    flux.then_some(if n.ip.is_ipv6() {
                        "family: both"
                    } else {
                        "arp: {arp_ignore: 1, arp_announce: 2}"
                    }),
                ),
            );
        }
    }
}
