//! The IPv6 doctor checks (`ipv6-dad`, `ipv6-disabled`, `ra-default-route`) and
//! the routing checks on IPv6 rails, against committed HostState fixtures: a
//! healthy IPv6-only RoCE host (four ConnectX-like ports in `fd00:198:18::/64`,
//! per-NIC tables with `ip -6` source rules, as `roce-net apply` leaves it) and
//! dual-stack variants, each broken one way. `UPDATE_GOLDEN=1` rewrites them.

use crate::doctor_support::{golden, ip, B};
use roce_net::{AddressFamilies, AddressFlag, ConfKey, Family, Finding, OperState, Severity};
use serde_json::json;
use std::collections::BTreeSet;

fn ids(f: &[Finding]) -> BTreeSet<&str> {
    f.iter().map(|x| x.id.as_str()).collect()
}

fn one<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
    let v: Vec<_> = f.iter().filter(|x| x.id == id).collect();
    assert_eq!(v.len(), 1, "expected one {id} finding, got {v:#?}");
    v[0]
}

/// Four RoCE NICs `ens1..4` (mlx5_0..3) addressed in `families`: IPv4
/// 198.18.0.11..14/24, IPv6 fd00:198:18::11..14/64 (plus a link-local each),
/// per-NIC tables 1001..1004 holding what the planner writes for each family
/// (`ip -6 route replace fd00:198:18::/64 dev ensN table T proto 201`, no
/// `src`; `ip -6 rule add from ADDR lookup T pref T proto 201`), the RDMA
/// sysctls, a management NIC.
fn healthy(families: AddressFamilies) -> B {
    let mut b = B::new("gpu6");
    b.nic("eno1", 2, "02:00:00:00:00:01", 1500);
    b.addr("eno1", "198.19.0.11/24");
    b.route("default via 198.19.0.1 dev eno1 proto static");
    for n in 0..4u8 {
        let name = format!("ens{}", n + 1);
        b.nic(
            &name,
            u32::from(n) + 3,
            &format!("02:00:00:00:0b:{:02x}", n + 0x10),
            9000,
        );
        let table = 1001 + u32::from(n);
        b.addr(&name, &format!("fe80::{}/64", n + 1));
        if families.includes(Family::Inet) {
            let a = format!("198.18.0.{}", 11 + n);
            b.addr(&name, &format!("{a}/24"));
            b.route(&format!(
                "table {table} 198.18.0.0/24 dev {name} proto 201 scope link src {a}"
            ));
            b.rule(&format!("pref {table} from {a} lookup {table} proto 201"));
        }
        if families.includes(Family::Inet6) {
            let a = format!("fd00:198:18::{}", 11 + n);
            b.addr(&name, &format!("{a}/64"));
            b.route(&format!(
                "-6 table {table} fd00:198:18::/64 dev {name} proto 201 metric 1024"
            ));
            b.rule(&format!(
                "-6 pref {table} from {a} lookup {table} proto 201"
            ));
        }
    }
    for n in 0..4u8 {
        b.rdma(&format!("mlx5_{n}"), &format!("ens{}", n + 1));
    }
    b.good_sysctls();
    b
}

fn flag(b: &mut B, ifname: &str, addr: &str, f: AddressFlag) {
    let a =
        b.0.addresses
            .iter_mut()
            .find(|a| a.ifname == ifname && a.address == ip(addr))
            .unwrap();
    a.flags.push(f);
}

#[test]
fn healthy_ipv6_and_dual_stack_hosts_have_no_findings() {
    for (name, fam) in [
        ("healthy-ipv6.json", AddressFamilies::Ipv6),
        ("healthy-dual-stack.json", AddressFamilies::Both),
    ] {
        let s = golden(name, &healthy(fam).0);
        let f = roce_net::doctor(&s);
        assert!(f.is_empty(), "{name}: {f:#?}");
    }
}

/// The routing checks see IPv6 rails: with the `ip -6` rules gone, each NIC's
/// IPv6 address but the first leaves by `ens1` (`asymmetric-egress`) and no
/// rule sends any of them to a table (`source-rule-missing`), with the plan's
/// `ip -6` commands as the fix; the IPv4 side (untouched) reports nothing.
#[test]
fn ipv6_routing_checks_fire_on_an_ipv6_rail() {
    let mut b = healthy(AddressFamilies::Both);
    b.0.rules
        .retain(|r| !(r.family == Family::Inet6 && r.protocol == 201));
    b.0.routes
        .retain(|r| !(r.family == Family::Inet6 && r.table != 254 && r.table != 255));
    let s = golden("ipv6-rules-missing.bad.json", &b.0);
    let f = roce_net::doctor(&s);
    assert_eq!(
        ids(&f),
        BTreeSet::from(["asymmetric-egress", "source-rule-missing"]),
        "{f:#?}"
    );
    let egress: Vec<_> = f
        .iter()
        .filter(|x| x.id == "asymmetric-egress")
        .map(|x| x.subject.address.clone().unwrap())
        .collect();
    assert_eq!(
        egress,
        ["fd00:198:18::12", "fd00:198:18::13", "fd00:198:18::14"]
    );
    for x in &f {
        assert_eq!(x.severity, Severity::Error, "{x:#?}");
        assert!(
            x.subject.address.as_deref().unwrap().contains(':'),
            "only IPv6 addresses: {x:#?}"
        );
    }
    let x = f
        .iter()
        .find(|x| x.id == "asymmetric-egress" && x.subject.interface.as_deref() == Some("ens2"))
        .unwrap();
    assert_eq!(x.evidence["egress"], json!("ens1"));
    assert_eq!(
        x.remediation.commands,
        [
            "ip -6 route replace fd00:198:18::/64 dev ens2 table 1002 proto 201",
            "ip -6 rule add from fd00:198:18::12 lookup 1002 pref 1002 proto 201",
        ]
    );
    assert!(
        x.message.contains("neighbour solicitations"),
        "{}",
        x.message
    );
}

