//! The IPv6 doctor checks on kernel state made for real in throwaway
//! namespaces (the IPv6 seed lab, `fd00:198:18::/64`): an address that failed
//! duplicate address detection because the peer holds it (`ipv6-dad`), IPv6
//! disabled on one rail of a dual-stack host (`ipv6-disabled`), and a default
//! route the kernel learned from a router advertisement the peer sent
//! (`ra-default-route`). Each is found in a live snapshot, its printed fix is
//! run in the namespace, and the finding is gone afterwards, the kernel state
//! with it.

use crate::apply_support::Env;
use crate::lab_support::ip;
use roce_net::{AddressFamilies, AddressFlag, Finding, HostState, Lab, NetnsTarget, Severity};
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

fn env(test: &str, nics: usize, families: AddressFamilies) -> Env {
    Env::of(test, || Lab::seed_families("v6d", nics, families))
}

fn of<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    f.iter().filter(|x| x.id == id).collect()
}

/// Run a finding's fix commands as printed (they name the namespace).
fn run_fix(f: &Finding) {
    for c in &f.remediation.commands {
        let out = Command::new("sh").args(["-ec", c]).output().unwrap();
        assert!(
            out.status.success(),
            "{c}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Snapshots of the host until `done` holds (bounded: 10 s), the last one.
fn wait_for(e: &Env, what: &str, done: impl Fn(&HostState) -> bool) -> HostState {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = e.host.snapshot().unwrap();
        if done(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "waited 10 s for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn flags_of(st: &HostState, ifname: &str, addr: &str) -> Option<Vec<AddressFlag>> {
    let a: IpAddr = addr.parse().unwrap();
    st.addresses
        .iter()
        .find(|x| x.ifname == ifname && x.address == a)
        .map(|x| x.flags.clone())
}

fn sysctl(ns: &str, key: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-n", key])
        .output()
        .unwrap();
    assert!(out.status.success(), "sysctl {key}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The peer holds `fd00:198:18::12` when `r1` adds it with duplicate address
/// detection on: the peer answers the neighbour solicitation and the kernel
/// marks r1's address `dadfailed`. Once the peer gives it up, the finding's
/// fix (delete, add) makes r1 hold it for real: DAD passes and a ping from it
/// reaches the peer.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_duplicate_on_the_link_fails_dad_and_the_fix_restores_the_address() {
    let e = env(
        "a_duplicate_on_the_link_fails_dad_and_the_fix_restores_the_address",
        2,
        AddressFamilies::Ipv6,
    );
    let ns = e.lab.host_ns().unwrap();
    let peer_ns = e.lab.peer_ns().unwrap();
    let dup = "fd00:198:18::12";
    ip(
        peer_ns,
        &["addr", "add", &format!("{dup}/64"), "dev", "p0", "nodad"],
    );
    ip(ns, &["addr", "del", &format!("{dup}/64"), "dev", "r1"]);
    ip(ns, &["addr", "add", &format!("{dup}/64"), "dev", "r1"]);
    let st = wait_for(&e, "r1's address to fail DAD", |st| {
        flags_of(st, "r1", dup).is_some_and(|f| f.contains(&AddressFlag::Dadfailed))
    });
    let f = roce_net::doctor(&st);
    let dad = of(&f, "ipv6-dad");
    assert_eq!(dad.len(), 1, "{f:#?}");
    let x = dad[0];
    assert_eq!(x.severity, Severity::Error);
    assert_eq!(x.subject.interface.as_deref(), Some("r1"));
    assert_eq!(x.subject.address.as_deref(), Some(dup));
    assert_eq!(
        x.remediation.commands,
        [
            format!("ip -n {ns} addr del {dup}/64 dev r1"),
            format!("ip -n {ns} addr add {dup}/64 dev r1"),
        ]
    );

    // The duplicate goes, the fix runs, DAD passes this time.
    ip(peer_ns, &["addr", "del", &format!("{dup}/64"), "dev", "p0"]);
    run_fix(x);
    let st = wait_for(&e, "r1's address to pass DAD", |st| {
        flags_of(st, "r1", dup).is_some_and(|f| {
            !f.contains(&AddressFlag::Tentative) && !f.contains(&AddressFlag::Dadfailed)
        })
    });
    let f = roce_net::doctor(&st);
    assert!(of(&f, "ipv6-dad").is_empty(), "{f:#?}");
    let ping = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "ping",
            "-c",
            "1",
            "-W",
            "2",
            "-I",
            dup,
            "fd00:198:18::100",
        ])
        .output()
        .unwrap();
    assert!(ping.status.success(), "ping -I {dup} the peer");
}

/// `disable_ipv6=1` on r1 of a dual-stack host: the kernel drops r1's IPv6
/// addresses, r1 stays in scope by its IPv4 subnet, and the doctor names it
/// with the IPv6 rails beside it. The fix re-enables IPv6 (the kernel then
/// gives r1 its link-local address back; the global one is the network
/// stack's to add again, as the message says).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn ipv6_disabled_on_one_rail_of_a_dual_stack_host_is_found_and_re_enabled() {
    let e = env(
        "ipv6_disabled_on_one_rail_of_a_dual_stack_host_is_found_and_re_enabled",
        3,
        AddressFamilies::Both,
    );
    let ns = e.lab.host_ns().unwrap();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.r1.disable_ipv6=1",
        ])
        .status()
        .unwrap();
    assert!(out.success());
    let st = e.host.snapshot().unwrap();
    assert!(
        !st.addresses
            .iter()
            .any(|a| a.ifname == "r1" && a.address.is_ipv6()),
        "the kernel removed r1's IPv6 addresses"
    );
    let f = roce_net::doctor(&st);
    let v = of(&f, "ipv6-disabled");
    assert_eq!(v.len(), 1, "{f:#?}");
    let x = v[0];
    assert_eq!(x.subject.interface.as_deref(), Some("r1"));
    assert_eq!(
        x.evidence["nics_with_ipv6"],
        serde_json::json!(["r0", "r2"])
    );
    assert_eq!(
        x.remediation.commands,
        [format!(
            "ip netns exec {ns} sysctl -w net.ipv6.conf.r1.disable_ipv6=0"
        )]
    );
    run_fix(x);
    assert_eq!(sysctl(ns, "net.ipv6.conf.r1.disable_ipv6"), "0");
    let st = e.host.snapshot().unwrap();
    assert!(of(&roce_net::doctor(&st), "ipv6-disabled").is_empty());
}

