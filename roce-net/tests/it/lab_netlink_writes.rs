//! The netlink write side, checked with iproute2 (needs root; fails in CI when it
//! cannot run).

use crate::lab_support;

use lab_support::{ip, ip_json, seed};
use roce_net::ErrorKind;
use roce_net::NetnsTarget;
use roce_net::{Family, HwAddr, NeighState, Neighbor, Route, RouteType, Rule, Scope};

fn route(dst: &str, dev: &str, table: u32) -> Route {
    Route {
        family: Family::Inet,
        table,
        dst: dst.parse().unwrap(),
        kind: RouteType::Unicast,
        dev: Some(dev.into()),
        prefsrc: None,
        gateway: None,
        scope: Scope::Link,
        protocol: 201,
        metric: None,
        tos: 0,
        multipath: Vec::new(),
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn routes_rules_and_errors() {
    let lab = seed("routes_rules_and_errors", 2);
    let ns = lab.host_ns().unwrap().to_string();
    let host = lab.host().unwrap();
    let r = route("198.18.40.0/24", "r0", 1000);
    host.with_netlink(|nl| nl.route_add(&r)).unwrap();
    assert!(ip(&ns, &["route", "show", "table", "1000"])
        .contains("198.18.40.0/24 dev r0 proto 201 scope link"));

    // Adding it again: EEXIST, the object named, the kind Netlink.
    let e = host.with_netlink(|nl| nl.route_add(&r)).unwrap_err();
    assert_eq!(e.errno_value(), Some(libc::EEXIST));
    assert_eq!(e.kind(), ErrorKind::Netlink);
    assert!(
        e.message()
            .starts_with("adding route 198.18.40.0/24 dev r0 table 1000"),
        "{e}"
    );

    // A gateway that is not on any link: the kernel explains why (extack).
    let mut bad = route("198.18.41.0/24", "r0", 1000);
    bad.gateway = Some("198.19.9.9".parse().unwrap());
    bad.scope = Scope::Universe;
    let e = host.with_netlink(|nl| nl.route_add(&bad)).unwrap_err();
    assert!(
        e.extack().is_some_and(|x| !x.is_empty()),
        "no extack in {e:?}"
    );
    assert!(e.to_string().contains("(kernel: "), "{e}");

    // Replace changes the source; delete removes it.
    let mut r2 = r.clone();
    r2.prefsrc = Some("198.18.0.11".parse().unwrap());
    host.with_netlink(|nl| nl.route_replace(&r2)).unwrap();
    assert!(ip(&ns, &["route", "show", "table", "1000"]).contains("src 198.18.0.11"));
    host.with_netlink(|nl| nl.route_del(&r2)).unwrap();
    assert!(ip(&ns, &["route", "show", "table", "1000"])
        .trim()
        .is_empty());
    let e = host.with_netlink(|nl| nl.route_del(&r2)).unwrap_err();
    assert_eq!(e.errno_value(), Some(libc::ESRCH));
    assert!(
        e.message().starts_with("deleting route 198.18.40.0/24"),
        "{e}"
    );

    // Rules: action, protocol and the 32-bit table travel; delete removes.
    let rule = Rule::source("198.18.0.12".parse().unwrap(), 70000, 1234)
        .fwmark(7, None)
        .protocol(201);
    host.with_netlink(|nl| nl.rule_add(&rule)).unwrap();
    let rules = ip(&ns, &["-d", "rule", "show", "pref", "1234"]);
    assert!(
        rules.contains("from 198.18.0.12 fwmark 0x7 lookup 70000 proto 201"),
        "{rules}"
    );
    let e = host.with_netlink(|nl| nl.rule_add(&rule)).unwrap_err();
    assert_eq!(e.errno_value(), Some(libc::EEXIST));
    assert!(
        e.message()
            .contains("from 198.18.0.12/32 fwmark 0x7 lookup 70000 pref 1234"),
        "{e}"
    );
    host.with_netlink(|nl| nl.rule_del(&rule)).unwrap();
    assert!(ip(&ns, &["rule", "show", "pref", "1234"]).trim().is_empty());

    // route_get with an output interface.
    let d = host
        .with_netlink(|nl| nl.route_get("198.18.0.100".parse().unwrap(), None, Some("r1")))
        .unwrap();
    assert_eq!(d.dev.as_deref(), Some("r1"));
    // IPv6 lookups too.
    host.with_netlink(|nl| nl.addr_add("r1", "2001:db8:1::12".parse().unwrap(), 64))
        .unwrap();
    let d = host
        .route_get("2001:db8:1::99".parse().unwrap(), None)
        .unwrap();
    assert_eq!((d.table, d.dev.as_deref()), (254, Some("r1")));
    let e = host
        .route_get(
            "2001:db8:1::99".parse().unwrap(),
            Some("198.18.0.11".parse().unwrap()),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = host.with_netlink(|nl| nl.ifindex("nope0")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn neighbours_links_and_addresses() {
    let lab = seed("neighbours_links_and_addresses", 1);
    let ns = lab.host_ns().unwrap().to_string();
    let host = lab.host().unwrap();
    let n = Neighbor {
        ifname: "r0".into(),
        ifindex: 0,
        ip: "198.18.0.77".parse().unwrap(),
        mac: Some("02:00:00:00:00:77".parse::<HwAddr>().unwrap()),
        state: vec![NeighState::Permanent],
        router: false,
    };
    host.with_netlink(|nl| nl.neigh_add(&n)).unwrap();
    let v = ip_json(&ns, &["neigh", "show", "198.18.0.77"]);
    assert_eq!(v[0]["lladdr"], "02:00:00:00:00:77");
    assert_eq!(v[0]["state"][0], "PERMANENT");
    host.with_netlink(|nl| nl.neigh_del(&n)).unwrap();
    assert!(ip(&ns, &["neigh", "show", "198.18.0.77"]).trim().is_empty());

    // Links: bridge, veth, master, MTU, up, address, move to another namespace, delete.
    let peer = NetnsTarget::named(lab.peer_ns().unwrap()).unwrap();
    host.with_netlink(|nl| {
        nl.link_add_bridge("tbr0")?;
        nl.link_add_veth("ta", "tb", None)?;
        nl.link_set_master("ta", "tbr0")?;
        nl.link_set_mtu("ta", 9000)?;
        nl.link_set_up("ta")?;
        nl.addr_add("tbr0", "2001:db8::5".parse().unwrap(), 64)?;
        nl.link_set_netns("tb", &peer)
    })
    .unwrap();
    let l = &ip_json(&ns, &["link", "show", "ta"])[0];
    assert_eq!(l["mtu"], 9000);
    assert_eq!(l["master"], "tbr0");
    assert!(l["flags"].as_array().unwrap().iter().any(|f| f == "UP"));
    assert!(ip(&ns, &["addr", "show", "tbr0"]).contains("2001:db8::5/64"));
    assert!(ip(lab.peer_ns().unwrap(), &["link", "show"]).contains("tb@"));
    let st = host.snapshot().unwrap();
    assert_eq!(st.interface("ta").unwrap().master.as_deref(), Some("tbr0"));
    assert_eq!(
        st.interface("tbr0").unwrap().kind.as_deref(),
        Some("bridge")
    );
    host.with_netlink(|nl| {
        nl.link_del("ta")?;
        nl.link_del("tbr0")
    })
    .unwrap();
    assert!(!ip(&ns, &["link", "show"]).contains("tbr0"));
    assert!(!ip(lab.peer_ns().unwrap(), &["link", "show"]).contains("tb@"));
    let e = host.with_netlink(|nl| nl.link_del("tbr0")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}
