//! `roce-net check` end to end: the seed's broken host is CRITICAL (Nagios
//! exit 2, node-problem-detector exit 1) naming what breaks it, the same host
//! fixed by `apply` is OK (0 and 0), and whatever cannot be read — a namespace
//! that does not exist, a file of the host, the policy, a cached verdict gone
//! stale — is UNKNOWN (3), never OK. The verdict itself is tested on fixtures
//! in `roce-net/tests/it/health.rs`.

use crate::support::{bin, netns, require_root, text};
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures")
        .join(p)
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The seed host: CRITICAL naming ARP flux and the missing source routing,
/// in both conventions; `apply` fixes it and both say OK; the JSON verdict
/// agrees and `-o` caches it for `--cached`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_seed_host_is_critical_until_apply_fixes_it() {
    require_root("the_seed_host_is_critical_until_apply_fixes_it");
    let lab = roce_net::Lab::seed_tagged("check", 4).unwrap();
    let host = lab.host_ns().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    let state = dir.path().join("state");
    let cache = dir.path().join("check.json");
    let with = |extra: &[&str]| {
        let mut a = vec![
            "--netns",
            host,
            "--etc-root",
            etc.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };

    let o = with(&["check", "-o", cache.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("ROCE-NET CRITICAL - cannot carry RDMA: arp-ignore(4), arp-announce(4), source-rule-missing(4), asymmetric-egress(3)"),
        "{out}"
    );
    assert!(
        first.contains(" | critical=15;;;0 error=15;;;0 warning=0;;;0 info=1;;;0"),
        "{first}"
    );
    assert!(out.contains("\nCRITICAL arp-ignore r1: "), "{out}");
    let o = with(&["check", "--format", "npd"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        stdout(&o),
        "roce-net: arp-ignore,arp-announce,source-rule-missing,asymmetric-egress\n"
    );
    let o = with(&["--json", "check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "critical");
    assert_eq!(v["netns"], host);
    // The cache holds the same verdict; reading it needs no namespace.
    let o = run(&["check", "--cached", cache.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(stdout(&o).lines().next(), Some(first));

    let o = with(&["apply", "--yes"]);
    assert!(o.status.success(), "apply: {}", text(&o));
    let o = with(&["check", "-o", cache.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).starts_with("ROCE-NET OK - no error or warning found (1 info) | critical=0;;;0 error=0;;;0 warning=0;;;0 info=1;;;0\n"),
        "{}",
        stdout(&o)
    );
    let o = with(&["check", "--format", "npd"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(stdout(&o), "roce-net: ok\n");
    let o = run(&[
        "check",
        "--format",
        "npd",
        "--cached",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(
        (o.status.code(), stdout(&o).as_str()),
        (Some(0), "roce-net: ok\n")
    );
}

/// What cannot be read is UNKNOWN (3) in every format: a namespace that does
/// not exist, a file of the host the snapshot must read (a FIFO where
/// iproute2's table names are), a policy that names no check, a missing or
/// stale cached verdict, a command line that does not parse.
#[test]
#[ignore = "needs root: builds a network namespace and a FIFO (scripts/test.sh runs it)"]
fn what_cannot_be_read_is_unknown_never_ok() {
    require_root("what_cannot_be_read_is_unknown_never_ok");
    let gone = "rnt-check-no-such-namespace";
    for (args, code, start) in [
        (
            vec!["--netns", gone, "check"],
            3,
            "ROCE-NET UNKNOWN - network namespace",
        ),
        (
            vec!["--netns", gone, "check", "--format", "npd"],
            3,
            "roce-net: unknown: network namespace",
        ),
        (vec!["--netns", gone, "--json", "check"], 3, "{"),
        (
            vec!["check", "--no-such-option"],
            3,
            "ROCE-NET UNKNOWN - bad command line",
        ),
        (
            vec![
                "--netns",
                gone,
                "check",
                "--format",
                "npd",
                "--max-age",
                "5",
            ],
            3,
            "roce-net: unknown: bad command line",
        ),
        (
            vec!["check", "--cached", "/nonexistent/check.json"],
            3,
            "ROCE-NET UNKNOWN - ",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
        assert!(stdout(&o).starts_with(start), "{args:?}: {}", text(&o));
    }
    let o = run(&["--netns", gone, "--json", "check"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "unknown");
    assert!(v["unknown"][0].as_str().unwrap().contains(gone), "{v}");

    // A host file that cannot be read: the snapshot is partial, the verdict UNKNOWN.
    let ns = netns("checkfifo", 0);
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir_all(etc.join("iproute2")).unwrap();
    let fifo = etc.join("iproute2/rt_tables");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path in our own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sysfs = dir.path().join("sys");
    std::fs::create_dir(&sysfs).unwrap();
    let base = [
        "--netns",
        ns.0.as_str(),
        "--etc-root",
        etc.to_str().unwrap(),
        "--sysfs-root",
        sysfs.to_str().unwrap(),
    ];
    let o = run(&[&base[..], &["check"]].concat());
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        stdout(&o).starts_with("ROCE-NET UNKNOWN - cannot read ")
            && stdout(&o).lines().next().unwrap().contains("rt_tables"),
        "{}",
        text(&o)
    );
    // Ignored by policy, the same host is OK.
    let policy = dir.path().join("p.yaml");
    std::fs::write(&policy, "health: {ignore: [snapshot-partial]}\n").unwrap();
    let o = run(&[&base[..], &["check", "-f", policy.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A policy naming a check that does not exist: UNKNOWN, naming the field.
    std::fs::write(&policy, "health: {critical: [arp-ignor]}\n").unwrap();
    let o = run(&[&base[..], &["check", "-f", policy.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        stdout(&o).contains("health.critical[0]: arp-ignor"),
        "{}",
        text(&o)
    );

    // A cached verdict past --max-age is UNKNOWN, naming its age.
    let cache = dir.path().join("check.json");
    let o = run(&[
        "check",
        "--from",
        fixture("doctor/healthy.json").to_str().unwrap(),
        "-o",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The fixture was captured long ago: its verdict is as old as its snapshot.
    let o = run(&[
        "check",
        "--cached",
        cache.to_str().unwrap(),
        "--max-age",
        "60",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(stdout(&o).contains("s old, more than 60 s"), "{}", text(&o));
    std::fs::write(&cache, "{\"status\": \"ok\"}").unwrap();
    let o = run(&["check", "--cached", cache.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(stdout(&o).contains("not a verdict"), "{}", text(&o));
}

/// `--json` and `--format npd` together: a usage error, UNKNOWN.
#[test]
fn two_formats_at_once_are_unknown() {
    let snap = fixture("doctor/healthy.json");
    let o = run(&[
        "--json",
        "check",
        "--format",
        "npd",
        "--from",
        snap.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}

/// A merged mesh report naming `gpu1` (the healthy fixture's host) among
/// three nodes, its run ended `age` seconds ago, with `faults`.
fn mesh_report(dir: &Path, age: u64, faults: serde_json::Value) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let nodes: Vec<serde_json::Value> = ["gpu1", "gpu2", "gpu3"]
        .iter()
        .map(|h| serde_json::json!({"host": h, "result": true, "rails": ["198.18.0.0/16#0", "198.18.0.0/16#1"]}))
        .collect();
    let r = serde_json::json!({
        "plan": "2b61381ff140c43f", "verdict": "fail", "passed": false, "message": "",
        "summary": {"nodes": 3, "results": 3, "nics": 6, "rails": 2, "rounds": 3, "probes": 15,
                    "passed": 13, "failed": 2, "not_run": 0, "causes": {}},
        "faults": faults, "notes": [], "tested_at_ms": (now - age) * 1000, "nodes": nodes,
    });
    let f = dir.join(format!("mesh-{age}.json"));
    std::fs::write(&f, r.to_string()).unwrap();
    f
}

fn nic_fault(host: &str, nic: &str) -> serde_json::Value {
    serde_json::json!({"element": "nic", "host": host, "nic": nic, "rail": "198.18.0.0/16#1",
        "peer": null, "cause": "link-down", "level": "neighbor",
        "message": format!("{host} {nic} fails with every peer on its rail (link-down)"),
        "evidence": {}, "fix": [], "findings": []})
}

/// `--mesh`: the last cluster mesh's faults involving this host count
/// (a NIC fault CRITICAL in every format, another host's nothing), and a
/// report that is missing, a FIFO, not a report, too old or silent about the
/// host is UNKNOWN. The options that only make sense with it need it.
#[test]
fn the_mesh_report_counts_and_what_cannot_vouch_for_the_host_is_unknown() {
    let snap = fixture("doctor/healthy.json");
    let snap = snap.to_str().unwrap();
    let d = tempfile::tempdir().unwrap();
    let check = |extra: &[&str]| {
        let mut a = vec!["check", "--from", snap];
        a.extend_from_slice(extra);
        run(&a)
    };
    let broken = mesh_report(d.path(), 60, serde_json::json!([nic_fault("gpu1", "r1")]));
    let broken = broken.to_str().unwrap();
    let o = check(&["--mesh", broken]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = stdout(&o);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("ROCE-NET CRITICAL - cannot carry RDMA: mesh-nic(1) | critical=1;;;0 ")
            && first.contains(" mesh_faults=1;;;0 mesh_age="),
        "{out}"
    );
    assert!(
        out.contains("\nCRITICAL mesh-nic link-down: gpu1 r1 fails with every peer"),
        "{out}"
    );
    let o = check(&["--mesh", broken, "--format", "npd"]);
    assert_eq!(
        (o.status.code(), stdout(&o)),
        (Some(1), "roce-net: mesh-nic\n".into())
    );
    let o = run(&["--json", "check", "--from", snap, "--mesh", broken]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["mesh"]["host"], "gpu1");
    assert_eq!(v["mesh"]["faults"][0]["nic"], "r1");
    // The same report for another node: nothing of it counts here...
    let o = check(&["--mesh", broken, "--mesh-host", "gpu2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // ...and a fresh report without faults keeps the host OK.
    let clean = mesh_report(d.path(), 0, serde_json::json!([]));
    let o = check(&["--mesh", clean.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains(" mesh_faults=0;;;0 "), "{}", text(&o));

    // UNKNOWN, never OK: a report too old (the bound is --mesh-max-age)...
    let old = mesh_report(d.path(), 7200, serde_json::json!([]));
    let old = old.to_str().unwrap();
    let o = check(&["--mesh", old, "--mesh-max-age", "3600"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        stdout(&o).contains("s old, more than 3600 s"),
        "{}",
        text(&o)
    );
    assert_eq!(check(&["--mesh", old]).status.code(), Some(0));
    // ...that does not name this host...
    let o = check(&["--mesh", clean.to_str().unwrap(), "--mesh-host", "gpu9"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        stdout(&o).contains("has no node named gpu9 (its nodes: gpu1, gpu2, gpu3)"),
        "{}",
        text(&o)
    );
    // ...missing, not a report, a FIFO (read without waiting for a writer).
    let fifo = d.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let node = d.path().join("node.json");
    std::fs::write(&node, r#"{"version": 1, "plan": "x", "host": "gpu1"}"#).unwrap();
    let gone = d.path().join("gone.json");
    for (file, why) in [
        (&gone, "cannot use the mesh report"),
        (&node, "not a mesh report"),
        (&fifo, "FIFO"),
    ] {
        let o = check(&["--mesh", file.to_str().unwrap(), "--format", "npd"]);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(
            stdout(&o).starts_with("roce-net: unknown: "),
            "{}",
            text(&o)
        );
        let o = run(&[
            "--json",
            "check",
            "--from",
            snap,
            "--mesh",
            file.to_str().unwrap(),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["unknown"][0].as_str().unwrap().contains(why), "{v:#}");
    }
    // --mesh-host and --mesh-max-age need --mesh; --mesh and --cached are two sources.
    for args in [
        &["--mesh-host", "gpu1"][..],
        &["--mesh-max-age", "600"],
        &["--mesh", broken, "--cached", broken],
        &["--mesh", broken, "--mesh-max-age", "10"],
    ] {
        let o = check(args);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", text(&o));
    }
}
