//! Cluster mesh benchmark: the schedule and the merge at 100, 2 000 and 12 500
//! nodes of 8 NICs (12 500 x 8 = 100 000 NICs, the size of the largest GPU
//! clusters built).
//!
//! Run: `cargo bench --bench mesh` (optionally `-- --nodes 100,2000,12500
//! --runs R --dir DIR`). No root needed. For each size it builds the inventory
//! (every NIC in 198.18.0.0/15, rails by position, every NIC backing RDMA),
//! times `mesh_plan`, the whole schedule (`probes`) and one node's share
//! (`node_schedule`, what each node computes), and prints the round count
//! (which must not change with the size). For the merge sizes (2 000 and
//! 12 500 by default) it writes every node's result as `roce-net mesh run -o`
//! would (JSON files: every probe at the neighbour, IP and RDMA levels, the
//! responder's answers), with three broken elements in them: one host whose
//! addresses are answered by several MACs, one NIC whose link is down, one
//! rail whose MTU-sized echoes are lost; then it runs `roce-net --json mesh
//! report --plan PLAN DIR` as a child process, R times, and prints the median
//! wall time, the child's peak RSS (`wait4`'s `ru_maxrss`), the result files'
//! size and the faults the report names. Not a test: nothing is timed against a
//! limit; docs/benchmarks.md records the figures against the goals (the merge
//! within 5 s and 512 MiB at 2 000 nodes, within 30 s and 1 GiB at 12 500).

use roce_net::{MeshInventory, MeshNic, MeshNode, MeshOptions, MeshPlan};
use roce_net_testkit::run_measured;
use serde_json::{json, Value};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const NICS: usize = 8;