#[test]
fn ipv6_dad_failed_address() {
    let mut b = healthy(AddressFamilies::Ipv6);
    // `ip -6 addr` after a neighbour answered for ::14 during DAD:
    // `inet6 fd00:198:18::14/64 scope global tentative dadfailed`.
    flag(&mut b, "ens4", "fd00:198:18::14", AddressFlag::Tentative);
    flag(&mut b, "ens4", "fd00:198:18::14", AddressFlag::Dadfailed);
    let s = golden("ipv6-dad.bad.json", &b.0);
    // (The last NIC: the planner numbers tables over the NICs it manages, and
    // a NIC without a usable IPv6 address is not one of them.)
    let f = roce_net::doctor(&s);
    let x = one(&f, "ipv6-dad");
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.subject.interface.as_deref(), Some("ens4"));
    assert_eq!(x.subject.address.as_deref(), Some("fd00:198:18::14"));
    assert_eq!(x.evidence["address"], json!("fd00:198:18::14/64"));
    assert_eq!(
        x.evidence["flags"],
        json!(["permanent", "tentative", "dadfailed"])
    );
    assert_eq!(x.evidence["gid"], json!("mlx5_3:1 index 3"));
    assert!(x.message.contains("failed duplicate address detection"));
    assert_eq!(
        x.remediation.commands,
        [
            "ip addr del fd00:198:18::14/64 dev ens4",
            "ip addr add fd00:198:18::14/64 dev ens4",
        ]
    );
    // The failed address is not the NIC's managed address, so its source
    // rule (from the healthy host) is for an address the NIC cannot use: the
    // routing checks do not report it, the DAD finding is the one to act on.
    assert_eq!(ids(&f), BTreeSet::from(["ipv6-dad"]), "{f:#?}");
}

#[test]
fn ipv6_dad_tentative_address() {
    let mut b = healthy(AddressFamilies::Ipv6);
    flag(&mut b, "ens2", "fd00:198:18::12", AddressFlag::Tentative);
    // Link down: DAD waits for it.
    b.iface_mut("ens4").oper_state = OperState::Down;
    flag(&mut b, "ens4", "fd00:198:18::14", AddressFlag::Tentative);
    // An optimistic address is usable while tentative: no finding.
    flag(&mut b, "ens1", "fd00:198:18::11", AddressFlag::Tentative);
    flag(&mut b, "ens1", "fd00:198:18::11", AddressFlag::Optimistic);
    let f = roce_net::doctor(&b.0);
    let dad: Vec<_> = f.iter().filter(|x| x.id == "ipv6-dad").collect();
    assert_eq!(dad.len(), 2, "{dad:#?}");
    let ens2 = dad
        .iter()
        .find(|x| x.subject.interface.as_deref() == Some("ens2"))
        .unwrap();
    assert_eq!(ens2.severity, Severity::Warning);
    assert!(ens2.message.contains("still tentative"));
    assert!(ens2.remediation.commands.is_empty());
    assert_eq!(ens2.remediation.checks, ["ip -6 addr show dev ens2"]);
    let ens4 = dad
        .iter()
        .find(|x| x.subject.interface.as_deref() == Some("ens4"))
        .unwrap();
    assert_eq!(ens4.evidence["oper_state"], json!("DOWN"));
    assert_eq!(ens4.remediation.commands, ["ip link set dev ens4 up"]);
}

