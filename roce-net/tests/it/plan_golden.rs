//! Golden-file tests of the planner: `current.json + policy.yaml -> changes.json`
//! (the typed changes and the desired state, what the planner computes) and
//! `plan.diff` (their rendering), or `error.txt` for policies the host must
//! refuse. The plan's envelope (the fingerprint of the state it was made from,
//! the policy it carries) is asserted separately, so a fingerprint or schema
//! change does not rewrite every golden file.
//! Regenerate with `UPDATE_GOLDEN=1 cargo test -p roce-net --test it plan_golden::`.
//!
//! Besides the goldens, every successful plan is checked for properties that hold
//! whatever the goldens say: safe ordering, foreign objects untouched, applying the
//! plan to the snapshot gives a host whose re-plan is empty, and applying every
//! change's inverse in reverse order restores the snapshot.

use roce_net::ErrorKind;
use roce_net::Policy;
use roce_net::{Change, Plan};
use roce_net::{ConfTarget, HostState, Route, Rule, Sysctl, TuningKey};
use std::path::PathBuf;

use crate::golden_support;

/// Case name, and whether planning must succeed.
const CASES: &[(&str, bool)] = &[
    ("fresh", true),
    ("compliant", true),
    ("partial", true),
    ("foreign", true),
    ("foreign_priority_collision", false),
    ("foreign_table_collision", false),
    ("big_tables", true),
    ("nic_removed", true),
    ("persisted_by_other_tool", true),
];

fn dir(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan")
        .join(case)
}

fn load(case: &str) -> (HostState, Policy) {
    let d = dir(case);
    let host = HostState::load(&d.join("current.json")).unwrap();
    let policy = Policy::load(&d.join("policy.yaml")).unwrap();
    (host, policy)
}

fn golden(case: &str, file: &str, actual: &str) {
    golden_support::check_text(&dir(case).join(file), actual);
}

fn run_case(case: &str) -> Result<Plan, roce_net::Error> {
    let (host, policy) = load(case);
    roce_net::plan(&host, &policy)
}

#[test]
fn golden_cases() {
    for (case, ok) in CASES {
        let result = run_case(case);
        match (result, ok) {
            (Ok(p), true) => {
                let changes = serde_json::json!({
                    "changes": p.changes,
                    "desired": p.desired,
                });
                golden(
                    case,
                    "changes.json",
                    &(serde_json::to_string_pretty(&changes).unwrap() + "\n"),
                );
                golden(case, "plan.diff", &p.render_diff());
            }
            (Err(e), false) => {
                assert_eq!(e.kind(), ErrorKind::Policy, "{case}: {e}");
                golden(case, "error.txt", &(e.to_string() + "\n"));
            }
            (Ok(p), false) => panic!(
                "{case}: expected a refusal, got a plan:\n{}",
                p.render_diff()
            ),
            (Err(e), true) => panic!("{case}: expected a plan, got: {e}"),
        }
    }
}

/// What the goldens leave out: the plan records the fingerprint of the state it
/// was made from, the host and namespace, and the policy it was made with, and
/// its JSON form reads back to the same plan.
#[test]
fn plans_record_their_base_and_policy_and_round_trip() {
    for (case, ok) in CASES {
        if !ok {
            continue;
        }
        let (host, policy) = load(case);
        let p = roce_net::plan(&host, &policy).unwrap();
        assert_eq!(p.base_fingerprint, roce_net::fingerprint(&host), "{case}");
        assert_eq!(p.hostname, host.hostname, "{case}");
        assert_eq!(p.netns, host.netns, "{case}");
        assert_eq!(p.policy, policy, "{case}");
        assert_eq!(Plan::from_json(&p.to_json()).unwrap(), p, "{case}");
    }
}

// ---------------------------------------------------------------------------
// A model of the host that applies changes the way the kernel would, strictly.

fn set_conf(host: &mut HostState, s: &Sysctl, v: &str) {
    match s {
        Sysctl::Conf { target, key } => {
            let n: i32 = v.trim().parse().unwrap();
            match target {
                ConfTarget::All => host.sysctls.all.set(*key, Some(n)),
                ConfTarget::Default => host.sysctls.default.set(*key, Some(n)),
                ConfTarget::Interface(i) => host
                    .sysctls
                    .interfaces
                    .entry(i.clone())
                    .or_default()
                    .configured
                    .set(*key, Some(n)),
            }
        }
        Sysctl::Tuning(t) => {
            let nums: Vec<u64> = v.split_whitespace().map(|x| x.parse().unwrap()).collect();
            let tu = &mut host.sysctls.tuning;
            match t {
                TuningKey::NetdevMaxBacklog => tu.netdev_max_backlog = Some(nums[0]),
                TuningKey::RmemMax => tu.rmem_max = Some(nums[0]),
                TuningKey::WmemMax => tu.wmem_max = Some(nums[0]),
                TuningKey::UdpMem => tu.udp_mem = Some([nums[0], nums[1], nums[2]]),
            }
        }
    }
    host.sysctls.recompute_effective();
}

