//! The fleet never claims a majority it does not have, and says from which side
//! a host differs: a 4-NIC host beside an 8-NIC one (a 1:1 tie) names both
//! without calling either right; an 8-NIC host among 4-NIC ones is told it has
//! more, not that a NIC is missing; a host beside a peer with no NIC in scope is
//! not told "most hosts have 0". The per-subnet count and MTU say it the same
//! way, and a neighbour entry whose MAC belongs to a third host does not blame
//! the address's owner for ARP flux.

use crate::doctor_support;

use doctor_support::{healthy, B};
use roce_net::{Finding, FleetReport, NeighState};
use serde_json::json;

fn with_id<'a>(r: &'a FleetReport, id: &str) -> Vec<&'a Finding> {
    r.findings.iter().filter(|f| f.id == id).collect()
}

fn of_host<'a>(fs: &[&'a Finding], host: &str) -> &'a Finding {
    fs.iter()
        .find(|f| f.subject.host.as_deref() == Some(host))
        .unwrap_or_else(|| panic!("no finding for {host}: {fs:#?}"))
}

/// `healthy` with `nics` RoCE NICs ens1.. in 198.18.0.0/24 (4 or 8), RDMA on each.
fn host(name: &str, base: u8, nics: u8) -> B {
    let mut b = healthy(name, base);
    for n in 4..nics {
        let ifname = format!("ens{}", n + 1);
        let mac = format!("02:00:00:00:{base:02x}:{:02x}", n + 0x10);
        b.nic(&ifname, u32::from(n) + 3, &mac, 9000);
        let a = format!("198.18.0.{}", base + n);
        b.addr(&ifname, &format!("{a}/24"));
        let table = 1001 + u32::from(n);
        b.route(&format!(
            "table {table} 198.18.0.0/24 dev {ifname} proto 201 scope link src {a}"
        ));
        b.rule(&format!("pref {table} from {a} lookup {table} proto 201"));
        b.rdma(&format!("mlx5_{n}"), &ifname);
    }
    b
}

/// No majority claimed, nobody told a NIC is missing for having more.
fn no_false_claims(f: &Finding) {
    assert!(!f.message.contains("most hosts have"), "{}", f.message);
    assert!(!f.message.contains("most hosts ("), "{}", f.message);
    assert!(!f.evidence.contains_key("majority"), "{f:#?}");
}

#[test]
fn a_4_nic_and_an_8_nic_host_are_both_named_and_neither_is_called_right() {
    let r = roce_net::fleet_report(&[host("host4", 11, 4).0, host("host8", 31, 8).0]);
    let f = with_id(&r, "fleet-nic-count-differs");
    assert_eq!(f.len(), 2, "{:#?}", r.findings);
    let (h4, h8) = (of_host(&f, "host4"), of_host(&f, "host8"));
    for f in [h4, h8] {
        no_false_claims(f);
        assert!(
            f.message
                .contains("no value is held by more hosts than the others"),
            "{}",
            f.message
        );
        assert!(f.message.contains("4: host4; 8: host8"), "{}", f.message);
        assert_eq!(f.evidence["tied"], json!([4, 8]));
        // Diagnostics only: nothing here adds a NIC.
        assert!(f.remediation.commands.is_empty(), "{f:#?}");
        assert_eq!(
            f.remediation.checks,
            vec![
                format!("ssh {} rdma link show", f.subject.host.as_deref().unwrap()),
                format!("ssh {} ip -br link", f.subject.host.as_deref().unwrap())
            ]
        );
    }
    assert!(h4.message.contains("fewer here"), "{}", h4.message);
    assert!(h8.message.contains("more here"), "{}", h8.message);
    assert!(
        !h8.message.contains("missing or down on this host"),
        "{}",
        h8.message
    );
    assert_eq!(h8.evidence["value"], json!(8));

    // The per-subnet count: the same tie, the same words.
    let s = with_id(&r, "fleet-subnet-nic-count-differs");
    assert_eq!(s.len(), 2, "{:#?}", r.findings);
    for f in &s {
        no_false_claims(f);
    }
    assert!(of_host(&s, "host8").message.contains("more here"));
    assert!(of_host(&s, "host4").message.contains("fewer here"));
}

