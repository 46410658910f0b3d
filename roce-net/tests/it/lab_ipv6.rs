//! IPv6 rails end to end, on real kernels in throwaway namespaces: the seed
//! scenario with the NICs in one IPv6 prefix (`fd00:198:18::11..14/64`), alone
//! and beside IPv4 (dual stack). Before the fix every source address leaves by
//! `r0` (one prefix route per NIC in main); after `apply` each leaves by its own
//! NIC, through its table (the kernel's own `ip -6 route get` answer, looked up
//! with `RTM_F_LOOKUP_TABLE`, and iproute2's), a second plan is empty, and
//! rollback restores IPv4 and IPv6 rules, routes and sysctls exactly; foreign
//! IPv6 rules and routes are kept throughout; after apply each NIC announces
//! its addresses in both families, so a peer's stale entries heal. The lab's IPv6 addresses are
//! added with `nodad` (usable at once); where DAD matters the test says so.

use crate::apply_support::Env;
use crate::lab_support::{ip, ip_json_numeric, s};
use roce_net::{AddressFamilies, Family, HostState, Lab, Policy};
use std::net::IpAddr;
use std::process::Command;

fn env(test: &str, nics: usize, families: AddressFamilies) -> Env {
    Env::of(test, || Lab::seed_families("v6", nics, families))
}

/// Everything apply may change, comparable with `==`: routes other than the
/// ones the kernel makes for IPv6 addresses (link-local ones appear after DAD
/// on their own), rules, sysctls, table names, and the fingerprint.
fn comparable(st: &HostState) -> serde_json::Value {
    let routes: Vec<_> = st
        .routes
        .iter()
        .filter(|r| !(r.family == Family::Inet6 && r.protocol == roce_net::protocol::KERNEL))
        .collect();
    serde_json::json!({
        "fingerprint": roce_net::fingerprint(st),
        "routes": routes,
        "rules": st.rules,
        "sysctls": st.sysctls,
        "table_names": st.table_names,
    })
}

/// The lab NIC addresses of one family, with the NIC name.
fn addrs(lab: &Lab, family: Family) -> Vec<(String, IpAddr)> {
    lab.nics()
        .iter()
        .flat_map(|n| {
            n.addresses
                .iter()
                .filter(move |a| Family::of(&a.addr()) == family)
                .map(move |a| (n.name.clone(), a.addr()))
        })
        .collect()
}

fn mac_of(st: &HostState, ifname: &str) -> String {
    st.interface(ifname)
        .and_then(|i| i.mac.as_ref())
        .unwrap()
        .to_string()
}

fn peer(lab: &Lab, family: Family) -> IpAddr {
    lab.peer_nic()
        .unwrap()
        .addresses
        .iter()
        .map(|a| a.addr())
        .find(|a| Family::of(a) == family)
        .unwrap()
}

/// iproute2's `ip [-6] route get PEER from SRC`: the device and table it
/// prints (`-N`: the table as a number, whatever the machine's names).
fn ip_route_get(ns: &str, peer: IpAddr, src: IpAddr) -> (String, u32) {
    let fam = if peer.is_ipv6() { "-6" } else { "-4" };
    let v = ip_json_numeric(
        ns,
        &[
            fam,
            "route",
            "get",
            &peer.to_string(),
            "from",
            &src.to_string(),
        ],
    );
    let r = &v.as_array().unwrap()[0];
    let table = r
        .get("table")
        .and_then(|t| {
            t.as_str()
                .and_then(|t| t.parse().ok())
                .or(t.as_u64().map(|x| x as u32))
        })
        .unwrap_or(254);
    (s(r, "dev").unwrap(), table)
}

fn ping(ns: &str, src: IpAddr, dst: IpAddr) -> bool {
    Command::new("ip")
        .args(["netns", "exec", ns, "ping", "-c", "1", "-W", "2", "-I"])
        .arg(src.to_string())
        .arg(dst.to_string())
        .output()
        .unwrap()
        .status
        .success()
}

