//! Snapshot benchmark: roce-net's netlink reads vs iproute2 on a large namespace.
//!
//! Run as root: `cargo bench --bench snapshot` (optionally `-- --routes N --neighs M
//! --runs R`). It builds a throwaway namespace (`rnt-nl-bench-<pid>-...`, removed at
//! the end) holding N routes (default 100 000, /32s spread over tables 100, 1000,
//! 70000 and main, loaded with `ip -batch`) and M permanent neighbours (default
//! 10 000), then times, side by side:
//!
//! * roce-net: the netlink part of `Host::snapshot` (links, addresses, neighbours,
//!   routes in every table, rules), in-process and as a child process;
//! * iproute2: `ip -j route show table all` + `ip -j neigh show`, as child processes;
//! * end to end: the `roce-net snapshot` command (the whole snapshot: netlink,
//!   sysctls, RDMA sysfs, table names, then the JSON written to a pipe) in its
//!   default compact form, `--pretty`, and `--compress`, against the same two `ip -j`
//!   commands, with each output's size. `--baseline BIN` also times another
//!   `roce-net` binary's `snapshot` (e.g. one built from an older commit).
//!
//! It prints medians, the ratio, and each side's peak RSS (`wait4` rusage maxrss of
//! the child; VmHWM of the child for roce-net). Not a test: nothing is asserted.

