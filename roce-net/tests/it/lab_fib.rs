//! The offline FIB lookup (`roce_net::fib_lookup` over a snapshot) against the
//! kernel's own answer (`RTM_GETROUTE` with `RTM_F_LOOKUP_TABLE`), on well over a
//! thousand pseudo-random (destination, source) pairs in a namespace with several
//! devices, subnets, tables (including ids above 255), and policy rules of every
//! kind: from/to prefixes, `not`, fwmark (never matching an unmarked flow, or
//! matching it through a zero mark), `iif lo`, `oif`, `tos`, goto/nop,
//! blackhole/unreachable/prohibit actions and `suppress_prefixlength`; plus throw,
//! unreachable, prohibit and blackhole routes, gateways, metrics, TOS routes,
//! route `src`, `onlink` gateways, a secondary address, loopback and foreign
//! sources, and a device that is down. The devices are veth pairs inside the
//! namespace (the far ends `x<N>` carry no address). The same comparison runs
//! for sockets bound to a device (`oif`), for a namespace that never had a
//! rule (the kernel's merged local/main lookup) and for one whose only custom
//! rule was deleted again (the kernel keeps walking rules).

use crate::doctor_support;
use crate::fib_support;
use crate::lab_support;

use doctor_support::{ip, B};
use fib_support::{assert_seen, compare, queries};
use lab_support::{ip_batch, require_root};
use roce_net::Lab;
use roce_net::{Family, RouteType};
use roce_net::{FibError, FibMode, Flow};
use roce_net::{Host, HostState};
use std::collections::BTreeSet;

const SETUP: &str = "\
link add d0 type veth peer name x0
link add d1 type veth peer name x1
link add d2 type veth peer name x2
link add d3 type veth peer name x3
link add d4 type veth peer name x4
link add d5 type veth peer name x5
link set x0 up
link set x1 up
link set x2 up
link set x3 up
link set x4 up
link set d0 up
link set d1 up
link set d2 up
link set d3 up
link set d4 up
addr add 198.18.0.1/24 dev d0
addr add 198.18.0.2/24 dev d0
addr add 198.18.5.1/24 dev d0
addr add 198.18.0.11/24 dev d1
addr add 198.18.1.1/24 dev d2
addr add 198.18.2.1/25 dev d3
addr add 198.18.3.1/24 dev d4
addr add 198.19.0.1/16 dev d4
addr add 198.18.9.1/24 dev d5
route add default via 198.18.1.254 metric 100
route add default via 198.18.0.254 dev d0 metric 50
route add 198.18.64.0/18 via 198.18.1.2
route add 198.18.64.0/20 via 198.18.0.3 dev d1
route add unreachable 198.18.80.0/20
route add prohibit 198.18.96.0/20
route add blackhole 198.18.112.0/20
route add 198.18.70.0/24 via 198.18.3.2 metric 10
route add 198.18.70.0/24 dev d3 metric 5
route add unreachable 198.18.71.0/24 metric 5
route add 198.18.71.0/24 via 198.18.1.3 metric 1
route add unreachable 198.18.72.0/24 metric 1
route add 198.18.72.0/24 via 198.18.1.3 metric 10
route add 198.19.128.0/17 via 198.19.0.254 src 198.18.3.1
route add 198.18.90.0/24 via 198.18.5.254
route add 198.18.100.0/24 tos 0x10 via 198.18.1.4
route add 198.18.100.0/24 via 198.18.2.2
route add throw 198.18.240.0/20
route add 198.18.33.0/24 dev d2 scope link
route add 198.18.210.0/24 via 198.18.99.1 dev d2 onlink
route add 198.18.220.0/24 dev d0 src 198.18.5.1
route add 198.18.230.0/24 dev x0
route add 198.18.240.0/24 via 198.18.1.9 table default
route add 198.18.0.0/24 dev d1 src 198.18.0.11 table 100
route add default via 198.18.0.254 dev d1 table 100
route add throw 198.18.128.0/17 table 100
route add throw 198.18.64.0/20 table 100
route add throw 198.18.64.0/18 table 1000
route add unreachable 198.18.32.0/19 table 1000
route add 198.19.0.0/16 dev d4 table 1000
route add 198.18.16.0/20 via 198.18.2.126 table 1000
route add prohibit 198.18.20.0/22 table 1000
route add default via 198.18.3.254 table 70000
route add prohibit 198.18.168.0/21 table 70000
route add 198.18.176.0/20 dev d2 table 70000
route add throw 198.18.184.0/21 table 70000
route add 198.18.128.0/18 via 198.18.1.5 table 200
route add blackhole 198.18.150.0/24 table 200
route add 198.18.0.0/15 via 198.18.0.254 dev d1 table 200 metric 7
route add unreachable default table 300
rule add pref 10 fwmark 0x1 lookup 70000
rule add pref 11 to 198.18.128.0/19 fwmark 0x0/0x2 lookup 200
rule add pref 12 fwmark 0x4/0x4 lookup 300
rule add pref 15 iif lo to 198.18.160.0/19 lookup 70000
rule add pref 16 oif d2 lookup 70000
rule add pref 17 iif d0 lookup 70000
rule add pref 18 tos 0x10 lookup 70000
rule add pref 20 from 198.18.0.11 lookup 100
rule add pref 25 from 198.18.0.0/24 goto 40
rule add pref 30 to 198.18.64.0/18 lookup 1000
rule add pref 35 nop
rule add pref 40 not from 198.18.1.0/24 lookup 1000
rule add pref 40 to 198.18.4.0/24 lookup 100
rule add pref 50 to 198.18.48.0/20 unreachable
rule add pref 51 to 198.18.56.0/21 prohibit
rule add pref 52 from 198.19.0.1 to 198.18.40.0/21 blackhole
rule add pref 60 lookup main suppress_prefixlength 0
rule add pref 70 to 198.18.128.0/18 lookup 200
rule add pref 80 from 198.18.2.1 lookup 300
rule add pref 90 lookup 400
";