/// `disable_ipv6=1` on one RoCE NIC of a host whose other rails use IPv6: the
/// kernel removed its IPv6 addresses (so it has no IPv6 GID) and it stays in
/// scope by its RDMA port.
#[test]
fn ipv6_disabled_on_one_rail() {
    let mut b = healthy(AddressFamilies::Both);
    b.0.addresses
        .retain(|a| !(a.ifname == "ens2" && a.address.is_ipv6()));
    b.0.routes
        .retain(|r| !(r.family == Family::Inet6 && r.dev.as_deref() == Some("ens2")));
    b.0.rules
        .retain(|r| !(r.family == Family::Inet6 && r.table == 1002));
    b.sysctl("ens2", ConfKey::DisableIpv6, 1);
    for n in ["ens1", "ens3", "ens4"] {
        b.sysctl(n, ConfKey::DisableIpv6, 0);
    }
    b.0.rdma.retain(|d| d.name != "mlx5_1");
    b.rdma("mlx5_1", "ens2");
    b.0.rdma.sort_by(|a, c| a.name.cmp(&c.name));
    let s = golden("ipv6-disabled.bad.json", &b.0);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["ipv6-disabled"]), "{f:#?}");
    let x = one(&f, "ipv6-disabled");
    // Its IPv4 GID still works: a warning.
    assert_eq!(x.severity, Severity::Warning);
    assert_eq!(x.evidence["ipv4_address"], json!("198.18.0.12"));
    assert_eq!(x.subject.interface.as_deref(), Some("ens2"));
    assert_eq!(
        x.evidence["nics_with_ipv6"],
        json!(["ens1", "ens3", "ens4"])
    );
    assert_eq!(
        x.remediation.commands,
        ["sysctl -w net.ipv6.conf.ens2.disable_ipv6=0"]
    );
    // Without IPv4 on it, the NIC has no usable RoCE v2 GID at all: an error.
    let mut b = healthy(AddressFamilies::Ipv6);
    b.0.addresses
        .retain(|a| !(a.ifname == "ens4" && a.address.is_ipv6()));
    b.0.routes.retain(|r| r.dev.as_deref() != Some("ens4"));
    b.0.rules.retain(|r| r.table != 1004);
    b.sysctl("ens4", ConfKey::DisableIpv6, 1);
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "ipv6-disabled");
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.subject.interface.as_deref(), Some("ens4"));
    assert!(x.message.contains("no usable RoCE v2 GID"), "{}", x.message);

    // No NIC in scope uses IPv6: disabling it is a choice, not a finding.
    let v4 = healthy(AddressFamilies::Ipv4);
    let mut b = v4;
    for n in ["ens1", "ens2", "ens3", "ens4"] {
        b.0.addresses
            .retain(|a| !(a.ifname == n && a.address.is_ipv6()));
        b.sysctl(n, ConfKey::DisableIpv6, 1);
    }
    let f = roce_net::doctor(&b.0);
    assert!(!ids(&f).contains("ipv6-disabled"), "{f:#?}");
}

#[test]
fn ra_default_route_through_a_roce_nic() {
    let mut b = healthy(AddressFamilies::Ipv6);
    for n in ["ens1", "ens2", "ens3", "ens4"] {
        b.sysctl(n, ConfKey::AcceptRa, 1);
        b.sysctl(n, ConfKey::AcceptRaDefrtr, 1);
    }
    // `ip -6 route` after a router advertisement on ens3:
    // `default via fe80::1 dev ens3 proto ra metric 1024 expires 1797sec hoplimit 64 pref medium`.
    b.route("-6 default via fe80::1 dev ens3 proto 9 metric 1024");
    // The management NIC's RA default is not a RoCE NIC's.
    b.route("-6 default via fe80::99 dev eno1 proto 9 metric 100");
    let s = golden("ra-default-route.bad.json", &b.0);
    let f = roce_net::doctor(&s);
    assert_eq!(ids(&f), BTreeSet::from(["ra-default-route"]), "{f:#?}");
    let x = one(&f, "ra-default-route");
    assert_eq!(x.severity, Severity::Warning);
    assert_eq!(x.subject.interface.as_deref(), Some("ens3"));
    assert_eq!(x.evidence["accept_ra_defrtr"], json!(1));
    assert_eq!(
        x.remediation.commands,
        [
            "sysctl -w net.ipv6.conf.ens3.accept_ra_defrtr=0",
            "ip -6 route del default via fe80::1 dev ens3 table main proto 9 metric 1024",
        ]
    );
    assert_eq!(
        x.remediation.policy.as_deref(),
        Some("ipv6.accept_ra_defrtr: 0")
    );

    // The kernel takes no RAs on ens3 (accept_ra=0), so a network manager
    // installed the route: the sysctl would not stop it, the message says who.
    b.sysctl("ens3", ConfKey::AcceptRa, 0);
    let f = roce_net::doctor(&b.0);
    let x = one(&f, "ra-default-route");
    assert!(x.message.contains("network manager"), "{}", x.message);
}

/// `source-table-incomplete` on an IPv6 rail: the `ip -6` rules are there,
/// their tables hold no IPv6 route, so each rule falls through to main.
#[test]
fn ipv6_source_table_incomplete() {
    let mut b = healthy(AddressFamilies::Both);
    b.0.routes
        .retain(|r| !(r.family == Family::Inet6 && r.table >= 1001 && r.table <= 1004));
    let f = roce_net::doctor(&b.0);
    let v: Vec<_> = f
        .iter()
        .filter(|x| x.id == "source-table-incomplete")
        .collect();
    assert_eq!(v.len(), 4, "{f:#?}");
    assert!(v
        .iter()
        .all(|x| x.subject.address.as_deref().unwrap().starts_with("fd00:")));
    let ens3 = v
        .iter()
        .find(|x| x.subject.interface.as_deref() == Some("ens3"))
        .unwrap();
    assert_eq!(
        ens3.remediation.commands,
        ["ip -6 route replace fd00:198:18::/64 dev ens3 table 1003 proto 201"]
    );
}
