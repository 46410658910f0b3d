//! `doctor` on a live kernel: the seed's broken host (four NICs in one /24 and a
//! peer on one bridge) is diagnosed from a real snapshot, the diagnosis is checked
//! against what the kernel and the wire actually do, then the findings' own
//! remediation commands are executed in the namespace and the host is diagnosed
//! again: the findings are gone, the kernel routes each address out of its own NIC
//! and the peer's ARP probe sees one MAC.

use crate::lab_support;

use lab_support::{ip, require_root};
use roce_net::ArpProbeOptions;
use roce_net::Lab;
use roce_net::{Finding, Severity};
use roce_net::{Host, HostState};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::time::Duration;

const NICS: usize = 4;

/// The checks whose remediation this test runs and proves.
const FIXED: [&str; 6] = [
    "arp-ignore",
    "arp-announce",
    "rp-filter-strict",
    "source-rule-missing",
    "source-table-incomplete",
    "asymmetric-egress",
];

fn lab(test: &str) -> Lab {
    require_root(test);
    Lab::seed_tagged("ld", NICS).unwrap_or_else(|e| panic!("{test}: building lab: {e}"))
}

fn v4(ip: IpAddr) -> Ipv4Addr {
    match ip {
        IpAddr::V4(a) => a,
        IpAddr::V6(_) => panic!("lab addresses are IPv4"),
    }
}

