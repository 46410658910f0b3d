//! Apply benchmark: roce-net's transactional apply vs the shell procedures an
//! administrator would run, side by side in one run.
//!
//! Run as root: `cargo bench --bench apply` (optionally `-- --nics 8,256
//! --runs-small 5 --runs-large 3 --methods abcd --keep-journal`; `--cli-wrap
//! "strace -f -tt -o FILE"` runs (d) under a profiler). For each NIC count it builds one throwaway
//! lab (`rnt-ba-<pid>-<n>-{sw,host,peer}`, removed at the end): a host
//! namespace whose NICs `r0..` all sit in 198.18.0.0/22 (198.18.0.10, .11, ...),
//! each a veth to a port of its own in the switch namespace, as a server's NICs
//! are cabled each to its own switch port (`--wiring bridge`: all of them and
//! the peer on the switch's one bridge, where every NIC's broadcast is received
//! by all the others inside the sender's `sendto`), and a peer
//! (198.18.3.254/22) on the switch's bridge. Before every timed run the
//! host is reset to the unfixed state (no tables, rules or table names, the
//! original sysctl values) and polluted: each NIC holds a STALE entry for the
//! peer's address with a MAC of its own, as ARP flux leaves it. Then one of
//! these brings it to the fixed state (methods interleaved, round after round):
//!
//! * (a) shell, one process per step: `ip netns exec NS sh -e script`, the
//!   script running `sysctl -w` once per sysctl, `ip route add`, `ip rule add`
//!   and `ip neigh flush` once per NIC (table names appended by `echo`, a shell
//!   builtin);
//! * (b) batched shell: `ip netns exec NS sh -e -c '...'` running one
//!   `sysctl -p FILE` and one `ip -batch FILE` (routes, rules, neighbour flushes);
//! * (c) roce-net in-process: `Host::snapshot` + `roce_net::plan` (timed apart as
//!   "plan"), then `roce_net::apply` of that plan as a saved plan (lock, a fresh
//!   snapshot and re-plan under the lock to check it, journal, every change,
//!   verify by a third snapshot and a re-plan);
//! * (d) the CLI end to end: `roce-net --netns NS ... apply --yes` as a child
//!   (process start, lock, one snapshot and plan under the lock, journal, every
//!   change, verify, each NIC's announcement, report);
//! * (r) the CLI's `rollback` of that apply, as a child, timed side by side
//!   with it: the same number of changes undone, journalled and checked, but
//!   nothing announced, so `d - r` bounds what the announcements cost (`--methods
//!   abcdr`; it runs after (d) on the host (d) fixed, and the host is checked
//!   to be back to the unfixed state).
//!
//! Children run without the `LD_LIBRARY_PATH` that `cargo bench` sets.
//! Locks and journals go to a directory on tmpfs (`/dev/shm`), as
//! `/run/roce-net` is; the etc root and the scripts to the temporary directory.
//! By default every run starts without an earlier journal (a first apply);
//! `--keep-journal` keeps the previous run's one (a host applied to again).
//!
//! Every method is checked to leave the same host: the same routes in the NIC
//! tables, the same roce-net rules, the same sysctls and table names, no
//! neighbour left on the NICs, and an empty roce-net plan. Medians and ratios are
//! printed, of wall time and, for the CLI and `true`, of CPU time (user plus
//! system from `wait4`, which a busy machine moves much less). Not a test:
//! nothing about time is asserted.

use roce_net::ApplyOptions;
use roce_net::DesiredState;
use roce_net::Host;
use roce_net::Lab;
use roce_net::Policy;
use roce_net::{HostState, Sysctl};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The peer's address; host NICs are 198.18.0.10 + i, all in 198.18.0.0/22.
const PEER: Ipv4Addr = Ipv4Addr::new(198, 18, 3, 254);
const PREFIX: u8 = 22;

