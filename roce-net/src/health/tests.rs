//! The cluster mesh's faults in a host's verdict (`check --mesh`), on reports
//! merged from generated node results (the merge's own scenarios,
//! `crate::mesh::tests`): which faults involve the host, how the policy
//! counts them, and every way a report cannot vouch for the host (UNKNOWN).

use super::*;
use crate::mesh::tests::{link_down, one_pair_fails, plan, rail_mtu, results, unfixed};
use crate::mesh::{mesh_report, MeshReport, ScheduledProbe};

/// When the generated runs ended, seconds since the epoch.
const TESTED_AT: u64 = 1_800_000_000;

/// A healthy host's verdict, before the mesh is counted.
fn ok(host: &str) -> HealthVerdict {
    HealthVerdict {
        status: HealthStatus::Ok,
        host: host.to_string(),
        netns: None,
        checked_at: TESTED_AT + 600,
        critical: Vec::new(),
        warning: Vec::new(),
        unknown: Vec::new(),
        summary: Summary::default(),
        ignored: Vec::new(),
        findings: Vec::new(),
        mesh: None,
    }
}

/// Twelve hosts of four NICs: h3 left unfixed (a host fault), h5's r1 link
/// down (a NIC fault), rail #2's switch carrying small frames only (a rail
/// fault), every run ended at [`TESTED_AT`].
fn broken_report() -> MeshReport {
    let p = plan(12, 4);
    let truth = |x: &ScheduledProbe| rail_mtu(x).or_else(|| unfixed(x)).or_else(|| link_down(x));
    let mut res = results(&p, &truth, &[]);
    for r in &mut res {
        r.started_at_ms = TESTED_AT * 1000 - 42_000;
        r.elapsed_ms = 42_000;
    }
    mesh_report(&p, res).unwrap()
}

fn ids(v: &[IdCount]) -> Vec<(&str, usize)> {
    v.iter().map(|c| (c.id.as_str(), c.count)).collect()
}

fn check(report: &MeshReport, host: &str, policy: &HealthPolicy) -> HealthVerdict {
    ok(host).with_mesh(report, "mesh.json", host, 3600, TESTED_AT + 600, policy)
}

#[test]
fn the_report_records_when_and_where_the_mesh_ran() {
    let r = broken_report();
    assert_eq!(r.tested_at_ms, TESTED_AT * 1000);
    assert_eq!(r.nodes.len(), 12);
    let h1 = &r.nodes[0];
    assert_eq!(h1.host, "h1");
    assert!(h1.result);
    assert_eq!(h1.rails, [0, 1, 2, 3].map(|k| format!("198.18.0.0/16#{k}")));
}

#[test]
fn a_host_or_nic_fault_is_critical_a_rail_fault_on_its_rail_a_warning() {
    let r = broken_report();
    let policy = HealthPolicy::default();
    // h3: its own host fault, and rail #2, which one of its NICs is on.
    let v = check(&r, "h3", &policy);
    assert_eq!(v.status, HealthStatus::Critical, "{v:#?}");
    assert_eq!(ids(&v.critical), [("mesh-host", 1)]);
    assert_eq!(ids(&v.warning), [("mesh-rail", 1)]);
    let m = v.mesh.as_ref().unwrap();
    assert_eq!(
        (m.fault_count, m.faults.len(), m.tested_at),
        (2, 2, TESTED_AT)
    );
    assert!(m.faults.iter().all(|f| f.findings.is_empty()));
    // h5: its NIC.
    let v = check(&r, "h5", &policy);
    assert_eq!(v.status, HealthStatus::Critical);
    assert_eq!(ids(&v.critical), [("mesh-nic", 1)]);
    // h1: only the rail it shares: degraded, not unable to carry RDMA.
    let v = check(&r, "h1", &policy);
    assert_eq!(v.status, HealthStatus::Warning);
    assert!(v.critical.is_empty());
    assert_eq!(ids(&v.warning), [("mesh-rail", 1)]);
    // The renderings carry it.
    assert_eq!(check(&r, "h5", &policy).npd_line(), "roce-net: mesh-nic");
    assert_eq!(v.npd_line(), "roce-net: warning: mesh-rail");
    let n = check(&r, "h5", &policy).nagios();
    let first = n.lines().next().unwrap();
    assert!(
        first.starts_with("ROCE-NET CRITICAL - cannot carry RDMA: mesh-nic(1); degraded: mesh-rail(1) | critical=1;;;0 ")
            && first.ends_with(" mesh_faults=2;;;0 mesh_age=600s;;;0"),
        "{n}"
    );
    assert!(n.contains("\nCRITICAL mesh-nic link-down: "), "{n}");
    assert!(
        n.contains("\nWARNING mesh-rail mtu: rail 198.18.0.0/16#2"),
        "{n}"
    );
}

#[test]
fn the_policy_decides_how_each_kind_of_mesh_fault_counts() {
    let r = broken_report();
    let policy = HealthPolicy {
        critical: vec!["mesh-rail".into(), "mesh-nic".into()],
        ignore: vec!["mesh-nic".into()],
    };
    validate_health_policy(&policy).unwrap();
    let v = check(&r, "h1", &policy);
    assert_eq!(v.status, HealthStatus::Critical);
    assert_eq!(ids(&v.critical), [("mesh-rail", 1)]);
    // Ignored: counted apart, and the status line says so.
    let v = check(&r, "h5", &policy);
    assert_eq!(ids(&v.critical), [("mesh-rail", 1)]);
    assert_eq!(ids(&v.ignored), [("mesh-nic", 1)]);
    assert!(v.nagios().contains("ignored by policy: mesh-nic(1)"));
    // A policy without the mesh ids makes a host fault a warning.
    let v = check(
        &r,
        "h3",
        &HealthPolicy {
            critical: vec![],
            ignore: vec![],
        },
    );
    assert_eq!(v.status, HealthStatus::Warning);
    assert_eq!(ids(&v.warning), [("mesh-host", 1), ("mesh-rail", 1)]);
    // A misspelt mesh id is refused like a doctor's.
    let bad = HealthPolicy {
        critical: vec!["mesh-nics".into()],
        ignore: vec![],
    };
    let e = validate_health_policy(&bad).unwrap_err().to_string();
    assert!(
        e.contains("health.critical[0]: mesh-nics is not a check") && e.contains("mesh-pair"),
        "{e}"
    );
}

