//! Offline FIB lookup on hand-built HostStates: each case states what
//! `ip route get` answers on a real kernel with the same tables.

// The integration tests' builders (and the golden helper they use).
#[path = "../../tests/it/doctor_support.rs"]
mod doctor_support;
use roce_net_testkit::golden as golden_support;

use super::{fib_lookup, has_only_default_rules, ipv6_select_addr};
use doctor_support::{ip, B};
use roce_net::RouteType;
use roce_net::{FibDecision, FibError, FibMode, Flow};
use std::net::IpAddr;

/// `ip route get DST [from SRC] [iif IIF] [oif OIF]`; `None` when the kernel errs.
fn lookup(
    state: &roce_net::HostState,
    dst: IpAddr,
    src: Option<IpAddr>,
    iif: Option<&str>,
    oif: Option<&str>,
) -> Option<FibDecision> {
    let flow = Flow {
        dst,
        src,
        iif: iif.map(str::to_string),
        oif: oif.map(str::to_string),
        fwmark: 0,
        tos: 0,
    };
    fib_lookup(state, &flow).ok()
}

fn four_nics_one_subnet() -> B {
    let mut b = B::new("h");
    for n in 0..4u32 {
        let name = format!("ens{}", n + 1);
        b.nic(&name, n + 2, &format!("02:00:00:00:00:{:02x}", n + 1), 9000);
        b.addr(&name, &format!("198.18.0.{}/24", 11 + n));
    }
    b
}

fn get(b: &B, dst: &str, src: Option<&str>) -> FibDecision {
    lookup(&b.0, ip(dst), src.map(ip), None, None).unwrap()
}

#[test]
fn without_rules_the_first_subnet_route_wins_for_every_source() {
    let b = four_nics_one_subnet();
    // All four subnet routes have metric 0: the first in list order answers.
    let d = get(&b, "198.18.0.50", Some("198.18.0.13"));
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    assert_eq!(d.table, Some(254));
    // Only the default rules: the kernel's merged lookup consults no rule.
    assert_eq!(d.rule_priority, None);
    assert_eq!(d.prefsrc, Some(ip("198.18.0.13")));
    assert_eq!(d.kind, RouteType::Unicast);
    // No source: the route's src.
    let d = get(&b, "198.18.0.50", None);
    assert_eq!(d.prefsrc, Some(ip("198.18.0.11")));
}

#[test]
fn source_rules_pick_the_nic_table() {
    let mut b = four_nics_one_subnet();
    b.route("table 1003 198.18.0.0/24 dev ens3 scope link src 198.18.0.13");
    b.rule("pref 1003 from 198.18.0.13 lookup 1003");
    let d = get(&b, "198.18.0.50", Some("198.18.0.13"));
    assert_eq!(d.dev.as_deref(), Some("ens3"));
    assert_eq!(d.table, Some(1003));
    assert_eq!(d.rule_priority, Some(1003));
    // Without a source the from-rule cannot match (saddr 0.0.0.0).
    let d = get(&b, "198.18.0.50", None);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    // A from-rule covering 0.0.0.0 does match a source-less flow.
    b.rule("pref 500 from 0.0.0.0/8 lookup 1003");
    assert_eq!(get(&b, "198.18.0.50", None).dev.as_deref(), Some("ens3"));
}

#[test]
fn local_table_answers_first_for_local_destinations() {
    let b = four_nics_one_subnet();
    let d = get(&b, "198.18.0.12", Some("198.18.0.13"));
    assert_eq!(d.kind, RouteType::Local);
    assert_eq!(d.dev.as_deref(), Some("lo"));
    // Merged local/main trie: the kernel reports table main.
    assert_eq!(d.table, Some(254));
    let r = roce_net::fib_lookup_with(
        &b.0,
        &Flow::to(ip("198.18.0.12")).from(ip("198.18.0.13")),
        FibMode::Rules,
    )
    .unwrap();
    assert_eq!((r.table, r.rule_priority), (Some(255), Some(0)));
    assert_eq!(d.prefsrc, Some(ip("198.18.0.13")));
    let d = get(&b, "198.18.0.12", None);
    assert_eq!(d.prefsrc, Some(ip("198.18.0.12")));
    let d = get(&b, "127.0.0.5", None);
    assert_eq!(d.kind, RouteType::Local);
    assert_eq!(d.prefsrc, Some(ip("127.0.0.1")));
    let d = get(&b, "198.18.0.255", None);
    assert_eq!(d.kind, RouteType::Broadcast);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
}

