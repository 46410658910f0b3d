//! The NIC scope with the family as data: NICs sharing an IPv6 prefix are in
//! scope as NICs sharing an IPv4 subnet are; each NIC carries a managed address
//! of every family it has, chosen by the kernel's flags.

use crate::doctor_support::{ip, B};
use roce_net::{nic_scope, AddressFlag, Family, ScopeMode};

/// Four NICs `r0..r3` with `fd00:198:18::10..13/64` (and with IPv4 too when
/// `dual`), plus a management NIC alone in its prefix.
fn host(dual: bool) -> B {
    let mut b = B::new("h");
    b.nic("eno1", 2, "02:00:00:00:00:01", 1500);
    b.addr("eno1", "fd00:198:19::5/64");
    for i in 0..4u32 {
        let n = format!("r{i}");
        b.nic(&n, 10 + i, &format!("02:00:00:00:01:0{i}"), 9000);
        if dual {
            b.addr(&n, &format!("198.18.0.{}/24", 11 + i));
        }
        b.addr(&n, &format!("fe80::{}/64", i + 1));
        b.addr(&n, &format!("fd00:198:18::{}/64", 10 + i));
    }
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
fn nics_sharing_an_ipv6_prefix_are_in_scope() {
    let st = host(false).build();
    let s = nic_scope(&st);
    assert_eq!(s.mode, ScopeMode::SharedSubnet);
    assert_eq!(s.names(), ["r0", "r1", "r2", "r3"]);
    let r1 = s.get("r1").unwrap();
    assert_eq!(
        r1.address(Family::Inet6).unwrap().address,
        ip("fd00:198:18::11")
    );
    assert!(r1.address(Family::Inet).is_none());
    // Link-local addresses never count: not global, not managed.
    assert!(r1.global.iter().all(|a| a.address != ip("fe80::2")));
    assert_eq!(s.subnet_peers()["r1"], ["r0", "r2", "r3"]);
    let pairs: Vec<(String, String)> = s
        .addressed()
        .map(|(n, a)| (n.ifname.clone(), a.address.to_string()))
        .collect();
    assert_eq!(pairs.len(), 4);
    assert_eq!(pairs[3], ("r3".into(), "fd00:198:18::13".into()));
    assert_eq!(roce_net::nics_in_scope(&st), s.names());
}

#[test]
fn only_link_local_in_common_is_not_a_shared_subnet() {
    let mut b = B::new("h");
    for i in 0..2u32 {
        let n = format!("r{i}");
        b.nic(&n, 10 + i, &format!("02:00:00:00:01:0{i}"), 9000);
        b.addr(&n, &format!("fe80::{}/64", i + 1));
        b.addr(&n, &format!("fd00:198:18:{i}::1/64"));
    }
    let s = nic_scope(&b.build());
    assert_eq!(s.mode, ScopeMode::Empty);
}

#[test]
fn a_dual_stack_nic_carries_one_managed_address_per_family() {
    let st = host(true).build();
    let s = nic_scope(&st);
    assert_eq!(s.names(), ["r0", "r1", "r2", "r3"]);
    let r2 = s.get("r2").unwrap();
    let got: Vec<String> = r2.addresses.iter().map(|a| a.address.to_string()).collect();
    assert_eq!(got, ["198.18.0.13", "fd00:198:18::12"], "IPv4 first");
    assert_eq!(s.addressed().count(), 8);
    assert_eq!(s.addressed_in(Family::Inet).count(), 4);
    assert_eq!(r2.global_of(Family::Inet6).count(), 1);
    assert_eq!(
        roce_net::nic_addresses(&st, "r2")
            .iter()
            .map(|a| a.address)
            .collect::<Vec<_>>(),
        [ip("198.18.0.13"), ip("fd00:198:18::12")]
    );
}

/// The IPv6 managed address: `dadfailed` and `temporary` ones never, a
/// `deprecated` one only when nothing better is there, a `tentative` one yes
/// (it is the address once DAD finishes; the plan must not flip when it does).
#[test]
fn the_managed_ipv6_address_follows_the_kernel_flags() {
    let mut b = host(false);
    // r0: the kernel lists the newest address first; its first failed DAD.
    b.addr("r0", "fd00:198:18::100/64");
    let i = b.0.addresses.len() - 1;
    let a = b.0.addresses.remove(i);
    let first = b.0.addresses.iter().position(|x| x.ifname == "r0").unwrap();
    b.0.addresses.insert(first, a);
    flag(&mut b, "r0", "fd00:198:18::100", AddressFlag::Dadfailed);
    flag(&mut b, "r0", "fd00:198:18::100", AddressFlag::Tentative);
    // r1: a privacy address listed first.
    b.addr("r1", "fd00:198:18::abcd/64");
    let i = b.0.addresses.len() - 1;
    let a = b.0.addresses.remove(i);
    let first = b.0.addresses.iter().position(|x| x.ifname == "r1").unwrap();
    b.0.addresses.insert(first, a);
    flag(&mut b, "r1", "fd00:198:18::abcd", AddressFlag::Temporary);
    // r2: its only address deprecated; r3: still tentative.
    flag(&mut b, "r2", "fd00:198:18::12", AddressFlag::Deprecated);
    flag(&mut b, "r3", "fd00:198:18::13", AddressFlag::Tentative);
    let st = b.build();
    let got = |n: &str| roce_net::nic_address(&st, n, Family::Inet6).map(|a| a.address.to_string());
    assert_eq!(got("r0").as_deref(), Some("fd00:198:18::10"));
    assert_eq!(got("r1").as_deref(), Some("fd00:198:18::11"));
    assert_eq!(got("r2").as_deref(), Some("fd00:198:18::12"));
    assert_eq!(got("r3").as_deref(), Some("fd00:198:18::13"));
    // A deprecated address loses to one that is not.
    let mut b2 = B::new("h");
    b2.nic("r0", 10, "02:00:00:00:01:00", 9000);
    b2.addr("r0", "fd00:198:18::1/64");
    b2.addr("r0", "fd00:198:18::2/64");
    flag(&mut b2, "r0", "fd00:198:18::1", AddressFlag::Deprecated);
    let st2 = b2.build();
    assert_eq!(
        roce_net::nic_address(&st2, "r0", Family::Inet6)
            .unwrap()
            .address,
        ip("fd00:198:18::2")
    );
    // An address that only failed DAD: none.
    let mut b3 = B::new("h");
    b3.nic("r0", 10, "02:00:00:00:01:00", 9000);
    b3.addr("r0", "fd00:198:18::1/64");
    flag(&mut b3, "r0", "fd00:198:18::1", AddressFlag::Dadfailed);
    assert!(roce_net::nic_address(&b3.build(), "r0", Family::Inet6).is_none());
}

/// An RDMA device whose GIDs are all IPv6 maps to its netdev as any other, and
/// the RoCE v2 GID of its IPv6 address is found by the one rule (the GID is the
/// address itself).
#[test]
fn an_ipv6_only_rdma_port_maps_to_its_netdev_and_gid() {
    let mut b = host(false);
    b.rdma("mlx5_1", "r1");
    let st = b.build();
    let s = nic_scope(&st);
    assert_eq!(s.mode, ScopeMode::Rdma);
    assert_eq!(s.names(), ["r1"]);
    let port = &st.rdma[0].ports[0];
    assert!(port.gids.iter().all(|g| g.ipv4.is_none()));
    assert_eq!(
        roce_net::roce_v2_gid_index(port, ip("fd00:198:18::11")),
        Some(3)
    );
    let idx = roce_net::roce_v2_gid_indices(&st);
    assert_eq!(idx.values().copied().collect::<Vec<_>>(), [Some(3)]);
}