fn remove_exact<T: PartialEq + std::fmt::Debug>(v: &mut Vec<T>, x: &T, what: &str) {
    let i = v
        .iter()
        .position(|y| y == x)
        .unwrap_or_else(|| panic!("{what} {x:?} not present"));
    v.remove(i);
}

fn apply(host: &mut HostState, c: &Change) {
    match c {
        Change::SetSysctl {
            sysctl,
            before,
            after,
        } => {
            assert_eq!(
                &host.sysctls.get_text(sysctl),
                before,
                "stale before of {sysctl}"
            );
            set_conf(host, sysctl, after)
        }
        Change::AddRoute { route } => {
            assert!(
                !host.routes.iter().any(|r| r.key() == route.key()),
                "adding {route:?} would fail with EEXIST"
            );
            if let Some(gw) = route.gateway {
                // The gateway must be reachable on link through an existing route.
                assert!(
                    host.routes.iter().any(|r| r.table == route.table
                        && r.gateway.is_none()
                        && r.dev == route.dev
                        && r.dst.contains(&gw)),
                    "gateway {gw} of {route:?} is not on link in its table yet"
                );
            }
            host.routes.push(route.clone())
        }
        Change::DeleteRoute { route } => {
            if route.gateway.is_none() {
                assert!(
                    !host.routes.iter().any(|r| r.table == route.table
                        && r.gateway.is_some_and(|g| route.dst.contains(&g))
                        && r.dev == route.dev
                        && r != route),
                    "deleting {route:?} while a gateway route still depends on it"
                );
            }
            remove_exact(&mut host.routes, route, "route")
        }
        Change::ReplaceRoute { before, after } => {
            assert_eq!(before.key(), after.key());
            remove_exact(&mut host.routes, before, "route");
            host.routes.push(after.clone());
        }
        Change::AddRule { rule } => {
            // A rule pointing at a table must find the table populated.
            assert!(
                host.routes.iter().any(|r| r.table == rule.table),
                "rule {rule:?} added before its table has routes"
            );
            host.rules.push(rule.clone())
        }
        Change::DeleteRule { rule } => remove_exact(&mut host.rules, rule, "rule"),
        Change::FlushNeighbors { ifname, entries } => {
            for e in entries {
                assert_eq!(&e.ifname, ifname);
                remove_exact(&mut host.neighbors, e, "neighbour");
            }
        }
        Change::RestoreNeighbors { entries, .. } => host.neighbors.extend(entries.iter().cloned()),
        Change::RegisterTableName { id, name, before } => {
            assert_eq!(host.table_names.get(id), before.as_ref());
            host.table_names.insert(*id, name.clone());
        }
        Change::UnregisterTableName { id, name } => {
            assert_eq!(host.table_names.remove(id).as_ref(), Some(name));
        }
    }
}

fn canonical(h: &HostState) -> String {
    let mut h = h.clone();
    let key = |v: &serde_json::Value| v.to_string();
    let mut routes: Vec<_> = h
        .routes
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    routes.sort_by_key(key);
    let mut rules: Vec<_> = h
        .rules
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    rules.sort_by_key(key);
    let mut neigh: Vec<_> = h
        .neighbors
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    neigh.sort_by_key(key);
    h.routes.clear();
    h.rules.clear();
    h.neighbors.clear();
    serde_json::json!({"h": h, "routes": routes, "rules": rules, "neigh": neigh}).to_string()
}

/// Rank of a change in the required order.
fn phase(c: &Change) -> u8 {
    match c {
        Change::RegisterTableName { .. } | Change::UnregisterTableName { .. } => 0,
        Change::SetSysctl { .. } => 1,
        Change::AddRoute { .. } | Change::ReplaceRoute { .. } => 2,
        Change::AddRule { .. } => 3,
        Change::DeleteRule { .. } => 4,
        Change::DeleteRoute { .. } => 5,
        Change::FlushNeighbors { .. } | Change::RestoreNeighbors { .. } => 6,
    }
}

fn touched_routes(c: &Change) -> Vec<&Route> {
    match c {
        Change::DeleteRoute { route } => vec![route],
        Change::ReplaceRoute { before, .. } => vec![before],
        _ => vec![],
    }
}

fn touched_rules(c: &Change) -> Vec<&Rule> {
    match c {
        Change::DeleteRule { rule } => vec![rule],
        _ => vec![],
    }
}

