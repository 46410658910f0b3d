//! The seed scenario end to end, and the transaction's safety: confirm-timeout
//! expiry, drift refusal and lock contention. Real kernels, real netlink, in
//! throwaway namespaces. (Failures injected at every step, in verify and while
//! an apply is held are tested inside the crate, `apply/tests.rs`, through the
//! test-only fault seam.)

use crate::apply_support::Env;
use crate::lab_support;
use crate::test_support::tree_listing;

use lab_support::ip;
use roce_net::ArpProbeOptions;
use roce_net::Policy;
use roce_net::{ApplyOptions, NsLock, WatchdogOutcome};
use roce_net::{ErrorKind, Host, HostState};
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::time::Duration;

/// A seed lab of `nics` NICs for `test` (namespaces tagged `ap`).
fn env(test: &str, nics: usize) -> Env {
    Env::new(test, "ap", nics)
}

/// Everything apply may change, in a form where "exactly as before" is `==`.
/// Neighbours compare by (device, IP, MAC): a restored entry comes back STALE.
fn comparable(st: &HostState) -> serde_json::Value {
    let neigh: BTreeSet<(String, IpAddr, String)> = st
        .neighbors
        .iter()
        // IPv6 multicast entries (MLD) come and go on their own.
        .filter(|n| n.mac.is_some() && !n.ip.is_multicast())
        .map(|n| {
            (
                n.ifname.clone(),
                n.ip,
                n.mac.as_ref().map(|m| m.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    // IPv6 link-local addresses (and their kernel routes) appear on their own
    // after DAD; apply never touches them.
    let routes: Vec<_> = st
        .routes
        .iter()
        .filter(|r| {
            !(r.family == roce_net::Family::Inet6 && r.protocol == roce_net::protocol::KERNEL)
        })
        .collect();
    serde_json::json!({
        "fingerprint": roce_net::fingerprint(st),
        "routes": routes,
        "rules": st.rules,
        "sysctls": st.sysctls,
        "table_names": st.table_names,
        "neighbors": neigh,
    })
}

fn v4(ip: IpAddr) -> Ipv4Addr {
    match ip {
        IpAddr::V4(a) => a,
        IpAddr::V6(_) => panic!("lab addresses are IPv4"),
    }
}

fn peer_probe(e: &Env, target: IpAddr) -> BTreeSet<String> {
    let peer = Host::netns(e.lab.peer_ns().unwrap()).unwrap();
    let r = peer
        .probe_arp(
            "p0",
            v4(target),
            ArpProbeOptions::new(3, Duration::from_millis(600)),
        )
        .unwrap();
    r.replies.iter().map(|x| x.mac.to_string()).collect()
}

fn mac_of(st: &HostState, ifname: &str) -> String {
    st.interface(ifname)
        .and_then(|i| i.mac.as_ref())
        .unwrap()
        .to_string()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn seed_scenario_is_fixed_by_apply() {
    let e = env("seed_scenario_is_fixed_by_apply", 4);
    let nic = |i: usize| e.lab.nics()[i].address;
    let peer_ip = e.lab.peer_nic().unwrap().address;

    // Before: ARP flux (four MACs answer for NIC 2's address) and asymmetric egress.
    let before = e.host.snapshot().unwrap();
    let macs = peer_probe(&e, nic(1));
    assert_eq!(
        macs.len(),
        4,
        "every NIC answers ARP for r1's address: {macs:?}"
    );
    let d = e.host.route_get(peer_ip, Some(nic(1))).unwrap();
    assert_eq!(
        d.dev.as_deref(),
        Some("r0"),
        "traffic from r1's address leaves by r0"
    );

    let policy = Policy::default();
    let p = roce_net::plan(&before, &policy).unwrap();
    assert!(!p.is_empty());
    let report = roce_net::apply(&e.host, &p, &e.opts).unwrap();
    assert_eq!(report.applied, p.changes.len());

    // After: one MAC, each source leaves by its own NIC, traffic flows, plan empty.
    let after = e.host.snapshot().unwrap();
    let macs = peer_probe(&e, nic(1));
    assert_eq!(
        macs,
        BTreeSet::from([mac_of(&after, "r1")]),
        "only r1 answers for its address"
    );
    for (i, n) in e.lab.nics().iter().enumerate() {
        let d = e.host.route_get(peer_ip, Some(n.address)).unwrap();
        assert_eq!(
            d.dev.as_deref(),
            Some(n.name.as_str()),
            "source {} leaves by its own NIC",
            n.address
        );
        assert_eq!(d.table, 1001 + i as u32);
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                e.lab.host_ns().unwrap(),
                "ping",
                "-c",
                "1",
                "-W",
                "2",
                "-I",
            ])
            .arg(n.address.to_string())
            .arg(peer_ip.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ping -I {} {peer_ip}: {}",
            n.address,
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let again = roce_net::plan(&e.host.snapshot().unwrap(), &policy).unwrap();
    assert!(
        again.is_empty(),
        "second plan is empty, got:\n{}",
        again.render_diff()
    );
    // The kernel shows roce-net's objects with its protocol number.
    assert!(
        after
            .rules
            .iter()
            .filter(|r| r.protocol == policy.protocol)
            .count()
            == 4
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn confirm_timeout_expiry_restores_and_confirm_keeps() {
    let e = env("confirm_timeout_expiry_restores_and_confirm_keeps", 2);
    let before = e.host.snapshot().unwrap();
    let p = roce_net::plan(&before, &Policy::default()).unwrap();
    let opts = ApplyOptions {
        confirm_timeout: Some(Duration::from_secs(1)),
        ..e.opts.clone()
    };
    let r = roce_net::apply(&e.host, &p, &opts).unwrap();
    assert!(r.confirm_deadline.is_some());
    // While it awaits confirmation, another apply is refused.
    let err = roce_net::apply(&e.host, &p, &e.opts).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err}");
    match roce_net::watchdog(&e.host, &e.opts).unwrap() {
        WatchdogOutcome::RolledBack(rep) => assert_eq!(rep.undone.len(), p.changes.len()),
        other => panic!("expected a rollback, got {other:?}"),
    }
    assert_eq!(comparable(&e.host.snapshot().unwrap()), comparable(&before));

    // Confirmed in time: kept.
    let opts = ApplyOptions {
        confirm_timeout: Some(Duration::from_secs(30)),
        ..e.opts.clone()
    };
    roce_net::apply(&e.host, &p, &opts).unwrap();
    roce_net::confirm(&e.host, &e.opts).unwrap();
    assert_eq!(
        roce_net::watchdog(&e.host, &e.opts).unwrap(),
        WatchdogOutcome::Confirmed
    );
    assert!(
        roce_net::plan(&e.host.snapshot().unwrap(), &Policy::default())
            .unwrap()
            .is_empty()
    );
    // Nothing left to confirm.
    assert_eq!(
        roce_net::confirm(&e.host, &e.opts).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // And rollback undoes the confirmed apply too.
    roce_net::rollback(&e.host, &e.opts).unwrap();
    assert_eq!(comparable(&e.host.snapshot().unwrap()), comparable(&before));
    assert_eq!(
        roce_net::rollback(&e.host, &e.opts).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn drift_in_what_the_plan_touches_is_refused_and_elsewhere_is_not() {
    let e = env(
        "drift_in_what_the_plan_touches_is_refused_and_elsewhere_is_not",
        2,
    );
    let ns = e.lab.host_ns().unwrap();
    let p = roce_net::plan(&e.host.snapshot().unwrap(), &Policy::default()).unwrap();
    // A sysctl the plan sets is changed behind its back: its recorded "before"
    // (the rollback target) is wrong now, so the plan is refused.
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "sysctl",
            "-q",
            "-w",
            "net.ipv4.conf.r1.arp_ignore=2",
        ])
        .status()
        .unwrap();
    assert!(out.success());
    let drifted = e.host.snapshot().unwrap();
    let err = roce_net::apply(&e.host, &p, &e.opts).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Drift, "{err}");
    assert!(
        err.to_string().contains("roce-net plan"),
        "says what to do: {err}"
    );
    assert!(
        err.to_string().contains("net.ipv4.conf.r1.arp_ignore"),
        "names it: {err}"
    );
    assert_eq!(
        comparable(&e.host.snapshot().unwrap()),
        comparable(&drifted),
        "nothing changed"
    );
    // A fresh plan, then a change the plan neither touches nor reads (a rule and
    // routes in a table of their own): applied, not refused.
    let p = roce_net::plan(&drifted, &Policy::default()).unwrap();
    ip(
        ns,
        &[
            "rule",
            "add",
            "from",
            "198.18.1.1",
            "lookup",
            "50",
            "pref",
            "500",
        ],
    );
    ip(
        ns,
        &[
            "route",
            "add",
            "blackhole",
            "198.19.7.0/24",
            "table",
            "5000",
        ],
    );
    let report = roce_net::apply(&e.host, &p, &e.opts).unwrap();
    assert_eq!(report.applied, p.changes.len());
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn concurrent_apply_is_refused_by_the_lock() {
    let e = env("concurrent_apply_is_refused_by_the_lock", 2);
    let before = e.host.snapshot().unwrap();
    let p = roce_net::plan(&before, &Policy::default()).unwrap();
    let key = roce_net::namespace_key(&e.host).unwrap();
    let held = NsLock::acquire(&e.opts.state_dir, &key).unwrap();
    let err = roce_net::apply(&e.host, &p, &e.opts).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err}");
    assert_eq!(
        comparable(&e.host.snapshot().unwrap()),
        comparable(&before),
        "nothing changed"
    );
    drop(held);
    roce_net::apply(&e.host, &p, &e.opts).unwrap();
}

/// A NIC whose ARP is off (`ip link set DEV arp off`, `IFF_NOARP`) sends no
/// gratuitous ARP after apply: it answers no ARP, so no peer learned a MAC for
/// it by ARP, and a peer's entry for its address is left as it is. The other
/// NICs still announce theirs. (The peer's entries are the wire's record: an
/// announcement sent from NIC 1 would have set NIC 1's MAC there.)
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_sends_no_gratuitous_arp_from_a_nic_whose_arp_is_off() {
    let e = env(
        "apply_sends_no_gratuitous_arp_from_a_nic_whose_arp_is_off",
        3,
    );
    let host_ns = e.lab.host_ns().unwrap().to_string();
    let peer_ns = e.lab.peer_ns().unwrap().to_string();
    let nics = e.lab.nics().to_vec();
    // ip link set r1 arp off
    ip(&host_ns, &["link", "set", &nics[1].name, "arp", "off"]);
    let st = e.host.snapshot().unwrap();
    let wrong = mac_of(&st, &nics[0].name);
    for n in &nics[1..] {
        let a = n.address.to_string();
        // ip -n PEER neigh replace ADDR lladdr <r0's MAC> dev p0 nud stale
        ip(
            &peer_ns,
            &[
                "neigh", "replace", &a, "lladdr", &wrong, "dev", "p0", "nud", "stale",
            ],
        );
    }
    let report = roce_net::apply_policy(&e.host, &Policy::default(), &e.opts).unwrap();
    assert!(report.applied > 0);
    let held = |n: &roce_net::LabNic| {
        let peer = Host::netns(&peer_ns).unwrap().snapshot().unwrap();
        peer.neighbors
            .iter()
            .find(|x| x.ip == n.address && x.ifname == "p0")
            .and_then(|x| x.mac.as_ref())
            .map(|m| m.to_string())
    };
    // Every announcement goes out twice, the second copy a second after the
    // first, from the process that closes the socket: check once it has.
    // Spoil the peer's entry for r2 again and wait until r2's second copy
    // repairs it; r1's copy, had there been one, went out with it.
    let a2 = nics[2].address.to_string();
    ip(
        &peer_ns,
        &[
            "neigh", "replace", &a2, "lladdr", &wrong, "dev", "p0", "nud", "stale",
        ],
    );
    // A hang guard over the second copy's delay (1 s), not a speed figure.
    let guard = roce_net_testkit::hang_guard(Duration::from_secs(1));
    let t0 = std::time::Instant::now();
    while held(&nics[2]) != Some(mac_of(&st, &nics[2].name)) {
        assert!(
            t0.elapsed() < guard,
            "no second announcement of {a2} reached the peer within {guard:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        held(&nics[1]),
        Some(wrong.clone()),
        "no announcement from {} (ARP off) may reach the peer",
        nics[1].name
    );
    assert_eq!(
        held(&nics[2]),
        Some(mac_of(&st, &nics[2].name)),
        "{} announced its address",
        nics[2].name
    );
    let skipped = format!(
        "did not announce {} on {}: ARP is off on {} (NOARP)",
        nics[1].address, nics[1].name, nics[1].name
    );
    assert!(
        report.announced.contains(&skipped),
        "{:?}",
        report.announced
    );
    for n in [&nics[0], &nics[2]] {
        let line = format!("announced {} on {} (gratuitous ARP)", n.address, n.name);
        assert!(report.announced.contains(&line), "{:?}", report.announced);
    }
}

/// A peer entry spoiled again after the first announcement (as an ARP reply
/// the wrong NIC sent just before the fix took effect can: docs/vm.md) is
/// repaired by the second copy, which goes out a second later from the
/// process that closes the announcer's socket.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_second_announcement_a_second_later_repairs_an_entry_spoiled_after_the_first() {
    let e = env(
        "the_second_announcement_a_second_later_repairs_an_entry_spoiled_after_the_first",
        2,
    );
    let peer_ns = e.lab.peer_ns().unwrap().to_string();
    let nics = e.lab.nics().to_vec();
    let st = e.host.snapshot().unwrap();
    let (wrong, right) = (mac_of(&st, &nics[0].name), mac_of(&st, &nics[1].name));
    let a = nics[1].address.to_string();
    roce_net::apply_policy(&e.host, &Policy::default(), &e.opts).unwrap();
    // ip -n PEER neigh replace ADDR lladdr <r0's MAC> dev p0 nud stale
    ip(
        &peer_ns,
        &[
            "neigh", "replace", &a, "lladdr", &wrong, "dev", "p0", "nud", "stale",
        ],
    );
    let held = || {
        let peer = Host::netns(&peer_ns).unwrap().snapshot().unwrap();
        peer.neighbors
            .iter()
            .find(|x| x.ip == nics[1].address && x.ifname == "p0")
            .and_then(|x| x.mac.as_ref())
            .map(|m| m.to_string())
    };
    let t0 = std::time::Instant::now();
    while held() != Some(right.clone()) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the peer still holds {:?} for {a} 5 s after apply",
            held()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A peer that learned another NIC's MAC for a host address during ARP flux
/// takes the right one from the gratuitous ARP apply sends, with no command on
/// the peer (docs/vm.md, "Peers heal"; the VM tier shows the same with RDMA).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_announces_each_nic_so_a_peer_with_a_stale_entry_heals() {
    let e = env(
        "apply_announces_each_nic_so_a_peer_with_a_stale_entry_heals",
        4,
    );
    let peer_ns = e.lab.peer_ns().unwrap().to_string();
    let st = e.host.snapshot().unwrap();
    let wrong = mac_of(&st, &e.lab.nics()[0].name);
    // The peer holds NIC 0's MAC for every other NIC's address, as flux teaches.
    for n in &e.lab.nics()[1..] {
        let a = n.address.to_string();
        ip(
            &peer_ns,
            &[
                "neigh", "replace", &a, "lladdr", &wrong, "dev", "p0", "nud", "stale",
            ],
        );
    }
    let policy = Policy::default();
    let report = roce_net::apply_policy(&e.host, &policy, &e.opts).unwrap();
    assert!(report.applied > 0);
    for n in e.lab.nics() {
        let line = format!("announced {} on {} (gratuitous ARP)", n.address, n.name);
        assert!(report.announced.contains(&line), "{:?}", report.announced);
    }
    let peer = Host::netns(&peer_ns).unwrap().snapshot().unwrap();
    for n in &e.lab.nics()[1..] {
        let entry = peer
            .neighbors
            .iter()
            .find(|x| x.ip == n.address && x.ifname == "p0")
            .unwrap_or_else(|| panic!("the peer lost its entry for {}", n.address));
        assert_eq!(
            entry.mac.as_ref().map(|m| m.to_string()),
            Some(mac_of(&st, &n.name)),
            "the peer's entry for {} after apply",
            n.address
        );
    }
}

/// The library: `apply_policy`, then `persist_for_apply` (sysctl.d: the
/// sysctl drop-in, the table and protocol names, the boot-time repair),
/// then `rollback`: the rollback lists the files it put back and the etc
/// root is as it was before the apply, byte for byte, mode for mode (the
/// names file's lock included: it exists only while held); a second
/// `rollback` finds nothing to do.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_puts_back_what_persist_for_apply_wrote() {
    let e = env("rollback_puts_back_what_persist_for_apply_wrote", 2);
    let etc = e.host.etc_root().to_path_buf();
    std::fs::create_dir_all(etc.join("iproute2/rt_tables.d")).unwrap();
    let root = tempfile::tempdir().unwrap();
    let target = roce_net::PersistRoot::new(root.path()).with_etc(&etc);
    let before = tree_listing(&etc);
    let policy = Policy::default();
    roce_net::apply_policy(&e.host, &policy, &e.opts).unwrap();
    let st = e.host.snapshot().unwrap();
    let desired = roce_net::desired_state(&st, &policy).unwrap();
    let chosen = Some((roce_net::Backend::SysctlD, "the test".to_string()));
    let plan = roce_net::prepare_persistence(&desired, &st, &target, chosen).unwrap();
    let done = roce_net::persist_for_apply(&e.host, &e.opts, &plan, &target, false, false).unwrap();
    assert!(done.recorded.is_some(), "{done:?}");
    assert!(etc.join("sysctl.d/90-roce-net.conf").is_file());
    let r = roce_net::rollback(&e.host, &e.opts).unwrap();
    assert!(
        r.restored_files
            .iter()
            .any(|l| l.contains("sysctl.d/90-roce-net.conf (persist created it)")),
        "{r:?}"
    );
    assert_eq!(tree_listing(&etc), before, "{r:?}");
    let again = roce_net::rollback(&e.host, &e.opts).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::NotFound, "{again}");
}
