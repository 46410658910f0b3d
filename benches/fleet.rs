//! Fleet benchmark: `roce-net fleet` over many saved snapshots (default 10 000).
//!
//! Run: `cargo bench --bench fleet` (optionally `-- --hosts N --runs R --gzip
//! --base SNAPSHOT --baseline BIN --dir DIR`). No root needed. It writes N snapshot files
//! into a temporary directory, made from one base snapshot (default: the 4-NIC
//! `doctor/healthy.json` fixture, or `--base FILE` with the same addressing: rail
//! NICs at 198.18.0.11-14/24, management at 198.19.0.11/24) with everything that
//! makes a host itself varied per host: host
//! name, every NIC and management address (rails in one /16, as on the nodes this
//! tool is for, management in another), MACs, and 64 neighbour entries for peers
//! on the rails. Every 100th host has MTU 4200 instead of 9000 on its NICs, so the
//! report has cross-host findings to build. Then it runs `roce-net --json fleet
//! FILE...` as a child process, R times, and prints the median wall time, the
//! child's peak RSS (wait4 rusage through a small measuring process), the input
//! and output sizes and the number of findings. Not a test: nothing is asserted.

use roce_net::{HostState, SnapshotFormat};
use roce_net_testkit::run_measured;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

struct Opts {
    hosts: usize,
    runs: usize,
    gzip: bool,
    base: PathBuf,
    baseline: Option<String>,
    dir: Option<PathBuf>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        hosts: 10_000,
        runs: 3,
        gzip: false,
        base: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("roce-net/tests/fixtures/doctor/healthy.json"),
        baseline: None,
        dir: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let next = args.get(i + 1).cloned();
        match args[i].as_str() {
            "--hosts" => o.hosts = next.and_then(|v| v.parse().ok()).expect("--hosts N"),
            "--runs" => o.runs = next.and_then(|v| v.parse().ok()).expect("--runs N"),
            "--base" => o.base = next.map(PathBuf::from).expect("--base FILE"),
            "--baseline" => o.baseline = next,
            "--dir" => o.dir = next.map(PathBuf::from),
            "--gzip" => {
                o.gzip = true;
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Replace strings (addresses, prefixes, MACs) throughout a JSON value.
fn rewrite(v: &mut Value, map: &BTreeMap<String, String>) {
    match v {
        Value::String(s) => {
            if let Some(n) = map.get(s.as_str()) {
                *s = n.clone();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite(x, map)),
        Value::Object(o) => o.values_mut().for_each(|x| rewrite(x, map)),
        _ => {}
    }
}

/// Rail address `j` (0..4) of host `i`: 198.18.0.0/16 holds 4 NICs of 16 000 hosts.
fn rail(i: usize, j: usize) -> Ipv4Addr {
    Ipv4Addr::from(0xC612_0000u32 + 16 + (i as u32) * 4 + j as u32)
}

/// Host `i` of the fleet, from the base snapshot.
fn host(base: &Value, i: usize, hosts: usize) -> HostState {
    let mut v = base.clone();
    let mut map = BTreeMap::new();
    // Rails: 198.18.0.0/16 (host i, NIC j at .16 + 8i + j); management: 198.19.0.0/16.
    map.insert("198.18.0.0/24".to_string(), "198.18.0.0/16".to_string());
    map.insert(
        "198.18.0.255/32".to_string(),
        "198.18.255.255/32".to_string(),
    );
    map.insert("198.19.0.0/24".to_string(), "198.19.0.0/16".to_string());
    map.insert(
        "198.19.0.255/32".to_string(),
        "198.19.255.255/32".to_string(),
    );
    for j in 0..4 {
        let old = format!("198.18.0.{}", 11 + j);
        let new = rail(i, j).to_string();
        map.insert(format!("{old}/32"), format!("{new}/32"));
        map.insert(format!("::ffff:{old}"), format!("::ffff:{new}"));
        map.insert(old, new);
    }
    let mgmt = Ipv4Addr::from(0xC613_0000u32 + 16 + i as u32).to_string();
    map.insert("198.19.0.11/32".into(), format!("{mgmt}/32"));
    map.insert("198.19.0.11".into(), mgmt);
    if let Some(ifs) = v["interfaces"].as_array() {
        for (k, itf) in ifs.iter().enumerate() {
            if let Some(m) = itf["mac"].as_str().filter(|m| *m != "00:00:00:00:00:00") {
                map.insert(
                    m.to_string(),
                    format!("02:{:02x}:{:02x}:00:00:{k:02x}", i >> 8, i & 0xff),
                );
            }
        }
    }
    rewrite(&mut v, &map);
    v["hostname"] = format!("gpu-{i:05}").into();
    v["captured_at"] = (1_700_000_000 + i as u64).into();
    if let Some(addrs) = v["addresses"].as_array_mut() {
        for a in addrs.iter_mut().filter(|a| a["prefix_len"] == 24) {
            a["prefix_len"] = 16.into();
        }
    }
    let deviant = i % 100 == 99;
    let mut rails = Vec::new();
    if let Some(ifs) = v["interfaces"].as_array_mut() {
        for itf in ifs.iter_mut().filter(|x| x["mtu"] == 9000) {
            rails.push((itf["name"].clone(), itf["index"].clone()));
            if deviant {
                itf["mtu"] = 4200.into();
            }
        }
    }
    // 16 peers per rail NIC, each peer's same-rail address and MAC.
    let mut neigh = Vec::new();
    for (j, (name, index)) in rails.iter().enumerate() {
        for p in 1..=16 {
            let peer = (i + p * 37) % hosts;
            neigh.push(serde_json::json!({
                "ifname": name, "ifindex": index, "ip": rail(peer, j).to_string(),
                "mac": format!("02:{:02x}:{:02x}:00:00:{:02x}", peer >> 8, peer & 0xff, j + 2),
                "state": ["REACHABLE"], "router": false,
            }));
        }
    }
    v["neighbors"] = Value::Array(neigh);
    serde_json::from_value(v).expect("a valid snapshot")
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
    assert!(
        o.hosts <= 16_000,
        "--hosts: at most 16 000 (the rails' /16)"
    );
    let base: Value =
        serde_json::from_slice(&std::fs::read(&o.base).expect("reading the base snapshot"))
            .expect("base snapshot JSON");
    // The snapshots go to a temporary directory, or to `--dir DIR` (kept, for
    // profiling `roce-net fleet DIR/*` by hand).
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = o.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("--dir");
    let t = Instant::now();
    let ext = if o.gzip { "json.gz" } else { "json" };
    let mut files = Vec::with_capacity(o.hosts);
    let mut bytes = 0u64;
    for i in 0..o.hosts {
        let p = dir.join(format!("gpu-{i:05}.{ext}"));
        host(&base, i, o.hosts)
            .save(
                &p,
                SnapshotFormat {
                    pretty: false,
                    gzip: o.gzip,
                },
            )
            .expect("saving a snapshot");
        bytes += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        files.push(p.to_string_lossy().into_owned());
    }
    println!(
        "{} snapshots ({ext}, {:.1} MB, {:.1} KB each) from {} written in {:.1} s",
        o.hosts,
        bytes as f64 / 1e6,
        bytes as f64 / 1e3 / o.hosts as f64,
        o.base.display(),
        t.elapsed().as_secs_f64()
    );

    let exe = std::env::current_exe().expect("current exe");
    let mut bins = vec![(
        "roce-net fleet".to_string(),
        env!("CARGO_BIN_EXE_roce-net").to_string(),
    )];
    if let Some(b) = &o.baseline {
        bins.push((format!("baseline {b} fleet"), b.clone()));
    }
    // Runs interleaved, so every binary sees the same machine load.
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); bins.len()];
    let mut outs: Vec<Vec<u8>> = vec![Vec::new(); bins.len()];
    for _ in 0..o.runs {
        for (k, (_, bin)) in bins.iter().enumerate() {
            let m = run_measured(Command::new(bin).args(["--json", "fleet"]).args(&files));
            times[k].push(m.took);
            outs[k] = m.stdout;
        }
    }
    for (k, (name, bin)) in bins.iter().enumerate() {
        let rss: u64 = {
            let m = Command::new(&exe)
                .arg("--measure")
                .arg(bin)
                .args(["--json", "fleet"])
                .args(&files)
                .output()
                .expect("measure");
            String::from_utf8_lossy(&m.stdout)
                .trim()
                .parse()
                .unwrap_or(0)
        };
        let out = &outs[k];
        let report: Value = serde_json::from_slice(out).unwrap_or(Value::Null);
        let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
        for f in report["findings"].as_array().into_iter().flatten() {
            *by_id.entry(f["id"].as_str().unwrap_or("?")).or_default() += 1;
        }
        let hosts = report["hosts"].as_array().map_or(0, |h| h.len());
        let d = median(times[k].clone());
        println!(
            "{name:<40} {:8.2} s   {:7.0} hosts/s   peak RSS {:7.1} MiB   output {:6.1} MB   {hosts} hosts, findings {by_id:?}   (median of {})",
            d.as_secs_f64(),
            o.hosts as f64 / d.as_secs_f64(),
            rss as f64 / 1024.0,
            out.len() as f64 / 1e6,
            o.runs
        );
    }
}