#[test]
fn plans_are_safe_and_converge() {
    for (case, ok) in CASES {
        if !ok {
            continue;
        }
        let (host, policy) = load(case);
        let p = roce_net::plan(&host, &policy).unwrap();
        assert_eq!(p.base_fingerprint, roce_net::fingerprint(&host), "{case}");
        assert_eq!(Plan::from_json(&p.to_json()).unwrap(), p, "{case}");

        // Ordering.
        let phases: Vec<u8> = p.changes.iter().map(phase).collect();
        assert!(
            phases.windows(2).all(|w| w[0] <= w[1]),
            "{case}: order {phases:?}"
        );

        // Only owned objects are deleted or replaced.
        for c in &p.changes {
            for r in touched_routes(c) {
                assert_eq!(r.protocol, policy.protocol, "{case}: touches foreign {r:?}");
            }
            for r in touched_rules(c) {
                assert_eq!(r.protocol, policy.protocol, "{case}: touches foreign {r:?}");
            }
        }

        // Apply, then the re-plan is empty and foreign objects are all still there.
        let mut after = host.clone();
        for c in &p.changes {
            apply(&mut after, c);
        }
        for r in host.routes.iter().filter(|r| r.protocol != policy.protocol) {
            assert!(after.routes.contains(r), "{case}: foreign route lost {r:?}");
        }
        for r in host.rules.iter().filter(|r| r.protocol != policy.protocol) {
            assert!(after.rules.contains(r), "{case}: foreign rule lost {r:?}");
        }
        let again = roce_net::plan(&after, &policy).unwrap();
        assert!(
            again.is_empty(),
            "{case}: second plan not empty:\n{}",
            again.render_diff()
        );
        assert_eq!(again.desired, p.desired, "{case}");

        // Inverse changes, in reverse order, restore the snapshot.
        let mut back = after.clone();
        for c in p.changes.iter().rev() {
            let inv = c
                .inverse()
                .unwrap_or_else(|| panic!("{case}: {c:?} has no inverse"));
            assert_eq!(
                inv.inverse().as_ref(),
                Some(c),
                "{case}: inverse of inverse"
            );
            apply(&mut back, &inv);
        }
        assert_eq!(
            canonical(&back),
            canonical(&host),
            "{case}: rollback differs"
        );
    }
}

#[test]
fn compliant_host_gives_empty_plan() {
    let p = run_case("compliant").unwrap();
    assert!(p.is_empty(), "{}", p.render_diff());
    assert_eq!(p.render_diff(), "");
    assert_eq!(p.desired.nics.len(), 4);
}

#[test]
fn fresh_host_plan_contents() {
    let p = run_case("fresh").unwrap();
    let diff = p.render_diff();
    for line in [
        "+ table-name 1001 roce_r1",
        "~ sysctl net.ipv4.conf.all.arp_ignore 0 -> 1",
        "~ sysctl net.ipv4.conf.r3.arp_announce 0 -> 2",
        "~ sysctl net.ipv4.conf.all.rp_filter 1 -> 2",
        "~ sysctl net.core.netdev_max_backlog 1000 -> 250000",
        "+ route 198.18.0.0/24 dev r2 src 198.18.0.12 table roce_r2(1002) proto 201",
        "+ rule from 198.18.0.14 lookup roce_r4(1004) pref 1004 proto 201",
        "- neigh 198.18.0.102 dev r3 FAILED",
        "- neigh 198.18.0.100 dev r2 lladdr 02:00:00:00:01:02 STALE",
    ] {
        assert!(
            diff.lines().any(|l| l == line),
            "missing {line:?} in\n{diff}"
        );
    }
    // Static entries, IPv6 entries and clean entries stay; udp_mem was not in the policy.
    for absent in ["198.18.0.1 ", "fe80::1", "198.18.0.103", "udp_mem", "eth0"] {
        assert!(
            !diff.contains(absent),
            "{absent:?} should not be in\n{diff}"
        );
    }
}

#[test]
fn foreign_objects_are_untouched() {
    let (host, _) = load("foreign");
    let p = run_case("foreign").unwrap();
    assert!(!p.changes.iter().any(|c| matches!(
        c,
        Change::DeleteRoute { .. } | Change::DeleteRule { .. } | Change::ReplaceRoute { .. }
    )));
    assert!(host.rules.iter().any(|r| r.priority == 500));
    // Gateways and the extra route are placed after the subnet routes they need.
    let diff = p.render_diff();
    assert!(diff.contains(
        "+ route default via 198.18.0.1 dev r3 src 198.18.0.13 table roce_r3(1003) proto 201"
    ));
    assert!(diff.contains(
        "+ route 198.18.128.0/24 via 198.18.0.2 dev r2 src 198.18.0.12 table roce_r2(1002) proto 201"
    ));
    assert!(diff.contains("~ sysctl net.ipv4.conf.default.arp_ignore 0 -> 1"));
    assert!(!diff.contains("rp_filter"), "rp_filter: keep\n{diff}");
    assert!(!diff.contains("neigh"));
}