struct Opts {
    nics: Vec<usize>,
    runs_small: usize,
    runs_large: usize,
    /// Which of a, b, c, d, r to run.
    methods: String,
    /// Keep the previous apply's journal between runs (the steady state of a
    /// host applied to again) instead of starting from an empty state directory.
    keep_journal: bool,
    /// A command (split on spaces) to run the CLI under in (d), for profiling:
    /// `--cli-wrap "strace -f -tt -o /tmp/cli.trace"` or `"perf record -g -o F --"`.
    cli_wrap: Vec<String>,
    /// Another build of the CLI to run as (e), interleaved with (d), to compare
    /// two builds side by side in one run (`--cli-alt PATH`).
    cli_alt: Option<PathBuf>,
    /// How the host's NICs are wired: each to a switch port of its own
    /// (`ports`, the default) or all on the switch's one bridge (`bridge`).
    wiring: Wiring,
}

/// The lab's wiring of the host NICs (`--wiring ports|bridge`).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Wiring {
    /// Each NIC a veth to a port of its own in the switch namespace, bridged to
    /// nothing: as a GPU server's NICs are cabled, each to its own switch port
    /// (on a rail-optimised fabric, each to another leaf), so a broadcast one
    /// NIC sends is not received by the host's other NICs inside the sender's
    /// `sendto`.
    Ports,
    /// Every NIC and the peer on one bridge: each NIC's broadcast is delivered
    /// to every other NIC of the host synchronously, inside the sender's
    /// `sendto` (N x N receptions per apply).
    Bridge,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        nics: vec![8, 256],
        runs_small: 5,
        runs_large: 3,
        methods: "abcd".into(),
        keep_journal: false,
        cli_wrap: Vec::new(),
        cli_alt: None,
        wiring: Wiring::Ports,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let val = args.get(i + 1);
        match (args[i].as_str(), val) {
            ("--nics", Some(v)) => {
                o.nics = v.split(',').filter_map(|x| x.parse().ok()).collect();
            }
            ("--runs-small", Some(v)) => o.runs_small = v.parse().unwrap_or(o.runs_small),
            ("--runs-large", Some(v)) => o.runs_large = v.parse().unwrap_or(o.runs_large),
            ("--methods", Some(v)) => o.methods = v.clone(),
            ("--cli-alt", Some(v)) => o.cli_alt = Some(PathBuf::from(v)),
            ("--wiring", Some(v)) => {
                o.wiring = match v.as_str() {
                    "bridge" => Wiring::Bridge,
                    "ports" => Wiring::Ports,
                    _ => panic!("--wiring takes ports or bridge, not {v}"),
                }
            }
            ("--cli-wrap", Some(v)) => {
                o.cli_wrap = v.split_whitespace().map(String::from).collect();
            }
            ("--keep-journal", _) => {
                o.keep_journal = true;
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

/// A directory removed on drop.
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(base: &Path, what: &str) -> TmpDir {
        let p = base.join(format!("rnt-ba-{}-{what}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("creating a temporary directory");
        TmpDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
    /// Empty it (keep the directory).
    fn clear(&self) {
        for e in std::fs::read_dir(&self.0)
            .expect("listing temp dir")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p).expect("clearing temp dir");
            } else {
                std::fs::remove_file(&p).expect("clearing temp dir");
            }
        }
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One lab with N host NICs, the scripts for the shell methods, and what the
/// reset needs.
struct Bench {
    lab: Lab,
    ns: String,
    nics: Vec<(String, Ipv4Addr)>,
    etc: TmpDir,
    state: TmpDir,
    scripts: TmpDir,
    policy: Policy,
    desired: DesiredState,
    /// Every sysctl the fix writes, with its value before the fix.
    original_sysctls: Vec<(String, String)>,
    /// How many changes the plan has on the unfixed, polluted host.
    plan_len: usize,
    keep_journal: bool,
}

fn nic_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 10)) + i as u32)
}

