//! `Netlink::ifindex` (a `SIOCGIFINDEX` ioctl on the netlink socket) answers for
//! the socket's namespace, agrees with the link dump and with iproute2, and says
//! `NotFound` for names that cannot exist. Needs root; fails in CI when it cannot run.

use crate::lab_support;

use lab_support::{ip_json, require_root};
use roce_net::ErrorKind;
use roce_net::Lab;
use roce_net::Netlink;
use roce_net::NetnsTarget;

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn ifindex_matches_the_link_dump_and_ip() {
    require_root("ifindex_matches_the_link_dump_and_ip");
    let lab = Lab::seed_tagged("ba", 3).unwrap();
    let ns = lab.host_ns().unwrap().to_string();
    let host = lab.host().unwrap();
    let (links, found) = host
        .with_netlink(|nl| {
            let links = nl.links()?;
            let mut found = Vec::new();
            for l in &links {
                found.push(nl.ifindex(&l.name)?);
            }
            Ok((links, found))
        })
        .unwrap();
    assert_eq!(
        links.iter().map(|l| l.index).collect::<Vec<_>>(),
        found,
        "ifindex must agree with the link dump"
    );
    let shown = ip_json(&ns, &["link", "show", "r2"]);
    assert_eq!(
        shown[0]["ifindex"].as_u64().unwrap() as u32,
        found[links.iter().position(|l| l.name == "r2").unwrap()]
    );
    for bad in ["nope0", "", "a-name-longer-than-15", "r\0"] {
        let e = host.with_netlink(|nl| nl.ifindex(bad)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{bad:?}: {e}");
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn ifindex_uses_the_namespace_of_the_socket_not_of_the_thread() {
    require_root("ifindex_uses_the_namespace_of_the_socket_not_of_the_thread");
    let lab = Lab::seed_tagged("ba", 2).unwrap();
    let ns = lab.host_ns().unwrap().to_string();
    // Opened inside the lab namespace, then used from this (test) thread, which
    // stays in the namespace it started in: only reads are made from here.
    let mut nl = NetnsTarget::named(&ns).unwrap().run(Netlink::open).unwrap();
    let want = ip_json(&ns, &["link", "show", "r1"])[0]["ifindex"]
        .as_u64()
        .unwrap() as u32;
    // A lookup in this thread's namespace would fail (no r1 here) or give
    // another link's index.
    assert_eq!(nl.ifindex("r1").unwrap(), want);
}
