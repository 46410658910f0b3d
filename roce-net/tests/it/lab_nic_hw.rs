//! NIC statistics and QoS read from real netdevs in a lab (needs root): the
//! ethtool ioctl against `ethtool -S`, DCB on a driver without DCB support, and
//! both in the snapshot of the NICs in scope.

use crate::lab_support;

use lab_support::{ip_json, seed};
use std::process::Command;

/// `ethtool -S DEV` inside a namespace, as (name, value) in its order.
fn ethtool_s(ns: &str, dev: &str) -> Vec<(String, u64)> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-S", dev])
        .output()
        .expect("running ethtool (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "ethtool -S {dev}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("NIC statistics:"), "{text}");
    lines
        .map(|l| {
            let (k, v) = l.trim().rsplit_once(": ").unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn veth_statistics_match_ethtool_and_dcb_is_not_available() {
    let lab = seed("veth_statistics_match_ethtool_and_dcb_is_not_available", 3);
    let ns = lab.host_ns().unwrap().to_string();
    let host = lab.host().unwrap();
    let names: Vec<String> = lab.nics().iter().map(|n| n.name.clone()).collect();
    for name in &names {
        let ours = host
            .with_netlink(|nl| nl.ethtool_stats(name))
            .unwrap()
            .expect("veth has driver statistics");
        let theirs = ethtool_s(&ns, name);
        assert_eq!(ours, theirs, "{name}");
        // veth's first statistic is its peer's interface index.
        let peer = ours.iter().find(|(k, _)| k == "peer_ifindex").unwrap().1;
        let link = ip_json(&ns, &["-j", "link", "show", "dev", name]);
        assert_eq!(link[0]["link_index"].as_u64(), Some(peer), "{name}: {link}");
        assert!(
            ours.iter().any(|(k, _)| k.starts_with("rx_queue_0_xdp")),
            "{ours:?}"
        );
        let q = host.with_netlink(|nl| nl.dcb_qos(name)).unwrap();
        assert!(!q.dcb_available, "{q:?}");
        assert_eq!(q, roce_net::Qos::not_available());
    }
    // lo has no driver statistics: None, not an error.
    assert_eq!(
        host.with_netlink(|nl| nl.ethtool_stats("lo")).unwrap(),
        None
    );
    // A missing interface is an error that names it.
    let e = host
        .with_netlink(|nl| nl.ethtool_stats("rnt-nosuch0"))
        .unwrap_err();
    assert_eq!(e.kind(), roce_net::ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("rnt-nosuch0"), "{e}");
    // The snapshot carries them for the NICs in scope, and only those.
    let st = host.snapshot().unwrap();
    for i in &st.interfaces {
        if names.contains(&i.name) {
            let s = i.ethtool_stats.as_ref().unwrap();
            assert!(s.contains_key("peer_ifindex"), "{}", i.name);
            assert_eq!(i.qos, Some(roce_net::Qos::not_available()), "{}", i.name);
        } else {
            assert!(i.ethtool_stats.is_none() && i.qos.is_none(), "{}", i.name);
        }
    }
    assert!(st.warnings.is_empty(), "{:?}", st.warnings);
    let loaded = roce_net::HostState::from_json(&st.to_json()).unwrap();
    assert_eq!(loaded, st);
}