fn ip_batch(ns: &str, script: &str, force: bool) {
    let mut args = vec!["-n", ns];
    if force {
        args.push("-force");
    }
    args.extend(["-batch", "-"]);
    let mut child = Command::new("ip")
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("running ip -batch");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writing the batch");
    let ok = child.wait().expect("ip -batch").success();
    assert!(ok || force, "ip -batch failed:\n{script}");
}

fn run(cmd: &mut Command) -> Duration {
    run_cpu(cmd).0
}

/// User plus system CPU time of every child this process has waited for.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_CHILDREN)");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Run a child to its end: its wall time, and its CPU time (user plus system,
/// its own and that of the children it reaped, from `wait4`), which a busy
/// machine moves much less than wall time.
fn run_cpu(cmd: &mut Command) -> (Duration, Duration) {
    let cpu = children_cpu();
    let t = Instant::now();
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("spawning child");
    let took = t.elapsed();
    let cpu = children_cpu() - cpu;
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took, cpu)
}

fn sysctl_key(s: &Sysctl) -> String {
    s.to_string()
}

impl Bench {
    fn build(n: usize, keep_journal: bool, wiring: Wiring) -> Bench {
        let mut lab = Lab::new("ba").expect("lab");
        let sw = lab.add_switch("sw").expect("switch");
        let ns = lab.add_namespace("host").expect("host namespace");
        let peer = lab.add_namespace("peer").expect("peer namespace");
        let mut nics = Vec::new();
        for i in 0..n {
            let name = format!("r{i}");
            let ip = nic_ip(i);
            lab.connect(&ns, &name, IpAddr::V4(ip), PREFIX)
                .expect("connecting a host NIC");
            nics.push((name, ip));
        }
        lab.connect(&peer, "p0", IpAddr::V4(PEER), PREFIX)
            .expect("connecting the peer");
        if wiring == Wiring::Ports {
            // The host NICs' switch ends (`s0..`, connected first) leave the
            // bridge and stay up: a port each, bridged to nothing.
            let mut unbridge = String::new();
            for i in 0..n {
                let _ = writeln!(unbridge, "link set s{i} nomaster");
            }
            ip_batch(&sw, &unbridge, false);
            let out = Command::new("ip")
                .args(["-n", &sw, "-o", "link", "show", "type", "bridge_slave"])
                .output()
                .expect("listing the bridge's ports");
            let ports = String::from_utf8_lossy(&out.stdout).lines().count();
            assert_eq!(ports, 1, "only the peer stays on the bridge");
        }
        let tmp = std::env::temp_dir();
        // Locks and journals on tmpfs, as /run/roce-net is.
        let state = TmpDir::new(Path::new("/dev/shm"), &format!("{n}-state"));
        let etc = TmpDir::new(&tmp, &format!("{n}-etc"));
        let scripts = TmpDir::new(&tmp, &format!("{n}-scripts"));
        let policy = Policy::default();
        let mut b = Bench {
            lab,
            ns,
            nics,
            etc,
            state,
            scripts,
            policy,
            desired: DesiredState::default(),
            original_sysctls: Vec::new(),
            plan_len: 0,
            keep_journal,
        };
        b.settle();
        let st = b.host().snapshot().expect("snapshot");
        b.desired = roce_net::desired_state(&st, &b.policy).expect("desired state");
        assert_eq!(b.desired.nics.len(), n, "the policy must manage every NIC");
        let keys: Vec<String> = b
            .desired
            .sysctls
            .iter()
            .map(|(s, _)| sysctl_key(s))
            .collect();
        let out = Command::new("ip")
            .args(["netns", "exec", &b.ns, "sysctl", "-n"])
            .args(&keys)
            .output()
            .expect("reading sysctls");
        let vals: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(vals.len(), keys.len(), "one value per sysctl");
        b.original_sysctls = keys.into_iter().zip(vals).collect();
        b.write_scripts();
        b.reset();
        let st = b.host().snapshot().expect("snapshot");
        b.plan_len = roce_net::plan(&st, &b.policy).expect("plan").changes.len();
        b
    }