/// Run a command inside the namespace and fail the test with its stderr.
fn ns_exec(ns: &str, argv: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .output()
        .expect("running ip netns exec");
    assert!(
        out.status.success(),
        "in {ns}: {}: {}",
        argv.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sysctl_w(ns: &str, key: &str, value: u32) {
    ns_exec(ns, &["sysctl", "-qw", &format!("{key}={value}")]);
}

fn sysctl_r(ns: &str, key: &str) -> u32 {
    ns_exec(ns, &["sysctl", "-n", key]).trim().parse().unwrap()
}

/// Namespaces copy the machine's IPv4 conf values when created: pin the kernel
/// defaults the seed scenario is about, on `all`, `default` and every NIC.
fn kernel_defaults(ns: &str) {
    for key in ["arp_ignore", "arp_announce", "arp_filter", "rp_filter"] {
        for dev in ["all", "default", "r0", "r1", "r2", "r3"] {
            sysctl_w(ns, &format!("net.ipv4.conf.{dev}.{key}"), 0);
        }
    }
}

/// Execute one remediation command as printed by a finding, by a shell. A
/// snapshot taken in `ns` prints commands that act there (`ip -n NS ...`,
/// `ip netns exec NS sysctl ...`); one that does not is refused before it runs,
/// since it would act on the machine's own namespace.
fn run_remediation(ns: &str, cmd: &str) {
    assert!(
        cmd.starts_with(&format!("ip -n {ns} "))
            || cmd.starts_with(&format!("ip netns exec {ns} sysctl ")),
        "remediation command {cmd:?} does not act in {ns}"
    );
    let out = Command::new("sh")
        .args(["-c", cmd])
        .output()
        .expect("running sh -c");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn probe_macs(lab: &Lab, target: IpAddr) -> BTreeSet<String> {
    let peer = Host::netns(lab.peer_ns().unwrap()).unwrap();
    let r = peer
        .probe_arp(
            "p0",
            v4(target),
            ArpProbeOptions::new(3, Duration::from_millis(900)),
        )
        .unwrap();
    assert!(r.requests_sent >= 1);
    r.replies.iter().map(|x| x.mac.to_string()).collect()
}

fn mac_of(st: &HostState, ifname: &str) -> String {
    st.interface(ifname)
        .and_then(|i| i.mac.as_ref())
        .unwrap()
        .to_string()
}

fn by_id<'a>(findings: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.id == id).collect()
}

fn listing(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("  {} {} [{}]: {}", f.severity, f.id, f.subject, f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn nic_names() -> Vec<String> {
    (0..NICS).map(|i| format!("r{i}")).collect()
}

/// One finding per NIC with this id, each naming exactly that interface.
fn assert_per_nic(findings: &[Finding], id: &str, nics: &[String]) -> BTreeMap<String, Finding> {
    let got = by_id(findings, id);
    let mut out = BTreeMap::new();
    for f in got {
        let ifname = f
            .subject
            .interface
            .clone()
            .unwrap_or_else(|| panic!("{id} finding without an interface: {f:?}"));
        assert!(
            out.insert(ifname.clone(), f.clone()).is_none(),
            "{id} reported twice for {ifname}"
        );
    }
    let names: Vec<String> = out.keys().cloned().collect();
    assert_eq!(
        names,
        nics,
        "{id} should name exactly these NICs; findings:\n{}",
        listing(findings)
    );
    out
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn seed_host_diagnosed_live_then_fixed_by_its_own_remediation() {
    let test = "seed_host_diagnosed_live_then_fixed_by_its_own_remediation";
    let lab = lab(test);
    let ns = lab.host_ns().unwrap().to_string();
    kernel_defaults(&ns);
    let host = lab.host().unwrap();
    let st = host.snapshot().unwrap();
    let findings = roce_net::doctor(&st);
    let nics = nic_names();
    let addr: BTreeMap<String, IpAddr> = lab
        .nics()
        .iter()
        .map(|n| (n.name.clone(), n.address))
        .collect();
    let peer_ip = lab.peer_nic().unwrap().address;

    // Exactly the seed's problems: no false positives from lo, IPv6 or link-local.
    let ids: BTreeSet<&str> = findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            "arp-announce",
            "arp-ignore",
            "asymmetric-egress",
            "no-rdma-devices",
            "source-rule-missing",
        ]),
        "findings on the seed host:\n{}",
        listing(&findings)
    );

    // ARP flux: every NIC shares the /24 with the three others.
    for id in ["arp-ignore", "arp-announce"] {
        let per = assert_per_nic(&findings, id, &nics);
        for (ifname, f) in per {
            assert_eq!(f.severity, Severity::Error, "{id} on {ifname}");
            assert_eq!(
                f.evidence["effective"],
                serde_json::json!(0),
                "{id} {ifname}"
            );
            let mut others = f.evidence["shares_subnet_with"]
                .as_array()
                .unwrap_or_else(|| panic!("{id} {ifname}: shares_subnet_with: {f:?}"))
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect::<Vec<_>>();
            others.sort();
            let want: Vec<String> = nics.iter().filter(|n| **n != ifname).cloned().collect();
            assert_eq!(others, want, "{id} {ifname}");
            let want_value = if id == "arp-ignore" { 1 } else { 2 };
            let key = id.replace('-', "_");
            assert_eq!(
                f.remediation.commands,
                vec![format!(
                    "ip netns exec {ns} sysctl -w net.ipv4.conf.{ifname}.{key}={want_value}"
                )],
                "{id} {ifname}"
            );
        }
    }

    // No source rules: one finding per NIC address, with the address as subject.
    let srm = assert_per_nic(&findings, "source-rule-missing", &nics);
    let mut proposed_tables = BTreeSet::new();
    for (ifname, f) in &srm {
        let a = addr[ifname];
        assert_eq!(f.subject.address.as_deref(), Some(a.to_string().as_str()));
        assert_eq!(f.evidence["address"], serde_json::json!(a));
        assert_eq!(f.evidence["main_rule_priority"], serde_json::json!(32766));
        let table = f.evidence["proposed_table"].as_u64().unwrap();
        let prio = f.evidence["proposed_priority"].as_u64().unwrap();
        assert!(table > 0 && table != 253 && table != 254 && table != 255);
        assert!(
            prio > 0 && prio < 32766,
            "{ifname}: proposed priority {prio}"
        );
        proposed_tables.insert(table);
        let cmds = &f.remediation.commands;
        assert_eq!(
            cmds,
            &vec![
                format!(
                    "ip -n {ns} route replace 198.18.0.0/24 dev {ifname} src {a} table {table} proto 201"
                ),
                format!("ip -n {ns} rule add from {a} lookup {table} pref {prio} proto 201"),
            ],
            "{ifname}"
        );
    }
    assert_eq!(proposed_tables.len(), NICS, "one table per NIC");

    // Asymmetric egress: the main table's first /24 route (r0, its address was
    // added first) carries everything, so r1..r3 send from their address via r0.
    // The finding must say what the kernel itself answers.
    let asym = assert_per_nic(&findings, "asymmetric-egress", &nics[1..]);
    for (ifname, f) in &asym {
        let a = addr[ifname];
        assert_eq!(f.subject.address.as_deref(), Some(a.to_string().as_str()));
        assert_eq!(f.evidence["egress"], serde_json::json!("r0"), "{ifname}");
        let peer: IpAddr = f.evidence["peer"].as_str().unwrap().parse().unwrap();
        let kernel = host.route_get(peer, Some(a)).unwrap();
        assert_eq!(kernel.dev.as_deref(), Some("r0"), "kernel, from {a}");
        assert_eq!(f.evidence["table"], serde_json::json!(kernel.table));
        // And towards the real peer, too.
        let kernel = host.route_get(peer_ip, Some(a)).unwrap();
        assert_eq!(kernel.dev.as_deref(), Some("r0"), "kernel, {a} -> peer");
    }
    assert!(by_id(&findings, "rp-filter-strict").is_empty());
    assert!(by_id(&findings, "source-table-incomplete").is_empty());

    // The wire: ARP for r1's address is answered by all four NICs.
    let macs: BTreeSet<String> = nics.iter().map(|n| mac_of(&st, n)).collect();
    assert_eq!(macs.len(), NICS);
    let seen = probe_macs(&lab, addr["r1"]);
    assert_eq!(seen, macs, "ARP flux: every NIC answers for r1's address");

    // Fix it with exactly the commands the findings print (each once, in order).
    // Only the routing/ARP findings: the lab has no RDMA devices to fix.
    let mut cmds: Vec<String> = Vec::new();
    for f in findings.iter().filter(|f| FIXED.contains(&f.id.as_str())) {
        for c in &f.remediation.commands {
            if !cmds.contains(c) {
                cmds.push(c.clone());
            }
        }
    }
    for c in &cmds {
        run_remediation(&ns, c);
    }
    // Loose reverse-path filtering, as the fix recommends for multi-NIC hosts.
    sysctl_w(&ns, "net.ipv4.conf.all.rp_filter", 2);

    let st2 = host.snapshot().unwrap();
    for n in &nics {
        assert_eq!(sysctl_r(&ns, &format!("net.ipv4.conf.{n}.arp_ignore")), 1);
        assert_eq!(sysctl_r(&ns, &format!("net.ipv4.conf.{n}.arp_announce")), 2);
    }
    let after = roce_net::doctor(&st2);
    let ids_after: BTreeSet<&str> = after.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids_after,
        BTreeSet::from(["no-rdma-devices"]),
        "after the fix only the lab's missing RDMA devices remain:\n{}",
        listing(&after)
    );
    for id in FIXED {
        assert!(
            by_id(&after, id).is_empty(),
            "{id} still reported after its remediation ran ({cmds:#?}):\n{}",
            listing(&after)
        );
    }
    assert!(
        after.iter().all(|f| f.severity != Severity::Error),
        "errors left after the fix:\n{}",
        listing(&after)
    );

    // The kernel now sends each address out of its own NIC, via its own table.
    for n in &nics {
        let a = addr[n];
        let d = host.route_get(peer_ip, Some(a)).unwrap();
        assert_eq!(d.dev.as_deref(), Some(n.as_str()), "from {a}");
        let table = srm[n].evidence["proposed_table"].as_u64().unwrap();
        assert_eq!(u64::from(d.table), table, "from {a}");
        assert_eq!(d.prefsrc, Some(a));
    }
    // Unsourced traffic still works (main table).
    let d = host.route_get(peer_ip, None).unwrap();
    assert!(d.dev.is_some());

    // The wire: only r1 answers for r1's address.
    let seen = probe_macs(&lab, addr["r1"]);
    assert_eq!(
        seen,
        BTreeSet::from([mac_of(&st2, "r1")]),
        "after arp_ignore=1 only r1 answers"
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn strict_rp_filter_reported_and_its_remediation_makes_it_loose() {
    let test = "strict_rp_filter_reported_and_its_remediation_makes_it_loose";
    let lab = lab(test);
    let ns = lab.host_ns().unwrap().to_string();
    kernel_defaults(&ns);
    // A RHEL-like host: strict on `all`, the interfaces left at 0.
    sysctl_w(&ns, "net.ipv4.conf.all.rp_filter", 1);
    let host = lab.host().unwrap();
    let findings = roce_net::doctor(&host.snapshot().unwrap());
    let per = assert_per_nic(&findings, "rp-filter-strict", &nic_names());
    for (ifname, f) in &per {
        assert_eq!(f.evidence["all"], serde_json::json!(1), "{ifname}");
        assert_eq!(f.evidence["effective"], serde_json::json!(1), "{ifname}");
        for c in &f.remediation.commands {
            run_remediation(&ns, c);
        }
    }
    let after = roce_net::doctor(&host.snapshot().unwrap());
    assert!(
        by_id(&after, "rp-filter-strict").is_empty(),
        "{}",
        listing(&after)
    );
    for n in nic_names() {
        // max(all, iface) is what the kernel uses: loose everywhere.
        let all = sysctl_r(&ns, "net.ipv4.conf.all.rp_filter");
        let own = sysctl_r(&ns, &format!("net.ipv4.conf.{n}.rp_filter"));
        assert_eq!(all.max(own), 2, "{n}");
    }
}

/// Half-done source routing as hosts end up with it: a rule into an empty table
/// (r1), a rule that runs after main's (r2), a table routing through the wrong
/// NIC (r3). Each is diagnosed on the live kernel, and the findings' commands
/// repair it.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn half_done_source_routing_diagnosed_and_repaired_live() {
    let test = "half_done_source_routing_diagnosed_and_repaired_live";
    let lab = lab(test);
    let ns = lab.host_ns().unwrap().to_string();
    kernel_defaults(&ns);
    ip(
        &ns,
        &[
            "rule",
            "add",
            "from",
            "198.18.0.12",
            "lookup",
            "1002",
            "pref",
            "1002",
        ],
    );
    ip(
        &ns,
        &[
            "rule",
            "add",
            "from",
            "198.18.0.13",
            "lookup",
            "1003",
            "pref",
            "40000",
        ],
    );
    ip(
        &ns,
        &[
            "route",
            "add",
            "198.18.0.0/24",
            "dev",
            "r0",
            "table",
            "1003",
        ],
    );
    ip(
        &ns,
        &[
            "rule",
            "add",
            "from",
            "198.18.0.14",
            "lookup",
            "1004",
            "pref",
            "1004",
        ],
    );
    ip(
        &ns,
        &[
            "route",
            "add",
            "198.18.0.0/24",
            "dev",
            "r0",
            "table",
            "1004",
        ],
    );
    let host = lab.host().unwrap();
    let findings = roce_net::doctor(&host.snapshot().unwrap());
    let all = listing(&findings);

    // r1: the rule exists, its table is empty.
    let sti = assert_per_nic(
        &findings,
        "source-table-incomplete",
        &["r1".to_string(), "r3".to_string()],
    );
    assert_eq!(
        sti["r1"].evidence["table"],
        serde_json::json!(1002),
        "{all}"
    );
    assert_eq!(sti["r1"].evidence["table_routes"], serde_json::json!(0));
    assert_eq!(sti["r1"].severity, Severity::Error);
    // r3: its table routes the subnet through r0.
    assert_eq!(sti["r3"].evidence["table"], serde_json::json!(1004));
    assert_eq!(
        sti["r3"].evidence["subnet_routes"],
        serde_json::json!(["198.18.0.0/24 dev r0 src -"])
    );
    // r2: the rule runs after main's, so it counts as missing, and the fix
    // deletes it first.
    let srm = assert_per_nic(
        &findings,
        "source-rule-missing",
        &["r0".to_string(), "r2".to_string()],
    );
    assert_eq!(
        srm["r2"].evidence["shadowed_rule"]["priority"],
        serde_json::json!(40000)
    );
    assert_eq!(
        srm["r2"].remediation.commands[0],
        format!("ip -n {ns} rule del from 198.18.0.13 lookup 1003 pref 40000 proto 0")
    );
    // All three still leave by r0, which the kernel confirms.
    let asym = assert_per_nic(
        &findings,
        "asymmetric-egress",
        &["r1".to_string(), "r2".to_string(), "r3".to_string()],
    );
    for (ifname, f) in &asym {
        let src: IpAddr = f.evidence["source"].as_str().unwrap().parse().unwrap();
        let peer: IpAddr = f.evidence["peer"].as_str().unwrap().parse().unwrap();
        let k = host.route_get(peer, Some(src)).unwrap();
        assert_eq!(k.dev.as_deref(), Some("r0"), "{ifname}");
        assert_eq!(f.evidence["egress"], serde_json::json!("r0"), "{ifname}");
        assert_eq!(f.evidence["table"], serde_json::json!(k.table), "{ifname}");
    }

    let mut cmds: Vec<String> = Vec::new();
    for f in findings.iter().filter(|f| FIXED.contains(&f.id.as_str())) {
        for c in &f.remediation.commands {
            if !cmds.contains(c) {
                cmds.push(c.clone());
            }
        }
    }
    for c in &cmds {
        run_remediation(&ns, c);
    }
    let after = roce_net::doctor(&host.snapshot().unwrap());
    let ids_after: BTreeSet<&str> = after.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids_after,
        BTreeSet::from(["no-rdma-devices"]),
        "after running {cmds:#?}:\n{}",
        listing(&after)
    );
    let peer_ip = lab.peer_nic().unwrap().address;
    for n in lab.nics() {
        let d = host.route_get(peer_ip, Some(n.address)).unwrap();
        assert_eq!(
            d.dev.as_deref(),
            Some(n.name.as_str()),
            "from {}",
            n.address
        );
    }
    // The existing tables were reused, the shadowed rule is gone.
    assert_eq!(
        host.route_get(peer_ip, Some(lab.nics()[1].address))
            .unwrap()
            .table,
        1002
    );
    assert_eq!(
        host.route_get(peer_ip, Some(lab.nics()[3].address))
            .unwrap()
            .table,
        1004
    );
    let rules = ip(&ns, &["rule", "show"]);
    assert!(!rules.contains("40000:"), "{rules}");
}