#[test]
fn a_pair_fault_counts_at_both_ends_and_nowhere_else() {
    let p = plan(12, 4);
    let (one, truth) = one_pair_fails(&p);
    let peer = one.to_host;
    let mut res = results(&p, &truth, &[]);
    for r in &mut res {
        r.started_at_ms = TESTED_AT * 1000;
    }
    let r = mesh_report(&p, res).unwrap();
    assert_eq!(r.faults.len(), 1, "{:#?}", r.faults);
    let policy = HealthPolicy::default();
    for host in ["h4", peer.as_str()] {
        let v = check(&r, host, &policy);
        assert_eq!(v.status, HealthStatus::Warning, "{host}");
        assert_eq!(ids(&v.warning), [("mesh-pair", 1)], "{host}");
    }
    let other = (1..=12)
        .map(|k| format!("h{k}"))
        .find(|h| h != "h4" && *h != peer)
        .unwrap();
    let v = check(&r, &other, &policy);
    assert_eq!(v.status, HealthStatus::Ok, "{v:#?}");
    assert_eq!(v.mesh.as_ref().unwrap().fault_count, 0);
    assert!(v
        .nagios()
        .lines()
        .next()
        .unwrap()
        .ends_with(" mesh_faults=0;;;0 mesh_age=600s;;;0"));
}

#[test]
fn a_report_that_cannot_vouch_for_the_host_is_unknown_never_ok() {
    let r = broken_report();
    let policy = HealthPolicy::default();
    // Too old: one second past the bound.
    let v = ok("h1").with_mesh(&r, "mesh.json", "h1", 600, TESTED_AT + 601, &policy);
    assert_eq!(v.status, HealthStatus::Unknown);
    assert!(
        v.unknown[0].contains("mesh.json: mesh report")
            && v.unknown[0].contains("601 s old, more than 600 s"),
        "{:?}",
        v.unknown
    );
    assert_eq!(v.npd_line().split(':').nth(1), Some(" unknown"));
    // At the bound it still counts.
    let v = ok("h1").with_mesh(&r, "mesh.json", "h1", 600, TESTED_AT + 600, &policy);
    assert_eq!(v.status, HealthStatus::Warning);
    // A name the mesh does not have.
    let v = check(&r, "gpu1.example.org", &policy);
    assert_eq!(v.status, HealthStatus::Unknown);
    assert!(v.unknown[0].contains("has no node named gpu1.example.org (its nodes: h1, h2, h3, h4, h5, h6, h7, h8, ...): give the name the mesh used with --mesh-host"), "{:?}", v.unknown);
    // A report recording no run (written before the mesh recorded it).
    let mut old = r.clone();
    old.tested_at_ms = 0;
    old.nodes.clear();
    let v = check(&old, "h1", &policy);
    assert_eq!(v.status, HealthStatus::Unknown);
    assert!(v.unknown[0].contains("records no run"), "{:?}", v.unknown);
    // Unreadable.
    let v = ok("h1").with_unreadable_mesh("mesh.json", "h1", 600, "cannot use the mesh report: x");
    assert_eq!(v.status, HealthStatus::Unknown);
    assert_eq!(v.mesh.as_ref().unwrap().source, "mesh.json");
    // The worst wins: a host the doctor finds broken stays CRITICAL.
    let mut broken = ok("h1");
    broken.critical.push(IdCount {
        id: "arp-ignore".into(),
        count: 2,
    });
    broken.status = HealthStatus::Critical;
    let v = broken.with_mesh(&r, "mesh.json", "h1", 600, TESTED_AT + 601, &policy);
    assert_eq!(v.status, HealthStatus::Critical);
    assert_eq!(v.unknown.len(), 1);
}

#[test]
fn a_report_is_read_from_mesh_report_or_from_fleet_and_nothing_else() {
    let r = broken_report();
    let text = serde_json::to_string(&r).unwrap();
    assert_eq!(MeshReport::from_json(&text).unwrap(), r);
    let fleet = format!("{{\"hosts\": [], \"findings\": [], \"faults\": [], \"mesh\": {text}}}");
    assert_eq!(MeshReport::from_json(&fleet).unwrap(), r);
    let e = MeshReport::from_json("{\"version\": 1, \"plan\": \"x\"}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a mesh report (roce-net mesh report --json or -o, or roce-net fleet --mesh --json)"), "{e}");
    // The verdict's JSON carries the mesh and reads back.
    let v = check(&r, "h5", &HealthPolicy::default());
    let back: HealthVerdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(back, v);
    // A cached verdict written before the mesh was counted still reads.
    let mut j = serde_json::to_value(ok("h1")).unwrap();
    j.as_object_mut().unwrap().remove("mesh");
    let back: HealthVerdict = serde_json::from_value(j).unwrap();
    assert_eq!(back.mesh, None);
}