#[test]
fn non_local_source_is_refused() {
    let b = four_nics_one_subnet();
    let f = Flow::to(ip("198.18.0.50")).from(ip("198.18.0.99"));
    assert_eq!(roce_net::fib_lookup(&b.0, &f), Err(FibError::InvalidSource));
    let f = Flow::to(ip("198.18.0.50")).from(ip("0.0.0.1"));
    assert_eq!(roce_net::fib_lookup(&b.0, &f), Err(FibError::InvalidSource));
    let f = Flow::to(ip("198.18.0.50")).from(ip("2001:db8::1"));
    assert_eq!(
        roce_net::fib_lookup(&b.0, &f),
        Err(FibError::FamilyMismatch)
    );
}

#[test]
fn longest_prefix_then_lowest_metric() {
    let mut b = four_nics_one_subnet();
    b.route("10.0.0.0/8 via 198.18.0.1 dev ens1 metric 10");
    b.route("10.1.0.0/16 via 198.18.0.2 dev ens2 metric 100");
    b.route("10.1.0.0/16 via 198.18.0.3 dev ens3 metric 50");
    let d = get(&b, "10.1.2.3", None);
    assert_eq!(d.dev.as_deref(), Some("ens3"));
    assert_eq!(d.gateway, Some(ip("198.18.0.3")));
    // Gateway route, scope universe: source chosen on the device by the gateway's subnet.
    assert_eq!(d.prefsrc, Some(ip("198.18.0.13")));
    let d = get(&b, "10.2.0.1", None);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    assert_eq!(lookup(&b.0, ip("11.0.0.1"), None, None, None), None);
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("11.0.0.1"))),
        Err(FibError::NoRoute)
    );
}

#[test]
fn throw_continues_and_rejecting_routes_stop() {
    let mut b = four_nics_one_subnet();
    b.route("default via 198.18.0.1 dev ens1");
    b.route("table 100 throw 10.0.0.0/8");
    b.route("table 100 default via 198.18.0.2 dev ens2");
    b.route("table 100 blackhole 192.0.2.0/24");
    b.route("table 100 unreachable 192.0.3.0/24");
    b.route("table 100 prohibit 192.0.4.0/24");
    b.rule("pref 100 lookup 100");
    assert_eq!(get(&b, "10.9.9.9", None).gateway, Some(ip("198.18.0.1")));
    assert_eq!(get(&b, "8.8.8.8", None).gateway, Some(ip("198.18.0.2")));
    let r = |d: &str| roce_net::fib_lookup(&b.0, &Flow::to(ip(d)));
    assert_eq!(r("192.0.2.1"), Err(FibError::Blackhole));
    assert_eq!(r("192.0.3.1"), Err(FibError::Unreachable));
    assert_eq!(r("192.0.4.1"), Err(FibError::Prohibit));
}

#[test]
fn rule_actions_goto_nop_and_rejects() {
    let mut b = four_nics_one_subnet();
    b.route("table 200 default via 198.18.0.4 dev ens4");
    b.route("table 300 default via 198.18.0.3 dev ens3");
    b.rule("pref 10 to 203.0.113.0/24 goto 300");
    b.rule("pref 20 nop");
    b.rule("pref 30 to 203.0.0.0/16 lookup 200");
    b.rule("pref 300 lookup 300");
    b.rule("pref 40 to 198.51.100.0/24 prohibit");
    b.rule("pref 50 to 198.51.101.0/24 unreachable");
    b.rule("pref 60 to 198.51.102.0/24 blackhole");
    // goto skips rule 30.
    assert_eq!(get(&b, "203.0.113.5", None).table, Some(300));
    // Without the goto, rule 30 answers.
    assert_eq!(get(&b, "203.0.1.5", None).table, Some(200));
    let r = |d: &str| roce_net::fib_lookup(&b.0, &Flow::to(ip(d)));
    assert_eq!(r("198.51.100.1"), Err(FibError::Prohibit));
    assert_eq!(r("198.51.101.1"), Err(FibError::Unreachable));
    assert_eq!(r("198.51.102.1"), Err(FibError::Blackhole));
    // A backwards goto (refused by the kernel) cannot loop.
    b.rule("pref 6 to 203.0.1.0/24 goto 3");
    b.rule("pref 3 to 203.0.1.0/24 goto 6");
    assert_eq!(get(&b, "203.0.1.5", None).table, Some(200));
    // A goto to a missing priority is ignored.
    b.rule("pref 5 to 203.0.1.0/24 goto 7");
    assert_eq!(get(&b, "203.0.1.5", None).table, Some(200));
}

