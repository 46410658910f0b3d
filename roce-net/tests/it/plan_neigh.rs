//! Polluted-neighbour classification and change inverses/descriptions.

use roce_net::{polluted_neighbors, Change, PollutionReason};
use roce_net::{ConfKey, ConfTarget, HostState, Sysctl};
use std::path::PathBuf;

fn fixture_host(case: &str) -> HostState {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan")
        .join(case)
        .join("current.json");
    HostState::load(&p).unwrap()
}

fn nics() -> Vec<String> {
    ["r1", "r2", "r3", "r4"].map(String::from).to_vec()
}

fn reasons(h: &HostState, scope: &[String]) -> Vec<(String, String, PollutionReason)> {
    polluted_neighbors(h, scope)
        .into_iter()
        .map(|p| (p.neighbor.ifname, p.neighbor.ip.to_string(), p.reason))
        .collect()
}

#[test]
fn fresh_host_pollution_reasons() {
    let h = fixture_host("fresh");
    use PollutionReason::*;
    assert_eq!(
        reasons(&h, &nics()),
        [
            ("r1".into(), "198.18.0.100".into(), IpConflict),
            ("r2".into(), "198.18.0.100".into(), IpConflict),
            ("r2".into(), "198.18.0.101".into(), MacConflict),
            ("r3".into(), "198.18.0.102".into(), Failed),
        ]
    );
    // Out of scope: nothing on r1/r2 is looked at, so no conflict is visible.
    assert_eq!(
        reasons(&h, &["r3".to_string(), "r4".to_string()]),
        [("r3".into(), "198.18.0.102".into(), Failed)]
    );
}

#[test]
fn partial_host_pollution_reasons() {
    let h = fixture_host("partial");
    use PollutionReason::*;
    assert_eq!(
        reasons(&h, &nics()),
        [
            ("r2".into(), "198.18.1.5".into(), OffSubnet),
            ("r3".into(), "198.18.0.200".into(), LocalMac),
        ]
    );
}

#[test]
fn gateways_and_static_entries_are_not_polluted() {
    let mut h = fixture_host("partial");
    // A gateway of a route through r2 is expected off-subnet (onlink routes).
    let mut r = h.routes[0].clone();
    r.dev = Some("r2".into());
    r.gateway = Some("198.18.1.5".parse().unwrap());
    r.table = 1002;
    h.routes.push(r);
    // A PERMANENT entry with a FAILED-looking neighbour is the admin's business.
    let mut n = h.neighbors.last().unwrap().clone();
    n.state = vec![roce_net::NeighState::Permanent];
    n.mac = Some("02:00:00:00:00:02".parse().unwrap()); // r2's own MAC
    h.neighbors.push(n);
    let got: Vec<PollutionReason> = polluted_neighbors(&h, &nics())
        .into_iter()
        .map(|p| p.reason)
        .collect();
    assert_eq!(got, [PollutionReason::LocalMac]);
}

#[test]
fn compliant_neighbours_are_clean() {
    assert!(polluted_neighbors(&fixture_host("compliant"), &nics()).is_empty());
}

#[test]
fn inverses_and_descriptions() {
    let s = Sysctl::Conf {
        target: ConfTarget::Interface("eth0.100".into()),
        key: ConfKey::RpFilter,
    };
    let c = Change::SetSysctl {
        sysctl: s.clone(),
        before: Some("1".into()),
        after: "2".into(),
    };
    assert_eq!(
        c.describe(),
        "set sysctl net.ipv4.conf.eth0/100.rp_filter from 1 to 2"
    );
    assert_eq!(
        c.inverse(),
        Some(Change::SetSysctl {
            sysctl: s.clone(),
            before: Some("2".into()),
            after: "1".into()
        })
    );
    let unread = Change::SetSysctl {
        sysctl: s,
        before: None,
        after: "2".into(),
    };
    assert_eq!(unread.inverse(), None);
    assert!(unread.describe().contains("from (unread) to 2"));

    let t = Change::RegisterTableName {
        id: 100000,
        name: "roce_r1".into(),
        before: None,
    };
    assert_eq!(
        t.inverse(),
        Some(Change::UnregisterTableName {
            id: 100000,
            name: "roce_r1".into()
        })
    );
    let renamed = Change::RegisterTableName {
        id: 5,
        name: "roce_r1".into(),
        before: Some("old".into()),
    };
    assert_eq!(
        renamed.inverse(),
        Some(Change::RegisterTableName {
            id: 5,
            name: "old".into(),
            before: Some("roce_r1".into())
        })
    );
    assert_eq!(renamed.describe(), "rename table 5 from old to roce_r1");

    let h = fixture_host("fresh");
    let entries: Vec<_> = h
        .neighbors
        .iter()
        .filter(|n| n.ifname == "r2")
        .cloned()
        .collect();
    let f = Change::FlushNeighbors {
        ifname: "r2".into(),
        entries: entries.clone(),
    };
    let inv = f.inverse().unwrap();
    assert_eq!(
        inv,
        Change::RestoreNeighbors {
            ifname: "r2".into(),
            entries
        }
    );
    assert_eq!(inv.inverse().unwrap(), f);
    assert_eq!(
        f.describe(),
        "flush 2 neighbour entries on r2: 198.18.0.100 (02:00:00:00:01:02), 198.18.0.101 (02:00:00:00:01:02)"
    );
    let rule = h.rules[0].clone();
    assert_eq!(
        Change::AddRule { rule: rule.clone() }.describe(),
        "add rule from all lookup local pref 0 proto 2"
    );
    let route = h.routes[0].clone();
    assert_eq!(
        Change::DeleteRoute { route }.describe(),
        "delete route default via 198.19.0.1 dev eth0 table main proto 16 metric 100"
    );
    // JSON form is tagged with `op`.
    let v = serde_json::to_value(&inv).unwrap();
    assert_eq!(v["op"], "restore_neighbors");
}
