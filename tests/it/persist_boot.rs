//! Boot simulations: `roce-net persist` renders into the node's own configuration
//! (admin-style fixtures under `roce-net/tests/fixtures/boot/<stack>/`), the host
//! is reset to what it is at boot, and the real tool reads the rendering and
//! configures a lab namespace: systemd-networkd 252 run inside the lab namespace
//! in a private mount namespace, `netplan generate --root-dir` then networkd on
//! its output, ifupdown's `ifup`, `sysctl -p`, iproute2 reading `rt_tables.d`,
//! and for NetworkManager (which cannot run here) `nmcli --offline` editing the
//! profiles and libnm's keyfile parser reading them back. Then `doctor` must find
//! nothing to fix, `plan` must be empty and `apply` on top must create no
//! duplicate.
//!
//! Every node is dual-stack (each NIC also has `fd00:198:18::<n>/64`, the
//! admin's files carry both): where a tool brings the NICs up, `ip -6 rule`,
//! `ip -6 route show table N` and `ip -6 route get PEER from ADDRESS` must show
//! roce-net's IPv6 rules and routes, and sysctl.d its `net.ipv6.conf` keys;
//! for NetworkManager libnm must read the IPv6 routes and rules back.
//!
//! Nothing here touches the machine's namespace or its `/etc` and `/run`: the
//! daemons run in lab namespaces (`rnt-...`) with bind mounts of a temp root in
//! their own mount namespace, and a guard kills them when a test ends or fails.
//! `scripts/test.sh` installs the tools (netplan.io, systemd, ifupdown,
//! network-manager, gir1.2-nm-1.0, python3-gi).

use roce_net_testkit::copy_tree;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NETWORKD: &str = "/lib/systemd/systemd-networkd";
/// The peer's IPv6 address: every node is dual-stack, each NIC's IPv6 address
/// being [`v6_of`] its IPv4 one (the fixtures' admin files carry both).
const PEER6: &str = "fd00:198:18::100";

/// The IPv6 sysctls the simulations persist (`V6_POLICY`), 0 in a fresh
/// namespace, which the boot reset puts back.
const V6_SYSCTLS: [&str; 2] = ["ndisc_notify", "keep_addr_on_down"];
/// The policy's IPv6 section the simulations persist through sysctl.d.
const V6_POLICY: &str = "ipv6: {ndisc_notify: 1, keep_addr_on_down: 1}\n";

/// A NIC's IPv6 address beside its IPv4 one: `198.18.0.11` -> `fd00:198:18::11`.
fn v6_of(v4: &str) -> String {
    format!("fd00:198:18::{}", v4.rsplit('.').next().unwrap_or_default())
}
/// Findings the persisted configuration must leave none of.
const FIXED_CHECKS: &[&str] = &[
    "arp-ignore",
    "arp-announce",
    "rp-filter-strict",
    "source-rule-missing",
    "source-table-incomplete",
    "asymmetric-egress",
];

/// The binary under test; `ROCE_NET_TEST_BIN` runs these simulations against
/// another build (e.g. to show what an older roce-net leaves broken).
fn bin() -> Command {
    Command::new(bin_path())
}

fn bin_path() -> PathBuf {
    std::env::var_os("ROCE_NET_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_roce-net")))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Lab tests need root and the real tools; without them they fail, never skip.
fn require(test: &str, tools: &[&str]) {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "{test}: needs root (sudo scripts/test.sh)"
    );
    for t in tools {
        assert!(
            Path::new(t).exists() || which(t),
            "{test}: needs {t}; scripts/test.sh installs it (apt-get install netplan.io \
             ifupdown gir1.2-nm-1.0 python3-gi systemd; nmcli is unpacked from \
             network-manager's package by scripts/lib/unpack-tools.sh)"
        );
    }
}

fn which(t: &str) -> bool {
    which_path(t).is_some()
}

/// Where `t` is on PATH (scripts/test.sh puts the tools it unpacked first).
fn which_path(t: &str) -> Option<PathBuf> {
    let o = Command::new("sh")
        .args(["-c", &format!("command -v {t}")])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && p.starts_with('/')).then(|| PathBuf::from(p))
}

fn fixture(stack: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures/boot")
        .join(stack)
}

/// The mode of a copied fixture file: netplan and NetworkManager refuse
/// group/world-readable files; networkd reads its files after dropping to
/// systemd-network.
fn fixture_mode(dst: &Path) -> u32 {
    let secret = dst.to_string_lossy().contains("/netplan/")
        || dst.to_string_lossy().contains("/NetworkManager/");
    if secret {
        0o600
    } else {
        0o644
    }
}

/// The admin's files (`admin`, a [`tree`] taken before `persist`) are all still
/// under `root` with the same content: roce-net only adds files of its own.
fn assert_admin_untouched(admin: &[(PathBuf, String)], root: &Path) {
    let now = tree(root);
    for f in admin {
        assert!(now.contains(f), "{} was changed or removed", f.0.display());
    }
}

/// [`tree`] without what the tools write at run time (`run/`, networkd's logs).
fn config_tree(root: &Path) -> Vec<(PathBuf, String)> {
    tree(root)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("run") && !p.to_string_lossy().starts_with("networkd."))
        .collect()
}

/// A tree without roce-net's table-names directory, to compare what
/// `persist --remove` leaves with what was there: it keeps the names file (it is
/// host-wide and live applies in any namespace rely on it; docs/persistence.md).
fn without_names(t: Vec<(PathBuf, String)>) -> Vec<(PathBuf, String)> {
    t.into_iter()
        .filter(|(p, _)| !p.starts_with("etc/iproute2/rt_tables.d"))
        .collect()
}

/// After `persist --remove`: the names file is still there, and said so.
fn assert_names_left(root: &Path, out: &str) {
    assert!(
        root.join("etc/iproute2/rt_tables.d/roce-net.conf")
            .is_file(),
        "{out}"
    );
    assert!(out.contains("roce-net.conf"), "{out}");
}