/// The checks of both tests: before, every address of `family` leaves by `r0`;
/// after, each by its own NIC through its table, in the kernel's answer and in
/// iproute2's, and a ping from it reaches the peer.
fn egress(e: &Env, family: Family, fixed: bool) {
    let ns = e.lab.host_ns().unwrap();
    let p = peer(&e.lab, family);
    for (i, (nic, a)) in addrs(&e.lab, family).into_iter().enumerate() {
        let d = e.host.route_get(p, Some(a)).unwrap();
        let (dev, table) = ip_route_get(ns, p, a);
        assert_eq!(d.dev.as_deref(), Some(dev.as_str()), "{a}: kernel vs ip");
        assert_eq!(d.table, table, "{a}: kernel vs ip");
        if fixed {
            assert_eq!(dev, nic, "source {a} leaves by its own NIC");
            assert_eq!(table, 1001 + i as u32, "source {a} through its table");
            assert!(ping(ns, a, p), "ping -I {a} {p}");
        } else {
            assert_eq!(dev, "r0", "before the fix, source {a} leaves by r0");
            assert_eq!(table, 254, "through main");
        }
    }
}

/// A rule and a route of someone else's, in IPv6: kept by apply and rollback.
fn add_foreign_ipv6(ns: &str) {
    ip(
        ns,
        &[
            "-6",
            "rule",
            "add",
            "from",
            "fd00:198:18::99",
            "lookup",
            "50",
            "pref",
            "500",
        ],
    );
    ip(
        ns,
        &[
            "-6",
            "route",
            "add",
            "blackhole",
            "fd00:198:18:7::/64",
            "table",
            "50",
        ],
    );
}

