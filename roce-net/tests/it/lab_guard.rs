//! Lab lifecycle and `roce_net::netns_add`/`delete` (needs root; fails in CI when it cannot run).

use crate::lab_support;

use lab_support::{ip, require_root, seed};
use roce_net::ErrorKind;
use roce_net::Lab;
use std::sync::Mutex;

fn ip_netns_list() -> String {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn listed(name: &str) -> bool {
    ip_netns_list()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn guard_removes_namespaces_when_a_test_panics() {
    require_root("guard_removes_namespaces_when_a_test_panics");
    let created: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let res = std::panic::catch_unwind(|| {
        let lab = Lab::seed_tagged("nl-panic", 2).unwrap();
        *created.lock().unwrap() = lab.namespaces().to_vec();
        for ns in lab.namespaces() {
            assert!(listed(ns), "{ns} should exist while the lab lives");
        }
        panic!("simulated test failure");
    });
    assert!(res.is_err());
    let created = created.into_inner().unwrap();
    assert_eq!(created.len(), 3, "switch, host and peer: {created:?}");
    for ns in &created {
        assert!(!listed(ns), "{ns} survived the panic");
        assert!(!std::path::Path::new("/run/netns").join(ns).exists());
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn keep_leaves_namespaces_and_names_are_unique() {
    let mut a = seed("keep_leaves_namespaces_and_names_are_unique", 1);
    let b = Lab::seed_tagged("nl", 1).unwrap();
    assert_ne!(a.prefix(), b.prefix());
    assert!(a
        .prefix()
        .starts_with(&format!("rnt-nl-{}-", std::process::id())));
    drop(b);
    a.set_keep(true);
    let names = a.namespaces().to_vec();
    drop(a);
    for ns in &names {
        assert!(listed(ns), "{ns} should be kept");
        roce_net::netns_del(ns).unwrap();
        assert!(!listed(ns));
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn seed_lab_topology() {
    let lab = seed("seed_lab_topology", 4);
    let host = lab.host_ns().unwrap();
    let peer = lab.peer_ns().unwrap();
    let names: Vec<&str> = lab.nics().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["r0", "r1", "r2", "r3"]);
    let addrs: Vec<String> = lab
        .nics()
        .iter()
        .map(|n| format!("{}/{}", n.address, n.prefix_len))
        .collect();
    assert_eq!(
        addrs,
        [
            "198.18.0.11/24",
            "198.18.0.12/24",
            "198.18.0.13/24",
            "198.18.0.14/24"
        ]
    );
    assert_eq!(lab.peer_nic().unwrap().address.to_string(), "198.18.0.100");
    // Four subnet routes in main, one per NIC: the asymmetry of the seed.
    let main = ip(host, &["-4", "route", "show", "table", "main"]);
    for nic in &names {
        assert!(
            main.contains(&format!("198.18.0.0/24 dev {nic} proto kernel scope link")),
            "{main}"
        );
    }
    // Kernel defaults, no fix applied.
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            host,
            "cat",
            "/proc/sys/net/ipv4/conf/all/arp_ignore",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    // The bridge in the switch namespace has every port, and the peer reaches the host.
    let ports = ip(lab.switch_ns().unwrap(), &["link", "show", "master", "br0"]);
    assert_eq!(ports.matches("master br0").count(), 5, "{ports}");
    // The peer reaches the host through the bridge: a datagram to r2's address
    // makes the peer resolve it by ARP to one of the host NICs' MACs.
    let target = roce_net::NetnsTarget::named(peer).unwrap();
    let host_macs: Vec<String> = {
        let st = lab.host().unwrap().snapshot().unwrap();
        names
            .iter()
            .map(|n| st.interface(n).unwrap().mac.as_ref().unwrap().to_string())
            .collect()
    };
    let mut resolved = None;
    for _ in 0..50 {
        target
            .run(|| {
                let sock = std::net::UdpSocket::bind("198.18.0.100:0").unwrap();
                let _ = sock.send_to(b"x", "198.18.0.13:9");
                Ok(())
            })
            .unwrap();
        let st = roce_net::Host::netns(peer).unwrap().snapshot().unwrap();
        resolved = st
            .neighbors
            .iter()
            .find(|n| n.ip.to_string() == "198.18.0.13" && n.is_resolved())
            .and_then(|n| n.mac.as_ref().map(|m| m.to_string()));
        if resolved.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mac = resolved.expect("the peer never resolved 198.18.0.13");
    assert!(
        host_macs.contains(&mac),
        "{mac} is not a host NIC MAC ({host_macs:?})"
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn netns_create_delete_like_ip_netns() {
    require_root("netns_create_delete_like_ip_netns");
    let name = format!("rnt-nl-ns-{}", std::process::id());
    roce_net::netns_add(&name).unwrap();
    let guard = scopeguard(&name);
    assert!(listed(&name));
    assert!(roce_net::netns_list().unwrap().contains(&name));
    // A fresh namespace: only lo, down.
    let links = ip(&name, &["-o", "link", "show"]);
    assert_eq!(links.lines().count(), 1, "{links}");
    assert!(links.contains("lo:"));
    // The name is taken now.
    assert_eq!(
        roce_net::netns_add(&name).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    roce_net::netns_del(&name).unwrap();
    drop(guard);
    assert!(!listed(&name));
    assert_eq!(
        roce_net::netns_del(&name).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        roce_net::netns_add("a/b").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

/// Deletes the namespace if the test fails half-way.
struct Cleanup(String);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = roce_net::netns_del(&self.0);
    }
}
fn scopeguard(name: &str) -> Cleanup {
    Cleanup(name.to_string())
}