/// Every file under `dir` with its content (symlinks as `-> target`).
fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let e = e.unwrap();
            let p = e.path();
            let ft = e.file_type().unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_symlink() {
                out.push((
                    rel,
                    format!("-> {}", std::fs::read_link(&p).unwrap().display()),
                ));
            } else {
                out.push((rel, std::fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn sh(ns_path: Option<&str>, script: &str) -> Output {
    let mut c = match ns_path {
        Some(p) => {
            let mut c = Command::new("nsenter");
            c.arg(format!("--net={p}")).arg("--");
            c
        }
        None => Command::new("env"),
    };
    c.args([
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        script,
    ])
    .stdin(Stdio::null())
    .output()
    .unwrap()
}

/// A daemon started for a test, killed (and reaped) when dropped.
struct Daemon {
    child: Option<Child>,
    log: PathBuf,
}

impl Daemon {
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill on the pid of a child we own and have not reaped.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A lab host (plus peer) whose NICs have fixed MACs, and a temp root holding
/// the node's configuration trees.
struct Node {
    /// Owns the namespaces (removed when dropped).
    _lab: roce_net::Lab,
    ns: String,
    root: tempfile::TempDir,
    state: tempfile::TempDir,
    nics: Vec<String>,
}

impl Node {
    fn new(tag: &str, stack: &str, nics: &[(&str, &str, &str)]) -> Node {
        let mut lab = roce_net::Lab::new(tag).unwrap();
        lab.add_switch("sw").unwrap();
        let ns = lab.add_namespace("host").unwrap();
        let peer = lab.add_namespace("peer").unwrap();
        for (name, mac, addr) in nics {
            lab.connect(&ns, name, addr.parse().unwrap(), 24).unwrap();
            run_ip(&ns, &["link", "set", "dev", name, "address", mac]);
            let v6 = format!("{}/64", v6_of(addr));
            run_ip(&ns, &["addr", "add", &v6, "dev", name, "nodad"]);
        }
        lab.connect(&peer, "p0", "198.18.0.100".parse().unwrap(), 24)
            .unwrap();
        let p6 = format!("{PEER6}/64");
        run_ip(&peer, &["addr", "add", &p6, "dev", "p0", "nodad"]);
        let root = tempfile::tempdir().unwrap();
        copy_tree(&fixture(stack), root.path(), &fixture_mode);
        Node {
            _lab: lab,
            ns,
            root,
            state: tempfile::tempdir().unwrap(),
            nics: nics.iter().map(|n| n.0.to_string()).collect(),
        }
    }

    fn ns_path(&self) -> String {
        format!("/run/netns/{}", self.ns)
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn cli(&self, args: &[&str]) -> Output {
        // The node's /etc is the test root's, for iproute2's names too.
        bin()
            .args(["--netns", &self.ns, "--state-dir"])
            .arg(self.state.path())
            .arg("--etc-root")
            .arg(self.root().join("etc"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `persist --root ROOT --json ARGS`, which must succeed.
    fn persist(&self, args: &[&str]) -> serde_json::Value {
        let mut a = vec!["--json", "persist", "--root", self.root().to_str().unwrap()];
        a.extend_from_slice(args);
        let o = self.cli(&a);
        assert!(o.status.success(), "persist failed: {}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// `persist --remove --root ROOT`, which must succeed.
    fn remove(&self) -> Output {
        let o = self.cli(&[
            "persist",
            "--remove",
            "--root",
            self.root().to_str().unwrap(),
        ]);
        assert!(o.status.success(), "persist --remove failed: {}", text(&o));
        o
    }

    /// `persist --remove` gives back exactly the admin's configuration
    /// (`config_tree` before the first persist), the names file aside.
    fn remove_restores(&self, admin: &[(PathBuf, String)]) {
        let o = self.remove();
        assert_names_left(self.root(), &text(&o));
        assert_eq!(
            without_names(config_tree(self.root())),
            without_names(admin.to_vec()),
            "{}",
            text(&o)
        );
    }

    fn ifindex(&self, name: &str) -> u64 {
        let v = ip_json(&self.ns, &["link", "show", "dev", name]);
        v[0]["ifindex"].as_u64().unwrap()
    }

    /// The host as at boot, before any network tool ran: NICs down without
    /// addresses, no rules but the kernel's three, nothing in other tables, and
    /// the namespace's kernel-default sysctls (a fresh namespace's values).
    fn reset_to_boot(&self, which: &[&str]) {
        for n in which {
            run_ip(&self.ns, &["addr", "flush", "dev", n]);
            run_ip(&self.ns, &["link", "set", "dev", n, "down"]);
        }
        for fam in ["-4", "-6"] {
            for r in ip_json(&self.ns, &[fam, "rule", "show"])
                .as_array()
                .unwrap()
            {
                let pref = r["priority"].as_u64().unwrap();
                if ![0, 32766, 32767].contains(&pref) {
                    run_ip(&self.ns, &[fam, "rule", "del", "pref", &pref.to_string()]);
                }
            }
        }
        for fam in ["-4", "-6"] {
            let mut tables: Vec<String> =
                ip_json(&self.ns, &["-N", fam, "route", "show", "table", "all"])
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|r| r["table"].as_str().map(str::to_string))
                    .filter(|t| t != "local" && t != "main" && t != "255" && t != "254")
                    .collect();
            tables.sort();
            tables.dedup();
            for t in tables {
                run_ip(&self.ns, &[fam, "route", "flush", "table", &t]);
            }
        }
        let mut script = String::new();
        for conf in ["all", "default"]
            .iter()
            .map(|s| s.to_string())
            .chain(self.nics.iter().cloned())
        {
            for (k, v) in [
                ("arp_ignore", 0),
                ("arp_announce", 0),
                ("rp_filter", 0),
                ("arp_filter", 0),
                ("accept_local", 0),
            ] {
                script.push_str(&format!("echo {v} > /proc/sys/net/ipv4/conf/{conf}/{k}\n"));
            }
            for k in V6_SYSCTLS {
                script.push_str(&format!("echo 0 > /proc/sys/net/ipv6/conf/{conf}/{k}\n"));
            }
        }
        let o = sh(Some(&self.ns_path()), &script);
        assert!(o.status.success(), "resetting sysctls: {}", text(&o));
    }

    /// What systemd-sysctl does at boot: load roce-net's sysctl.d file.
    fn sysctl_boot(&self) {
        let f = self.root().join("etc/sysctl.d/90-roce-net.conf");
        let o = Command::new("nsenter")
            .arg(format!("--net={}", self.ns_path()))
            .args(["--", "sysctl", "-p"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "sysctl -p {}: {}",
            f.display(),
            text(&o)
        );
    }

    /// systemd-networkd inside the lab namespace, in a private mount namespace
    /// where /etc/systemd, /usr/lib/systemd/network and /run are the test root's,
    /// and /sys is the namespace's own, read-only: systemd 252's
    /// `udev_available()` is false on a read-only /sys, so networkd configures
    /// links without waiting for udev (which does not run here).
    fn networkd(&self) -> Daemon {
        let r = self.root();
        for d in [
            "etc/systemd/network",
            "usr/lib/systemd/network",
            "run/systemd",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        let log = r.join("networkd.log");
        let logf = std::fs::File::create(&log).unwrap();
        let script = format!(
            "set -e\n\
             umount -l /sys\n\
             mount -t sysfs -o ro sysfs /sys\n\
             mount --bind '{r}/etc/systemd' /etc/systemd\n\
             mount --bind '{r}/usr/lib/systemd/network' /usr/lib/systemd/network\n\
             mount --bind '{r}/run' /run\n\
             export SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_TARGET=console\n\
             exec {NETWORKD}",
            r = r.display()
        );
        let child = Command::new("nsenter")
            .arg(format!("--net={}", self.ns_path()))
            .args(["--", "unshare", "--mount", "--propagation", "private", "--"])
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(logf.try_clone().unwrap())
            .stderr(logf)
            .spawn()
            .unwrap();
        Daemon {
            child: Some(child),
            log,
        }
    }

    /// Wait until networkd reports each NIC configured; return each NIC's
    /// `NETWORK_FILE=` from networkd's own state.
    fn wait_configured(&self, d: &mut Daemon, nics: &[&str]) -> Vec<(String, String)> {
        let t0 = Instant::now();
        loop {
            let mut done = Vec::new();
            for n in nics {
                let p = self
                    .root()
                    .join(format!("run/systemd/netif/links/{}", self.ifindex(n)));
                let s = std::fs::read_to_string(&p).unwrap_or_default();
                if s.lines().any(|l| l == "ADMIN_STATE=configured") {
                    let f = s
                        .lines()
                        .find_map(|l| l.strip_prefix("NETWORK_FILE="))
                        .unwrap_or("")
                        .to_string();
                    done.push((n.to_string(), f));
                }
            }
            if done.len() == nics.len() {
                return done;
            }
            if let Some(c) = d.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    panic!("networkd exited ({st}):\n{}", d.log());
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "networkd did not configure {nics:?} within 30 s:\n{}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn findings(&self) -> Vec<(String, String)> {
        let o = self.cli(&["--json", "doctor"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("doctor --json: {e}: {}", text(&o)));
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["id"].as_str().unwrap().to_string(),
                    f["subject"].to_string(),
                )
            })
            .collect()
    }

    /// No ARP / rp_filter / source-routing / asymmetric finding (except about
    /// the NICs in `unmanaged`).
    fn assert_fixed(&self, unmanaged: &[&str]) {
        let bad: Vec<(String, String)> = self
            .findings()
            .into_iter()
            .filter(|(id, subj)| {
                FIXED_CHECKS.contains(&id.as_str())
                    && !unmanaged.iter().any(|u| subj.contains(&format!("\"{u}\"")))
            })
            .collect();
        assert!(bad.is_empty(), "doctor still finds: {bad:?}");
    }

    fn plan(&self, policy: &[&str]) -> serde_json::Value {
        let mut a = vec!["--json", "plan"];
        a.extend_from_slice(policy);
        let o = self.cli(&a);
        assert!(o.status.success(), "plan: {}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    fn assert_plan_empty(&self, policy: &[&str]) {
        let p = self.plan(policy);
        assert!(
            p["changes"].as_array().unwrap().is_empty(),
            "plan is not empty: {}",
            p["changes"]
        );
    }

    /// Poll until `plan` is empty (a daemon is still reconfiguring).
    fn wait_plan_empty(&self, policy: &[&str], d: &Daemon) {
        let t0 = Instant::now();
        loop {
            // While a NIC has no address the automatic NIC selection (and so
            // the table layout) differs and plan may refuse: keep waiting.
            let mut a = vec!["--json", "plan"];
            a.extend_from_slice(policy);
            let o = self.cli(&a);
            let p: serde_json::Value =
                serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
            if o.status.success() && p["changes"].as_array().is_some_and(|c| c.is_empty()) {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "plan still not empty after 20 s: {}\n{}",
                text(&o),
                d.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn apply(&self, policy: &[&str]) {
        let mut a = vec!["apply", "--yes"];
        a.extend_from_slice(policy);
        let o = self.cli(&a);
        assert!(o.status.success(), "apply: {}", text(&o));
    }

    /// Every non-default IPv4 rule, as (priority, from, table, protocol).
    fn rules(&self) -> Vec<(u64, String, String, String)> {
        self.rules_of("-4")
    }

    /// Every non-default rule of a family (`-4`, `-6`), as (priority, from,
    /// table, protocol).
    fn rules_of(&self, fam: &str) -> Vec<(u64, String, String, String)> {
        ip_json(&self.ns, &[fam, "rule", "show"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| ![0, 32766, 32767].contains(&r["priority"].as_u64().unwrap()))
            .map(|r| {
                (
                    r["priority"].as_u64().unwrap(),
                    r["src"].as_str().unwrap_or("all").to_string(),
                    r["table"].as_str().unwrap_or("").to_string(),
                    r["protocol"].as_str().unwrap_or("boot").to_string(),
                )
            })
            .collect()
    }

    /// In each family, one rule per priority, and `n` of them.
    fn assert_no_duplicate_rules(&self, n: usize) {
        for fam in ["-4", "-6"] {
            let rules = self.rules_of(fam);
            let mut prios: Vec<u64> = rules.iter().map(|r| r.0).collect();
            prios.dedup();
            assert_eq!(prios.len(), rules.len(), "duplicate {fam} rules: {rules:?}");
            assert_eq!(rules.len(), n, "{fam} rules: {rules:?}");
        }
    }

    /// The IPv6 half of the fix, as the kernel holds it: each NIC's global
    /// IPv6 address has its own source rule, that rule's table routes the
    /// NIC's prefix through the NIC, and `ip -6 route get PEER from ADDRESS`
    /// leaves by the NIC.
    fn assert_v6_fixed(&self, nics: &[&str]) {
        let rules = self.rules_of("-6");
        for nic in nics {
            let addr = self.addr6_of(nic);
            let tables: Vec<&String> = rules.iter().filter(|r| r.1 == addr).map(|r| &r.2).collect();
            assert_eq!(tables.len(), 1, "{nic}: no one rule from {addr}: {rules:?}");
            let t = run_ip(&self.ns, &["-6", "route", "show", "table", tables[0]]);
            // No `src` on IPv6 routes: the rule pins the source (the planner's
            // reason: the kernel refuses one while the address is tentative).
            assert!(
                t.lines()
                    .any(|l| l.starts_with(&format!("fd00:198:18::/64 dev {nic} "))),
                "{nic}: table {}: {t}",
                tables[0]
            );
            let get = ip_json(&self.ns, &["-6", "route", "get", PEER6, "from", &addr]);
            assert_eq!(
                get[0]["dev"], *nic,
                "ip -6 route get {PEER6} from {addr}: {get}"
            );
        }
    }

    /// Each `net.ipv6.*` key of roce-net's sysctl.d file as the namespace
    /// holds it now is the persisted value; there is at least one.
    fn assert_v6_sysctls_persisted(&self) {
        let f = self.root().join("etc/sysctl.d/90-roce-net.conf");
        let conf = std::fs::read_to_string(&f).unwrap();
        let keys: Vec<(&str, &str)> = conf
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, _)| k.starts_with("net.ipv6."))
            .collect();
        assert!(!keys.is_empty(), "no IPv6 sysctl persisted: {conf}");
        for (k, v) in keys {
            let o = sh(
                Some(&self.ns_path()),
                &format!("cat /proc/sys/{}", sysctl_path(k)),
            );
            assert!(o.status.success(), "{k}: {}", text(&o));
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                v,
                "{k} in {conf}"
            );
        }
    }

    /// The NIC's global IPv6 address (exactly one).
    fn addr6_of(&self, nic: &str) -> String {
        let v = ip_json(
            &self.ns,
            &["-6", "addr", "show", "dev", nic, "scope", "global"],
        );
        let a: Vec<&str> = v[0]["addr_info"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["local"].as_str())
            .collect();
        assert_eq!(a.len(), 1, "{nic}: {v}");
        a[0].to_string()
    }

    fn addr_of(&self, nic: &str) -> Vec<String> {
        ip_json(&self.ns, &["-4", "addr", "show", "dev", nic])[0]["addr_info"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{}/{}", a["local"].as_str().unwrap(), a["prefixlen"]))
            .collect()
    }
}

/// sysctl's key as a path under /proc/sys: dots and slashes swap (`r0.100`
/// is `r0/100` in a key).
fn sysctl_path(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '.' => '/',
            '/' => '.',
            c => c,
        })
        .collect()
}

fn run_ip(ns: &str, args: &[&str]) -> String {
    let o = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ip -n {ns} {}: {}",
        args.join(" "),
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ip_json(ns: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["-j"];
    a.extend_from_slice(args);
    let out = run_ip(ns, &a);
    if out.trim().is_empty() {
        return serde_json::Value::Array(Vec::new());
    }
    serde_json::from_str(&out).unwrap()
}

/// `ip -n NS route show table NAME` with iproute2 reading the test root's
/// /etc/iproute2 (rt_tables.d), in a private mount namespace.
fn route_show_named_table(node: &Node, name: &str) -> String {
    let o = sh(
        None,
        &format!(
            "mount --bind '{}/etc/iproute2' /etc/iproute2 && exec ip -n {} route show table {name}",
            node.root().display(),
            node.ns
        ),
    );
    assert!(
        o.status.success(),
        "ip route show table {name}: {}",
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write_policy(dir: &Path, yaml: &str) -> PathBuf {
    let p = dir.join("policy.yaml");
    std::fs::write(&p, yaml).unwrap();
    p
}

// ---------------------------------------------------------------------------
// systemd-networkd
// ---------------------------------------------------------------------------

/// The admin's `.network` files are `20-r0.network`, one matched by MAC, one
/// by glob and type, one in `/usr/lib` (with a shadowed twin), and a masked one
/// in `/run`: roce-net finds the file networkd really matches for each NIC (the
/// same answer as networkd's own state), its drop-ins are read, and the host is
/// fixed by networkd alone. Before that, with roce-net's runtime rules in place,
/// networkd adds its own `proto static` copies: the planner keeps those and
/// deletes its duplicates, and a networkd restart changes nothing after that.
/// Finally `persist --remove` leaves the admin's trees exactly as they were.
#[test]
#[ignore = "needs root: runs systemd-networkd in a lab namespace (scripts/test.sh runs it)"]
fn networkd_boot_fixes_the_host_through_the_admins_network_files() {
    require("networkd_boot", &[NETWORKD, "nsenter", "unshare", "sysctl"]);
    let node = Node::new(
        "pbnd",
        "networkd",
        &[
            ("r0", "02:00:00:00:03:00", "198.18.0.11"),
            ("r1", "02:00:00:00:03:01", "198.18.0.12"),
            ("r2", "02:00:00:00:03:02", "198.18.0.13"),
            ("r3", "02:00:00:00:03:03", "198.18.0.14"),
        ],
    );
    let nics = ["r0", "r1", "r2", "r3"];
    let pol_dir = tempfile::tempdir().unwrap();
    let pol = write_policy(pol_dir.path(), &format!("version: 1\n{V6_POLICY}"));
    let pol = ["-f", pol.to_str().unwrap()];
    let admin = tree(node.root());

    let v = node.persist(&pol);
    assert_eq!(v["backend"], "networkd", "{v}");
    assert_admin_untouched(&admin, node.root());
    let want = [
        ("r0", "/etc/systemd/network/20-r0.network"),
        ("r1", "/etc/systemd/network/30-rdma1.network"),
        ("r2", "/etc/systemd/network/40-rdma.network"),
        ("r3", "/usr/lib/systemd/network/35-r3.network"),
    ];
    for (nic, file) in want {
        let name = Path::new(file).file_name().unwrap().to_str().unwrap();
        assert!(
            node.root()
                .join(format!("etc/systemd/network/{name}.d/90-roce-net.conf"))
                .is_file(),
            "no drop-in for {nic} next to {file}: {v}"
        );
    }

    // Boot: the host as the kernel leaves it, then systemd-sysctl, then networkd.
    node.reset_to_boot(&nics);
    assert!(node.rules().is_empty() && node.rules_of("-6").is_empty());
    node.sysctl_boot();
    let mut d = node.networkd();
    let seen = node.wait_configured(&mut d, &nics);
    for (nic, file) in want {
        let got = &seen.iter().find(|(n, _)| n == nic).unwrap().1;
        assert_eq!(got, file, "networkd matched {got} for {nic}");
    }
    assert_eq!(node.addr_of("r0"), vec!["198.18.0.11/24"]);
    node.assert_fixed(&[]);
    node.assert_plan_empty(&pol);
    node.assert_no_duplicate_rules(4);
    node.assert_v6_fixed(&nics);
    node.assert_v6_sysctls_persisted();
    // networkd 252 has no protocol for rules: they are `proto static`.
    for fam in ["-4", "-6"] {
        let rules = node.rules_of(fam);
        assert!(rules.iter().all(|r| r.3 == "static"), "{rules:?}");
    }
    // iproute2 reads the persisted table names.
    let t = route_show_named_table(&node, "roce_r0");
    assert!(
        t.contains("198.18.0.0/24 dev r0") && t.contains("src 198.18.0.11"),
        "{t}"
    );
    // apply on top: nothing to do, nothing duplicated.
    node.apply(&pol);
    node.assert_no_duplicate_rules(4);
    // A link flap: the kernel drops every route through r0 (networkd's
    // ManageForeign* settings cannot keep them), networkd puts the persisted
    // ones back when the carrier returns.
    run_ip(&node.ns, &["link", "set", "dev", "r0", "down"]);
    assert!(
        !route_show_named_table(&node, "roce_r0").contains("dev r0"),
        "the kernel keeps routes through a down link?"
    );
    run_ip(&node.ns, &["link", "set", "dev", "r0", "up"]);
    node.wait_plan_empty(&pol, &d);
    node.assert_fixed(&[]);
    d.stop();

    // roce-net's runtime rules (proto 201) in place when networkd starts: networkd
    // adds its `proto static` copies; the planner keeps those as the fix and
    // deletes its own duplicates, and a networkd restart then changes nothing;
    // in both families.
    for fam in ["-4", "-6"] {
        for r in node.rules_of(fam) {
            let pref = r.0.to_string();
            run_ip(
                &node.ns,
                &[fam, "rule", "del", "pref", &pref, "proto", "static"],
            );
        }
    }
    node.apply(&pol);
    for fam in ["-4", "-6"] {
        let rules = node.rules_of(fam);
        assert!(rules.iter().all(|r| r.3 == "201"), "{rules:?}");
    }
    let mut d = node.networkd();
    node.wait_configured(&mut d, &nics);
    for fam in ["-4", "-6"] {
        let rules = node.rules_of(fam);
        let statics = rules.iter().filter(|r| r.3 == "static").count();
        assert_eq!(statics, 4, "{rules:?}");
    }
    let p = node.plan(&pol);
    let ops: Vec<&str> = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        ops, ["delete_rule"; 8],
        "plan after networkd: {}",
        p["changes"]
    );
    for c in p["changes"].as_array().unwrap() {
        assert_eq!(c["rule"]["protocol"], 201, "only roce-net's copies go: {c}");
    }
    let v6 = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"]["family"] == "inet6")
        .count();
    assert_eq!(v6, 4, "plan after networkd: {}", p["changes"]);
    node.apply(&pol);
    node.assert_no_duplicate_rules(4);
    node.assert_plan_empty(&pol);
    d.stop();
    let mut d = node.networkd();
    node.wait_configured(&mut d, &nics);
    node.assert_no_duplicate_rules(4);
    node.assert_plan_empty(&pol);
    d.stop();

    // The way back: exactly the admin's trees again.
    let o = node.remove();
    let after: Vec<(PathBuf, String)> = tree(node.root())
        .into_iter()
        .filter(|(p, _)| {
            !p.starts_with("run/systemd/netif") && !p.to_string_lossy().starts_with("networkd.")
        })
        .collect();
    assert_names_left(node.root(), &text(&o));
    assert_eq!(
        without_names(after),
        without_names(admin),
        "persist --remove left: {}",
        text(&o)
    );
}

// ---------------------------------------------------------------------------
// netplan
// ---------------------------------------------------------------------------

/// cloud-init's netplan defines r0 by MAC with `set-name` (netplan ID
/// `ens1f0np0`), r1, and `r0.100` (a dotted name that is *not* a VLAN). r3 is
/// configured by something else. roce-net refuses to persist r3 into netplan
/// (defining it anew is what made networkd remove its addresses); without r3 it
/// extends the three definitions, `netplan generate` accepts the result, and
/// networkd on netplan's output fixes the host while r3 keeps its address.
#[test]
#[ignore = "needs root: runs netplan generate and systemd-networkd in a lab namespace"]
fn netplan_boot_extends_cloud_init_definitions_only() {
    require(
        "netplan_boot",
        &["netplan", NETWORKD, "nsenter", "unshare", "sysctl"],
    );
    let node = Node::new(
        "pbnp",
        "netplan",
        &[
            ("r0", "02:00:00:00:01:00", "198.18.0.11"),
            ("r1", "02:00:00:00:01:01", "198.18.0.12"),
            ("r0.100", "02:00:00:00:01:02", "198.18.0.13"),
            ("r3", "02:00:00:00:01:03", "198.18.0.14"),
        ],
    );
    let admin = tree(node.root());
    let admin_cfg = config_tree(node.root());
    // r3 is not in netplan: refused, nothing written, whether detected or asked for.
    for args in [&[][..], &["--backend", "netplan"][..]] {
        let mut a = vec!["persist", "--root", node.root().to_str().unwrap()];
        a.extend_from_slice(args);
        let o = node.cli(&a);
        assert_eq!(o.status.code(), Some(65), "{}", text(&o));
        assert!(text(&o).contains("r3"), "{}", text(&o));
        assert_eq!(tree(node.root()), admin, "nothing may be written");
    }
    let pol_dir = tempfile::tempdir().unwrap();
    let pol = write_policy(
        pol_dir.path(),
        &format!("version: 1\nnics: {{exclude: [r3]}}\n{V6_POLICY}"),
    );
    let pol = ["-f", pol.to_str().unwrap()];
    let v = node.persist(&pol);
    assert_eq!(v["backend"], "netplan", "{v}");
    assert_admin_untouched(&admin, node.root());
    let yaml = std::fs::read_to_string(node.root().join("etc/netplan/90-roce-net.yaml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml).unwrap();
    let doc = &docs[0];
    let eth = &doc["network"]["ethernets"];
    assert!(
        eth["ens1f0np0"]["routing-policy"].as_vec().is_some(),
        "{yaml}"
    );
    assert!(eth["r0.100"]["routes"].as_vec().is_some(), "{yaml}");
    assert!(
        eth["r0"].is_badvalue() && doc["network"]["vlans"].is_badvalue(),
        "{yaml}"
    );
    assert!(!yaml.contains("r3"), "{yaml}");

    node.reset_to_boot(&["r0", "r1", "r0.100"]);
    let o = Command::new("netplan")
        .args(["generate", "--root-dir"])
        .arg(node.root())
        .output()
        .unwrap();
    assert!(o.status.success(), "netplan generate: {}", text(&o));
    node.sysctl_boot();
    let mut d = node.networkd();
    let seen = node.wait_configured(&mut d, &["r0", "r1", "r0.100"]);
    for (nic, f) in &seen {
        assert!(
            f.starts_with("/run/systemd/network/10-netplan-"),
            "{nic}: {f}"
        );
    }
    assert_eq!(node.addr_of("r3"), vec!["198.18.0.14/24"], "{}", d.log());
    assert!(!d.log().contains("Removing foreign address"), "{}", d.log());
    node.assert_fixed(&["r3"]);
    node.assert_plan_empty(&pol);
    node.assert_v6_fixed(&["r0", "r1", "r0.100"]);
    node.assert_v6_sysctls_persisted();
    node.apply(&pol);
    node.assert_no_duplicate_rules(3);
    node.assert_plan_empty(&pol);
    d.stop();

    // The way back: exactly the admin's netplan again, which netplan accepts.
    node.remove_restores(&admin_cfg);
    let o = Command::new("netplan")
        .args(["generate", "--root-dir"])
        .arg(node.root())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "netplan generate after remove: {}",
        text(&o)
    );
}

/// netplan with `renderer: NetworkManager`: netplan 0.106 drops `routing-policy`
/// for that renderer, so roce-net passes the rules through to the keyfiles netplan
/// generates; libnm's keyfile parser reads routes (table, src) and rules
/// (priority, from, table) from them.
#[test]
#[ignore = "needs root: builds a lab namespace for the snapshot"]
fn netplan_with_networkmanager_renderer_keeps_the_rules() {
    require("netplan_nm", &["netplan", "python3"]);
    let node = Node::new(
        "pbnn",
        "netplan-nm",
        &[
            ("r0", "02:00:00:00:04:00", "198.18.0.11"),
            ("r1", "02:00:00:00:04:01", "198.18.0.12"),
        ],
    );
    let admin = config_tree(node.root());
    let v = node.persist(&[]);
    assert_eq!(v["backend"], "netplan", "{v}");
    assert_admin_untouched(&admin, node.root());
    let o = Command::new("netplan")
        .args(["generate", "--root-dir"])
        .arg(node.root())
        .output()
        .unwrap();
    assert!(o.status.success(), "netplan generate: {}", text(&o));
    let dir = node.root().join("run/NetworkManager/system-connections");
    for (id, nic, addr, table, prio) in [
        ("ens1f0np0", "r0", "198.18.0.11", 1001, 1001),
        ("r1", "r1", "198.18.0.12", 1002, 1002),
    ] {
        let prof = nm_parse(&dir.join(format!("netplan-{id}.nmconnection")));
        assert_eq!(prof["interface"], nic, "{prof}");
        assert_eq!(prof["route_table"], 0, "{prof}");
        let routes = prof["routes"].as_array().unwrap();
        assert!(
            routes.iter().any(|r| r["dest"] == "198.18.0.0"
                && r["prefix"] == 24
                && r["metric"] == 0
                && r["table"] == table
                && r["src"] == addr),
            "{prof}"
        );
        let rules = prof["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "{prof}");
        assert_eq!(rules[0]["priority"], prio, "{prof}");
        assert_eq!(rules[0]["from"], addr, "{prof}");
        assert_eq!(rules[0]["from_len"], 32, "{prof}");
        assert_eq!(rules[0]["table"], table, "{prof}");
        assert_nm_v6(&prof, &v6_of(addr), table, prio);
    }
    node.remove_restores(&admin);
}

// ---------------------------------------------------------------------------
// NetworkManager
// ---------------------------------------------------------------------------

/// libnm's own keyfile parser (`NM.keyfile_read`, libnm 1.42) on a profile:
/// its UUID, interface, route-table, routes and rules as JSON.
fn nm_parse(file: &Path) -> serde_json::Value {
    let o = Command::new("/usr/bin/python3")
        .arg(fixture("nm-parse.py"))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nm-parse {}: {}",
        file.display(),
        text(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The IPv6 half of a profile as libnm parsed it ([`nm_parse`]): the route
/// table left to the rules, one route to the rail's prefix in `table` with
/// the planned metric (no `src`: the rule pins the source), one rule from
/// `addr`/128 to `table` at `prio`.
fn assert_nm_v6(prof: &serde_json::Value, addr: &str, table: u32, prio: u32) {
    let v6 = &prof["ipv6"];
    assert_eq!(v6["route_table"], 0, "{prof}");
    let routes = v6["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1, "{prof}");
    assert_eq!(routes[0]["dest"], "fd00:198:18::", "{prof}");
    assert_eq!(routes[0]["prefix"], 64, "{prof}");
    // The metric planned (the kernel's default for IPv6), not -1: NetworkManager
    // would give that route the device's metric (100 and up).
    assert_eq!(routes[0]["metric"], 1024, "{prof}");
    assert_eq!(routes[0]["table"], table, "{prof}");
    assert_eq!(routes[0]["src"], serde_json::Value::Null, "{prof}");
    assert_eq!(routes[0]["scope"], serde_json::Value::Null, "{prof}");
    let rules = v6["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{prof}");
    assert_eq!(rules[0]["priority"], prio, "{prof}");
    assert_eq!(rules[0]["from"], addr, "{prof}");
    assert_eq!(rules[0]["from_len"], 128, "{prof}");
    assert_eq!(rules[0]["table"], table, "{prof}");
}

/// RHEL keyfiles `ens1f0np0.nmconnection` (by interface name) and `Wired
/// connection 1.nmconnection` (by MAC only): roce-net addresses each profile by
/// its UUID; its script, run with the real `nmcli` editing those keyfiles
/// (`nmcli --offline`, NetworkManager cannot run here), leaves profiles that
/// libnm parses with tables, priorities, sources and route-table intact; the undo
/// script takes exactly that out again, and `persist --remove` removes the rest.
#[test]
#[ignore = "needs root: builds a lab namespace for the snapshot"]
fn networkmanager_profiles_found_by_uuid_round_trip_through_libnm() {
    require("nm", &["nmcli", "/usr/bin/python3"]);
    let node = Node::new(
        "pbnm",
        "networkmanager",
        &[
            ("ens1f0np0", "02:00:00:00:05:00", "198.18.0.11"),
            ("ens1f1np1", "02:00:00:00:05:01", "198.18.0.12"),
        ],
    );
    let dir = node.root().join("etc/NetworkManager/system-connections");
    let before: Vec<serde_json::Value> =
        ["ens1f0np0.nmconnection", "Wired connection 1.nmconnection"]
            .iter()
            .map(|f| nm_parse(&dir.join(f)))
            .collect();
    let admin = config_tree(node.root());
    let v = node.persist(&[]);
    assert_eq!(v["backend"], "networkmanager", "{v}");
    assert_admin_untouched(&admin, node.root());
    let script = node.root().join("etc/roce-net/nm-apply.sh");
    let undo = node.root().join("etc/roce-net/nm-remove.sh");
    let log = run_nm_script(&node, &script);
    for uuid in [
        "0c3e4a0e-4e63-4a55-9d3c-6b8a2b1c0f01",
        "7d2f6a43-9a1b-4c2e-8f0e-1d5c3b9a7e02",
    ] {
        assert!(log.contains(&format!("modify uuid {uuid} ")), "{log}");
    }
    assert!(
        !log.contains("2b8f0d4e"),
        "eth0's profile must not be touched: {log}"
    );
    for (i, (f, addr, table, prio)) in [
        ("ens1f0np0.nmconnection", "198.18.0.11", 1001, 1001),
        ("Wired connection 1.nmconnection", "198.18.0.12", 1002, 1002),
    ]
    .iter()
    .enumerate()
    {
        let p = nm_parse(&dir.join(f));
        assert_eq!(p["uuid"], before[i]["uuid"], "{p}");
        assert_eq!(p["addresses"], before[i]["addresses"], "{p}");
        assert_eq!(p["route_table"], 0, "{p}");
        let routes = p["routes"].as_array().unwrap();
        assert_eq!(routes.len(), 1, "{p}");
        assert_eq!(routes[0]["dest"], "198.18.0.0", "{p}");
        assert_eq!(routes[0]["metric"], 0, "{p}");
        assert_eq!(routes[0]["table"], *table, "{p}");
        assert_eq!(routes[0]["src"], *addr, "{p}");
        let rules = p["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "{p}");
        assert_eq!(rules[0]["priority"], *prio, "{p}");
        assert_eq!(rules[0]["from"], *addr, "{p}");
        assert_eq!(rules[0]["table"], *table, "{p}");
        assert_eq!(
            p["ipv6"]["addresses"], before[i]["ipv6"]["addresses"],
            "{p}"
        );
        assert_nm_v6(&p, &v6_of(addr), *table, *prio);
    }
    // Running it again changes nothing (no duplicate values).
    run_nm_script(&node, &script);
    assert_eq!(
        nm_parse(&dir.join("ens1f0np0.nmconnection"))["rules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The way back: the undo script, then persist --remove.
    run_nm_script(&node, &undo);
    for (i, f) in ["ens1f0np0.nmconnection", "Wired connection 1.nmconnection"]
        .iter()
        .enumerate()
    {
        assert_eq!(nm_parse(&dir.join(f)), before[i], "{f} after nm-remove.sh");
    }
    let o = node.remove();
    assert!(!script.exists() && undo.exists(), "{}", text(&o));
    assert!(text(&o).contains("nm-remove.sh"), "{}", text(&o));
}

/// Run one of roce-net's NetworkManager scripts with `nmcli` on PATH being the
/// test's stand-in for NetworkManager's profile storage (`nm-shim.py`): the real
/// `nmcli --offline` (the one on PATH, `NM_SHIM_REAL`) edits the keyfile of the
/// addressed profile. Returns the shim's log of calls.
fn run_nm_script(node: &Node, script: &Path) -> String {
    let real = which_path("nmcli").expect("nmcli on PATH (require() checked it)");
    let bin = tempfile::tempdir().unwrap();
    let shim = bin.path().join("nmcli");
    std::os::unix::fs::symlink(fixture("nm-shim.py"), &shim).unwrap();
    let log = bin.path().join("log");
    let o = Command::new("sh")
        .arg(script)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.path().display()))
        .env(
            "NM_SHIM_DIR",
            node.root().join("etc/NetworkManager/system-connections"),
        )
        .env("NM_SHIM_LOG", &log)
        .env("NM_SHIM_REAL", &real)
        .output()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        o.status.success(),
        "{} failed: {}\ncalls:\n{calls}",
        script.display(),
        text(&o)
    );
    calls
}

// ---------------------------------------------------------------------------
// ifupdown
// ---------------------------------------------------------------------------

/// Debian's interfaces with `source interfaces.d/*` stanzas (`auto` and
/// `allow-hotplug`): `ifup` brings the NICs up and runs roce-net's hook, and the
/// host is fixed; `ifdown` takes roce-net's routes and rules away with the NIC.
#[test]
#[ignore = "needs root: runs ifup/ifdown in a lab namespace"]
fn ifupdown_boot_runs_the_hooks_for_its_stanzas() {
    require("ifupdown_boot", &["ifup", "nsenter", "unshare", "sysctl"]);
    let node = Node::new(
        "pbif",
        "ifupdown",
        &[
            ("r0", "02:00:00:00:06:00", "198.18.0.11"),
            ("r1", "02:00:00:00:06:01", "198.18.0.12"),
        ],
    );
    // The hook directories the ifupdown package ships (run-parts needs them all).
    for d in ["if-pre-up.d", "if-up.d", "if-down.d", "if-post-down.d"] {
        std::fs::create_dir_all(node.root().join("etc/network").join(d)).unwrap();
    }
    let pol_dir = tempfile::tempdir().unwrap();
    let pol = write_policy(pol_dir.path(), &format!("version: 1\n{V6_POLICY}"));
    let pol = ["-f", pol.to_str().unwrap()];
    let admin = config_tree(node.root());
    let v = node.persist(&pol);
    assert_eq!(v["backend"], "ifupdown", "{v}");
    assert_admin_untouched(&admin, node.root());
    node.reset_to_boot(&["r0", "r1"]);
    node.sysctl_boot();
    let ifupdown = |cmd: &str| {
        let o = sh(
            Some(&node.ns_path()),
            &format!(
                "set -e\nmount --bind '{r}/etc/network' /etc/network\n\
                 mkdir -p '{r}/run/network'\n{cmd}",
                r = node.root().display()
            ),
        );
        assert!(o.status.success(), "{cmd}: {}", text(&o));
        text(&o)
    };
    let state = format!("--state-dir={}/run/network", node.root().display());
    // Boot: networking.service runs `ifup -a`; udev runs `ifup --allow=hotplug` per NIC.
    let out = ifupdown(&format!("ifup -a {state}\nifup --allow=hotplug {state} r1"));
    // The hook runs for each stanza (inet, then inet6) and applies both
    // families each time: nothing of it may fail.
    assert!(!out.contains("could not be applied"), "{out}");
    assert_eq!(node.addr_of("r1"), vec!["198.18.0.12/24"]);
    node.assert_fixed(&[]);
    node.assert_plan_empty(&pol);
    node.assert_v6_fixed(&["r0", "r1"]);
    node.assert_v6_sysctls_persisted();
    node.apply(&pol);
    node.assert_no_duplicate_rules(2);
    node.assert_plan_empty(&pol);
    ifupdown(&format!("ifdown {state} r0"));
    for (fam, a) in [("-4", "198.18.0.11"), ("-6", "fd00:198:18::11")] {
        let rules = node.rules_of(fam);
        assert!(!rules.iter().any(|r| r.1 == a), "{rules:?}");
    }

    // The way back: the hooks are gone, so the next ifup adds no rules.
    node.remove_restores(&admin);
    for d in ["if-up.d", "if-down.d"] {
        assert!(
            node.root().join("etc/network").join(d).is_dir(),
            "{d} must stay"
        );
    }
    ifupdown(&format!("ifup {state} r0"));
    for fam in ["-4", "-6"] {
        let rules = node.rules_of(fam);
        assert!(
            !rules
                .iter()
                .any(|r| r.1.ends_with("::11") || r.1 == "198.18.0.11"),
            "after --remove, ifup still adds rules: {rules:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// --etc-root, --root, --dry-run
// ---------------------------------------------------------------------------

/// `--etc-root` alone puts /etc files there (never the machine's /etc, which
/// this test covers with an empty tmpfs to prove it), and `--dry-run` compares
/// against the root it is given.
#[test]
#[ignore = "needs root: builds a lab namespace for the snapshot"]
fn persist_honours_etc_root_and_dry_run_compares_the_given_root() {
    require("etc_root", &["unshare"]);
    let node = Node::new(
        "pber",
        "ifupdown",
        &[
            ("r0", "02:00:00:00:07:00", "198.18.0.11"),
            ("r1", "02:00:00:00:07:01", "198.18.0.12"),
        ],
    );
    let etc = tempfile::tempdir().unwrap();
    let o = sh(
        None,
        &format!(
            "set -e\nmount -t tmpfs rnt-guard /etc/sysctl.d\n\
             '{bin}' --netns {ns} --state-dir '{st}' --etc-root '{etc}' persist --backend sysctl.d\n\
             echo \"machine-etc-files: $(ls -A /etc/sysctl.d | wc -l)\"",
            bin = bin_path().display(),
            ns = node.ns,
            st = node.state.path().display(),
            etc = etc.path().display()
        ),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("machine-etc-files: 0"), "{}", text(&o));
    let written = etc.path().join("sysctl.d/90-roce-net.conf");
    let content = std::fs::read_to_string(&written).unwrap();
    // Dry run against a root holding the same file: unchanged.
    let r = node.root();
    std::fs::create_dir_all(r.join("etc/sysctl.d")).unwrap();
    std::fs::copy(&written, r.join("etc/sysctl.d/90-roce-net.conf")).unwrap();
    std::fs::set_permissions(
        r.join("etc/sysctl.d/90-roce-net.conf"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let o = node.cli(&[
        "--json",
        "persist",
        "--backend",
        "sysctl.d",
        "--dry-run",
        "--root",
        r.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["report"]["diffs"][0]["status"], "unchanged", "{v}");
    assert_eq!(
        std::fs::read_to_string(r.join("etc/sysctl.d/90-roce-net.conf")).unwrap(),
        content
    );
}

/// The boot-time repair of an interrupted persist, as systemd meets it: the
/// script run as a generator (three output directories, as systemd passes
/// them) writes `roce-net-persist-repair.service` and its
/// `sysinit.target.wants` link, ordered before `systemd-sysctl.service` and
/// `network-pre.target`, and `systemd-analyze verify` (systemd 252) says
/// nothing about the unit (it warns of an unknown key, an `ExecStart` that
/// cannot run, a dependency that does not load). Run with no directory it
/// writes nothing and succeeds.
#[test]
#[ignore = "needs root and systemd-analyze (scripts/test.sh runs it)"]
fn the_boot_repair_generator_writes_a_unit_systemd_accepts() {
    require(
        "the_boot_repair_generator_writes_a_unit_systemd_accepts",
        &["systemd-analyze"],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("roce-net/src/persist/boot_repair.sh");
    let out = tempfile::tempdir().unwrap();
    let o = Command::new("/bin/sh")
        .arg(&script)
        .args([out.path(), out.path(), out.path()])
        .output()
        .unwrap();
    assert!(o.status.success() && o.stdout.is_empty(), "{}", text(&o));
    let unit = out.path().join("roce-net-persist-repair.service");
    let text_of_unit = std::fs::read_to_string(&unit).unwrap();
    for want in [
        "Before=systemd-sysctl.service network-pre.target",
        "Wants=network-pre.target",
        "After=systemd-remount-fs.service",
        "ExecStart=/bin/sh /etc/systemd/system-generators/roce-net-persist-repair --repair /etc",
    ] {
        assert!(text_of_unit.contains(want), "{want}: {text_of_unit}");
    }
    let link = out
        .path()
        .join("sysinit.target.wants/roce-net-persist-repair.service");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../roce-net-persist-repair.service")
    );
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .unwrap();
    assert!(
        o.status.success() && o.stderr.is_empty() && o.stdout.is_empty(),
        "systemd-analyze verify: {}",
        text(&o)
    );
    let o = Command::new("/bin/sh").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}
