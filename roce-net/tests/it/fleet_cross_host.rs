//! Cross-host checks that need hosts sharing a subnet: a peer's neighbour entry
//! holding the wrong NIC's MAC, NIC count and MTU per subnet, host labels.

use crate::doctor_support;

use doctor_support::{healthy, B};
use roce_net::{Finding, NeighState, Severity};
use serde_json::json;

fn with_id<'a>(r: &'a roce_net::FleetReport, id: &str) -> Vec<&'a Finding> {
    r.findings.iter().filter(|f| f.id == id).collect()
}

/// gpu1's NICs ens1..ens4 are 198.18.0.11..14 with MACs 02:00:00:00:0b:10..13;
/// gpu2's are .21..24. `healthy` builds them with good sysctls and per-NIC tables.
fn pair() -> (B, B) {
    (healthy("gpu1", 11), healthy("gpu2", 21))
}

#[test]
fn peer_entry_with_another_rails_mac_is_an_error_with_both_sides_evidence() {
    let (a, mut b) = pair();
    // gpu2 learned gpu1's ens2 address (198.18.0.12) with gpu1's ens1 MAC.
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:0b:10"),
        NeighState::Reachable,
    );
    // Entries with the right MAC, unresolved ones and unknown addresses are fine.
    b.neigh(
        "ens2",
        "198.18.0.13",
        Some("02:00:00:00:0b:12"),
        NeighState::Stale,
    );
    b.neigh("ens3", "198.18.0.14", None, NeighState::Failed);
    b.neigh(
        "ens3",
        "198.18.0.99",
        Some("02:00:00:00:99:99"),
        NeighState::Reachable,
    );
    let r = roce_net::fleet_report(&[a.0.clone(), b.0.clone()]);
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    let f = f[0];
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.subject.host.as_deref(), Some("gpu2"));
    assert_eq!(f.subject.interface.as_deref(), Some("ens1"));
    assert_eq!(f.subject.address.as_deref(), Some("198.18.0.12"));
    assert_eq!(f.subject.mac.as_deref(), Some("02:00:00:00:0b:10"));
    assert_eq!(
        f.evidence["peer"],
        json!({"host": "gpu2", "interface": "ens1", "address": "198.18.0.12",
               "mac": "02:00:00:00:0b:10", "state": ["REACHABLE"]})
    );
    assert_eq!(
        f.evidence["owner"],
        json!({"host": "gpu1", "interface": "ens2", "address": "198.18.0.12",
               "mac": "02:00:00:00:0b:11"})
    );
    assert_eq!(f.evidence["learned_mac_belongs_to"], json!(["gpu1/ens1"]));
    assert!(f.message.contains("the MAC of gpu1/ens1"), "{}", f.message);
    assert_eq!(
        f.remediation.commands,
        vec!["ssh gpu2 ip neigh del 198.18.0.12 dev ens1"]
    );
    // Neither host's own doctor sees it: one MAC per IP, no local MAC.
    assert!(roce_net::polluted_neighbors(&b.0, &["ens1".to_string()]).is_empty());
    // Errors sort first.
    assert_eq!(r.findings[0].id, "fleet-neighbor-wrong-mac");
}

/// On an IPv6 rail the same pollution comes from the owner's egress, not
/// from ARP: Linux answers a neighbour solicitation only on the NIC holding
/// the target, but a solicitation for `::12` sent out of ens1 carries ens1's
/// MAC, and the peer learns it. The finding says so and points at per-NIC
/// IPv6 routing, not at ARP sysctls that do nothing for IPv6; the flush
/// command runs as printed (`ip neigh del` takes either family).
#[test]
fn peer_nd_entry_with_another_nics_mac_blames_the_owners_ipv6_egress() {
    let (mut a, mut b) = pair();
    for (h, base) in [(&mut a, 0x11u8), (&mut b, 0x21)] {
        for n in 0..2u8 {
            h.addr(
                &format!("ens{}", n + 1),
                &format!("fd00:198:18::{:x}/64", base + n),
            );
        }
    }
    // gpu2 learned gpu1's ens2 address fd00:198:18::12 with gpu1's ens1 MAC;
    // its entry for ::11 is right.
    b.neigh(
        "ens1",
        "fd00:198:18::12",
        Some("02:00:00:00:0b:10"),
        NeighState::Stale,
    );
    b.neigh(
        "ens1",
        "fd00:198:18::11",
        Some("02:00:00:00:0b:10"),
        NeighState::Reachable,
    );
    let r = roce_net::fleet_report(&[a.0, b.0]);
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    let f = f[0];
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.subject.host.as_deref(), Some("gpu2"));
    assert_eq!(f.subject.address.as_deref(), Some("fd00:198:18::12"));
    assert_eq!(
        f.evidence["owner"],
        json!({"host": "gpu1", "interface": "ens2", "address": "fd00:198:18::12",
               "mac": "02:00:00:00:0b:11"})
    );
    assert_eq!(f.evidence["learned_mac_belongs_to"], json!(["gpu1/ens1"]));
    assert!(
        f.message.contains("wrong-NIC egress on gpu1") && !f.message.contains("ARP"),
        "{}",
        f.message
    );
    assert_eq!(
        f.remediation.commands,
        vec!["ssh gpu2 ip neigh del fd00:198:18::12 dev ens1"]
    );
    assert_eq!(f.remediation.policy.as_deref(), Some("family: both"));
}