    /// Wait until IPv6 duplicate address detection on the new links is over (it
    /// adds local routes a second or two after the links come up), so the host
    /// does not drift between a plan and its apply: the fingerprint must stay the
    /// same for a second.
    fn settle(&self) {
        let t = Instant::now();
        let mut last = String::new();
        loop {
            let fp = roce_net::fingerprint(&self.host().snapshot().expect("snapshot"));
            if fp == last {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the lab did not settle in 30 s"
            );
            last = fp;
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn host(&self) -> Host {
        Host::netns(&self.ns)
            .expect("host")
            .with_etc_root(self.etc.path())
    }

    fn table_names_file(&self) -> PathBuf {
        self.etc.path().join(roce_net::TABLE_NAMES_FILE)
    }

    fn script(&self, name: &str) -> PathBuf {
        self.scripts.path().join(name)
    }

    /// (a) one process per step; (b) the sysctl file and the ip batch file.
    fn write_scripts(&self) {
        let d = &self.desired;
        let names_file = self.table_names_file();
        let names_dir = names_file.parent().expect("parent").display().to_string();
        let names_file = names_file.display().to_string();
        let route = |r: &roce_net::Route| {
            format!(
                "route add {} dev {} src {} table {} proto {}",
                r.dst,
                r.dev.as_deref().expect("dev"),
                r.prefsrc.expect("src"),
                r.table,
                r.protocol
            )
        };
        let rule = |r: &roce_net::Rule| {
            format!(
                "rule add from {} lookup {} pref {} proto {}",
                r.src.expect("src").addr(),
                r.table,
                r.priority,
                r.protocol
            )
        };

        // (a)
        let mut a = String::new();
        let _ = writeln!(a, "mkdir -p {names_dir}");
        let _ = writeln!(
            a,
            "echo '# Managed by roce-net: routing tables of its per-NIC source routing.' > {names_file}"
        );
        for (id, name) in &d.table_names {
            let _ = writeln!(a, "echo '{id}\t{name}' >> {names_file}");
        }
        for (s, v) in &d.sysctls {
            let _ = writeln!(a, "sysctl -q -w {}={v}", sysctl_key(s));
        }
        for r in &d.routes {
            let _ = writeln!(a, "ip {}", route(r));
        }
        for r in &d.rules {
            let _ = writeln!(a, "ip {}", rule(r));
        }
        for n in &d.nics {
            let _ = writeln!(a, "ip neigh flush dev {}", n.ifname);
        }
        std::fs::write(self.script("a.sh"), a).expect("writing script a");

        // (b)
        let mut conf = String::new();
        for (s, v) in &d.sysctls {
            let _ = writeln!(conf, "{} = {v}", sysctl_key(s));
        }
        std::fs::write(self.script("b.sysctl.conf"), conf).expect("writing sysctl file");
        let mut batch = String::new();
        for r in &d.routes {
            let _ = writeln!(batch, "{}", route(r));
        }
        for r in &d.rules {
            let _ = writeln!(batch, "{}", rule(r));
        }
        for n in &d.nics {
            let _ = writeln!(batch, "neigh flush dev {}", n.ifname);
        }
        std::fs::write(self.script("b.batch"), batch).expect("writing batch file");
        let mut names =
            String::from("# Managed by roce-net: routing tables of its per-NIC source routing.\n");
        for (id, name) in &d.table_names {
            let _ = writeln!(names, "{id}\t{name}");
        }
        std::fs::write(self.script("b.names"), names).expect("writing names file");
        let b = format!(
            "mkdir -p {names_dir}\ncp {} {names_file}\nsysctl -q -p {}\nip -batch {}\n",
            self.script("b.names").display(),
            self.script("b.sysctl.conf").display(),
            self.script("b.batch").display()
        );
        std::fs::write(self.script("b.sh"), b).expect("writing script b");
    }

    /// Back to the unfixed, polluted host (not timed).
    fn reset(&self) {
        let mut undo = String::new();
        for n in &self.desired.nics {
            let _ = writeln!(undo, "rule del pref {}", n.rule_priority);
            let _ = writeln!(undo, "route flush table {}", n.table);
        }
        ip_batch(&self.ns, &undo, true);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, "sysctl", "-q", "-w"]);
        for (k, v) in &self.original_sysctls {
            cmd.arg(format!("{k}={v}"));
        }
        run(&mut cmd);
        let mut pollute = String::new();
        for (i, (name, _)) in self.nics.iter().enumerate() {
            let _ = writeln!(
                pollute,
                "neigh replace {PEER} dev {name} lladdr 02:00:5e:00:{:02x}:{:02x} nud stale",
                i >> 8,
                i & 0xff
            );
        }
        ip_batch(&self.ns, &pollute, false);
        self.etc.clear();
        if !self.keep_journal {
            self.state.clear();
        }
        if self.plan_len > 0 {
            self.assert_unfixed("the reset");
        }
    }