use roce_net::Host;
use roce_net::Lab;
use roce_net_testkit::run_measured;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Opts {
    routes: usize,
    neighs: usize,
    runs: usize,
    baseline: Option<String>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        routes: 100_000,
        neighs: 10_000,
        runs: 5,
        baseline: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--baseline" {
            o.baseline = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        let val = args.get(i + 1).and_then(|v| v.parse().ok());
        match (args[i].as_str(), val) {
            ("--routes", Some(v)) => o.routes = v,
            ("--neighs", Some(v)) => o.neighs = v,
            ("--runs", Some(v)) => o.runs = v,
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

/// The netlink part of `Host::snapshot`; returns (routes, neighbours) counted.
fn netlink_snapshot(ns: &str) -> roce_net::Result<(usize, usize)> {
    Host::netns(ns)?.with_netlink(|nl| {
        let links = nl.links()?;
        let _addrs = nl.addresses(&links)?;
        let neighs = nl.neighbors(&links)?;
        let routes = nl.routes(&links)?;
        let _rules = nl.rules()?;
        Ok((routes.len(), neighs.len()))
    })
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Run a command that must succeed: its wall time and how many bytes it printed.
fn took(cmd: &mut Command) -> (Duration, usize) {
    let m = run_measured(cmd).succeeded();
    (m.took, m.stdout.len())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ip_batch(ns: &str, script: &str) {
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("running ip -batch");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writing the batch");
    assert!(
        child.wait().expect("ip -batch").success(),
        "ip -batch failed"
    );
}

fn populate(ns: &str, routes: usize, neighs: usize) {
    // Permanent neighbours do not count against gc_thresh3 (kernel >= 4.20), so
    // the (global, init-namespace) thresholds need no change.
    let tables = ["100", "1000", "70000", "main"];
    let mut script = String::with_capacity(routes * 48);
    for i in 0..routes {
        // /32s inside 198.18.0.0/15 (131 072 addresses), round-robin over tables.
        let a = 0xC612_0000u32 + (i as u32 % 131_072);
        let ip = std::net::Ipv4Addr::from(a);
        let t = tables[i % tables.len()];
        script.push_str(&format!("route add {ip}/32 dev v0 table {t}\n"));
    }
    ip_batch(ns, &script);
    let mut script = String::with_capacity(neighs * 64);
    for i in 0..neighs {
        let ip = std::net::Ipv4Addr::from(0xC613_0000u32 + i as u32);
        script.push_str(&format!(
            "neigh add {ip} lladdr 02:00:00:{:02x}:{:02x}:{:02x} dev v0 nud permanent\n",
            (i >> 16) & 0xff,
            (i >> 8) & 0xff,
            i & 0xff
        ));
    }
    ip_batch(ns, &script);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Measure mode (a small process, so its pre-exec image does not inflate the
    // target's maxrss): run the rest of the command line, print its maxrss (KiB).
    if args.get(1).map(String::as_str) == Some("--measure") {
        let rss = run_measured(Command::new(&args[2]).args(&args[3..]))
            .succeeded()
            .maxrss_kib;
        println!("{rss}");
        return;
    }
    // Child mode: one netlink snapshot, then report counts and VmHWM.
    if args.get(1).map(String::as_str) == Some("--child") {
        let ns = args.get(2).expect("namespace");
        let (r, n) = netlink_snapshot(ns).expect("snapshot");
        println!("{r} {n} {}", vm_hwm_kb());
        return;
    }
    let o = parse_opts();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("snapshot bench: needs root (creates a network namespace); skipped");
        return;
    }
    let mut lab = Lab::new("nl-bench").expect("lab");
    let ns = lab.add_namespace("big").expect("namespace");
    Host::netns(&ns)
        .expect("host")
        .with_netlink(|nl| {
            nl.link_add_veth("v0", "v1", None)?;
            nl.link_set_up("v0")?;
            nl.link_set_up("v1")?;
            nl.addr_add(
                "v0",
                "198.19.255.1"
                    .parse()
                    .map_err(|_| roce_net::Error::new(roce_net::ErrorKind::InvalidInput, "ip"))?,
                24,
            )
        })
        .expect("devices");
    let t = Instant::now();
    populate(&ns, o.routes, o.neighs);
    println!(
        "namespace {ns}: {} routes + {} neighbours loaded with ip -batch in {:.1} s",
        o.routes,
        o.neighs,
        t.elapsed().as_secs_f64()
    );

    let exe = std::env::current_exe().expect("current exe");
    let mut lib_in = Vec::new();
    let mut lib_child = Vec::new();
    let mut ip_child = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..o.runs {
        let t = Instant::now();
        counts = netlink_snapshot(&ns).expect("snapshot");
        lib_in.push(t.elapsed());

        lib_child.push(took(Command::new(&exe).args(["--child", &ns])).0);
        let (d1, _) =
            took(Command::new("ip").args(["-n", &ns, "-j", "route", "show", "table", "all"]));
        let (d2, _) = took(Command::new("ip").args(["-n", &ns, "-j", "neigh", "show"]));
        ip_child.push(d1 + d2);
    }
    // End to end: the CLI's `snapshot` against `ip -j route show table all` + `ip
    // -j neigh show`, interleaved in one loop so both see the same machine.
    let cli = env!("CARGO_BIN_EXE_roce-net");
    let etc = tempfile::tempdir().expect("temp /etc root");
    let etc_s = etc.path().to_string_lossy().into_owned();
    let variants: Vec<(String, String, Vec<&str>)> = {
        let mut v = vec![
            (
                "snapshot (compact, default)".to_string(),
                cli.to_string(),
                vec![],
            ),
            (
                "snapshot --pretty".to_string(),
                cli.to_string(),
                vec!["--pretty"],
            ),
            (
                "snapshot --compress".to_string(),
                cli.to_string(),
                vec!["--compress"],
            ),
        ];
        if let Some(b) = &o.baseline {
            v.push((format!("baseline {b} snapshot"), b.clone(), vec![]));
        }
        v
    };
    let mut e2e: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut e2e_bytes = vec![0usize; variants.len()];
    let mut ip_e2e = Vec::new();
    let mut ip_bytes = 0;
    for _ in 0..o.runs {
        for (k, (_, bin, extra)) in variants.iter().enumerate() {
            let (d, n) = took(
                Command::new(bin)
                    .args(["--netns", &ns, "--etc-root", &etc_s, "snapshot"])
                    .args(extra),
            );
            e2e[k].push(d);
            e2e_bytes[k] = n;
        }
        let (d1, n1) =
            took(Command::new("ip").args(["-n", &ns, "-j", "route", "show", "table", "all"]));
        let (d2, n2) = took(Command::new("ip").args(["-n", &ns, "-j", "neigh", "show"]));
        ip_e2e.push(d1 + d2);
        ip_bytes = n1 + n2;
    }

    // Peak RSS, each through a small measuring process (see `--measure`).
    let measure = |args: &[&str]| -> u64 {
        let out = Command::new(&exe)
            .arg("--measure")
            .args(args)
            .output()
            .expect("measure");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    };
    let exe_s = exe.to_string_lossy().into_owned();
    let lib_rss = measure(&[&exe_s, "--child", &ns]);
    let out = Command::new(&exe)
        .args(["--child", &ns])
        .output()
        .expect("child");
    let lib_hwm: u64 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let ip_rss = measure(&["ip", "-n", &ns, "-j", "route", "show", "table", "all"])
        .max(measure(&["ip", "-n", &ns, "-j", "neigh", "show"]));
    let e2e_rss: Vec<u64> = variants
        .iter()
        .map(|(_, bin, extra)| {
            let mut a = vec![
                bin.as_str(),
                "--netns",
                &ns,
                "--etc-root",
                &etc_s,
                "snapshot",
            ];
            a.extend_from_slice(extra);
            measure(&a)
        })
        .collect();
    drop(lab);

    let (li, lc, ic) = (median(lib_in), median(lib_child), median(ip_child));
    println!(
        "routes read: {} (incl. local/IPv6), neighbours read: {}",
        counts.0, counts.1
    );
    println!("runs: {} (medians)", o.runs);
    println!("roce-net netlink snapshot, in-process : {:8.1} ms", ms(li));
    println!(
        "roce-net netlink snapshot, child proc : {:8.1} ms   peak RSS {:6.1} MiB (VmHWM {:.1} MiB)",
        ms(lc),
        lib_rss as f64 / 1024.0,
        lib_hwm as f64 / 1024.0
    );
    println!(
        "ip -j route show table all + neigh    : {:8.1} ms   peak RSS {:6.1} MiB",
        ms(ic),
        ip_rss as f64 / 1024.0
    );
    println!(
        "ratio iproute2 / roce-net (child vs child): {:.2}x",
        ms(ic) / ms(lc)
    );
    println!(
        "ratio iproute2 / roce-net (in-process)    : {:.2}x",
        ms(ic) / ms(li)
    );
    let ie = median(ip_e2e);
    println!();
    println!(
        "end to end, child processes writing to a pipe (medians of {} runs):",
        o.runs
    );
    println!(
        "  {:<44} {:8.1} ms   {:6.1} MB",
        "ip -j route show table all + ip -j neigh show",
        ms(ie),
        ip_bytes as f64 / 1e6
    );
    for (k, (name, _, _)) in variants.iter().enumerate() {
        let d = median(e2e[k].clone());
        println!(
            "  {:<44} {:8.1} ms   {:6.1} MB   peak RSS {:6.1} MiB   iproute2 / this {:.2}x",
            format!("roce-net {name}"),
            ms(d),
            e2e_bytes[k] as f64 / 1e6,
            e2e_rss[k] as f64 / 1024.0,
            ms(ie) / ms(d)
        );
    }
}
