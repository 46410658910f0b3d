//! After persist + apply: the boot configuration's copies (networkd 252 brings
//! rules up as `proto static`, netplan/NetworkManager with their own protocols)
//! are the fix, and roce-net's own runtime copies (`proto 201`) of the same
//! rules and routes are duplicates the planner deletes — never the other way
//! round, which would be a fight on every boot. The root boot simulation
//! (`tests/it/persist_boot.rs`, networkd) shows the same with the real networkd.

use roce_net::{Change, HostState, Policy};
use std::path::Path;

fn fixture() -> (serde_json::Value, Policy) {
    let d =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/persisted_by_other_tool");
    let host: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("current.json")).unwrap()).unwrap();
    (host, Policy::load(&d.join("policy.yaml")).unwrap())
}

/// Our protocol's copies of every rule and route the other tool recreated in
/// roce-net's tables (1001..=1004).
fn with_our_copies(mut host: serde_json::Value) -> (HostState, usize, usize) {
    let ours = |v: &serde_json::Value| {
        let t = v["table"].as_u64().unwrap_or(0);
        (1001..=1004).contains(&t)
    };
    let mut added = (0, 0);
    for (key, n) in [("rules", &mut added.0), ("routes", &mut added.1)] {
        let copies: Vec<serde_json::Value> = host[key]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| ours(v))
            .map(|v| {
                let mut c = v.clone();
                c["protocol"] = 201.into();
                c
            })
            .collect();
        *n = copies.len();
        host[key].as_array_mut().unwrap().extend(copies);
    }
    let st = HostState::from_json(&host.to_string()).unwrap();
    (st, added.0, added.1)
}

#[test]
fn our_copies_of_persisted_rules_and_routes_are_the_duplicates_that_go() {
    let (host, policy) = fixture();
    assert!(
        roce_net::plan(&HostState::from_json(&host.to_string()).unwrap(), &policy)
            .unwrap()
            .is_empty()
    );
    let (st, rules, routes) = with_our_copies(host);
    assert_eq!(rules, 4, "the fixture has the other tool's four rules");
    assert!(routes >= 4, "and its routes in the four tables");
    let p = roce_net::plan(&st, &policy).unwrap();
    let (mut del_rules, mut del_routes) = (0, 0);
    for c in &p.changes {
        match c {
            Change::DeleteRule { rule } => {
                assert_eq!(rule.protocol, 201, "only roce-net's copy goes: {c:?}");
                del_rules += 1;
            }
            Change::DeleteRoute { route } => {
                assert_eq!(route.protocol, 201, "only roce-net's copy goes: {c:?}");
                del_routes += 1;
            }
            other => panic!(
                "nothing but deleting duplicates: {other:?}\n{}",
                p.render_diff()
            ),
        }
    }
    assert_eq!(
        (del_rules, del_routes),
        (rules, routes),
        "{}",
        p.render_diff()
    );
}
