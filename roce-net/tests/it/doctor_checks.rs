//! Every doctor check against a committed HostState fixture that triggers it, and
//! the healthy fixture that triggers none. The fixtures are produced by the builders
//! below and compared with the committed JSON (a missing one fails; `UPDATE_GOLDEN=1` rewrites them).

use crate::doctor_support;

use doctor_support::{golden, healthy, ip, B};
use roce_net::{ConfKey, GidType, HostState, NeighState};
use roce_net::{Finding, Severity};
use serde_json::json;
use std::collections::BTreeSet;

fn ids(f: &[Finding]) -> BTreeSet<&str> {
    f.iter().map(|x| x.id.as_str()).collect()
}

fn only<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    f.iter().filter(|x| x.id == id).collect()
}

fn one<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
    let v = only(f, id);
    assert_eq!(v.len(), 1, "expected one {id} finding, got {v:#?}");
    v[0]
}

fn fixture(name: &str, b: B) -> HostState {
    golden(name, &b.0)
}

fn base() -> B {
    healthy("gpu1", 11)
}

#[test]
fn healthy_host_has_no_findings() {
    let s = fixture("healthy.json", base());
    let f = roce_net::doctor(&s);
    assert!(f.is_empty(), "{f:#?}");
    assert_eq!(roce_net::max_severity(&f), None);
    assert_eq!(
        roce_net::nics_in_scope(&s),
        vec!["ens1", "ens2", "ens3", "ens4"]
    );
}

#[test]
fn arp_ignore() {
    let mut b = base();
    b.sysctl("all", ConfKey::ArpIgnore, 0);
    for n in ["ens1", "ens2", "ens3"] {
        b.sysctl(n, ConfKey::ArpIgnore, 1);
    }
    let s = fixture("arp-ignore.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["arp-ignore"]));
    let x = one(&f, "arp-ignore");
    assert_eq!(x.subject.interface.as_deref(), Some("ens4"));
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.evidence["effective"], json!(0));
    assert_eq!(x.evidence["all"], json!(0));
    assert_eq!(
        x.evidence["shares_subnet_with"],
        json!(["ens1", "ens2", "ens3"])
    );
    assert_eq!(
        x.remediation.commands,
        vec!["sysctl -w net.ipv4.conf.ens4.arp_ignore=1"]
    );
    assert_eq!(x.remediation.policy.as_deref(), Some("arp.arp_ignore: 1"));
}

#[test]
fn arp_ignore_above_range_lowers_all() {
    let mut b = base();
    b.sysctl("all", ConfKey::ArpIgnore, 8);
    let f = roce_net::doctor(&b.0);
    let v = only(&f, "arp-ignore");
    assert_eq!(v.len(), 4);
    assert_eq!(
        v[0].remediation.commands,
        vec!["sysctl -w net.ipv4.conf.all.arp_ignore=1"]
    );
    // all above range and the interface at 0: lowering all is not enough.
    b.sysctl("all", ConfKey::ArpIgnore, 0);
    b.sysctl("all", ConfKey::ArpIgnore, 8);
    for n in ["ens1", "ens2", "ens3", "ens4"] {
        b.sysctl(n, ConfKey::ArpIgnore, 0);
    }
    b.sysctl("ens1", ConfKey::ArpIgnore, 3);
    let f = roce_net::doctor(&b.0);
    let x = only(&f, "arp-ignore")[0];
    assert_eq!(x.subject.interface.as_deref(), Some("ens1"));
    assert_eq!(
        x.remediation.commands,
        vec![
            "sysctl -w net.ipv4.conf.all.arp_ignore=1",
            "sysctl -w net.ipv4.conf.ens1.arp_ignore=1"
        ]
    );
}