#[test]
fn foreign_collisions_are_refused_naming_the_object() {
    let e = run_case("foreign_priority_collision").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Policy);
    let m = e.to_string();
    assert!(
        m.starts_with("routing.rule_priority_base: rule priority 1002 (for r2)"),
        "{m}"
    );
    assert!(
        m.contains("from 198.19.0.5 lookup 100 pref 1002 proto 4"),
        "{m}"
    );

    let e = run_case("foreign_table_collision").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Policy);
    let m = e.to_string();
    assert!(
        m.starts_with("routing.table_base: table 1003 (for r3)"),
        "{m}"
    );
    assert!(
        m.contains("198.18.200.0/24 via 198.18.0.253 dev r3 table 1003 proto 4"),
        "{m}"
    );
}

#[test]
fn tables_above_255() {
    let p = run_case("big_tables").unwrap();
    let tables: Vec<u32> = p.desired.nics.iter().map(|n| n.table).collect();
    assert_eq!(tables, [100000, 100001, 65536, 4_000_000_000]);
    let prios: Vec<u32> = p.desired.nics.iter().map(|n| n.rule_priority).collect();
    assert_eq!(prios, [20001, 20002, 20003, 20004]);
    let diff = p.render_diff();
    assert!(
        diff.contains("+ rule from 198.18.0.14 lookup roce_r4(4000000000) pref 20004 proto 201")
    );
    assert!(diff.contains("table roce_r4(4000000000)"));
    // r2's old layout is removed: rule first, then its route.
    let del_rule = diff
        .find("- rule from 198.18.0.12 lookup 1002 pref 1002")
        .unwrap();
    let del_route = diff
        .find("- route 198.18.0.0/24 dev r2 src 198.18.0.12 table 1002")
        .unwrap();
    assert!(del_rule < del_route);
    // r1 is already in place: nothing for table 100000 but its registered name stays.
    assert!(!diff.contains("roce_r1(100000)"), "{diff}");
}

#[test]
fn removed_nic_loses_its_owned_objects() {
    let p = run_case("nic_removed").unwrap();
    let lines: Vec<String> = p.render_diff().lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            "- rule from 198.18.0.14 lookup 1004 pref 1004 proto 201",
            "- route default via 198.18.0.1 dev r4 src 198.18.0.14 table 1004 proto 201",
            "- route 198.18.0.0/24 dev r4 src 198.18.0.14 table 1004 proto 201",
        ]
    );
    assert_eq!(p.desired.nics.len(), 3);
}

#[test]
fn partial_host_replaces_adds_and_deletes() {
    let p = run_case("partial").unwrap();
    let diff = p.render_diff();
    assert!(diff.contains(
        "~ route 198.18.0.0/24 dev r2 src 198.18.0.11 table roce_r2(1002) proto 201 -> \
         198.18.0.0/24 dev r2 src 198.18.0.12 table roce_r2(1002) proto 201"
    ));
    assert!(diff.contains("+ rule from 198.18.0.13 lookup roce_r3(1003) pref 1003 proto 201"));
    assert!(
        !diff.contains("+ rule from 198.18.0.11"),
        "r1 is done:\n{diff}"
    );
    assert!(diff.contains("- rule from 198.18.0.15 lookup 1005 pref 1005 proto 201"));
    assert!(diff.contains("- neigh 198.18.1.5 dev r2"));
    assert!(diff.contains("- neigh 198.18.0.200 dev r3 lladdr 02:00:00:00:00:01"));
    assert!(!diff.contains("198.18.0.103"));
    assert!(!diff.contains("eth0"));
    let names: Vec<&str> = p.desired.nics.iter().map(|n| n.ifname.as_str()).collect();
    assert_eq!(names, ["r1", "r2", "r3", "r4"]);
}

#[test]
fn every_fixture_directory_is_a_case() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan");
    let mut on_disk: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|(c, _)| c.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
    for (case, ok) in CASES {
        let d = dir(case);
        assert_eq!(d.join("changes.json").exists(), *ok, "{case}");
        assert_eq!(d.join("error.txt").exists(), !ok, "{case}");
    }
}

/// After a reboot, networkd / netplan / NetworkManager recreate roce-net's
/// persisted routes and rules with their own protocol. The host still complies:
/// the plan is empty and nothing is refused as a foreign collision.
#[test]
fn objects_recreated_by_another_tool_satisfy_the_policy() {
    let p = run_case("persisted_by_other_tool").unwrap();
    assert!(p.is_empty(), "{}", p.render_diff());
}