#[test]
fn fwmark_mask_invert_iif_oif_selectors() {
    let mut b = four_nics_one_subnet();
    b.route("table 400 default via 198.18.0.4 dev ens4");
    b.route("table 401 default via 198.18.0.2 dev ens2");
    b.route("default via 198.18.0.1 dev ens1");
    b.rule("pref 100 fwmark 0x10/0xf0 lookup 400");
    let f = Flow::to(ip("8.8.8.8")).mark(0x1f);
    assert_eq!(roce_net::fib_lookup(&b.0, &f).unwrap().table, Some(400));
    let f = Flow::to(ip("8.8.8.8")).mark(0x20);
    assert_eq!(roce_net::fib_lookup(&b.0, &f).unwrap().table, Some(254));
    // Locally generated traffic has iif lo.
    b.rule("pref 110 iif lo to 9.9.9.0/24 lookup 401");
    assert_eq!(get(&b, "9.9.9.9", None).table, Some(401));
    let f = Flow::to(ip("9.9.9.9")).iif("ens1").from(ip("203.0.113.1"));
    assert_eq!(roce_net::fib_lookup(&b.0, &f).unwrap().table, Some(254));
    // not: everything except 8.8.0.0/16 goes to 401.
    b.rule("pref 120 not to 8.8.0.0/16 lookup 401");
    assert_eq!(get(&b, "1.1.1.1", None).table, Some(401));
    assert_eq!(get(&b, "8.8.4.4", None).table, Some(254));
    // oif selector only matches flows bound to that device.
    b.rule("pref 90 oif ens4 lookup 400");
    assert_eq!(get(&b, "1.1.1.1", None).table, Some(401));
    let d = lookup(&b.0, ip("1.1.1.1"), None, None, Some("ens4")).unwrap();
    assert_eq!(d.table, Some(400));
    assert_eq!(d.dev.as_deref(), Some("ens4"));
    assert_eq!(d.prefsrc, Some(ip("198.18.0.14")));
}

#[test]
fn suppress_prefixlength_skips_default_routes() {
    let mut b = four_nics_one_subnet();
    b.route("default via 198.18.0.1 dev ens1");
    b.route("table 500 default via 198.18.0.2 dev ens2");
    b.rule("pref 100 lookup main suppress_prefixlength 0");
    b.rule("pref 200 lookup 500");
    // Default route in main suppressed -> table 500.
    let d = get(&b, "8.8.8.8", None);
    assert_eq!((d.table, d.rule_priority), (Some(500), Some(200)));
    // A subnet route (/24) is not suppressed.
    let d = get(&b, "198.18.0.77", None);
    assert_eq!((d.table, d.rule_priority), (Some(254), Some(100)));
}

#[test]
fn oif_filters_next_hops_and_falls_back_on_link() {
    let b = four_nics_one_subnet();
    let d = lookup(&b.0, ip("198.18.0.50"), None, None, Some("ens2")).unwrap();
    assert_eq!(d.dev.as_deref(), Some("ens2"));
    assert_eq!(d.prefsrc, Some(ip("198.18.0.12")));
    // No route at all, but oif given: the kernel assumes on-link.
    let d = lookup(&b.0, ip("8.8.8.8"), None, None, Some("ens3")).unwrap();
    assert_eq!(d.dev.as_deref(), Some("ens3"));
    assert_eq!(d.table, None);
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("8.8.8.8")).oif("nope0")),
        Err(FibError::NoDevice)
    );
}