#[test]
fn an_8_nic_host_among_4_nic_hosts_is_told_it_has_more() {
    let r = roce_net::fleet_report(&[host("a", 11, 4).0, host("b", 21, 4).0, host("c", 31, 8).0]);
    let f = with_id(&r, "fleet-nic-count-differs");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    let c = f[0];
    assert_eq!(c.subject.host.as_deref(), Some("c"));
    assert!(
        c.message.contains("most hosts (2 of 3) have 4"),
        "{}",
        c.message
    );
    assert!(c.message.contains("more here"), "{}", c.message);
    assert!(
        !c.message.contains("missing or down on this host"),
        "{}",
        c.message
    );
    assert_eq!(c.evidence["majority"], json!(4));
    assert_eq!(c.evidence["most_common"], json!(4));
    let s = with_id(&r, "fleet-subnet-nic-count-differs");
    assert_eq!(s.len(), 1, "{:#?}", r.findings);
    assert!(s[0].message.contains("more here"), "{}", s[0].message);
    assert!(
        s[0].message
            .contains("most hosts serving 198.18.0.0/24 (2 of 3) have 4"),
        "{}",
        s[0].message
    );

    // A 4-NIC host among 8-NIC ones: fewer, a NIC missing here.
    let r = roce_net::fleet_report(&[host("a", 11, 8).0, host("b", 21, 8).0, host("c", 31, 4).0]);
    let f = with_id(&r, "fleet-nic-count-differs");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert!(f[0].message.contains("fewer here"), "{}", f[0].message);
    assert!(
        f[0].message
            .contains("a NIC is missing, down or out of scope"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_host_beside_a_peer_with_no_nic_in_scope_is_not_told_most_have_0() {
    let mut empty = B::new("bare");
    empty.nic("eno1", 2, "02:00:00:00:00:09", 1500);
    empty.addr("eno1", "198.19.0.9/24");
    let r = roce_net::fleet_report(&[host("host4", 11, 4).0, empty.0]);
    let f = with_id(&r, "fleet-nic-count-differs");
    assert_eq!(f.len(), 2, "{:#?}", r.findings);
    for f in &f {
        no_false_claims(f);
    }
    let bare = of_host(&f, "bare");
    assert!(
        bare.message.contains("no NIC is in scope"),
        "{}",
        bare.message
    );
    assert!(of_host(&f, "host4").message.contains("more here"));
}

#[test]
fn other_comparisons_name_both_sides_of_a_tie_and_propose_no_value() {
    let a = host("a", 11, 4);
    let mut b = host("b", 31, 4);
    for n in 1..=4 {
        b.iface_mut(&format!("ens{n}")).mtu = 4200;
    }
    let r = roce_net::fleet_report(&[a.0, b.0]);
    let f = with_id(&r, "fleet-mtu-differs");
    assert_eq!(f.len(), 2, "{:#?}", r.findings);
    for f in &f {
        no_false_claims(f);
        // Which MTU is right is not the tool's to say on a tie.
        assert!(f.remediation.commands.is_empty(), "{f:#?}");
        assert!(!f.remediation.checks.is_empty(), "{f:#?}");
    }
    let s = with_id(&r, "fleet-subnet-mtu-differs");
    assert_eq!(
        s.len(),
        8,
        "every NIC of the split segment: {:#?}",
        r.findings
    );
    for f in &s {
        assert!(
            f.message.contains("no value is held by more NICs on"),
            "{}",
            f.message
        );
        assert!(f.remediation.commands.is_empty(), "{f:#?}");
    }
}

#[test]
fn a_learned_mac_of_a_third_host_does_not_blame_the_owner_for_arp_flux() {
    let a = healthy("gpu1", 11);
    let mut b = healthy("gpu2", 21);
    let c = healthy("gpu3", 31);
    // gpu2 learned gpu1's ens2 address with gpu3's ens1 MAC.
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:1f:10"),
        NeighState::Reachable,
    );
    let r = roce_net::fleet_report(&[a.0.clone(), b.0.clone(), c.0]);
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert!(
        !f[0].message.contains("ARP flux on gpu1"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("not gpu1's doing"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("the MAC of gpu3/ens1"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].remediation.policy, None, "gpu1's ARP is not the cause");
    assert_eq!(
        f[0].remediation.commands,
        vec!["ssh gpu2 ip neigh del 198.18.0.12 dev ens1"]
    );

    // A MAC nobody has: a stale entry, not gpu1's flux either.
    let mut b = healthy("gpu2", 21);
    b.neigh(
        "ens1",
        "198.18.0.12",
        Some("02:00:00:00:ee:ee"),
        NeighState::Stale,
    );
    let r = roce_net::fleet_report(&[a.0.clone(), b.0]);
    let f = with_id(&r, "fleet-neighbor-wrong-mac");
    assert!(f[0].message.contains("a stale entry"), "{}", f[0].message);
    assert!(
        !f[0].message.contains("ARP flux on gpu1"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].remediation.policy, None);
}
