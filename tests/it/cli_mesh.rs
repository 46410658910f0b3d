//! `roce-net mesh` from the command line: a plan from the nodes' entries, what
//! a node would probe (`run --check`), the report of a run nobody made, and a
//! run interrupted by SIGTERM, whose responder goes with it; `fleet` with a
//! mesh beside the snapshots.

use crate::support;

use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::*;

/// Three nodes of two NICs, every NIC in 198.18.0.0/16 (rails by position).
fn write_nodes(dir: &Path) {
    for h in 1..=3 {
        let nics: Vec<Value> = (0..2)
            .map(|k| {
                json!({"name": format!("r{k}"), "address": format!("198.18.{h}.{}", 11 + k),
                       "prefix_len": 16, "mac": format!("02:00:00:00:0{h}:0{k}"), "mtu": 1500,
                       "rail": format!("198.18.0.0/16#{k}"), "rdma": true})
            })
            .collect();
        let node = json!({"host": format!("h{h}"), "nics": nics});
        std::fs::write(dir.join(format!("h{h}.json")), node.to_string()).unwrap();
    }
}

fn json_out(args: &[&str]) -> (Option<i32>, Value, String) {
    let o = bin().args(args).output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), v, text(&o))
}

#[test]
fn a_plan_from_node_entries_what_a_node_would_probe_and_a_run_nobody_made() {
    let d = tempfile::tempdir().unwrap();
    let nodes = d.path().join("nodes");
    std::fs::create_dir(&nodes).unwrap();
    write_nodes(&nodes);
    let plan = d.path().join("plan.json");
    let plan_s = plan.to_str().unwrap();

    // The plan: three nodes, two rails, every peer of a rail of three, the
    // pairs within each host.
    let o = bin()
        .args(["mesh", "plan", "--start-in", "60", "-o", plan_s])
        .arg(&nodes)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("3 nodes, 6 NICs on 2 rails"), "{t}");
    assert!(
        t.contains("15 probes in 3 rounds (12 between hosts, 3 within hosts)"),
        "{t}"
    );
    assert!(t.contains("roce-net mesh run --plan"), "{t}");
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(p["inventory"]["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(p["options"]["token"].as_str().unwrap().len(), 32);

    // What h2 would do, sending nothing.
    let (code, s, t) = json_out(&[
        "--json", "mesh", "run", "--check", "--host", "h2", "--plan", plan_s,
    ]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(s["host"], "h2");
    let out = s["outgoing"].as_array().unwrap();
    assert_eq!(out.len(), 5, "{s:#}"); // 2 rails x 2 peers, and its intra pair
    assert!(out.iter().all(|p| p["from_host"] == "h2"));
    let o = bin()
        .args(["mesh", "run", "--check", "--host", "h2", "--plan", plan_s])
        .output()
        .unwrap();
    let t = text(&o);
    assert!(
        t.contains("node h2 would probe 5 time(s) and answer 5 probe(s) in 3 rounds"),
        "{t}"
    );
    // A node the plan does not have.
    let (code, _, t) = json_out(&["mesh", "run", "--check", "--host", "h9", "--plan", plan_s]);
    assert_eq!(code, Some(66), "{t}");
    assert!(t.contains("h9") && t.contains("h1, h2, h3"), "{t}");

    // Nobody ran: every node is a host fault of its own, exit 6.
    let results = d.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let (code, r, t) = json_out(&[
        "--json",
        "mesh",
        "report",
        "--plan",
        plan_s,
        results.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(6), "{t}");
    assert_eq!(r["verdict"], "fail");
    let faults: Vec<String> = r["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f["element"], f["host"], f["cause"]))
        .collect();
    assert_eq!(
        faults,
        [
            "\"host\" \"h1\" \"no-result\"",
            "\"host\" \"h2\" \"no-result\"",
            "\"host\" \"h3\" \"no-result\""
        ]
    );
    // `fleet` with the mesh beside the hosts' snapshots: a healthy host alone
    // exits 0, and the failed mesh makes it exit 6, with the mesh's faults
    // in the fleet's JSON and its table under the fleet's.
    let healthy =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("roce-net/tests/fixtures/doctor/healthy.json");
    let healthy = healthy.to_str().unwrap();
    let (code, _, t) = json_out(&["fleet", healthy]);
    assert_eq!(code, Some(0), "{t}");
    let mesh_args = ["--mesh-plan", plan_s, "--mesh", results.to_str().unwrap()];
    let (code, f, t) = json_out(&[&["--json", "fleet", healthy][..], &mesh_args[..]].concat());
    assert_eq!(code, Some(6), "{t}");
    assert_eq!(f["hosts"].as_array().unwrap().len(), 1, "{f:#}");
    assert_eq!(f["faults"], r["faults"], "{f:#}");
    assert_eq!(f["mesh"]["verdict"], "fail", "{f:#}");
    let (code, _, t) = json_out(&[&["fleet", healthy][..], &mesh_args[..]].concat());
    assert_eq!(code, Some(6), "{t}");
    assert!(t.contains("no-result") && t.contains("h3"), "{t}");

    // A file that is no mesh document.
    std::fs::write(results.join("x.json"), "{\"a\": 1}").unwrap();
    let (code, _, t) = json_out(&[
        "mesh",
        "report",
        "--plan",
        plan_s,
        results.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(65), "{t}");
}

#[test]
#[ignore = "needs root: runs a node in a network namespace"]
fn an_interrupted_run_takes_its_responder_with_it() {
    require_root("an_interrupted_run_takes_its_responder_with_it");
    // A real node (r0, r1 at 198.18.2.11/.12) and a peer that never runs: the
    // node's responder would wait for it to the end of the last round.
    let ns = netns("mesh", 2);
    let d = tempfile::tempdir().unwrap();
    let me = bin()
        .args(["--netns", &ns.0, "mesh", "node", "-o"])
        .arg(d.path().join("me.json"))
        .output()
        .unwrap();
    assert!(me.status.success(), "{}", text(&me));
    let node: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("me.json")).unwrap()).unwrap();
    let name = node["host"].as_str().unwrap().to_string();
    let rails: Vec<String> = node["nics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["rail"].as_str().unwrap().to_string())
        .collect();
    let peer = json!({"host": "absent", "nics": [
        {"name": "p0", "address": "198.18.2.21", "prefix_len": 24, "mac": null, "mtu": 1500, "rail": rails[0], "rdma": false},
        {"name": "p1", "address": "198.18.2.22", "prefix_len": 24, "mac": null, "mtu": 1500, "rail": rails[1], "rdma": false}]});
    std::fs::write(d.path().join("peer.json"), peer.to_string()).unwrap();
    let plan = d.path().join("plan.json");
    let o = bin()
        .args([
            "mesh",
            "plan",
            "--start-in",
            "1",
            "--rounds",
            "20",
            "--peers",
            "1",
            "-o",
        ])
        .arg(&plan)
        .arg(d.path().join("me.json"))
        .arg(d.path().join("peer.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut child = bin()
        .args(["--netns", &ns.0, "mesh", "run", "--host", &name, "--plan"])
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before its bound"
    );
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    // The signal, not the run's own bound (20 rounds away, where it would
    // exit 0), is what ended it.
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "the run did not end by SIGTERM: {status}"
    );
    // Nothing listens on the echo port any more.
    let free = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.0, "python3", "-c"])
        .arg("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('198.18.2.11', 18530))")
        .output()
        .unwrap();
    assert!(
        free.status.success(),
        "the echo port is still bound: {}",
        text(&free)
    );
}

#[test]
#[ignore = "needs root: builds a fleet of network namespaces"]
fn mesh_node_names_a_nic_that_lost_its_addresses_and_the_report_names_it() {
    use roce_net::{ApplyOptions, Host, Lab, Policy};
    require_root("mesh_node_names_a_nic_that_lost_its_addresses_and_the_report_names_it");
    let lab = Lab::fleet("clina", 3, 2).unwrap();
    let ns = lab.fleet_hosts().to_vec();
    let sw = lab.switch_ns().unwrap().to_string();
    let d = tempfile::tempdir().unwrap();
    for n in &ns {
        let h = Host::netns(n).unwrap().with_etc_root(d.path());
        let opts = ApplyOptions {
            state_dir: d.path().join("state"),
            ..Default::default()
        };
        let p = roce_net::plan(&h.snapshot().unwrap(), &Policy::default()).unwrap();
        roce_net::apply(&h, &p, &opts).unwrap();
    }
    let ip = |args: &[&str]| {
        let o = std::process::Command::new("ip")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", text(&o));
    };
    // h3 r1: its cable pulled (switch port s5) and its addresses dropped, as
    // systemd-networkd does on carrier loss; h2 r0: up, its address flushed.
    ip(&["-n", &sw, "link", "set", "dev", "s5", "down"]);
    ip(&["-n", &ns[2], "addr", "flush", "dev", "r1"]);
    ip(&["-n", &ns[1], "addr", "flush", "dev", "r0"]);

    let nodes = d.path().join("nodes");
    std::fs::create_dir(&nodes).unwrap();
    for (k, n) in ns.iter().enumerate() {
        let o = bin()
            .args(["--netns", n, "mesh", "node", "--nic", "r0,r1", "-o"])
            .arg(nodes.join(format!("h{}.json", k + 1)))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = bin()
        .args([
            "--netns", &ns[2], "mesh", "node", "--nic", "r0", "--nic", "r1",
        ])
        .output()
        .unwrap();
    let t = text(&o);
    assert!(
        t.contains("none (link-down)") && t.contains("the report names them"),
        "{t}"
    );
    let entry: Value =
        serde_json::from_str(&std::fs::read_to_string(nodes.join("h3.json")).unwrap()).unwrap();
    assert_eq!(entry["unprobed"][0]["name"], "r1", "{entry:#}");
    assert_eq!(entry["unprobed"][0]["cause"], "link-down", "{entry:#}");

    let plan = d.path().join("plan.json");
    let o = bin()
        .args(["mesh", "plan", "--start-in", "2", "--levels", "neighbor,ip"])
        .args(["--neighbor-ms", "300", "--ip-ms", "300", "-o"])
        .arg(&plan)
        .arg(&nodes)
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("not probed, no address"), "{t}");
    let results = d.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let runs: Vec<_> = ns
        .iter()
        .enumerate()
        .map(|(k, n)| {
            bin()
                .args(["--netns", n, "mesh", "run", "--plan"])
                .arg(&plan)
                .arg("-o")
                .arg(results.join(format!("h{}.json", k + 1)))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let o = r.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (code, r, t) = json_out(&[
        "--json",
        "mesh",
        "report",
        "--plan",
        plan.to_str().unwrap(),
        results.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(6), "{t}");
    let mut faults: Vec<String> = r["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let host = f["host"].as_str().unwrap();
            let k = ns.iter().position(|n| host.ends_with(n.as_str())).unwrap();
            format!("{} h{} {} {}", f["element"], k + 1, f["nic"], f["cause"])
        })
        .collect();
    faults.sort();
    assert_eq!(
        faults,
        [
            "\"nic\" h2 \"r0\" \"no-address\"",
            "\"nic\" h3 \"r1\" \"link-down\""
        ],
        "{r:#}"
    );
    assert_eq!(r["summary"]["failed"], 0, "{r:#}");
    assert_eq!(r["summary"]["unprobed"], 2, "{r:#}");
    drop(lab);
}