#[test]
fn routes_over_down_devices_are_skipped() {
    let mut b = four_nics_one_subnet();
    b.route("198.18.0.0/24 dev ens2 metric 5 scope link");
    b.iface_mut("ens1").admin_up = false;
    // ens1's metric-0 route is dead; the next alias of the same prefix answers.
    let d = get(&b, "198.18.0.50", None);
    assert_eq!(d.dev.as_deref(), Some("ens2"));
    assert_eq!(d.prefsrc, Some(ip("198.18.0.12")));
}

#[test]
fn prefsrc_falls_back_to_other_devices() {
    let mut b = B::new("h");
    b.nic("eth0", 2, "02:00:00:00:00:01", 1500);
    b.nic("tun0", 3, "02:00:00:00:00:02", 1500);
    b.addr("eth0", "198.18.1.1/24");
    b.route("default dev tun0 scope link");
    // tun0 has no address: the first global address of any device.
    assert_eq!(get(&b, "8.8.8.8", None).prefsrc, Some(ip("198.18.1.1")));
    // Secondary addresses are never chosen.
    b.addr("eth0", "198.18.1.2/24");
    assert!(b.0.addresses.iter().any(|a| a.secondary));
    assert_eq!(get(&b, "8.8.8.8", None).prefsrc, Some(ip("198.18.1.1")));
}

#[test]
fn broadcast_and_zero_destinations() {
    let b = four_nics_one_subnet();
    let d = get(&b, "255.255.255.255", Some("198.18.0.13"));
    assert_eq!(d.kind, RouteType::Broadcast);
    assert_eq!(d.dev.as_deref(), Some("ens3"));
    let d = get(&b, "0.0.0.0", None);
    assert_eq!(d.kind, RouteType::Local);
    assert_eq!(d.prefsrc, Some(ip("127.0.0.1")));
}

#[test]
fn multipath_reports_first_live_hop() {
    let mut b = four_nics_one_subnet();
    b.route("default nexthop via 198.18.0.1 dev ens1 nexthop via 198.18.0.2 dev ens2");
    b.iface_mut("ens1").admin_up = false;
    let d = get(&b, "8.8.8.8", None);
    assert!(d.multipath);
    assert_eq!(d.dev.as_deref(), Some("ens2"));
    assert_eq!(d.gateway, Some(ip("198.18.0.2")));
}

#[test]
fn default_rules_assumed_when_snapshot_has_none() {
    let mut b = four_nics_one_subnet();
    b.0.rules.clear();
    assert!(has_only_default_rules(&b.0));
    let f = Flow::to(ip("198.18.0.50")).from(ip("198.18.0.12"));
    let d = roce_net::fib_lookup_with(&b.0, &f, FibMode::Rules).unwrap();
    assert_eq!(d.rule_priority, Some(32766));
    let f = Flow::to(ip("198.18.0.12"));
    let d = roce_net::fib_lookup_with(&b.0, &f, FibMode::Rules).unwrap();
    assert_eq!(d.table, Some(255));
}

#[test]
fn merged_mode_falls_back_to_default_table_only_on_a_miss() {
    let mut b = four_nics_one_subnet();
    b.route("blackhole 10.0.0.0/8");
    b.route("table default 10.1.0.0/16 via 198.18.0.2 dev ens2");
    b.route("throw 10.4.0.0/16");
    b.route("table default 10.4.0.0/16 via 198.18.0.3 dev ens3");
    // Without custom rules a main-table reject is final (kernel 6.18, checked in
    // tests/it/lab_fib.rs) ...
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("10.1.0.1"))),
        Err(FibError::Blackhole)
    );
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("10.2.0.1"))),
        Err(FibError::Blackhole)
    );
    // ... while a miss or a throw goes on to the default table.
    b.route("unreachable 11.0.0.0/8");
    let d = get(&b, "10.4.0.1", None);
    assert_eq!((d.table, d.dev.as_deref()), (Some(253), Some("ens3")));
    b.route("table default 12.0.0.0/8 via 198.18.0.2 dev ens2");
    let d = get(&b, "12.0.0.1", None);
    assert_eq!((d.table, d.dev.as_deref()), (Some(253), Some("ens2")));
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("11.0.0.1"))),
        Err(FibError::Unreachable)
    );
    // With any custom rule the rules are walked and the blackhole is final.
    b.rule("pref 100 fwmark 0x1 lookup 100");
    assert!(!has_only_default_rules(&b.0));
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("10.1.0.1"))),
        Err(FibError::Blackhole)
    );
}

