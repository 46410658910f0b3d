//! A fleet in the lab: host namespaces on one switch, the cross-host wrong-MAC
//! check triggered by real ARP flux (before the fix, a host's traffic sourced
//! from NIC 1's address leaves by NIC 0, so the peer learns NIC 1's address with
//! NIC 0's MAC) and silent on the clean fleet, before and after.

use crate::lab_support;

use lab_support::{ip, require_root};
use roce_net::{ApplyOptions, Finding, Host, HostState, Lab, Policy};
use std::process::Command;

fn snapshots(hosts: &[Host]) -> Vec<HostState> {
    hosts.iter().map(|h| h.snapshot().unwrap()).collect()
}

fn wrong_mac(r: &roce_net::FleetReport) -> Vec<&Finding> {
    r.findings
        .iter()
        .filter(|f| f.id == "fleet-neighbor-wrong-mac")
        .collect()
}

/// `ping -c 1 -I <src> <dst>` inside `ns` (the reply does not matter: the ARP
/// request the kernel sends first is what the peer learns from).
fn ping_from(ns: &str, src: &str, dst: &str) {
    let st = Command::new("ip")
        .args([
            "netns", "exec", ns, "ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src, dst,
        ])
        .output()
        .expect("running ping in the lab (apt install iputils-ping)");
    assert!(
        st.status.code().is_some(),
        "ping in {ns} was killed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn wrong_mac_seen_only_across_hosts_is_found_fixed_and_silent_after() {
    require_root("wrong_mac_seen_only_across_hosts_is_found_fixed_and_silent_after");
    let lab = Lab::fleet("flt", 3, 2).unwrap();
    let ns = lab.fleet_hosts().to_vec();
    assert_eq!(ns.len(), 3);
    let etc = tempfile::tempdir().unwrap();
    let run = tempfile::tempdir().unwrap();
    let hosts: Vec<Host> = ns
        .iter()
        .map(|n| Host::netns(n).unwrap().with_etc_root(etc.path()))
        .collect();
    let nic = |h: usize, i: usize| &lab.nics()[h * 2 + i];
    let addr = |h: usize, i: usize| nic(h, i).address.to_string();

    // A fresh fleet: nothing to see.
    let r = roce_net::fleet_report(&snapshots(&hosts));
    assert!(wrong_mac(&r).is_empty(), "{:#?}", r.findings);
    assert_eq!(r.hosts.len(), 3);
    assert_eq!(
        r.hosts[1].hostname,
        format!("{}:{}", roce_net::hostname(), ns[1])
    );

    // The asymmetric-routing half of ARP flux: from h1's r1 address to h2, the
    // kernel picks r0 (the first of two equal subnet routes).
    let via = ip(&ns[0], &["route", "get", &addr(1, 0), "from", &addr(0, 1)]);
    assert!(via.contains(" dev r0 "), "{via}");
    ping_from(&ns[0], &addr(0, 1), &addr(1, 0));

    let before = snapshots(&hosts);
    let r = roce_net::fleet_report(&before);
    let found = wrong_mac(&r);
    let h1_r0_mac = before[0]
        .interface("r0")
        .unwrap()
        .mac
        .as_ref()
        .unwrap()
        .to_string();
    let h1_r1_mac = before[0]
        .interface("r1")
        .unwrap()
        .mac
        .as_ref()
        .unwrap()
        .to_string();
    let on_h2: Vec<&&Finding> = found
        .iter()
        .filter(|f| f.subject.host.as_deref() == Some(&r.hosts[1].hostname))
        .collect();
    assert!(!on_h2.is_empty(), "{:#?}", r.findings);
    for f in &on_h2 {
        assert_eq!(f.subject.address.as_deref(), Some(addr(0, 1).as_str()));
        assert_eq!(f.subject.mac.as_deref(), Some(h1_r0_mac.as_str()));
        assert_eq!(f.evidence["owner"]["interface"], "r1");
        assert_eq!(f.evidence["owner"]["mac"], h1_r1_mac.as_str());
        assert_eq!(
            f.evidence["learned_mac_belongs_to"],
            serde_json::json!([format!("{}/r0", r.hosts[0].hostname)])
        );
    }
    // h2's own view shows nothing wrong with those entries.
    let h2_nics = vec!["r0".to_string(), "r1".to_string()];
    assert!(
        roce_net::polluted_neighbors(&before[1], &h2_nics)
            .iter()
            .all(|p| p.neighbor.ip.to_string() != addr(0, 1)),
        "h2's own planner already sees it"
    );

    // The finding's remediation, run as written, clears it.
    for f in wrong_mac(&r) {
        for cmd in &f.remediation.commands {
            // `ssh HOST ip -n NS ...`: HOST is this machine (lab hosts share
            // its name); run the rest here.
            let w: Vec<&str> = cmd.split_whitespace().collect();
            assert_eq!(w[0], "ssh", "{cmd}");
            assert_eq!(
                w[1],
                r.hosts[0].hostname.split(':').next().unwrap(),
                "{cmd}"
            );
            let w = &w[2..];
            assert_eq!(w[..2], ["ip", "-n"], "{cmd}");
            let st = Command::new("ip").args(&w[1..]).status().unwrap();
            assert!(st.success(), "{cmd}");
        }
    }
    let cleared = roce_net::fleet_report(&snapshots(&hosts));
    assert!(wrong_mac(&cleared).is_empty(), "{:#?}", cleared.findings);

    // Fix every host with the default policy (each apply announces its NICs'
    // addresses, so a peer's stale entry would take the right MAC too).
    let opts = ApplyOptions {
        state_dir: run.path().to_path_buf(),
        ..Default::default()
    };
    for h in &hosts {
        let plan = roce_net::plan(&h.snapshot().unwrap(), &Policy::default()).unwrap();
        roce_net::apply(h, &plan, &opts).unwrap();
    }
    // And with the fix in place the same traffic teaches h2 the right MAC.
    ping_from(&ns[0], &addr(0, 1), &addr(1, 0));
    let after = snapshots(&hosts);
    let learned: Vec<String> = after[1]
        .neighbors
        .iter()
        .filter(|n| n.ip.to_string() == addr(0, 1) && n.is_resolved())
        .filter_map(|n| n.mac.as_ref().map(|m| m.to_string()))
        .collect();
    assert!(learned.contains(&h1_r1_mac), "{:?}", after[1].neighbors);
    let r = roce_net::fleet_report(&after);
    assert!(wrong_mac(&r).is_empty(), "{:#?}", r.findings);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    drop(lab);
    for n in &ns {
        assert!(
            !std::path::Path::new("/run/netns").join(n).exists(),
            "{n} left behind"
        );
    }
}