fn has_foreign_ipv6(st: &HostState) -> bool {
    let rule = st.rules.iter().any(|r| {
        r.family == Family::Inet6
            && r.priority == 500
            && r.table == 50
            && r.src == Some("fd00:198:18::99/128".parse().unwrap())
    });
    let route = st.routes.iter().any(|r| {
        r.family == Family::Inet6 && r.table == 50 && r.dst.to_string() == "fd00:198:18:7::/64"
    });
    rule && route
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn ipv6_rails_are_fixed_by_apply_and_rolled_back_exactly() {
    let e = env(
        "ipv6_rails_are_fixed_by_apply_and_rolled_back_exactly",
        4,
        AddressFamilies::Ipv6,
    );
    let ns = e.lab.host_ns().unwrap();
    add_foreign_ipv6(ns);
    let before = e.host.snapshot().unwrap();

    // Doctor before: the IPv6 egress and the missing per-NIC rules, no ARP
    // finding (no NIC has IPv4 to answer ARP for).
    egress(&e, Family::Inet6, false);
    let f = roce_net::doctor(&before);
    let ids = |id: &str| -> Vec<String> {
        f.iter()
            .filter(|x| x.id == id)
            .filter_map(|x| x.subject.address.clone())
            .collect()
    };
    assert_eq!(
        ids("asymmetric-egress"),
        ["fd00:198:18::12", "fd00:198:18::13", "fd00:198:18::14"],
        "{f:#?}"
    );
    assert_eq!(ids("source-rule-missing").len(), 4, "{f:#?}");
    assert!(
        !f.iter().any(|x| x.id.starts_with("arp-")),
        "no ARP finding on an IPv6-only host: {f:#?}"
    );
    let fix = &f
        .iter()
        .find(|x| x.id == "asymmetric-egress")
        .unwrap()
        .remediation
        .commands;
    assert!(
        fix.iter()
            .any(|c| c.contains(" -6 rule add from fd00:198:18::12 lookup 1002")),
        "{fix:?}"
    );

    // Apply, with IPv6 settings to set too.
    let policy =
        Policy::from_yaml("ipv6: {accept_ra_defrtr: 0, ndisc_notify: 1, keep_addr_on_down: 1}\n")
            .unwrap();
    let p = roce_net::plan(&before, &policy).unwrap();
    assert!(
        !p.describe().iter().any(|c| c.contains("arp_")),
        "no ARP sysctl: {:?}",
        p.describe()
    );
    roce_net::apply(&e.host, &p, &e.opts).unwrap();
    let after = e.host.snapshot().unwrap();
    egress(&e, Family::Inet6, true);
    for n in e.lab.nics() {
        let c = &after.sysctls.interfaces[&n.name].configured;
        assert_eq!(
            (c.accept_ra_defrtr, c.ndisc_notify, c.keep_addr_on_down),
            (Some(0), Some(1), Some(1)),
            "{}",
            n.name
        );
    }
    let ours: Vec<_> = after
        .rules
        .iter()
        .filter(|r| r.protocol == policy.protocol)
        .collect();
    assert_eq!(ours.len(), 4);
    assert!(ours.iter().all(|r| r.family == Family::Inet6));
    assert!(
        has_foreign_ipv6(&after),
        "a foreign IPv6 rule and route are kept"
    );
    let again = roce_net::plan(&after, &policy).unwrap();
    assert!(again.is_empty(), "second plan:\n{}", again.render_diff());
    let doctor = roce_net::doctor(&after);
    assert!(
        !doctor
            .iter()
            .any(|x| x.id == "asymmetric-egress" || x.id == "source-rule-missing"),
        "{doctor:#?}"
    );

    // Rollback: exactly as before, IPv6 rules, routes and sysctls included.
    roce_net::rollback(&e.host, &e.opts).unwrap();
    let back = e.host.snapshot().unwrap();
    assert_eq!(comparable(&back), comparable(&before));
    assert!(has_foreign_ipv6(&back));
    egress(&e, Family::Inet6, false);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn dual_stack_rails_are_fixed_in_both_families_by_one_table_per_nic() {
    let e = env(
        "dual_stack_rails_are_fixed_in_both_families_by_one_table_per_nic",
        4,
        AddressFamilies::Both,
    );
    let ns = e.lab.host_ns().unwrap();
    add_foreign_ipv6(ns);
    let before = e.host.snapshot().unwrap();
    egress(&e, Family::Inet, false);
    egress(&e, Family::Inet6, false);

    // `family` leaves the other family alone.
    let only = |fam: &str| {
        let p = Policy::from_yaml(&format!("family: {fam}\n")).unwrap();
        roce_net::plan(&before, &p).unwrap()
    };
    let v4 = only("ipv4");
    assert!(v4.desired.rules.iter().all(|r| r.family == Family::Inet));
    assert_eq!(v4.desired.rules.len(), 4);
    let v6 = only("ipv6");
    assert!(v6.desired.rules.iter().all(|r| r.family == Family::Inet6));
    assert!(
        v6.desired.sysctls.is_empty(),
        "no ARP or rp_filter with family: ipv6: {:?}",
        v6.desired.sysctls
    );

    // The peer holds r0's MAC for every other NIC's addresses, both families,
    // as a stale entry (what ARP flux teaches in IPv4).
    let peer_ns = e.lab.peer_ns().unwrap().to_string();
    let wrong = mac_of(&before, "r0");
    let others: Vec<(String, IpAddr)> = addrs(&e.lab, Family::Inet)
        .into_iter()
        .chain(addrs(&e.lab, Family::Inet6))
        .filter(|(n, _)| n != "r0")
        .collect();
    for (_, a) in &others {
        // ip -n PEER neigh replace ADDR lladdr <r0's MAC> dev p0 nud stale
        let a = a.to_string();
        ip(
            &peer_ns,
            &[
                "neigh", "replace", &a, "lladdr", &wrong, "dev", "p0", "nud", "stale",
            ],
        );
    }

    let policy = Policy::default();
    let p = roce_net::plan(&before, &policy).unwrap();
    for (i, n) in p.desired.nics.iter().enumerate() {
        assert_eq!(n.addresses.len(), 2, "{n:?}");
        assert_eq!(n.table, 1001 + i as u32);
    }
    let report = roce_net::apply(&e.host, &p, &e.opts).unwrap();

    // Each NIC announced both its addresses (gratuitous ARP, unsolicited
    // neighbour advertisement) and the peer's stale entries took each NIC's
    // own MAC, with no command on the peer and before any traffic.
    for (n, a) in addrs(&e.lab, Family::Inet)
        .into_iter()
        .chain(addrs(&e.lab, Family::Inet6))
    {
        let how = if a.is_ipv4() {
            "gratuitous ARP"
        } else {
            "unsolicited neighbour advertisement"
        };
        let line = format!("announced {a} on {n} ({how})");
        assert!(report.announced.contains(&line), "{:?}", report.announced);
    }
    let peer = roce_net::Host::netns(&peer_ns).unwrap().snapshot().unwrap();
    for (n, a) in &others {
        let held = peer
            .neighbors
            .iter()
            .find(|x| x.ip == *a && x.ifname == "p0")
            .and_then(|x| x.mac.as_ref())
            .map(|m| m.to_string());
        assert_eq!(held, Some(mac_of(&before, n)), "the peer's entry for {a}");
    }
    // (Checked before any traffic: the pings below would also make the peer
    // solicit and heal.)
    egress(&e, Family::Inet, true);
    egress(&e, Family::Inet6, true);
    let after = e.host.snapshot().unwrap();
    let ours = |f: Family| {
        after
            .rules
            .iter()
            .filter(|r| r.protocol == policy.protocol && r.family == f)
            .count()
    };
    assert_eq!((ours(Family::Inet), ours(Family::Inet6)), (4, 4));
    assert!(has_foreign_ipv6(&after));
    let again = roce_net::plan(&after, &policy).unwrap();
    assert!(again.is_empty(), "second plan:\n{}", again.render_diff());

    roce_net::rollback(&e.host, &e.opts).unwrap();
    let back = e.host.snapshot().unwrap();
    assert_eq!(comparable(&back), comparable(&before));
    assert!(has_foreign_ipv6(&back));
}

/// An IPv6 address still in duplicate address detection is managed (it is the
/// NIC's address once DAD finishes), and apply works while it is tentative:
/// roce-net's IPv6 routes carry no `src`, which the kernel would refuse for a
/// tentative address ("Invalid source address"). DAD is made to last here
/// (100 probes a second apart) instead of the lab's `nodad`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_works_while_an_ipv6_address_is_tentative() {
    let e = env(
        "apply_works_while_an_ipv6_address_is_tentative",
        2,
        AddressFamilies::Ipv6,
    );
    let ns = e.lab.host_ns().unwrap();
    Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.r1.dad_transmits=100",
        ])
        .status()
        .unwrap();
    ip(ns, &["addr", "del", "fd00:198:18::12/64", "dev", "r1"]);
    ip(ns, &["addr", "add", "fd00:198:18::12/64", "dev", "r1"]);
    // The kernel itself refuses a route with it as src (the reason for the design).
    let refused = Command::new("ip")
        .args([
            "-n",
            ns,
            "-6",
            "route",
            "add",
            "fd00:198:18::/64",
            "dev",
            "r1",
            "src",
            "fd00:198:18::12",
            "table",
            "4000",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "the kernel took a tentative src");
    let before = e.host.snapshot().unwrap();
    let a = before
        .addresses
        .iter()
        .find(|a| a.address.to_string() == "fd00:198:18::12")
        .unwrap();
    assert!(a.has(roce_net::AddressFlag::Tentative), "{a:?}");
    let report = roce_net::apply_policy(&e.host, &Policy::default(), &e.opts).unwrap();
    assert!(report.applied > 0);
    let after = e.host.snapshot().unwrap();
    assert!(after
        .rules
        .iter()
        .any(|r| r.src == Some("fd00:198:18::12/128".parse().unwrap())));
    assert!(roce_net::plan(&after, &Policy::default())
        .unwrap()
        .is_empty());
}
