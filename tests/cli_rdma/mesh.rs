//! `roce-net mesh run`'s RDMA level as `probe rdma` is tested: two nodes in
//! the namespaces of [`super::hostile::pair`] (ens1f0np0 198.18.0.11 =
//! mlx5_0, ens2f0np0 198.18.0.12 = mlx5_1), their RDMA devices read from the
//! `connectx8` fixture (`--sysfs-root`) and opened through the stand-in
//! libibverbs (`mesh run --libibverbs`): every verb succeeds, nothing ever
//! completes. So each node's probe selects its port from the fixture, is
//! admitted by the other node's responder and exchanges queue pairs with it,
//! and fails waiting for its first completion; without the two options the
//! level would have loaded the system's libibverbs and been skipped.

use super::hostile::{fixture, pair, standin};
use roce_net_testkit::hang_guard;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `roce-net --netns NS --sysfs-root connectx8 ARGS`.
fn cli(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_roce-net"));
    c.args(["--netns", ns, "--sysfs-root", &fixture()])
        .args(args)
        .env_remove("ROCE_NET_PROBE_TOKEN");
    c
}

fn ok(o: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{:?}: {text}", o.status);
    text
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_mesh_rdma_level_loads_the_given_libibverbs_and_reads_the_sysfs_root() {
    let p = pair(
        "the_mesh_rdma_level_loads_the_given_libibverbs_and_reads_the_sysfs_root",
        "rdm",
    );
    let d = p.dir.path();
    let nodes = [&p.server.name, &p.peer.name];
    // Both ends operationally up (a new veth's carrier is reported a moment
    // after `link set up`) before any node looks at its NIC.
    let t = Instant::now();
    for (ns, dev) in [(&p.server, "ens1f0np0"), (&p.peer, "ens2f0np0")] {
        while !roce_net_testkit::output(&["ip", "-n", &ns.name, "-o", "link", "show", "dev", dev])
            .contains("state UP")
        {
            assert!(
                t.elapsed() < hang_guard(Duration::from_secs(10)),
                "{dev} never came up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Each node's entry: its NIC backs an RDMA port of the fixture.
    let mut entries = Vec::new();
    for (k, ns) in nodes.iter().enumerate() {
        let f = d.join(format!("node{k}.json"));
        ok(&cli(ns, &["mesh", "node", "-o", f.to_str().unwrap()])
            .output()
            .unwrap());
        let e = read(&f);
        assert_eq!(e["nics"].as_array().unwrap().len(), 1, "{e:#}");
        assert_eq!(e["nics"][0]["rdma"], true, "{e:#}");
        entries.push(f);
    }
    let plan = d.join("plan.json");
    let o = Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(["mesh", "plan", "--levels", "rdma", "--all-pairs"])
        .args(["--start-in", "3", "--rdma-ms", "2000", "-o"])
        .arg(&plan)
        .args(&entries)
        .output()
        .unwrap();
    ok(&o);
    let lib = standin().to_str().unwrap();
    let t = Instant::now();
    let runs: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(k, ns)| {
            let out = d.join(format!("result{k}.json"));
            cli(ns, &["mesh", "run", "--libibverbs", lib, "--plan"])
                .arg(&plan)
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut r in runs {
        loop {
            if r.try_wait().unwrap().is_some() {
                break;
            }
            if t.elapsed() > hang_guard(Duration::from_secs(30)) {
                let _ = r.kill();
                let _ = r.wait();
                panic!("a node's mesh run outlived its plan");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        ok(&r.wait_with_output().unwrap());
    }
    // Each node probed the other's RDMA port from its own: its device came
    // from the fixture, and the other node's responder, serving RDMA through
    // the stand-in, admitted it and exchanged queue pairs; the stand-in then
    // never completed its first send. (Whether a responder's session ended
    // within its bound is the probe's own tests' matter: not asserted here.)
    for k in 0..2 {
        let r = read(&d.join(format!("result{k}.json")));
        let r = serde_json::json!({"probes": r["probes"], "responder": r["responder"], "notes": r["notes"]});
        let probes = r["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 1, "{r:#}");
        let l = &probes[0]["levels"][0];
        assert_eq!(l["level"], "rdma", "{r:#}");
        assert_eq!(l["status"], "fail", "{r:#}");
        assert_eq!(l["evidence"]["stage"], "send_recv", "{r:#}");
        assert_eq!(l["cause"], "timeout", "{r:#}");
        assert!(r["notes"].as_array().unwrap().is_empty(), "{r:#}");
        assert!(
            r["responder"]["errors"].as_array().unwrap().is_empty(),
            "{r:#}"
        );
        let levels = r["responder"]["levels"].as_array().unwrap();
        assert!(levels.contains(&Value::from("rdma")), "{r:#}");
    }
}