/// The lab namespace with [`SETUP`]'s devices and routes, and its rules unless
/// `rules` is false.
fn build(lab: &mut Lab, role: &str, rules: bool) -> (Host, HostState) {
    let ns = lab.add_namespace(role).unwrap();
    let script: String = SETUP
        .lines()
        .filter(|l| rules || !l.starts_with("rule "))
        .map(|l| format!("{l}\n"))
        .collect();
    ip_batch(&ns, &script);
    let host = Host::netns(&ns).unwrap();
    let st = host.snapshot().unwrap();
    // The snapshot holds what the lookup needs: tables above 255 included.
    let tables: BTreeSet<u32> = st.routes.iter().map(|r| r.table).collect();
    for t in [100, 200, 300, 1000, 70000] {
        assert!(tables.contains(&t), "table {t} missing from the snapshot");
    }
    let v4_rules = st.rules.iter().filter(|r| r.family == Family::Inet).count();
    if rules {
        assert!(v4_rules >= 22, "{v4_rules} IPv4 rules in the snapshot");
    } else {
        assert_eq!(FibMode::detect(&st), FibMode::Merged);
    }
    (host, st)
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn offline_fib_agrees_with_the_kernel_on_random_flows() {
    let test = "offline_fib_agrees_with_the_kernel_on_random_flows";
    require_root(test);
    let mut lab = Lab::new("ld").unwrap();
    let (host, st) = build(&mut lab, "fib", true);
    let qs = queries(&st, 1500, 0x9e37_79b9_7f4a_7c15, &[]);
    let outcomes = compare(&host, &st, &qs, FibMode::Auto);
    // The mix exercised every kind of answer the setup can give.
    assert_seen(
        &outcomes,
        &[
            "Local table 255",
            "Broadcast table 255",
            "Unicast table 254",
            "Unicast table 100",
            "Unicast table 200",
            "Unicast table 253",
            "Unicast table 1000",
            "Unicast table 70000",
            "errno 13",  // EACCES: prohibit
            "errno 22",  // EINVAL: blackhole
            "errno 101", // ENETUNREACH: unreachable rule, no route
            "errno 113", // EHOSTUNREACH: unreachable route
        ],
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn offline_fib_agrees_with_the_kernel_without_custom_rules() {
    let test = "offline_fib_agrees_with_the_kernel_without_custom_rules";
    require_root(test);
    // A namespace that never had a rule: the kernel's merged local/main lookup.
    let mut lab = Lab::new("ld").unwrap();
    let (host, st) = build(&mut lab, "merged", false);
    let qs = queries(&st, 1000, 0x1234_5678_9abc_def1, &[]);
    let outcomes = compare(&host, &st, &qs, FibMode::Auto);
    // Local destinations are reported as table main; main's throw falls back
    // to the default table.
    assert_seen(
        &outcomes,
        &[
            "Local table 254",
            "Broadcast table 254",
            "Unicast table 254",
            "Unicast table 253",
            "errno 13",
            "errno 22",
            "errno 113",
        ],
    );
    assert!(!outcomes.keys().any(|o| o.ends_with("table 255")));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn offline_fib_agrees_with_the_kernel_for_bound_sockets() {
    let test = "offline_fib_agrees_with_the_kernel_for_bound_sockets";
    require_root(test);
    let mut lab = Lab::new("ld").unwrap();
    let (host, st) = build(&mut lab, "oif", true);
    let qs = queries(
        &st,
        1500,
        0x0bad_cafe_f00d_0001,
        &["d0", "d1", "d2", "d3", "d4", "d5", "x0"],
    );
    let outcomes = compare(&host, &st, &qs, FibMode::Auto);
    assert_seen(&outcomes, &["Unicast table 70000", "Unicast table 0"]);
}

/// The kernel keeps the `local` route of a down device's address (its next hop
/// has scope `nowhere`, so `fib_sync_down_dev` leaves it alive): the address
/// stays local. Offline, on a hand-built snapshot, as the lab above saw it.
#[test]
fn a_down_devices_address_stays_local() {
    let mut b = B::new("h");
    b.nic("eth0", 2, "02:00:00:00:00:01", 1500);
    b.nic("eth1", 3, "02:00:00:00:00:02", 1500);
    b.addr("eth0", "198.18.0.1/24");
    b.addr("eth1", "198.18.9.1/24");
    b.route("default via 198.18.0.254 dev eth0");
    b.rule("pref 100 from 198.18.0.0/24 lookup 100");
    b.iface_mut("eth1").admin_up = false;
    // Down: only the local route is left.
    b.0.routes
        .retain(|r| r.dev.as_deref() != Some("eth1") || r.kind == RouteType::Local);
    let d = roce_net::fib_lookup(&b.0, &Flow::to(ip("198.18.9.1"))).unwrap();
    assert_eq!(d.kind, RouteType::Local);
    assert_eq!((d.table, d.dev.as_deref()), (Some(255), Some("lo")));
    assert_eq!(d.prefsrc, Some(ip("198.18.9.1")));
    // Its subnet is gone: the default route answers, from eth0's address.
    let d = roce_net::fib_lookup(&b.0, &Flow::to(ip("198.18.9.2"))).unwrap();
    assert_eq!(
        (d.kind, d.dev.as_deref()),
        (RouteType::Unicast, Some("eth0"))
    );
    assert_eq!(d.prefsrc, Some(ip("198.18.0.1")));
    // And it is still a valid source.
    let d = roce_net::fib_lookup(&b.0, &Flow::to(ip("198.18.0.9")).from(ip("198.18.9.1"))).unwrap();
    assert_eq!(d.prefsrc, Some(ip("198.18.9.1")));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn after_a_rule_came_and_went_the_kernel_keeps_walking_rules() {
    let test = "after_a_rule_came_and_went_the_kernel_keeps_walking_rules";
    require_root(test);
    let mut lab = Lab::new("ld").unwrap();
    let (host, _) = build(&mut lab, "sticky", false);
    let ns = lab.namespaces().last().unwrap().clone();
    ip_batch(
        &ns,
        "rule add pref 100 fwmark 0x1 lookup 100\nrule del pref 100 fwmark 0x1 lookup 100\n",
    );
    let st = host.snapshot().unwrap();
    // The snapshot looks untouched, but the kernel's custom-rules flag is sticky:
    // FibMode::Rules is the right mode for this host (see FibMode's docs).
    assert_eq!(FibMode::detect(&st), FibMode::Merged);
    let qs = queries(&st, 500, 0x5eed_0000_0000_0003, &[]);
    let outcomes = compare(&host, &st, &qs, FibMode::Rules);
    assert_seen(&outcomes, &["Local table 255", "Unicast table 254"]);
}

/// A loopback source may only reach local destinations (`__mkroute_output`
/// refuses it on any other device with `EINVAL`), as the lab above shows.
#[test]
fn loopback_source_only_reaches_local_destinations() {
    let mut b = B::new("h");
    b.nic("lo", 1, "00:00:00:00:00:00", 65536);
    b.nic("eth0", 2, "02:00:00:00:00:01", 1500);
    b.addr("lo", "127.0.0.1/8");
    b.addr("eth0", "198.18.0.1/24");
    let lo = ip("127.0.0.1");
    assert_eq!(
        roce_net::fib_lookup(&b.0, &Flow::to(ip("198.18.0.9")).from(lo)),
        Err(FibError::InvalidSource)
    );
    let d = roce_net::fib_lookup(&b.0, &Flow::to(ip("198.18.0.1")).from(lo)).unwrap();
    assert_eq!((d.kind, d.dev.as_deref()), (RouteType::Local, Some("lo")));
    assert_eq!(d.prefsrc, Some(lo));
}