struct Opts {
    nodes: Vec<usize>,
    merge: Vec<usize>,
    runs: usize,
    dir: Option<std::path::PathBuf>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        nodes: vec![100, 2000, 12_500],
        merge: vec![2000, 12_500],
        runs: 3,
        dir: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let list = |v: Option<&String>| -> Vec<usize> {
        v.map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default()
    };
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--nodes" => o.nodes = list(args.get(i + 1)),
            "--merge" => o.merge = list(args.get(i + 1)),
            "--runs" => o.runs = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(3),
            "--dir" => o.dir = args.get(i + 1).map(Into::into),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

/// `nodes` nodes `gpu-00000..` of 8 RDMA NICs, every address in 198.18.0.0/15.
fn inventory(nodes: usize) -> MeshInventory {
    assert!(
        nodes * NICS < 131_000,
        "198.18.0.0/15 holds 131 072 addresses"
    );
    let list = (0..nodes)
        .map(|h| {
            let nics = (0..NICS)
                .map(|k| {
                    let a = Ipv4Addr::from(0xC612_0000u32 + 1 + (h * NICS + k) as u32);
                    let mut n = MeshNic::new(&format!("eth{k}"), IpAddr::V4(a), 15, "");
                    n.rdma = true;
                    n.mtu = 9000;
                    n.mac = Some(mac(h, k));
                    n.rail = format!("198.18.0.0/15#{k}");
                    n
                })
                .collect();
            MeshNode::new(&format!("gpu-{h:05}"), nics)
        })
        .collect();
    MeshInventory::new(list)
}

fn mac(h: usize, k: usize) -> String {
    format!(
        "02:{:02x}:{:02x}:{:02x}:00:{k:02x}",
        h >> 16,
        (h >> 8) & 0xff,
        h & 0xff
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// What breaks a probe in the generated results: (level, cause).
fn broken(p: &roce_net::ScheduledProbe, nodes: usize) -> Option<(&'static str, &'static str)> {
    let flux_host = format!("gpu-{:05}", nodes / 3);
    let down = (format!("gpu-{:05}", nodes / 2), "eth3".to_string());
    if p.from_host == down.0 && p.from.name == down.1 {
        return Some(if p.intra {
            ("rdma", "port-not-active")
        } else {
            ("neighbor", "link-down")
        });
    }
    if p.to_host == down.0 && p.to.name == down.1 {
        return Some(if p.intra {
            ("rdma", "timeout")
        } else {
            ("neighbor", "no-answer")
        });
    }
    if !p.intra && p.from.rail.ends_with("#5") {
        return Some(("ip", "mtu"));
    }
    if !p.intra && p.to_host == flux_host {
        return Some(("neighbor", "arp-flux"));
    }
    None
}

/// One node's result, as `mesh run -o` writes it.
fn node_result(plan: &MeshPlan, s: &roce_net::NodeSchedule, nodes: usize) -> Value {
    let host = &s.host;
    let probes: Vec<Value> = s
        .outgoing
        .iter()
        .map(|p| {
            let bad = broken(p, nodes);
            let mut failed = false;
            let levels: Vec<Value> = [
                (p.levels.neighbor, "neighbor"),
                (p.levels.ip, "ip"),
                (p.levels.rdma, "rdma"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|&(_, level)| {
                if failed {
                    return json!({"level": level, "status": "skipped", "cause": "not-available",
                                  "message": "not run: the link is down", "evidence": {}, "fix": [],
                                  "elapsed_ms": 0});
                }
                match bad {
                    Some((l, cause)) if l == level => {
                        failed = cause == "link-down";
                        json!({"level": level, "status": "fail", "cause": cause,
                               "message": format!("{} {} -> {} {}: {cause}", p.from_host, p.from.name, p.to_host, p.to.name),
                               "evidence": {"answered": [mac(7, 1), mac(7, 2)]},
                               "fix": [format!("ssh {} ip neigh del {} dev {}", p.from_host, p.to.address, p.from.name)],
                               "elapsed_ms": 1000})
                    }
                    _ => json!({"level": level, "status": "pass", "cause": null,
                                "message": format!("{} answered on {}", p.to.address, p.from.name),
                                "evidence": {}, "fix": [], "elapsed_ms": 3}),
                }
            })
            .collect();
            json!({"round": p.round, "intra": p.intra, "from": p.from.name, "to_host": p.to_host,
                   "to": p.to.name, "to_address": p.to.address, "levels": levels})
        })
        .collect();
    let answered: Vec<Value> = s
        .incoming
        .iter()
        .filter(|p| p.levels.ip)
        .map(|p| {
            json!({"level": "ip", "from_address": p.from.address, "to": p.to.name,
                   "arrived_on": p.to.name, "reply_dev": p.to.name, "ok": true, "cause": null})
        })
        .collect();
    let nics: Vec<Value> = s
        .nics
        .iter()
        .map(|n| json!({"name": n.name, "oper_state": "UP", "carrier": true, "admin_up": true, "mtu": n.mtu, "mac": n.mac}))
        .collect();
    json!({"version": 1, "plan": plan.id, "host": host, "hostname": host, "netns": null,
           "started_at_ms": 0, "elapsed_ms": 42_000, "nics": nics, "findings": [],
           "probes": probes,
           "responder": {"levels": ["ip", "rdma"], "stopped": "done", "elapsed_ms": 44_000,
                         "answered": answered, "missing": [], "errors": []},
           "notes": []})
}

fn write_results(plan: &MeshPlan, nodes: usize, dir: &Path) -> u64 {
    let mut bytes = 0u64;
    for s in plan.node_schedules() {
        let v = node_result(plan, &s, nodes);
        let n = &s;
        let p = dir.join(format!("{}.json", n.host));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).expect("result file"));
        serde_json::to_writer(&mut f, &v).expect("writing a result");
        f.flush().expect("writing a result");
        bytes += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
    }
    bytes
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Measure mode: run the rest of the command line, print its maxrss (KiB).
    if args.get(1).map(String::as_str) == Some("--measure") {
        let rss = run_measured(Command::new(&args[2]).args(&args[3..])).maxrss_kib;
        println!("{rss}");
        return;
    }
    let o = parse_opts();
    let exe = std::env::current_exe().expect("current exe");
    let bin = env!("CARGO_BIN_EXE_roce-net");
    println!("schedule (in this process):");
    println!(
        "{:>7} {:>8} {:>7} {:>10} {:>11} {:>11} {:>14}",
        "nodes", "NICs", "rounds", "probes", "mesh_plan", "probes()", "node_schedule"
    );
    for &n in &o.nodes {
        let inv = inventory(n);
        let mut opts = MeshOptions::default();
        opts.token = roce_net::mesh_token();
        let t = Instant::now();
        let plan = roce_net::mesh_plan(&inv, &opts).expect("a plan");
        let t_plan = t.elapsed();
        let t = Instant::now();
        let probes = plan.probes();
        let t_probes = t.elapsed();
        let t = Instant::now();
        let s = plan
            .node_schedule(&format!("gpu-{:05}", n / 2))
            .expect("a node");
        let t_node = t.elapsed();
        println!(
            "{n:>7} {:>8} {:>7} {:>10} {:>9.1}ms {:>9.1}ms {:>12.1}ms   (one node: {} probes out, {} in; {:.1} probes per NIC)",
            n * NICS,
            plan.round_count(),
            probes.len(),
            t_plan.as_secs_f64() * 1e3,
            t_probes.as_secs_f64() * 1e3,
            t_node.as_secs_f64() * 1e3,
            s.outgoing.len(),
            s.incoming.len(),
            probes.len() as f64 / (n * NICS) as f64,
        );
    }
    println!("\nmerge (roce-net --json mesh report --plan PLAN DIR, a child process):");
    for &n in &o.merge {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = o
            .dir
            .clone()
            .unwrap_or_else(|| tmp.path().to_path_buf())
            .join(format!("n{n}"));
        std::fs::create_dir_all(dir.join("results")).expect("--dir");
        let mut opts = MeshOptions::default();
        opts.token = roce_net::mesh_token();
        let plan = roce_net::mesh_plan(&inventory(n), &opts).expect("a plan");
        let plan_file = dir.join("plan.json");
        std::fs::write(&plan_file, serde_json::to_vec(&plan).expect("plan JSON"))
            .expect("plan file");
        let t = Instant::now();
        let bytes = write_results(&plan, n, &dir.join("results"));
        println!(
            "  {n} results written in {:.1} s: {:.1} MB, {:.1} KB per node",
            t.elapsed().as_secs_f64(),
            bytes as f64 / 1e6,
            bytes as f64 / 1e3 / n as f64
        );
        let cmd_args = |c: &mut Command| {
            c.args(["--json", "mesh", "report", "--plan"])
                .arg(&plan_file)
                .arg(dir.join("results"));
        };
        let mut times = Vec::new();
        let mut out = Vec::new();
        for _ in 0..o.runs {
            let mut c = Command::new(bin);
            cmd_args(&mut c);
            let m = run_measured(&mut c);
            times.push(m.took);
            out = m.stdout;
        }
        let rss: u64 = {
            let mut c = Command::new(&exe);
            c.arg("--measure").arg(bin);
            cmd_args(&mut c);
            let m = c.output().expect("measure");
            String::from_utf8_lossy(&m.stdout)
                .trim()
                .parse()
                .unwrap_or(0)
        };
        let report: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
        let faults: Vec<String> = report["faults"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                format!(
                    "{} {} {} {} {}",
                    f["element"].as_str().unwrap_or("?"),
                    f["host"].as_str().unwrap_or("-"),
                    f["nic"].as_str().unwrap_or("-"),
                    f["rail"].as_str().unwrap_or("-"),
                    f["cause"].as_str().unwrap_or("?")
                )
            })
            .collect();
        println!(
            "  {n:>6} nodes ({} NICs, {} probes): {:6.2} s (median of {}), peak RSS {:7.1} MiB, report {:.1} KB; faults: {faults:?}",
            n * NICS,
            report["summary"]["probes"],
            median(times).as_secs_f64(),
            o.runs,
            rss as f64 / 1024.0,
            out.len() as f64 / 1e3,
        );
    }
}