    /// Panics unless the host plans as many changes as the unfixed one.
    fn assert_unfixed(&self, by: &str) {
        let st = self.host().snapshot().expect("snapshot");
        let p = roce_net::plan(&st, &self.policy).expect("plan");
        assert_eq!(
            p.changes.len(),
            self.plan_len,
            "{by} must restore the unfixed state"
        );
    }

    /// What the fix leaves, comparable across methods; panics unless the fix is
    /// complete (an empty roce-net plan, no neighbour left on the NICs).
    fn outcome(&self, method: &str) -> String {
        let st: HostState = self.host().snapshot().expect("snapshot");
        let p = roce_net::plan(&st, &self.policy).expect("plan");
        assert!(
            p.is_empty(),
            "{method}: the host is not fixed, roce-net still plans:\n{}",
            p.render_diff()
        );
        let nic = |n: &str| self.nics.iter().any(|(x, _)| x == n);
        let left = st
            .neighbors
            .iter()
            .filter(|x| nic(&x.ifname) && x.ip.is_ipv4())
            .count();
        assert_eq!(left, 0, "{method}: IPv4 neighbours left on the NICs");
        let mut routes: Vec<String> = st
            .routes
            .iter()
            .filter(|r| r.table > 1000 && r.table < 2000)
            .map(|r| r.to_string())
            .collect();
        routes.sort();
        let mut rules: Vec<String> = st.rules.iter().map(|r| r.to_string()).collect();
        rules.sort();
        let sysctls: Vec<String> = self
            .desired
            .sysctls
            .iter()
            .map(|(s, _)| format!("{s}={:?}", st.sysctls.get_text(s)))
            .collect();
        format!(
            "{}\n{}\n{}\n{:?}",
            routes.join("\n"),
            rules.join("\n"),
            sysctls.join("\n"),
            st.table_names
        )
    }
}