#[test]
fn arp_announce() {
    let mut b = base();
    b.sysctl("all", ConfKey::ArpAnnounce, 0);
    for n in ["ens1", "ens3", "ens4"] {
        b.sysctl(n, ConfKey::ArpAnnounce, 2);
    }
    let s = fixture("arp-announce.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["arp-announce"]));
    let x = one(&f, "arp-announce");
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(x.evidence["effective"], json!(0));
    assert_eq!(
        x.remediation.commands,
        vec!["sysctl -w net.ipv4.conf.ens2.arp_announce=2"]
    );
    assert_eq!(x.remediation.policy.as_deref(), Some("arp.arp_announce: 2"));
}

#[test]
fn rp_filter_strict() {
    let mut b = base();
    b.sysctl("all", ConfKey::RpFilter, 0);
    for n in ["ens1", "ens2", "ens4"] {
        b.sysctl(n, ConfKey::RpFilter, 2);
    }
    b.sysctl("ens3", ConfKey::RpFilter, 1);
    let s = fixture("rp-filter-strict.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["rp-filter-strict"]));
    let x = one(&f, "rp-filter-strict");
    assert_eq!(x.subject.interface.as_deref(), Some("ens3"));
    assert_eq!(x.evidence["effective"], json!(1));
    assert_eq!(x.evidence["interface"], json!(1));
    assert_eq!(
        x.remediation.commands,
        vec!["sysctl -w net.ipv4.conf.ens3.rp_filter=2"]
    );
    assert_eq!(x.remediation.policy.as_deref(), Some("rp_filter: loose"));
}

#[test]
fn loose_rp_filter_is_fine() {
    let mut b = base();
    b.sysctl("ens3", ConfKey::RpFilter, 2);
    assert!(roce_net::doctor(&b.0).is_empty());
}

#[test]
fn source_rule_missing() {
    let mut b = base();
    b.0.rules.retain(|r| r.priority != 1003);
    b.0.routes.retain(|r| r.table != 1003);
    let s = fixture("source-rule-missing.bad.json", b);
    let f = roce_net::doctor(&s);
    // Without the rule, traffic from ens3's address also leaves by ens1.
    assert_eq!(
        ids(&f),
        BTreeSet::from(["source-rule-missing", "asymmetric-egress"])
    );
    let x = one(&f, "source-rule-missing");
    assert_eq!(x.subject.interface.as_deref(), Some("ens3"));
    assert_eq!(x.subject.address.as_deref(), Some("198.18.0.13"));
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.evidence["proposed_table"], json!(1003));
    assert_eq!(x.evidence["main_rule_priority"], json!(32766));
    // The fix is the default policy's plan for ens3: what `roce-net apply` does.
    assert_eq!(
        x.remediation.commands,
        vec![
            "ip route replace 198.18.0.0/24 dev ens3 src 198.18.0.13 table 1003 proto 201",
            "ip rule add from 198.18.0.13 lookup 1003 pref 1003 proto 201",
        ]
    );
    assert_eq!(
        x.remediation.policy.as_deref(),
        Some("routing.enabled: true")
    );
}

#[test]
fn source_rule_after_main_is_shadowed() {
    let mut b = base();
    for r in b.0.rules.iter_mut().filter(|r| r.priority == 1002) {
        r.priority = 40000;
    }
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "source-rule-missing");
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(x.evidence["shadowed_rule"]["priority"], json!(40000));
    // The plan keeps ens2's table (its route is right), adds the rule at ens2's
    // priority and deletes the stale one roce-net owns.
    assert_eq!(
        x.remediation.commands,
        vec![
            "ip rule add from 198.18.0.12 lookup 1002 pref 1002 proto 201",
            "ip rule del from 198.18.0.12 lookup 1002 pref 40000 proto 201",
        ]
    );
    assert_eq!(
        one(&f, "asymmetric-egress").subject.interface.as_deref(),
        Some("ens2")
    );
}

