//! Two network namespaces of one host share one `/etc` (one
//! `rt_tables.d/roce-net.conf`) but number their tables alike (1001.. by
//! default). Real kernels, real netlink, the real names file under a temp etc
//! root: applying in one namespace must not rename the other's tables, and
//! neither plan may flip the names back.

use crate::lab_support;

use lab_support::{ip, require_root};
use roce_net::{ApplyOptions, Change, Host, Lab, Policy};
use std::net::{IpAddr, Ipv4Addr};

/// The table-name changes of a plan.
fn name_changes(p: &roce_net::Plan) -> Vec<String> {
    p.changes
        .iter()
        .filter(|c| matches!(c, Change::RegisterTableName { .. }))
        .map(Change::describe)
        .collect()
}

/// Wait (bounded) until every NIC of `ns` named in `nics` is operationally up.
fn wait_up(ns: &str, nics: &[&str]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let down: Vec<&&str> = nics
            .iter()
            .filter(|n| !ip(ns, &["link", "show", "dev", n]).contains("state UP"))
            .collect();
        if down.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{ns}: still down: {down:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn applying_in_one_namespace_leaves_the_others_table_names() {
    let test = "applying_in_one_namespace_leaves_the_others_table_names";
    require_root(test);
    let mut lab = Lab::new("shn").unwrap_or_else(|e| panic!("{test}: building lab: {e}"));
    lab.add_switch("sw").unwrap();
    let ns_a = lab.add_namespace("a").unwrap();
    let ns_b = lab.add_namespace("b").unwrap();
    let a_nics = ["ens0f0np0", "ens0f1np1", "ens1f0np0", "ens1f1np1"];
    let b_nics = ["r0", "r1"];
    for (i, n) in a_nics.iter().enumerate() {
        let addr = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 11 + i as u8));
        lab.connect(&ns_a, n, addr, 24).unwrap();
    }
    for (i, n) in b_nics.iter().enumerate() {
        let addr = IpAddr::V4(Ipv4Addr::new(198, 18, 1, 11 + i as u8));
        lab.connect(&ns_b, n, addr, 24).unwrap();
    }
    wait_up(&ns_a, &a_nics);
    wait_up(&ns_b, &b_nics);

    // One etc root for both (the host's /etc), one state dir per namespace.
    let etc = tempfile::tempdir().unwrap();
    let state_a = tempfile::tempdir().unwrap();
    let state_b = tempfile::tempdir().unwrap();
    let a = Host::netns(&ns_a).unwrap().with_etc_root(etc.path());
    let b = Host::netns(&ns_b).unwrap().with_etc_root(etc.path());
    let opts = |d: &tempfile::TempDir| ApplyOptions {
        state_dir: d.path().to_path_buf(),
        ..Default::default()
    };
    let policy = Policy::default();
    let names_file = etc.path().join("iproute2/rt_tables.d/roce-net.conf");

    // A applies first and names its four tables.
    let pa = roce_net::plan(&a.snapshot().unwrap(), &policy).unwrap();
    assert_eq!(name_changes(&pa).len(), 4, "{:?}", pa.describe());
    roce_net::apply(&a, &pa, &opts(&state_a)).unwrap();
    let after_a = std::fs::read_to_string(&names_file).unwrap();
    for (i, n) in a_nics.iter().enumerate() {
        assert!(
            after_a.contains(&format!("{}\troce_{n}\n", 1001 + i)),
            "{after_a}"
        );
    }

    // B: its tables 1001-1002 keep A's names (the plan says so), nothing is
    // renamed, and the apply (which verifies by planning again) succeeds.
    let pb = roce_net::plan(&b.snapshot().unwrap(), &policy).unwrap();
    assert!(name_changes(&pb).is_empty(), "{:?}", pb.describe());
    assert!(!pb.is_empty(), "B still needs its routes and rules");
    assert_eq!(
        pb.kept_table_names(),
        vec![
            (1001, "roce_ens0f0np0", "roce_r0"),
            (1002, "roce_ens0f1np1", "roce_r1")
        ]
    );
    assert!(pb
        .notes()
        .iter()
        .any(|n| n.contains("table 1001 keeps the name roce_ens0f0np0")));
    let report = roce_net::apply(&b, &pb, &opts(&state_b)).unwrap();
    assert_eq!(report.applied, pb.changes.len());
    assert!(
        report
            .changes
            .iter()
            .all(|c| !c.contains("table name") && !c.contains("rename table")),
        "{:?}",
        report.changes
    );
    assert_eq!(std::fs::read_to_string(&names_file).unwrap(), after_a);

    // Both plans are now empty: nothing flips back and forth.
    let pa = roce_net::plan(&a.snapshot().unwrap(), &policy).unwrap();
    assert!(pa.is_empty(), "A: {:?}", pa.describe());
    assert!(pa.notes().is_empty(), "{:?}", pa.notes());
    let pb = roce_net::plan(&b.snapshot().unwrap(), &policy).unwrap();
    assert!(pb.is_empty(), "B: {:?}", pb.describe());
    // Routing uses the numbers: B's rules point at its own tables 1001-1002.
    // (Numeric: `ip` reads the machine's /etc for names, not the test's.)
    let rules = ip(&ns_b, &["-N", "-4", "rule", "show"]);
    assert!(rules.contains("from 198.18.1.11 lookup 1001"), "{rules}");
    assert!(rules.contains("from 198.18.1.12 lookup 1002"), "{rules}");
    lab.destroy().unwrap();
}