#[derive(Default)]
struct Times {
    a: Vec<Duration>,
    b: Vec<Duration>,
    c_plan: Vec<Duration>,
    c_apply: Vec<Duration>,
    c_total: Vec<Duration>,
    d: Vec<Duration>,
    e: Vec<Duration>,
    /// The CLI's `rollback` of (d)'s apply.
    r: Vec<Duration>,
    /// (e)'s `rollback` of its apply.
    re: Vec<Duration>,
    /// CPU times (user + system, `wait4`) of d, e, r, re and `true`.
    d_cpu: Vec<Duration>,
    e_cpu: Vec<Duration>,
    r_cpu: Vec<Duration>,
    re_cpu: Vec<Duration>,
    one_process_cpu: Vec<Duration>,
    netns_exec: Vec<Duration>,
    /// One trivial process (`true`), spawned and waited for as every method is.
    one_process: Vec<Duration>,
    changes: usize,
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn bench(n: usize, runs: usize, o: &Opts) -> Times {
    let (methods, keep_journal) = (o.methods.as_str(), o.keep_journal);
    let t = Instant::now();
    let b = Bench::build(n, keep_journal, o.wiring);
    println!(
        "N={n}: lab {} ({:?} wiring) built in {:.1} s; the unfixed host plans {} changes",
        b.lab.prefix(),
        o.wiring,
        t.elapsed().as_secs_f64(),
        b.plan_len
    );
    let mut times = Times {
        changes: b.plan_len,
        ..Times::default()
    };
    let mut reference: Option<String> = None;
    let mut check = |method: &str, out: String| match &reference {
        None => reference = Some(out),
        Some(r) => assert!(
            *r == out,
            "{method} left a different host:\n{out}\n--- expected ---\n{r}"
        ),
    };
    // Both CLIs run from copies, as installed (`install`, dpkg and `cp` write the
    // file; the linker writes it through a mapping): the same bytes run from
    // cargo's output file were about 8% slower here, interleaved, whether (d)
    // or (e) ran first.
    let bins = b.scripts.path();
    let installed = |from: &Path, name: &str| -> PathBuf {
        let to = bins.join(name);
        std::fs::copy(from, &to).expect("copying the CLI");
        to
    };
    let cli = installed(Path::new(env!("CARGO_BIN_EXE_roce-net")), "roce-net");
    let alt = o.cli_alt.as_deref().map(|p| installed(p, "roce-net-alt"));
    for run_no in 0..runs {
        // (c) roce-net in-process.
        if methods.contains('c') {
            b.reset();
            let host = b.host();
            let opts = ApplyOptions {
                state_dir: b.state.path().to_path_buf(),
                ..Default::default()
            };
            let t0 = Instant::now();
            let st = host.snapshot().expect("snapshot");
            let p = roce_net::plan(&st, &b.policy).expect("plan");
            let t1 = Instant::now();
            let rep = roce_net::apply(&host, &p, &opts).expect("apply");
            let t2 = Instant::now();
            assert_eq!(rep.applied, b.plan_len);
            times.c_plan.push(t1 - t0);
            times.c_apply.push(t2 - t1);
            times.c_total.push(t2 - t0);
            check("roce-net", b.outcome("roce-net"));
        }

        // (a) one process per step.
        if methods.contains('a') {
            b.reset();
            let script = b.script("a.sh");
            times.a.push(run(Command::new("ip")
                .args(["netns", "exec", &b.ns, "sh", "-e"])
                .arg(&script)));
            check("shell", b.outcome("shell"));
        }

        // (b) sysctl -p + ip -batch.
        if methods.contains('b') {
            b.reset();
            let script = b.script("b.sh");
            times.b.push(run(Command::new("ip")
                .args(["netns", "exec", &b.ns, "sh", "-e"])
                .arg(&script)));
            check("ip -batch", b.outcome("ip -batch"));
        }

        // (d) the CLI, and (e) another build of it.
        let mut clis = Vec::new();
        if methods.contains('d') {
            clis.push((cli.as_path(), false));
        }
        if let Some(alt) = &alt {
            clis.push((alt.as_path(), true));
        }
        // The first CLI run after the reset's dozens of `ip` processes is about
        // 8% slower than the one right after it (measured with the same binary
        // as (d) and (e)): alternate which goes first.
        if run_no % 2 == 1 {
            clis.reverse();
        }
        for (bin, alt) in clis {
            b.reset();
            let mut cmd = match o.cli_wrap.split_first() {
                Some((w, rest)) => {
                    let mut c = Command::new(w);
                    c.args(rest).arg(bin);
                    c
                }
                None => Command::new(bin),
            };
            let (took, cpu) = run_cpu(
                cmd.args(["--netns", &b.ns, "--etc-root"])
                    .arg(b.etc.path())
                    .arg("--state-dir")
                    .arg(b.state.path())
                    .args(["apply", "--yes"]),
            );
            let (wall, cpus) = if alt {
                (&mut times.e, &mut times.e_cpu)
            } else {
                (&mut times.d, &mut times.d_cpu)
            };
            wall.push(took);
            cpus.push(cpu);
            check("roce-net CLI", b.outcome("roce-net CLI"));
            if methods.contains('r') {
                let (took, cpu) = run_cpu(
                    Command::new(bin)
                        .args(["--netns", &b.ns, "--etc-root"])
                        .arg(b.etc.path())
                        .arg("--state-dir")
                        .arg(b.state.path())
                        .arg("rollback"),
                );
                let (wall, cpus) = if alt {
                    (&mut times.re, &mut times.re_cpu)
                } else {
                    (&mut times.r, &mut times.r_cpu)
                };
                wall.push(took);
                cpus.push(cpu);
                b.assert_unfixed("rollback");
            }
        }

        // The fixed cost `ip netns exec` adds to (a) and (b).
        times.netns_exec.push(run(
            Command::new("ip").args(["netns", "exec", &b.ns, "true"])
        ));
        // What any one process costs here: (a) pays it once per step, (d) once.
        let (took, cpu) = run_cpu(&mut Command::new("true"));
        times.one_process.push(took);
        times.one_process_cpu.push(cpu);
    }
    drop(b);
    times
}

fn main() {
    let o = parse_opts();
    // `cargo bench` runs this with its LD_LIBRARY_PATH (target/, the toolchain's
    // lib/): every child's dynamic loader would search it for each library (a
    // dozen failed opens per process, for `ip` and `sysctl` as for the CLI).
    // Nobody runs these tools that way; measure them as they are run.
    std::env::remove_var("LD_LIBRARY_PATH");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("apply bench: needs root (creates network namespaces); skipped");
        return;
    }
    let mut rows = Vec::new();
    for &n in &o.nics {
        let runs = if n > 64 { o.runs_large } else { o.runs_small };
        let t = bench(n, runs, &o);
        rows.push((n, runs, t));
    }
    println!();
    println!(
        "| NICs | changes | runs | (a) shell, 1 process/step | (b) sysctl -p + ip -batch | (c) roce-net apply | (c) snapshot + plan | (c) plan + apply | (d) CLI apply --yes | a/d | b/d | a/c | b/c | a/(plan+apply) | b/(plan+apply) | `ip netns exec true` |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, runs, t) in &rows {
        let (a, b) = (median(&t.a), median(&t.b));
        let (cp, ca, ct) = (median(&t.c_plan), median(&t.c_apply), median(&t.c_total));
        let (d, ad, bd) = if t.d.is_empty() {
            ("-".to_string(), "-".to_string(), "-".to_string())
        } else {
            let d = ms(median(&t.d));
            (
                format!("{d:.1} ms"),
                format!("{:.1}x", ms(a) / d),
                format!("{:.2}x", ms(b) / d),
            )
        };
        println!(
            "| {n} | {} | {runs} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {d} | {ad} | {bd} | {:.1}x | {:.2}x | {:.1}x | {:.2}x | {:.1} ms |",
            t.changes,
            ms(a),
            ms(b),
            ms(ca),
            ms(cp),
            ms(ct),
            ms(a) / ms(ca),
            ms(b) / ms(ca),
            ms(a) / ms(ct),
            ms(b) / ms(ct),
            ms(median(&t.netns_exec)),
        );
    }
    // The same figures in units of one process start-up (`true`): what a
    // method costs measured by what this machine charges for a process, which
    // moves from VM to VM far more than the work itself.
    println!();
    println!(
        "| NICs | one process (`true`) | (a) in processes | (b) in processes | (d) in processes | (r) rollback in processes | (d) minus one process |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (n, _, t) in &rows {
        let p = ms(median(&t.one_process));
        let units = |v: &[Duration]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                format!("{:.1}", ms(median(v)) / p)
            }
        };
        let d_less = if t.d.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1} ms", ms(median(&t.d)) - p)
        };
        println!(
            "| {n} | {p:.2} ms | {} | {} | {} | {} | {d_less} |",
            units(&t.a),
            units(&t.b),
            units(&t.d),
            units(&t.r),
        );
    }
    // CPU time (user + system of the CLI and the children it reaped, `wait4`):
    // what a busy machine moves much less than wall time.
    println!();
    println!(
        "| NICs | `true`, CPU | (d) apply, CPU | in `true`s | (r) rollback, CPU | (e) apply, CPU | in `true`s | (e) rollback, CPU | e / d apply | e / d rollback |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, _, t) in &rows {
        let p = ms(median(&t.one_process_cpu));
        let cell = |v: &[Duration]| {
            if v.is_empty() {
                ("-".to_string(), "-".to_string())
            } else {
                let m = ms(median(v));
                (format!("{m:.2} ms"), format!("{:.2}", m / p))
            }
        };
        let ratio = |x: &[Duration], y: &[Duration]| {
            if x.is_empty() || y.is_empty() {
                "-".to_string()
            } else {
                format!("{:.3}x", ms(median(x)) / ms(median(y)))
            }
        };
        let ((d, du), (r, _), (e, eu), (re, _)) = (
            cell(&t.d_cpu),
            cell(&t.r_cpu),
            cell(&t.e_cpu),
            cell(&t.re_cpu),
        );
        println!(
            "| {n} | {p:.2} ms | {d} | {du} | {r} | {e} | {eu} | {re} | {} | {} |",
            ratio(&t.e_cpu, &t.d_cpu),
            ratio(&t.re_cpu, &t.r_cpu),
        );
    }
    if let Some(alt) = &o.cli_alt {
        println!();
        println!("| NICs | (d) CLI | (e) {} | d / e | a / e |", alt.display());
        println!("|---:|---:|---:|---:|---:|");
        for (n, _, t) in &rows {
            let (a, d, e) = (ms(median(&t.a)), ms(median(&t.d)), ms(median(&t.e)));
            println!(
                "| {n} | {d:.1} ms | {e:.1} ms | {:.2}x | {:.1}x |",
                d / e,
                a / e
            );
        }
    }
    if rows.iter().any(|(_, _, t)| !t.r.is_empty()) {
        // What apply does that rollback does not (each NIC's announcement,
        // the verify re-read), side by side.
        println!();
        println!("| NICs | (d) CLI apply | (r) CLI rollback | d - r | d / r |");
        println!("|---:|---:|---:|---:|---:|");
        for (n, _, t) in &rows {
            let (d, r) = (ms(median(&t.d)), ms(median(&t.r)));
            println!(
                "| {n} | {d:.1} ms | {r:.1} ms | {:.1} ms | {:.2}x |",
                d - r,
                d / r
            );
        }
    }
    println!();
    for (n, _, t) in &rows {
        let all = |v: &[Duration]| {
            v.iter()
                .map(|d| format!("{:.1}", ms(*d)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "N={n} all runs (ms): a [{}] b [{}] c-apply [{}] c-plan [{}] d [{}] e [{}] r [{}] re [{}]; CPU: d [{}] e [{}] r [{}] re [{}] true [{}]",
            all(&t.a),
            all(&t.b),
            all(&t.c_apply),
            all(&t.c_plan),
            all(&t.d),
            all(&t.e),
            all(&t.r),
            all(&t.re),
            all(&t.d_cpu),
            all(&t.e_cpu),
            all(&t.r_cpu),
            all(&t.re_cpu),
            all(&t.one_process_cpu)
        );
    }
}
