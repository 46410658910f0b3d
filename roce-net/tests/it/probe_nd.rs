//! ND probe against a namespace lab: IPv6's `probe arp`. Two NICs of a "host"
//! namespace in one IPv6 prefix on a bridge, probed from a peer namespace on
//! the same bridge.
use crate::test_support as sf_common;

use roce_net::HwAddr;
use roce_net::NdProbeOptions;
use roce_net::{ErrorKind, Host};
use sf_common::Netns;
use std::net::Ipv6Addr;
use std::time::Duration;

fn mac_of(ns: &Netns, dev: &str) -> HwAddr {
    let line = ns.exec(&["ip", "-br", "link", "show", dev]);
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn opts() -> NdProbeOptions {
    NdProbeOptions::new(2, Duration::from_millis(1200))
}

/// Linux answers a solicitation only from the NIC that holds the target (no
/// IPv6 counterpart of ARP flux), so one MAC answers, the owner's; a second
/// NIC made to answer too (proxy ND on it) is seen as a second MAC; nobody
/// answers for an address nobody holds; an explicit source is used.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_nd_probe_names_every_mac_that_answers_for_an_ipv6_address() {
    sf_common::require_namespaces("the_nd_probe_names_every_mac");
    let (sw, host, peer) = (
        Netns::new("ndsw"),
        Netns::new("ndhost"),
        Netns::new("ndpeer"),
    );
    sw.ip(&["link", "add", "br0", "type", "bridge"]);
    sw.ip(&["link", "set", "br0", "up"]);
    let plug = |ns: &Netns, port: &str, dev: &str, addr: &str| {
        sw.ip(&[
            "link", "add", port, "type", "veth", "peer", "name", dev, "netns", &ns.name,
        ]);
        sw.ip(&["link", "set", port, "master", "br0", "up"]);
        // ip -n NS addr add fd00:198:18::11/64 dev eth1 nodad
        ns.ip(&["addr", "add", addr, "dev", dev, "nodad"]);
        ns.ip(&["link", "set", dev, "up"]);
    };
    plug(&host, "s1", "eth1", "fd00:198:18::11/64");
    plug(&host, "s2", "eth2", "fd00:198:18::12/64");
    plug(&peer, "s0", "eth0", "fd00:198:18::200/64");
    let p = Host::netns(&peer.name).unwrap();
    let target = a("fd00:198:18::12");
    // The link-local addresses need their DAD; the probe sends from the
    // global one, which has none (nodad).
    let one = p.probe_nd("eth0", target, opts()).unwrap();
    assert_eq!(one.source, a("fd00:198:18::200"));
    assert_eq!(one.requests_sent, 2);
    assert_eq!(one.replies.len(), 1, "{one:?}");
    assert_eq!(one.replies[0].mac, mac_of(&host, "eth2"));
    assert!(!one.replies[0].router && !one.is_several());

    // eth1 answers for eth2's address too (the kernel proxies only on a
    // forwarding NIC): sysctl proxy_ndp=1 forwarding=1;
    // ip -6 neigh add proxy fd00:198:18::12 dev eth1
    for k in ["proxy_ndp", "forwarding"] {
        host.exec(&["sysctl", "-qw", &format!("net.ipv6.conf.eth1.{k}=1")]);
    }
    host.ip(&[
        "-6",
        "neigh",
        "add",
        "proxy",
        "fd00:198:18::12",
        "dev",
        "eth1",
    ]);
    let two = p.probe_nd("eth0", target, opts()).unwrap();
    let mut seen: Vec<HwAddr> = two.replies.iter().map(|r| r.mac.clone()).collect();
    seen.sort();
    let mut want = vec![mac_of(&host, "eth1"), mac_of(&host, "eth2")];
    want.sort();
    assert_eq!(seen, want, "{two:?}");
    assert!(two.is_several());

    // An explicit source; nobody holds the target: no answer, not an error.
    let from = opts().with_source(a("fd00:198:18::201"));
    let none = p.probe_nd("eth0", a("fd00:198:18::77"), from).unwrap();
    assert_eq!(none.source, a("fd00:198:18::201"));
    assert!(none.replies.is_empty(), "{none:?}");
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn nd_probe_errors_name_the_device() {
    sf_common::require_namespaces("nd_probe_errors_name_the_device");
    let ns = Netns::new("nderr");
    let h = Host::netns(&ns.name).unwrap();
    let t = a("fd00:198:18::1");
    let e = h.probe_nd("nope0", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = h.probe_nd("lo", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
    ns.exec(&["sysctl", "-qw", "net.ipv6.conf.v0.disable_ipv6=1"]);
    let e = h.probe_nd("v0", t, opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("no usable IPv6 address"), "{e}");
    let e = h.probe_nd("v0", a("ff02::1"), opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // A source but the link is down: the send fails and says so.
    let e = h
        .probe_nd("v0", t, opts().with_source(a("fd00:198:18::9")))
        .unwrap_err();
    assert_eq!(e.errno_value(), Some(libc::ENETDOWN), "{e}");
    assert!(e.to_string().contains("is v0 up?"), "{e}");
}
