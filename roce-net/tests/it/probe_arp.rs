//! ARP probe against a namespace lab: four NICs of a "host" namespace in one /24
//! on a bridge, probed from a peer namespace on the same bridge.
// The crate's own namespace helpers (one file, shared with its unit tests).
use crate::test_support as sf_common;

use roce_net::ArpProbeOptions;
use roce_net::HwAddr;
use roce_net::{ErrorKind, Host};
use sf_common::Netns;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Duration;

struct Lab {
    // Drop order: namespaces are removed by their guards in any order.
    sw: Netns,
    host: Netns,
    peer: Netns,
}

fn build() -> Lab {
    let lab = Lab {
        sw: Netns::new("sw"),
        host: Netns::new("host"),
        peer: Netns::new("peer"),
    };
    // New namespaces inherit the machine's IPv4 conf defaults: make them explicit.
    for k in ["rp_filter", "arp_ignore", "arp_announce", "arp_filter"] {
        for d in ["all", "default"] {
            lab.host
                .exec(&["sysctl", "-qw", &format!("net.ipv4.conf.{d}.{k}=0")]);
        }
    }
    lab.sw.ip(&["link", "add", "br0", "type", "bridge"]);
    lab.sw.ip(&["link", "set", "br0", "up"]);
    let plug = |ns: &Netns, port: &str, dev: &str, addr: &str| {
        lab.sw.ip(&[
            "link", "add", port, "type", "veth", "peer", "name", dev, "netns", &ns.name,
        ]);
        lab.sw.ip(&["link", "set", port, "master", "br0", "up"]);
        ns.ip(&["addr", "add", addr, "dev", dev]);
        ns.ip(&["link", "set", dev, "up"]);
    };
    for i in 1..=4 {
        plug(
            &lab.host,
            &format!("s{i}"),
            &format!("eth{i}"),
            &format!("198.18.0.{}/24", 10 + i),
        );
    }
    plug(&lab.peer, "s0", "eth0", "198.18.0.100/24");
    lab
}

fn mac_of(ns: &Netns, dev: &str) -> HwAddr {
    let line = ns.exec(&["ip", "-br", "link", "show", dev]);
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn opts() -> ArpProbeOptions {
    ArpProbeOptions::new(2, Duration::from_millis(1200))
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn arp_flux_seen_from_the_wire_and_gone_after_arp_ignore() {
    sf_common::require_namespaces("arp_flux_seen_from_the_wire");
    let lab = build();
    let macs: BTreeSet<HwAddr> = (1..=4)
        .map(|i| mac_of(&lab.host, &format!("eth{i}")))
        .collect();
    assert_eq!(macs.len(), 4);
    let peer = Host::netns(&lab.peer.name).unwrap();
    let target = Ipv4Addr::new(198, 18, 0, 12);

    let before = peer.probe_arp("eth0", target, opts()).unwrap();
    assert_eq!(before.requests_sent, 2);
    let seen: BTreeSet<HwAddr> = before.replies.iter().map(|r| r.mac.clone()).collect();
    assert_eq!(
        seen, macs,
        "every host NIC answers for 198.18.0.12: {before:?}"
    );
    assert!(before.is_flux());
    assert!(before
        .replies
        .iter()
        .all(|r| r.sender_ip == target && r.count >= 1));

    for (k, v) in [("arp_ignore", "1"), ("arp_announce", "2")] {
        lab.host
            .exec(&["sysctl", "-qw", &format!("net.ipv4.conf.all.{k}={v}")]);
    }
    let after = peer.probe_arp("eth0", target, opts()).unwrap();
    assert_eq!(after.replies.len(), 1, "{after:?}");
    assert_eq!(after.replies[0].mac, mac_of(&lab.host, "eth2"));
    assert!(!after.is_flux());

    // An explicit source address is used as the sender IP (replies go to it).
    let src = opts().with_source(Ipv4Addr::new(198, 18, 0, 100));
    assert_eq!(
        peer.probe_arp("eth0", target, src).unwrap().replies.len(),
        1
    );
    // Nobody has this address: no replies, not an error.
    let none = peer
        .probe_arp("eth0", Ipv4Addr::new(198, 18, 0, 77), opts())
        .unwrap();
    assert!(none.replies.is_empty());
    drop(lab);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn probe_errors_name_the_device() {
    sf_common::require_namespaces("probe_errors_name_the_device");
    let ns = Netns::new("perr");
    let h = Host::netns(&ns.name).unwrap();
    let t = Ipv4Addr::new(198, 18, 0, 1);
    let e = h.probe_arp("nope0", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("\"nope0\""), "{e}");
    let e = h.probe_arp("lo", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
    let e = h.probe_arp("v0", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("no IPv4 address"), "{e}");
    // An address but the link is down: the send fails and says so.
    ns.ip(&["addr", "add", "198.18.9.1/24", "dev", "v0"]);
    let e = h.probe_arp("v0", t, opts()).unwrap_err();
    assert_eq!(e.errno_value(), Some(libc::ENETDOWN), "{e}");
    assert!(e.to_string().contains("is v0 up?"), "{e}");
}