/// An ICMPv6 router advertisement (RFC 4861 4.2: type 134, hop limit 255,
/// router lifetime 1800 s, no options) sent by the peer to all nodes on `p0`,
/// from its link-local address, through a raw socket in its namespace: the
/// kernel fills the checksum (RFC 3542 3.1).
fn send_router_advertisement(peer_ns: &str) {
    NetnsTarget::named(peer_ns)
        .unwrap()
        .run(|| -> roce_net::Result<()> {
            // SAFETY: plain socket calls on a descriptor this function owns,
            // with pointers to locals that outlive the calls.
            unsafe {
                let fd = libc::socket(libc::AF_INET6, libc::SOCK_RAW, libc::IPPROTO_ICMPV6);
                assert!(fd >= 0, "raw ICMPv6 socket");
                let name = std::ffi::CString::new("p0").unwrap();
                let idx = libc::if_nametoindex(name.as_ptr());
                assert!(idx > 0);
                let hops: libc::c_int = 255;
                let ifx: libc::c_int = idx as libc::c_int;
                for (opt, v) in [
                    (libc::IPV6_MULTICAST_HOPS, &hops),
                    (libc::IPV6_MULTICAST_IF, &ifx),
                ] {
                    let r = libc::setsockopt(
                        fd,
                        libc::IPPROTO_IPV6,
                        opt,
                        (v as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    );
                    assert_eq!(r, 0, "setsockopt {opt}");
                }
                let ra: [u8; 16] = [134, 0, 0, 0, 64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0];
                let mut to: libc::sockaddr_in6 = std::mem::zeroed();
                to.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                to.sin6_addr.s6_addr = "ff02::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
                to.sin6_scope_id = idx;
                let n = libc::sendto(
                    fd,
                    ra.as_ptr().cast(),
                    ra.len(),
                    0,
                    (&to as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                );
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                assert_eq!(n, ra.len() as isize, "sendto: {err}");
            }
            Ok(())
        })
        .unwrap();
}

fn ra_defaults(st: &HostState) -> Vec<String> {
    let mut v: Vec<String> = st
        .routes
        .iter()
        .filter(|r| {
            r.family == roce_net::Family::Inet6
                && r.table == 254
                && r.protocol == roce_net::protocol::RA
                && r.dst.prefix_len() == 0
        })
        .filter_map(|r| r.dev.clone())
        .collect();
    v.sort();
    v
}

/// The peer advertises itself as a router: the kernel of every host NIC on the
/// bridge adds `default via fe80::... dev rN proto ra`. The doctor reports
/// each; the fixes (accept_ra_defrtr=0, delete the route) remove them, and the
/// next advertisement adds none.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_router_advertisement_default_route_is_found_and_kept_away() {
    let e = env(
        "a_router_advertisement_default_route_is_found_and_kept_away",
        2,
        AddressFamilies::Ipv6,
    );
    let ns = e.lab.host_ns().unwrap();
    let peer_ns = e.lab.peer_ns().unwrap();
    // The advertisement leaves from the peer's link-local address once DAD
    // has passed for it, and the host NICs must accept it (the kernel default).
    for n in ["r0", "r1"] {
        assert_eq!(sysctl(ns, &format!("net.ipv6.conf.{n}.accept_ra")), "1");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let st = loop {
        let ll = ip(
            peer_ns,
            &["-6", "addr", "show", "dev", "p0", "scope", "link"],
        );
        if ll.contains("fe80") && !ll.contains("tentative") {
            send_router_advertisement(peer_ns);
        }
        std::thread::sleep(Duration::from_millis(200));
        let st = e.host.snapshot().unwrap();
        if ra_defaults(&st) == ["r0", "r1"] {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "no RA default routes: {:?}",
            ra_defaults(&st)
        );
    };
    let f = roce_net::doctor(&st);
    let ra = of(&f, "ra-default-route");
    assert_eq!(ra.len(), 2, "{f:#?}");
    for x in &ra {
        let n = x.subject.interface.as_deref().unwrap();
        assert_eq!(x.evidence["kernel_takes_ra"], serde_json::json!(true));
        assert_eq!(
            x.remediation.commands[0],
            format!("ip netns exec {ns} sysctl -w net.ipv6.conf.{n}.accept_ra_defrtr=0")
        );
        assert!(
            x.remediation.commands[1]
                .starts_with(&format!("ip -n {ns} -6 route del default via fe80::")),
            "{:?}",
            x.remediation.commands
        );
        run_fix(x);
    }
    let st = e.host.snapshot().unwrap();
    assert!(ra_defaults(&st).is_empty());
    assert!(of(&roce_net::doctor(&st), "ra-default-route").is_empty());
    // Another advertisement adds nothing now.
    send_router_advertisement(peer_ns);
    std::thread::sleep(Duration::from_millis(500));
    let st = e.host.snapshot().unwrap();
    assert!(ra_defaults(&st).is_empty(), "{:?}", ra_defaults(&st));
}