#[test]
fn source_table_incomplete_wrong_src() {
    let mut b = base();
    for r in b.0.routes.iter_mut().filter(|r| r.table == 1002) {
        r.prefsrc = Some(ip("198.18.0.11"));
    }
    let s = fixture("source-table-incomplete.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["source-table-incomplete"]));
    let x = one(&f, "source-table-incomplete");
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(x.subject.address.as_deref(), Some("198.18.0.12"));
    assert_eq!(x.evidence["table"], json!(1002));
    assert_eq!(
        x.evidence["subnet_routes"],
        json!(["198.18.0.0/24 dev ens2 src 198.18.0.11"])
    );
    assert_eq!(
        x.remediation.commands,
        vec!["ip route replace 198.18.0.0/24 dev ens2 src 198.18.0.12 table 1002 proto 201"]
    );
}

#[test]
fn source_table_empty() {
    let mut b = base();
    b.0.routes.retain(|r| r.table != 1002);
    let f = roce_net::doctor(&b.0);
    assert_eq!(
        ids(&f),
        BTreeSet::from(["source-table-incomplete", "asymmetric-egress"])
    );
    let x = one(&f, "source-table-incomplete");
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.evidence["table_routes"], json!(0));
    assert!(x.message.contains("empty"), "{}", x.message);
}

#[test]
fn asymmetric_egress() {
    let mut b = base();
    // A foreign rule sends ens4's subnet traffic to ens1's table first.
    b.rule("pref 100 from 198.18.0.14 to 198.18.0.0/24 lookup 1001");
    let s = fixture("asymmetric-egress.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["asymmetric-egress"]));
    let x = one(&f, "asymmetric-egress");
    assert_eq!(x.subject.interface.as_deref(), Some("ens4"));
    assert_eq!(x.subject.address.as_deref(), Some("198.18.0.14"));
    assert_eq!(x.evidence["egress"], json!("ens1"));
    assert_eq!(x.evidence["peer"], json!("198.18.0.1"));
    assert_eq!(x.evidence["table"], json!(1001));
    assert_eq!(x.evidence["rule_priority"], json!(100));
    // ens4's own table and rule are right: the fix removes the rule that sends its
    // traffic elsewhere first (re-installing ens4's route would change nothing).
    assert_eq!(
        x.remediation.commands,
        vec!["ip rule del from 198.18.0.14 to 198.18.0.0/24 lookup 1001 pref 100 proto 3"]
    );
}

#[test]
fn asymmetric_egress_uses_a_neighbour_as_peer() {
    let mut b = base();
    b.0.rules.retain(|r| r.priority != 1002);
    b.neigh(
        "ens2",
        "198.18.0.77",
        Some("02:00:00:00:77:01"),
        NeighState::Reachable,
    );
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "asymmetric-egress");
    assert_eq!(x.evidence["peer"], json!("198.18.0.77"));
    assert_eq!(x.evidence["egress"], json!("ens1"));
    assert_eq!(x.evidence["table"], json!(254));
}