#[test]
fn unknown_mac_is_reported_as_such_and_a_clean_table_is_silent() {
    let (a, mut b) = pair();
    b.neigh(
        "ens1",
        "198.18.0.11",
        Some("02:00:00:00:0b:10"),
        NeighState::Reachable,
    );
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:0b:11"),
        NeighState::Delay,
    );
    let clean = roce_net::fleet_report(&[a.0.clone(), b.0.clone()]);
    assert!(clean.findings.is_empty(), "{:#?}", clean.findings);

    b.neigh(
        "ens4",
        "198.18.0.14",
        Some("02:00:00:00:ee:ee"),
        NeighState::Stale,
    );
    let r = roce_net::fleet_report(&[a.0, b.0]);
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].evidence["learned_mac_belongs_to"], json!([]));
    assert!(
        f[0].message.contains("a MAC no host in the fleet has"),
        "{}",
        f[0].message
    );
}

#[test]
fn duplicate_addresses_are_left_to_the_duplicate_check() {
    let (mut a, mut b) = pair();
    let mut c = healthy("gpu3", 31);
    // gpu3 also holds 198.18.0.12: any MAC gpu2 learned is someone's.
    c.addr("eno1", "198.18.0.12/24");
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:1f:10"),
        NeighState::Reachable,
    );
    a.neigh(
        "ens1",
        "198.18.0.21",
        Some("02:00:00:00:15:10"),
        NeighState::Reachable,
    );
    let r = roce_net::fleet_report(&[a.0, b.0, c.0]);
    assert!(
        with_id(&r, "fleet-neighbor-wrong-mac").is_empty(),
        "{:#?}",
        r.findings
    );
    assert_eq!(with_id(&r, "fleet-duplicate-address").len(), 1);
}

#[test]
fn a_host_serving_the_subnet_with_fewer_nics_is_named() {
    let (a, b) = pair();
    let mut c = B::new("gpu3");
    c.good_sysctls();
    for n in 0..3u8 {
        let name = format!("ens{}", n + 1);
        c.nic(
            &name,
            u32::from(n) + 3,
            &format!("02:00:00:00:1f:{n:02x}"),
            9000,
        );
        c.addr(&name, &format!("198.18.0.{}/24", 31 + n));
        c.rdma(&format!("mlx5_{n}"), &name);
    }
    let r = roce_net::fleet_report(&[a.0, b.0, c.0]);
    let f = with_id(&r, "fleet-subnet-nic-count-differs");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!(f[0].subject.host.as_deref(), Some("gpu3"));
    assert_eq!(f[0].subject.address.as_deref(), Some("198.18.0.0/24"));
    assert_eq!(f[0].evidence["value"], json!(3));
    assert_eq!(f[0].evidence["majority"], json!(4));
    assert_eq!(f[0].evidence["nics"], json!(["ens1", "ens2", "ens3"]));
    assert_eq!(
        f[0].evidence["hosts"],
        json!({"gpu1": 4, "gpu2": 4, "gpu3": 3})
    );
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn a_nic_with_another_mtu_on_the_subnet_is_named_per_nic() {
    let (a, mut b) = pair();
    b.iface_mut("ens3").mtu = 1500;
    let c = healthy("gpu3", 31);
    let r = roce_net::fleet_report(&[a.0, b.0, c.0]);
    let f = with_id(&r, "fleet-subnet-mtu-differs");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!(f[0].subject.host.as_deref(), Some("gpu2"));
    assert_eq!(f[0].subject.interface.as_deref(), Some("ens3"));
    assert_eq!(f[0].evidence["value"], json!(1500));
    assert_eq!(f[0].evidence["majority"], json!(9000));
    assert_eq!(f[0].evidence["nics"]["gpu2/ens3"], json!(1500));
    assert_eq!(f[0].evidence["nics"]["gpu1/ens1"], json!(9000));
    assert_eq!(
        f[0].remediation.commands,
        vec!["ssh gpu2 ip link set dev ens3 mtu 9000"]
    );
    assert!(
        f[0].message.contains("frames larger than 1500"),
        "{}",
        f[0].message
    );
}

#[test]
fn hosts_in_namespaces_are_named_host_colon_netns() {
    let (mut a, mut b) = pair();
    a.0.hostname = "lab".into();
    a.0.netns = Some("rnt-x-h1".into());
    b.0.hostname = "lab".into();
    b.0.netns = Some("rnt-x-h2".into());
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:0b:10"),
        NeighState::Reachable,
    );
    assert_eq!(roce_net::fleet_host_label(&a.0), "lab:rnt-x-h1");
    let r = roce_net::fleet_report(&[a.0, b.0]);
    assert_eq!(r.hosts[0].hostname, "lab:rnt-x-h1");
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject.host.as_deref(), Some("lab:rnt-x-h2"));
    assert_eq!(
        f[0].remediation.commands,
        vec!["ssh lab ip -n rnt-x-h2 neigh del 198.18.0.12 dev ens1"]
    );
}
