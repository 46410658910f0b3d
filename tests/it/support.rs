//! Shared helpers for the CLI's reliability and crash tests: throwaway lab
//! namespaces made with `ip` (removed by a guard), the `roce-net` binary run
//! against them with their own `/etc` root and state directory, and the host
//! state compared exactly. Nothing here reads the machine's `/etc` or `/run`
//! (other than the private `/run/netns` the namespaces live in).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The CLI under test.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_roce-net"));
    c.stdin(Stdio::null());
    c
}

/// stdout and stderr as text.
/// The CLI acting on namespace `ns` with `--etc-root etc --state-dir state`.
pub fn cli_in(ns: &str, etc: &Path, state: &Path) -> Command {
    let mut c = bin();
    c.args(["--netns", ns, "--etc-root"])
        .arg(etc)
        .arg("--state-dir")
        .arg(state);
    c
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Root or a clear failure: the one definition, shared with the library's tests.
pub use crate::test_support::require_root;

/// Run `ip -n NS ARGS`, panicking on failure.
pub fn ip(ns: &str, args: &str) {
    let o = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ip -n {ns} {args}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A namespace made with `ip netns add`, removed on drop (only this one).
pub struct Ns(pub String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A unique namespace name for this process and tag.
pub fn ns_name(tag: &str) -> String {
    format!(
        "rnt-c8-{}-{}-{tag}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A namespace with `nics` NICs `r0..` (veth, up) in 198.18.2.0/24 from .11 on.
pub fn netns(tag: &str, nics: usize) -> Ns {
    assert!(nics <= 200);
    let ns = Ns(ns_name(tag));
    let st = Command::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .unwrap();
    assert!(st.success(), "ip netns add {}", ns.0);
    let mut batch = String::new();
    for i in 0..nics {
        batch.push_str(&format!(
            "link add r{i} type veth peer name x{i}\naddr add 198.18.2.{}/24 dev r{i}\nlink set r{i} up\nlink set x{i} up\n",
            11 + i
        ));
    }
    if !batch.is_empty() {
        ip_batch(&ns.0, &batch);
    }
    ns
}

/// `ip -n NS -batch -` with `script`.
pub fn ip_batch(ns: &str, script: &str) {
    use std::io::Write;
    let mut c = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "ip -batch: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The ifupdown configuration of a two-NIC lab ([`netns`] with 2 NICs) in the
/// etc root `etc`: `network/interfaces` with `r0` 198.18.2.11/24 and `r1`
/// 198.18.2.12/24, as the lab has them.
pub fn ifupdown_etc(etc: &Path) {
    std::fs::create_dir_all(etc.join("network")).unwrap();
    std::fs::write(
        etc.join("network/interfaces"),
        "auto r0\niface r0 inet static\n    address 198.18.2.11/24\n\
         auto r1\niface r1 inet static\n    address 198.18.2.12/24\n",
    )
    .unwrap();
}

/// A two-NIC lab's etc root configured by two stacks at once: ifupdown
/// ([`ifupdown_etc`]) and systemd-networkd (`systemd/network/20-r0.network`,
/// `20-r1.network`, the same addresses), as a host in the middle of a switch.
pub fn two_stack_etc(etc: &Path) {
    ifupdown_etc(etc);
    std::fs::create_dir_all(etc.join("systemd/network")).unwrap();
    for (i, a) in ["198.18.2.11", "198.18.2.12"].iter().enumerate() {
        std::fs::write(
            etc.join(format!("systemd/network/20-r{i}.network")),
            format!("[Match]\nName=r{i}\n\n[Network]\nAddress={a}/24\n"),
        )
        .unwrap();
    }
}

/// A lab namespace with its own `/etc` root and state directory, driven by the CLI.
pub struct Lab {
    pub ns: Ns,
    pub etc: PathBuf,
    pub state: PathBuf,
    _dir: tempfile::TempDir,
}

impl Lab {
    pub fn new(tag: &str, nics: usize) -> Lab {
        Self::with_etc(tag, nics, None)
    }

    /// A lab whose `/etc` root is `etc` (shared with other labs) when given.
    pub fn with_etc(tag: &str, nics: usize, etc: Option<&Path>) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let own = dir.path().join("etc");
        std::fs::create_dir_all(&own).unwrap();
        Lab {
            ns: netns(tag, nics),
            etc: etc.map(Path::to_path_buf).unwrap_or(own),
            state,
            _dir: dir,
        }
    }

    /// `--netns NS --etc-root DIR --state-dir DIR`.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--netns".into(),
            self.ns.0.clone(),
            "--etc-root".into(),
            self.etc.display().to_string(),
            "--state-dir".into(),
            self.state.display().to_string(),
        ]
    }

    /// The CLI with this lab's arguments.
    pub fn cli(&self) -> Command {
        cli_in(&self.ns.0, &self.etc, &self.state)
    }

    /// Run the CLI with these arguments after the lab's.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cli().args(args).output().unwrap()
    }

    /// A file in the state directory.
    pub fn state_file(&self, suffix: &str) -> Option<PathBuf> {
        std::fs::read_dir(&self.state)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(suffix))
    }

    /// `status --json`, parsed (`null` without a journal).
    pub fn status(&self) -> serde_json::Value {
        let o = self.run(&["--json", "status"]);
        assert!(o.status.success(), "status: {}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// The journal's state (`none` without one).
    pub fn journal_state(&self) -> String {
        self.status()["state"]
            .as_str()
            .unwrap_or("none")
            .to_string()
    }

    /// What apply may change, exactly (see [`state_of`]).
    pub fn state(&self) -> serde_json::Value {
        state_of(&self.ns.0, &self.etc, &[])
    }

    /// Like [`Lab::state`], leaving out routes in `skip_tables`.
    pub fn state_without(&self, skip_tables: &[u64]) -> serde_json::Value {
        state_of(&self.ns.0, &self.etc, skip_tables)
    }
}

/// What apply may change, in a form where "exactly as before" is `==`: routes
/// (less the IPv6 ones the kernel adds by itself), rules, sysctls, table names as
/// iproute2 sees them, and roce-net's names file byte for byte.
pub fn state_of(ns: &str, etc: &Path, skip_tables: &[u64]) -> serde_json::Value {
    let o = bin()
        .args(["--netns", ns, "--etc-root"])
        .arg(etc)
        .arg("snapshot")
        .output()
        .unwrap();
    assert!(o.status.success(), "snapshot: {}", text(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut routes: Vec<String> = v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !(r["family"] == "inet6" && r["protocol"] == 2))
        .filter(|r| !skip_tables.contains(&r["table"].as_u64().unwrap_or(0)))
        .map(|r| r.to_string())
        .collect();
    routes.sort();
    let file = std::fs::read_to_string(etc.join("iproute2/rt_tables.d/roce-net.conf")).ok();
    serde_json::json!({
        "routes": routes,
        "rules": v["rules"].take(),
        "sysctls": v["sysctls"].take(),
        "tables": v["table_names"].take(),
        "names_file": file,
    })
}

/// Wait (bounded) until `f` holds; panics with `what` otherwise.
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Send `sig` to `pid`.
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) of a child this test started.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Lines of a file (0 when missing).
pub fn lines(p: &Path) -> usize {
    std::fs::read(p)
        .map(|b| b.iter().filter(|c| **c == b'\n').count())
        .unwrap_or(0)
}

/// A small xorshift generator seeded from the clock (the seed is printed, so a
/// failing run can be repeated with `ROCE_NET_TEST_SEED`).
pub struct Rng(u64);

impl Rng {
    pub fn new(test: &str) -> Rng {
        let seed = std::env::var("ROCE_NET_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            })
            | 1;
        eprintln!("{test}: ROCE_NET_TEST_SEED={seed}");
        Rng(seed)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            self.0 % n
        }
    }
}