#[test]
fn neighbor_conflict() {
    let mut b = base();
    // Peer 198.18.0.21's MAC also learned for .22 on another rail.
    b.neigh(
        "ens1",
        "198.18.0.21",
        Some("02:00:00:00:15:10"),
        NeighState::Reachable,
    );
    b.neigh(
        "ens2",
        "198.18.0.22",
        Some("02:00:00:00:15:10"),
        NeighState::Stale,
    );
    // One IP, two MACs on two NICs.
    b.neigh(
        "ens3",
        "198.18.0.23",
        Some("02:00:00:00:15:12"),
        NeighState::Reachable,
    );
    b.neigh(
        "ens4",
        "198.18.0.23",
        Some("02:00:00:00:15:13"),
        NeighState::Reachable,
    );
    // A peer resolved to our own ens1 MAC.
    b.neigh(
        "ens4",
        "198.18.0.24",
        Some("02:00:00:00:0b:10"),
        NeighState::Stale,
    );
    let s = fixture("neighbor-conflict.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["neighbor-conflict"]));
    let v = only(&f, "neighbor-conflict");
    assert_eq!(v.len(), 3, "{v:#?}");
    let by_kind = |k: &str| {
        *v.iter()
            .find(|x| x.evidence["kind"] == json!(k))
            .unwrap_or_else(|| panic!("no {k}"))
    };
    let m = by_kind("mac-multiple-ips");
    assert_eq!(m.subject.mac.as_deref(), Some("02:00:00:00:15:10"));
    assert_eq!(
        m.evidence["addresses"],
        json!(["198.18.0.21", "198.18.0.22"])
    );
    assert_eq!(
        m.remediation.commands,
        vec![
            "ip neigh del 198.18.0.21 dev ens1",
            "ip neigh del 198.18.0.22 dev ens2"
        ]
    );
    assert_eq!(
        m.remediation.policy.as_deref(),
        Some("neighbors.flush: polluted")
    );
    let i = by_kind("ip-multiple-macs");
    assert_eq!(i.subject.address.as_deref(), Some("198.18.0.23"));
    assert_eq!(
        i.evidence["macs"],
        json!(["02:00:00:00:15:12", "02:00:00:00:15:13"])
    );
    let l = by_kind("local-mac");
    assert_eq!(l.subject.interface.as_deref(), Some("ens4"));
    assert_eq!(l.subject.address.as_deref(), Some("198.18.0.24"));
    assert_eq!(l.evidence["local_interface"], json!("ens1"));
}

#[test]
fn distinct_peers_are_not_a_conflict() {
    let mut b = base();
    for n in 0..4 {
        b.neigh(
            &format!("ens{}", n + 1),
            &format!("198.18.0.{}", 21 + n),
            Some(&format!("02:00:00:00:15:{:02x}", 0x10 + n)),
            NeighState::Reachable,
        );
    }
    assert!(roce_net::doctor(&b.0).is_empty());
}

#[test]
fn shared_gateway_mac_is_not_a_conflict() {
    let mut b = base();
    // Rail gateways with one anycast MAC, used by routes in the per-NIC tables.
    for n in 0..4 {
        let gw = format!("198.18.0.{}", 1 + n);
        b.route(&format!(
            "table {} 10.0.0.0/8 via {gw} dev ens{}",
            1001 + n,
            n + 1
        ));
        b.neigh(
            &format!("ens{}", n + 1),
            &gw,
            Some("00:00:5e:00:01:01"),
            NeighState::Reachable,
        );
    }
    assert!(roce_net::doctor(&b.0).is_empty());
}

#[test]
fn neighbor_failed() {
    let mut b = base();
    b.neigh("ens2", "198.18.0.30", None, NeighState::Failed);
    let s = fixture("neighbor-failed.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["neighbor-failed"]));
    let x = one(&f, "neighbor-failed");
    assert_eq!(x.severity, Severity::Warning);
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(x.evidence["failed"], json!(["198.18.0.30"]));
    assert_eq!(
        x.remediation.commands,
        vec!["ip neigh flush dev ens2 nud failed"]
    );
}

#[test]
fn duplicate_address() {
    let mut b = base();
    b.addr("eno1", "198.18.0.12/24");
    let s = fixture("duplicate-address.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["duplicate-address"]));
    let x = one(&f, "duplicate-address");
    assert_eq!(x.subject.address.as_deref(), Some("198.18.0.12"));
    assert_eq!(x.evidence["interfaces"], json!(["ens2", "eno1"]));
    assert_eq!(
        x.remediation.commands,
        vec!["ip addr del 198.18.0.12/24 dev eno1"]
    );
}

#[test]
fn mtu_mismatch() {
    let mut b = base();
    b.iface_mut("ens2").mtu = 1500;
    let s = fixture("mtu-mismatch.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["mtu-mismatch"]));
    let x = one(&f, "mtu-mismatch");
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(x.evidence["mtu"], json!(1500));
    assert_eq!(x.evidence["expected"], json!(9000));
    assert_eq!(x.evidence["active_ib_mtu"], json!(1024));
    assert_eq!(
        x.remediation.commands,
        vec!["ip link set dev ens2 mtu 9000"]
    );
    assert_eq!(x.remediation.policy, None, "MTUs are not a policy setting");
}

#[test]
fn mtu_expected_by_option() {
    let s = base().0;
    let mut opts = roce_net::DoctorOptions::default();
    opts.expected_mtu = Some(4200);
    let f = roce_net::doctor_with(&s, &opts);
    assert_eq!(only(&f, "mtu-mismatch").len(), 4);
}

#[test]
fn gid_rocev2_missing() {
    let mut b = base();
    b.port_mut("mlx5_2")
        .gids
        .retain(|g| g.gid_type != Some(GidType::RoceV2) || g.ipv4.is_none());
    let s = fixture("gid-rocev2-missing.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["gid-rocev2-missing"]));
    let x = one(&f, "gid-rocev2-missing");
    assert_eq!(x.subject.interface.as_deref(), Some("ens3"));
    assert_eq!(x.subject.device.as_deref(), Some("mlx5_2"));
    assert_eq!(x.subject.port, Some(1));
    assert_eq!(x.subject.address.as_deref(), Some("198.18.0.13"));
    assert_eq!(
        x.evidence["gids"],
        json!(["0 v1 fe80::1", "1 v2 fe80::1", "2 v1 ::ffff:198.18.0.13"])
    );
}

#[test]
fn gid_index_inconsistent() {
    let mut b = base();
    let p = b.port_mut("mlx5_1");
    for g in p.gids.iter_mut().filter(|g| g.ipv4.is_some()) {
        g.index += 2;
    }
    let v6: std::net::Ipv6Addr = "2001:db8::12".parse().unwrap();
    p.gids
        .push(doctor_support::gid(2, v6, GidType::RoceV1, "ens2", None));
    p.gids
        .push(doctor_support::gid(3, v6, GidType::RoceV2, "ens2", None));
    p.gids.sort_by_key(|g| g.index);
    let s = fixture("gid-index-inconsistent.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["gid-index-inconsistent"]));
    let x = one(&f, "gid-index-inconsistent");
    assert_eq!(x.subject.device.as_deref(), Some("mlx5_1"));
    assert_eq!(x.subject.port, Some(1));
    assert_eq!(x.evidence["gid_index"], json!(5));
    assert_eq!(x.evidence["common_index"], json!(3));
    assert_eq!(
        x.evidence["indices"],
        json!({"mlx5_0:1": 3, "mlx5_1:1": 5, "mlx5_2:1": 3, "mlx5_3:1": 3})
    );
}

#[test]
fn port_down() {
    let mut b = base();
    let p = b.port_mut("mlx5_3");
    p.state = Some("DOWN".into());
    p.phys_state = Some("Disabled".into());
    let s = fixture("port-down.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["port-down"]));
    let x = one(&f, "port-down");
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.subject.device.as_deref(), Some("mlx5_3"));
    assert_eq!(x.subject.interface.as_deref(), Some("ens4"));
    assert_eq!(x.evidence["state"], json!("DOWN"));
    assert_eq!(x.evidence["phys_state"], json!("Disabled"));
    // Up already: nothing to run that fixes a port; the diagnostics are checks.
    assert!(x.remediation.commands.is_empty(), "{x:#?}");
    assert_eq!(
        x.remediation.checks,
        vec!["ethtool ens4", "rdma link show mlx5_3/1"]
    );
}

#[test]
fn port_down_with_netdev_down_is_a_warning() {
    let mut b = base();
    b.port_mut("mlx5_3").state = Some("DOWN".into());
    b.iface_mut("ens4").admin_up = false;
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "port-down");
    assert_eq!(x.severity, Severity::Warning);
    assert_eq!(x.remediation.commands[0], "ip link set dev ens4 up");
}

#[test]
fn netdev_backlog_low() {
    let mut b = base();
    b.0.sysctls.tuning.netdev_max_backlog = Some(1000);
    let s = fixture("netdev-backlog-low.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["netdev-backlog-low"]));
    let x = one(&f, "netdev-backlog-low");
    assert_eq!(x.severity, Severity::Info);
    assert_eq!(x.evidence["value"], json!(1000));
    assert_eq!(x.evidence["recommended"], json!(250000));
    assert_eq!(
        x.remediation.commands,
        vec!["sysctl -w net.core.netdev_max_backlog=250000"]
    );
    let mut opts = roce_net::DoctorOptions::default();
    opts.min_netdev_max_backlog = 1000;
    assert!(roce_net::doctor_with(&s, &opts).is_empty());
}

#[test]
fn rx_drops() {
    let mut b = base();
    let st = &mut b.iface_mut("ens1").stats;
    st.rx_packets = 1_000_000;
    st.rx_dropped = 5000;
    // ens2 drops too few to matter.
    let st = &mut b.iface_mut("ens2").stats;
    st.rx_packets = 1_000_000_000;
    st.rx_dropped = 5000;
    let s = fixture("rx-drops.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["rx-drops"]));
    let x = one(&f, "rx-drops");
    assert_eq!(x.subject.interface.as_deref(), Some("ens1"));
    assert_eq!(x.evidence["rx_dropped"], json!(5000));
    assert_eq!(x.evidence["ratio"], json!(0.005));
}

#[test]
fn rdma_retransmits() {
    let mut b = base();
    let p = b.port_mut("mlx5_0");
    p.hw_counters.insert("local_ack_timeout_err".into(), 12);
    p.hw_counters.insert("out_of_sequence".into(), 0);
    p.hw_counters.insert("rx_write_requests".into(), 99);
    let s = fixture("rdma-retransmits.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["rdma-retransmits"]));
    let x = one(&f, "rdma-retransmits");
    assert_eq!(x.subject.device.as_deref(), Some("mlx5_0"));
    assert_eq!(x.subject.interface.as_deref(), Some("ens1"));
    assert_eq!(x.evidence["counters"], json!({"local_ack_timeout_err": 12}));
}

/// The Soft-RoCE driver's names (rxe_hw_counters.c), as the VM tier read them
/// off a peer whose RC QPs ended in status 12 during ARP flux.
#[test]
fn rdma_retransmits_reads_rxe_counters() {
    let mut b = base();
    let p = b.port_mut("mlx5_0");
    p.hw_counters.insert("retry_exceeded_err".into(), 6);
    p.hw_counters.insert("completer_retry_err".into(), 1371);
    p.hw_counters.insert("rcvd_seq_err".into(), 0);
    p.hw_counters.insert("duplicate_request".into(), 14787);
    let f = roce_net::doctor(&b.build());
    let x = one(&f, "rdma-retransmits");
    assert_eq!(
        x.evidence["counters"],
        json!({"completer_retry_err": 1371, "retry_exceeded_err": 6})
    );
}

/// A lab: no RDMA devices, two veths sharing a subnet with the full fix applied,
/// plus a third interface alone in its subnet.
fn lab() -> B {
    let mut b = B::new("lab");
    b.nic("veth1", 2, "02:00:00:00:01:01", 1500);
    b.nic("veth2", 3, "02:00:00:00:01:02", 1500);
    b.nic("mgmt0", 4, "02:00:00:00:01:03", 1500);
    b.addr("veth1", "198.18.5.1/24");
    b.addr("veth2", "198.18.5.2/24");
    b.addr("mgmt0", "198.19.5.1/24");
    for (n, a, t) in [("veth1", "198.18.5.1", 1001), ("veth2", "198.18.5.2", 1002)] {
        b.route(&format!(
            "table {t} 198.18.5.0/24 dev {n} scope link src {a}"
        ));
        b.rule(&format!("pref {t} from {a} lookup {t}"));
    }
    b.good_sysctls();
    b
}

#[test]
fn no_rdma_devices() {
    let s = fixture("no-rdma-devices.bad.json", lab());
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["no-rdma-devices"]));
    let x = one(&f, "no-rdma-devices");
    assert_eq!(x.severity, Severity::Info);
    assert_eq!(x.evidence["nics_in_scope"], json!(["veth1", "veth2"]));
    assert_eq!(
        x.message,
        "no RDMA devices found; checking 2 interface(s) that share an IPv4 subnet instead"
    );
    // The same NICs on an IPv6 rail: the message names the IPv6 prefix.
    let mut b = lab();
    b.0.addresses.retain(|a| !a.ifname.starts_with("veth"));
    b.addr("veth1", "fd00:198:18:5::1/64");
    b.addr("veth2", "fd00:198:18:5::2/64");
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "no-rdma-devices");
    assert_eq!(x.evidence["nics_in_scope"], json!(["veth1", "veth2"]));
    assert_eq!(
        x.message,
        "no RDMA devices found; checking 2 interface(s) that share an IPv6 prefix instead"
    );
}

#[test]
fn lab_scope_finds_flux_problems() {
    let mut b = lab();
    b.sysctl("all", ConfKey::ArpIgnore, 0);
    b.0.rules.retain(|r| r.priority != 1002);
    let f = roce_net::doctor(&b.0);
    assert_eq!(
        ids(&f),
        BTreeSet::from([
            "arp-ignore",
            "source-rule-missing",
            "asymmetric-egress",
            "no-rdma-devices"
        ])
    );
    let subjects: Vec<_> = only(&f, "arp-ignore")
        .iter()
        .map(|x| x.subject.interface.clone().unwrap())
        .collect();
    assert_eq!(subjects, vec!["veth1", "veth2"]);
    assert_eq!(
        one(&f, "asymmetric-egress").evidence["egress"],
        json!("veth1")
    );
}

#[test]
fn multiple_default_routes() {
    let mut b = base();
    b.route("default via 198.19.0.2 dev eno1 proto static");
    let s = fixture("multiple-default-routes.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["multiple-default-routes"]));
    let x = one(&f, "multiple-default-routes");
    assert_eq!(
        x.evidence["routes"],
        json!([
            "default via 198.19.0.1 dev eno1 metric 0",
            "default via 198.19.0.2 dev eno1 metric 0"
        ])
    );
    assert_eq!(
        x.remediation.commands,
        vec!["ip route del default via 198.19.0.2 dev eno1 table main proto 4"]
    );
    // Different metrics are a normal failover setup.
    let mut b = base();
    b.route("default via 198.19.0.2 dev eno1 metric 100");
    assert!(roce_net::doctor(&b.0).is_empty());
}

#[test]
fn snapshot_partial() {
    let mut b = base();
    b.0.warnings.push(roce_net::Warning {
        source: "/proc/sys/net/ipv4/conf/ens2/rp_filter".into(),
        message: "permission denied".into(),
    });
    let s = fixture("snapshot-partial.bad.json", b);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["snapshot-partial"]));
    let x = one(&f, "snapshot-partial");
    assert_eq!(x.severity, Severity::Info);
    assert_eq!(
        x.evidence["warnings"],
        json!(["/proc/sys/net/ipv4/conf/ens2/rp_filter: permission denied"])
    );
    assert_eq!(
        x.remediation.checks,
        vec!["cat /proc/sys/net/ipv4/conf/ens2/rp_filter"]
    );
}

#[test]
fn every_check_has_a_bad_fixture_and_findings_are_sorted_and_serialisable() {
    let mut all_ids = BTreeSet::new();
    for id in roce_net::CHECK_IDS {
        let name = format!("{id}.bad.json");
        let s = doctor_support::load(&name);
        let f = roce_net::doctor(&s);
        assert!(
            f.iter().any(|x| x.id == *id),
            "{name} does not trigger {id}"
        );
        let mut sorted = f.clone();
        roce_net::sort_findings(&mut sorted);
        assert_eq!(sorted, f);
        for x in &f {
            assert!(!x.evidence.is_empty(), "{} has no evidence", x.id);
            assert!(
                !x.remediation.commands.is_empty() || !x.remediation.checks.is_empty(),
                "{} has no commands",
                x.id
            );
            // A diagnostic is never listed as a fix: run as fixes (a script
            // with `set -e`) it would fail where there is nothing to show.
            for c in &x.remediation.commands {
                for look in [
                    " show",
                    "ls ",
                    "cat ",
                    "ethtool -S",
                    "ethtool -g",
                    "ibv_dev",
                ] {
                    assert!(!c.contains(look), "{}: fix {c:?} only looks", x.id);
                }
            }
            let back: Finding = serde_json::from_str(&serde_json::to_string(x).unwrap()).unwrap();
            assert_eq!(&back, x);
        }
        all_ids.insert(*id);
    }
    assert_eq!(all_ids.len(), roce_net::CHECK_IDS.len());
}

#[test]
fn summary_helpers() {
    let mut b = base();
    b.iface_mut("ens2").mtu = 1500;
    b.0.sysctls.tuning.netdev_max_backlog = Some(1000);
    b.sysctl("all", ConfKey::ArpIgnore, 0);
    let f = roce_net::doctor(&b.0);
    let s = roce_net::summarize(&f);
    assert_eq!((s.error, s.warning, s.info), (4, 1, 1));
    assert_eq!(roce_net::max_severity(&f), Some(Severity::Error));
    // Most severe first.
    assert_eq!(f.first().unwrap().severity, Severity::Error);
    assert_eq!(f.last().unwrap().severity, Severity::Info);
}

#[test]
fn scope_without_rdma_and_without_shared_subnets_is_empty() {
    let mut b = B::new("h");
    b.nic("eth0", 2, "02:00:00:00:00:01", 1500);
    b.nic("eth1", 3, "02:00:00:00:00:02", 1500);
    b.addr("eth0", "198.18.1.1/24");
    b.addr("eth1", "198.18.2.1/24");
    let sc = roce_net::nic_scope(&b.0);
    assert_eq!(sc.mode, roce_net::ScopeMode::Empty);
    assert!(sc.nics.is_empty());
    // Enslaved ports are never in scope, even with an address.
    let mut b = lab();
    b.iface_mut("veth2").master = Some("br0".into());
    assert!(roce_net::nics_in_scope(&b.0).is_empty());
}

/// Every policy setting a finding recommends is one the policy loader accepts, so
/// the advice can be pasted into a policy file.
#[test]
fn remediation_policy_settings_are_valid_policy() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let st = roce_net::HostState::load(&p).unwrap();
        for f in roce_net::doctor(&st) {
            let Some(setting) = f.remediation.policy.as_deref() else {
                continue;
            };
            let (path, value) = setting
                .split_once(": ")
                .unwrap_or_else(|| panic!("{setting}"));
            let mut yaml = String::new();
            let parts: Vec<&str> = path.split('.').collect();
            for (depth, part) in parts.iter().enumerate() {
                yaml.push_str(&"  ".repeat(depth));
                yaml.push_str(part);
                yaml.push(':');
                yaml.push(if depth + 1 == parts.len() { ' ' } else { '\n' });
            }
            yaml.push_str(value);
            roce_net::Policy::from_yaml(&yaml).unwrap_or_else(|e| {
                panic!("{} recommends {setting:?}, not a valid policy: {e}", f.id)
            });
            seen += 1;
        }
    }
    assert!(seen >= 5, "only {seen} policy settings seen");
}

/// The routing fixes follow the policy the doctor is given: its table and
/// priority bases, its protocol; a policy the host cannot take is reported as
/// such on the finding instead of a made-up fix.
#[test]
fn routing_fixes_follow_the_given_policy() {
    let s = doctor_support::load("source-rule-missing.bad.json");
    let mut opts = roce_net::DoctorOptions::default();
    opts.policy = Some(
        roce_net::Policy::from_yaml(
            "routing: {table_base: 2000, rule_priority_base: 3000}\nprotocol: 202\n",
        )
        .unwrap(),
    );
    let f = roce_net::doctor_with(&s, &opts);
    let x = one(&f, "source-rule-missing");
    assert_eq!(x.evidence["proposed_table"], json!(2003));
    assert_eq!(x.evidence["proposed_priority"], json!(3003));
    assert_eq!(
        x.remediation.commands,
        vec![
            "ip route replace 198.18.0.0/24 dev ens3 src 198.18.0.13 table 2003 proto 202",
            "ip rule add from 198.18.0.13 lookup 2003 pref 3003 proto 202",
        ]
    );

    opts.policy = Some(roce_net::Policy::from_yaml("nics: {include: [ens9]}\n").unwrap());
    let f = roce_net::doctor_with(&s, &opts);
    let x = one(&f, "source-rule-missing");
    assert!(x.remediation.commands.is_empty());
    let why = x.evidence["plan_error"].as_str().unwrap();
    assert!(why.contains("interface ens9 does not exist"), "{why}");
}