#[test]
fn ipv6_lookups() {
    let mut b = B::new("h");
    b.nic("ens1", 2, "02:00:00:00:00:01", 9000);
    b.nic("ens2", 3, "02:00:00:00:00:02", 9000);
    b.addr("ens1", "fe80::1/64");
    b.addr("ens2", "fe80::2/64");
    b.addr("ens1", "2001:db8:1::1/64");
    b.addr("ens2", "2001:db8:2::1/64");
    b.route("-6 default via fe80::ff dev ens2 metric 1024");
    b.route("-6 table 600 default via fe80::fe dev ens1 metric 1024");
    b.rule("-6 pref 600 from 2001:db8:1::/64 lookup 600");
    let d = get(&b, "2001:db8:1::9", None);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    assert_eq!(d.prefsrc, Some(ip("2001:db8:1::1")));
    let d = get(&b, "2001:db8:9::9", None);
    assert_eq!(d.dev.as_deref(), Some("ens2"));
    assert_eq!(d.gateway, Some(ip("fe80::ff")));
    // Outgoing-interface rule: ens2's global address.
    assert_eq!(d.prefsrc, Some(ip("2001:db8:2::1")));
    let d = get(&b, "2001:db8:9::9", Some("2001:db8:1::1"));
    assert_eq!((d.table, d.dev.as_deref()), (Some(600), Some("ens1")));
    let d = get(&b, "2001:db8:2::1", None);
    assert_eq!(d.kind, RouteType::Local);
    assert_eq!(d.dev.as_deref(), Some("lo"));
    // Link-local destination: the link-local source of the outgoing device.
    let d = lookup(&b.0, ip("fe80::99"), None, None, Some("ens2")).unwrap();
    assert_eq!(d.prefsrc, Some(ip("fe80::2")));
}

#[test]
fn ipv6_source_selection_rules() {
    let mut b = B::new("h");
    b.nic("ens1", 2, "02:00:00:00:00:01", 9000);
    b.nic("ens2", 3, "02:00:00:00:00:02", 9000);
    b.addr("ens1", "fd00:1::1/64");
    b.addr("ens2", "2001:db8:2::1/64");
    b.route("-6 default via fd00:1::ff dev ens1 metric 1024");
    // Rule 5 before rule 6: the outgoing device's ULA beats ens2's global address.
    let d = get(&b, "2001:db8:9::9", None);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    assert_eq!(d.prefsrc, Some(ip("fd00:1::1")));
    // Rule 6 before rule 8: on one device, the matching label (::/0, label 1) beats
    // a longer common prefix with another label (6to4, 2002::/16).
    b.addr("ens1", "2002:db8::1/64");
    b.addr("ens1", "2400::1/64");
    let d = get(&b, "2001:db8:9::9", None);
    assert_eq!(d.prefsrc, Some(ip("2400::1")));
    // Link-local destination: only the outgoing device's addresses count, so ens1's
    // link-local address (a better scope match) is not taken for ens2.
    b.addr("ens1", "fe80::1/64");
    assert_eq!(
        ipv6_select_addr(&b.0, Some("ens2"), "fe80::9".parse().unwrap()),
        Some("2001:db8:2::1".parse().unwrap())
    );
    assert_eq!(
        ipv6_select_addr(&b.0, Some("ens1"), "fe80::9".parse().unwrap()),
        Some("fe80::1".parse().unwrap())
    );
}

#[test]
fn destination_classes_and_loopback_sources() {
    let mut b = four_nics_one_subnet();
    b.route("default via 198.18.0.1 dev ens1");
    let d = get(&b, "239.1.1.1", None);
    assert_eq!(d.kind, RouteType::Multicast);
    assert_eq!(d.dev.as_deref(), Some("ens1"));
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("0.1.2.3"))),
        Err(FibError::InvalidDestination)
    );
    // 127.0.0.1 is local, but may not leave by ens1.
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("8.8.8.8")).from(ip("127.0.0.1"))),
        Err(FibError::InvalidSource)
    );
}
