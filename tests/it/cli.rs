//! The command-line tool end to end: offline verbs on fixtures, bad input, exit
//! codes, the lab demo, and read-only verbs run without privileges. (Killed,
//! hung-up and concurrent applies are in tests/it/crash.rs, the transaction's
//! defects in tests/it/reliability.rs.)

use crate::support::{ifupdown_etc, ip, require_root, two_stack_etc, Ns};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roce-net"))
}

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures")
        .join(p)
}

fn run(args: &[&str]) -> Output {
    bin()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running roce-net")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn doctor_offline_exit_codes_follow_severity() {
    let healthy = fixture("doctor/healthy.json");
    let o = run(&["doctor", "--from", healthy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bad = fixture("doctor/arp-ignore.bad.json");
    let o = run(&["doctor", "--from", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "errors found: {}", text(&o));
    assert!(text(&o).contains("[arp-ignore]"), "{}", text(&o));
    assert!(
        text(&o).contains("fix: "),
        "remediation shown: {}",
        text(&o)
    );
    let o = run(&["--json", "doctor", "--from", bad.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "arp-ignore"));
    assert!(v["summary"]["error"].as_u64().unwrap() >= 1);
    assert_eq!(v["host"], "gpu1");
    assert_eq!(v["netns"], serde_json::Value::Null);
    // The namespace the snapshot was taken in is named, as the text output does.
    let dir = tempfile::tempdir().unwrap();
    let mut st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bad).unwrap()).unwrap();
    st["netns"] = "rnt-x".into();
    let in_ns = dir.path().join("in-ns.json");
    std::fs::write(&in_ns, st.to_string()).unwrap();
    let o = run(&["--json", "doctor", "--from", in_ns.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["netns"], "rnt-x", "{}", text(&o));
    let o = run(&["doctor", "--from", in_ns.to_str().unwrap()]);
    assert!(text(&o).contains("(netns rnt-x)"), "{}", text(&o));
}

/// Bad input exits with its code (sysexits: 64 usage, 65 data, 66 no input)
/// and names what was wrong: one row per case.
#[test]
fn bad_input_exits_with_its_code_and_names_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("doctor/healthy.json")).unwrap();
    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["schema_version"] = serde_json::json!(99);
    let wrong = dir.path().join("v99.json");
    std::fs::write(&wrong, v.to_string()).unwrap();
    let (truncated, wrong) = (truncated.to_str().unwrap(), wrong.to_str().unwrap());
    // (arguments, exit code, what the message must name)
    let cases: &[(&[&str], i32, Option<&str>)] = &[
        (&["doctor", "--from", truncated], 65, Some("truncated")),
        (&["show", "--from", wrong], 65, Some("schema_version 99")),
        (
            &["doctor", "--from", "/nonexistent/snap.json"],
            66,
            Some("/nonexistent/snap.json"),
        ),
        (
            &["--netns", "rnt-does-not-exist", "show"],
            66,
            Some("rnt-does-not-exist"),
        ),
        (&["no-such-verb"], 64, None),
        (&["route-get", "not-an-ip"], 64, None),
    ];
    for (args, code, says) in cases {
        let o = run(args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {t}");
        assert!(says.is_none_or(|w| t.contains(w)), "{args:?}: {t}");
    }
    // The JSON error names the kind too.
    let o = run(&["--json", "--netns", "rnt-does-not-exist", "show"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "not_found");
}

/// The tool's own entry (`src/main.rs`, no Rust start-up) keeps what Rust's
/// start-up gives: started with standard descriptors closed, what it opens does
/// not become its stdout (it prints to `/dev/null` and succeeds, and an error
/// still goes to stderr); a write to a pipe nobody reads is an error it
/// survives, not a `SIGPIPE` kill; the exit code is the CLI's.
#[test]
fn the_process_entry_keeps_rust_start_up_guarantees() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    // stdin and stdout closed.
    let o = unsafe {
        bin()
            .arg("--version")
            .stderr(Stdio::piped())
            .pre_exec(|| {
                libc::close(0);
                libc::close(1);
                Ok(())
            })
            .output()
            .unwrap()
    };
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(o.stderr.is_empty(), "{}", text(&o));
    let o = unsafe {
        bin()
            .args(["show", "--netns", "rnt-surely-missing-ns"])
            .stderr(Stdio::piped())
            .pre_exec(|| {
                libc::close(1);
                Ok(())
            })
            .output()
            .unwrap()
    };
    assert_eq!(o.status.code(), Some(66), "{}", text(&o));
    assert!(text(&o).contains("does not exist"), "{}", text(&o));
    // stdout a pipe whose read end is already closed.
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    let write_end = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    let st = bin()
        .arg("--help")
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.signal(), None, "killed by a signal: {st:?}");
    assert!(st.code().is_some(), "{st:?}");
}

#[test]
fn gids_from_sysfs_fixture_match_show_gids_columns() {
    let root = fixture("sysfs/connectx8");
    let o = run(&["--sysfs-root", root.to_str().unwrap(), "--json", "gids"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 32, "8 NICs x GIDs 0-3");
    let v2: Vec<_> = rows
        .iter()
        .filter(|r| r["ver"] == "v2" && !r["ipv4"].is_null())
        .collect();
    assert_eq!(v2.len(), 8, "one RoCE v2 IPv4 GID per NIC");
    assert!(v2.iter().all(|r| r["index"] == 3));
    let o = run(&["--sysfs-root", root.to_str().unwrap(), "gids"]);
    let t = text(&o);
    assert!(t.starts_with("DEV"), "{t}");
    assert!(t.contains("n_gids_found=32"), "{t}");
}

#[test]
fn nccl_env_from_fixture() {
    let snap = fixture("doctor/healthy.json");
    let o = run(&["--json", "nccl-env", "--from", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let vars = v["vars"].as_array().unwrap();
    assert!(
        vars.iter()
            .any(|x| x["name"] == "NCCL_IB_HCA" && x["value"].is_string()),
        "{v}"
    );
    let o = run(&["nccl-env", "--export", "--from", snap.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        t.lines()
            .all(|l| l.starts_with("export NCCL_") && l.contains("='")),
        "{t}"
    );
}

#[test]
fn fleet_needs_snapshots_and_reports_hosts() {
    let a = fixture("doctor/healthy.json");
    let b = fixture("doctor/gid-index-inconsistent.bad.json");
    let o = run(&["--json", "fleet", a.to_str().unwrap(), b.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hosts"].as_array().unwrap().len(), 2, "{v}");
    let o = run(&["fleet"]);
    assert_eq!(o.status.code(), Some(64));
    // The exit code counts each host's own findings too, not only those
    // between hosts: one host with an error is exit 2, as `doctor` on it is.
    let bad = fixture("doctor/arp-ignore.bad.json");
    let o = run(&["fleet", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&["fleet", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_demo_fixes_the_seed_host() {
    require_root("lab_demo_fixes_the_seed_host");
    let o = run(&["--json", "lab", "--nics", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["fixed"], true);
    assert_eq!(
        v["before"]["arp_probe"]["replies"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        v["after"]["arp_probe"]["replies"].as_array().unwrap().len(),
        1
    );
    let ids: Vec<&str> = v["before"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    for id in [
        "arp-ignore",
        "arp-announce",
        "source-rule-missing",
        "asymmetric-egress",
    ] {
        assert!(ids.contains(&id), "{id} before the fix: {ids:?}");
    }
    assert_eq!(v["second_plan_empty"], true);
    // The lab's namespaces are gone.
    for ns in v["namespaces"].as_array().unwrap() {
        assert!(!Path::new("/run/netns").join(ns.as_str().unwrap()).exists());
    }
}

/// `lab --ipv6` (what `scripts/lab.sh --ipv6` runs): the seed host in
/// `fd00:198:18::/64` only. Before: the doctor's IPv6 egress and missing source
/// rules (no ARP finding: nothing to answer ARP for), every source leaving by
/// r0; the peer's neighbour-solicitation probe sees one MAC (a Linux NIC
/// answers only for its own address). After apply: each source leaves by its
/// own NIC through an `ip -6` rule, the doctor finds nothing, a second plan is
/// empty, the namespaces are gone.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_demo_fixes_the_seed_host_on_ipv6() {
    require_root("lab_demo_fixes_the_seed_host_on_ipv6");
    let o = run(&["--json", "lab", "--ipv6", "--nics", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["fixed"], true);
    assert_eq!(v["family"], "ipv6");
    let ids = |when: &str| -> Vec<(String, String)> {
        v[when]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] != "info")
            .map(|f| {
                (
                    f["id"].as_str().unwrap().to_string(),
                    f["subject"]["address"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let before = ids("before");
    assert!(
        before.contains(&("asymmetric-egress".into(), "fd00:198:18::12".into())),
        "{before:?}"
    );
    assert!(
        before.contains(&("source-rule-missing".into(), "fd00:198:18::11".into())),
        "{before:?}"
    );
    assert!(
        !before.iter().any(|(id, _)| id.starts_with("arp-")),
        "{before:?}"
    );
    assert!(ids("after").is_empty(), "{:?}", ids("after"));
    for when in ["before", "after"] {
        assert_eq!(
            v[when]["nd_probe"]["replies"].as_array().unwrap().len(),
            1,
            "{when}"
        );
    }
    let egress = |when: &str| -> Vec<(String, String)> {
        v[when]["egress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["nic"].as_str().unwrap().to_string(),
                    e["dev"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert!(egress("before").iter().all(|(_, d)| d == "r0"));
    assert!(egress("after").iter().all(|(n, d)| n == d));
    let rules = v["plan"]["changes"].to_string();
    assert!(rules.contains("fd00:198:18::13"), "{rules}");
    assert_eq!(v["second_plan_empty"], true);
    for ns in v["namespaces"].as_array().unwrap() {
        assert!(!Path::new("/run/netns").join(ns.as_str().unwrap()).exists());
    }
}

/// A global `--netns` or `--sysfs-root` would be ignored by `lab` (it builds
/// its own namespaces of veths): refused as a usage error before anything is built.
#[test]
fn lab_refuses_a_global_netns() {
    let o = run(&["--netns", "rnt-cli-nonexistent", "lab", "--nics", "2"]);
    assert_eq!(o.status.code(), Some(64), "{}", text(&o));
    assert!(text(&o).contains("does not take --netns"), "{}", text(&o));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    // Nor a --sysfs-root (the lab's veths have no RDMA devices), also as JSON.
    let o = run(&["--sysfs-root", "/nonexistent", "lab", "--nics", "2"]);
    assert_eq!(o.status.code(), Some(64), "{}", text(&o));
    assert!(
        text(&o).contains("does not take --sysfs-root"),
        "{}",
        text(&o)
    );
    let o = run(&["--json", "--sysfs-root", "/nonexistent", "lab"]);
    assert_eq!(o.status.code(), Some(64), "{}", text(&o));
    let e: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(e["error"]["kind"], "usage", "{e}");
    assert!(o.stdout.is_empty(), "{}", text(&o));
}

/// The namespaces a kept lab left, removed on drop (even when the test fails).
struct KeptLab(Vec<String>);
impl Drop for KeptLab {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn kept(v: &serde_json::Value) -> KeptLab {
    KeptLab(
        v["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect(),
    )
}

/// `lab --keep` leaves a host roce-net can work on: with the `--etc-root` and
/// `--state-dir` given (before or after `lab`), they hold the lab's table names
/// and journal, so `plan` on the kept host is empty and `status` / `rollback`
/// undo the lab's apply; without them, the printed hint commands carry the
/// lab's own kept directories and work as printed.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_keep_leaves_a_host_that_plans_empty_and_rolls_back() {
    require_root("lab_keep_leaves_a_host_that_plans_empty_and_rolls_back");
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    let state = dir.path().join("state");
    let (etc, state) = (etc.to_str().unwrap(), state.to_str().unwrap());
    let o = run(&[
        "--json",
        "--etc-root",
        etc,
        "lab",
        "--nics",
        "2",
        "--keep",
        "--state-dir",
        state,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lab = kept(&v);
    assert_eq!(v["kept"], true);
    assert_eq!(v["etc_root"], etc);
    assert_eq!(v["state_dir"], state);
    let ns = v["host_namespace"].as_str().unwrap().to_string();
    assert!(lab.0.contains(&ns));
    let on = |args: &[&str]| {
        let mut a = vec![
            "--json",
            "--netns",
            &ns,
            "--etc-root",
            etc,
            "--state-dir",
            state,
        ];
        a.extend_from_slice(args);
        run(&a)
    };
    let changes = |o: &Output| -> usize {
        assert_eq!(o.status.code(), Some(0), "{}", text(o));
        let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        p["changes"].as_array().unwrap().len()
    };
    assert_eq!(
        changes(&on(&["plan"])),
        0,
        "the kept host matches the policy"
    );
    let st = on(&["status"]);
    assert_eq!(st.status.code(), Some(0), "{}", text(&st));
    assert!(
        !String::from_utf8_lossy(&st.stdout).trim().is_empty()
            && String::from_utf8_lossy(&st.stdout).trim() != "null",
        "status finds the lab's journal: {}",
        text(&st)
    );
    let rb = on(&["rollback"]);
    assert_eq!(rb.status.code(), Some(0), "{}", text(&rb));
    assert!(changes(&on(&["plan"])) > 0, "rolled back: the plan is back");
    drop(lab);

    // Without the directories: the hint's `plan` command, run as printed.
    let o = run(&["lab", "--nics", "2", "--keep"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let lab = KeptLab(
        out.lines()
            .find_map(|l| l.trim().strip_prefix("for ns in "))
            .and_then(|l| l.split(';').next())
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    );
    let rm: Vec<String> = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("rm -r "))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let cleanup = Dirs(rm.clone());
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(lab.0.len(), 3, "{out}");
    assert_eq!(rm.len(), 2, "the kept temporary directories: {out}");
    let plan = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("roce-net --netns") && l.ends_with(" plan"))
        .unwrap_or_else(|| panic!("no plan hint: {out}"));
    assert!(
        plan.contains(" --etc-root ") && plan.contains(" --state-dir "),
        "{plan}"
    );
    let words: Vec<&str> = plan.split_whitespace().skip(1).collect();
    let p = run(&words);
    assert_eq!(p.status.code(), Some(0), "{}", text(&p));
    assert!(
        String::from_utf8_lossy(&p.stdout).contains("no changes"),
        "{plan}: {}",
        text(&p)
    );
    drop(lab);
    drop(cleanup);
    for d in &rm {
        assert!(!Path::new(d).exists(), "{d}");
    }
}

/// `lab` once made its table-names directory at the guessable
/// `$TMPDIR/roce-net-lab-<pid>-etc` and followed whatever was there, so an
/// unprivileged user's symlink to `/etc` had root's lab write
/// `iproute2/rt_tables.d/roce-net.conf` into it and leave it. The lab runs as
/// pid 1 of a new PID namespace, so the name is known in advance and planted
/// (a link owned by `nobody`, as a local user would leave it); the lab must
/// make a directory of its own instead and leave the link's target untouched.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn lab_never_follows_a_planted_temp_dir() {
    require_root("lab_never_follows_a_planted_temp_dir");
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim-etc");
    std::fs::create_dir(&victim).unwrap();
    let planted = tmp.path().join("roce-net-lab-1-etc");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
    let o = Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child"])
        .arg(env!("CARGO_BIN_EXE_roce-net"))
        .args(["--json", "lab", "--nics", "2"])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("running unshare");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let etc = v["etc_root"].as_str().unwrap_or_default().to_string();
    assert!(
        etc.starts_with(
            &tmp.path()
                .join("roce-net-lab-1-etc-")
                .to_string_lossy()
                .to_string()
        ),
        "a directory of its own under TMPDIR: {etc}"
    );
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing written through the planted link: {:?}",
        std::fs::read_dir(&victim)
            .unwrap()
            .map(|e| e.map(|e| e.path()))
            .collect::<Vec<_>>()
    );
    assert!(
        std::fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the planted link is left as it was"
    );
    assert!(!Path::new(&etc).exists(), "removed at exit: {etc}");
    for ns in v["namespaces"].as_array().unwrap() {
        assert!(!Path::new("/run/netns").join(ns.as_str().unwrap()).exists());
    }
}

/// Removes the listed directories on drop.
struct Dirs(Vec<String>);
impl Drop for Dirs {
    fn drop(&mut self) {
        for d in &self.0 {
            // Only the lab's own temporary directories.
            if d.contains("roce-net-lab-") {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}

/// Two NICs in one /24 behind nothing: enough for a plan with several changes.
fn small_lab(tag: &str) -> Ns {
    let name = format!("rnt-cli-{}-{tag}", std::process::id());
    assert!(Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .unwrap()
        .success());
    let ns = Ns(name);
    for (i, a) in ["198.18.2.11", "198.18.2.12"].iter().enumerate() {
        ip(&ns.0, &format!("link add r{i} type veth peer name x{i}"));
        ip(&ns.0, &format!("addr add {a}/24 dev r{i}"));
        ip(&ns.0, &format!("link set r{i} up"));
        ip(&ns.0, &format!("link set x{i} up"));
    }
    ns
}

fn state_of(ns: &str, etc: &Path) -> serde_json::Value {
    let o = run(&[
        "--netns",
        ns,
        "--etc-root",
        etc.to_str().unwrap(),
        "snapshot",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // What apply may change; counters, time and neighbours (none here) excluded,
    // and so are the IPv6 link-local routes the kernel adds on its own after DAD.
    let routes: Vec<serde_json::Value> = v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !(r["family"] == "inet6" && r["protocol"] == 2))
        .cloned()
        .collect();
    serde_json::json!({"routes": routes, "rules": v["rules"].take(), "sysctls": v["sysctls"].take(), "tables": v["table_names"].take()})
}

/// A small lab with its own `/etc` root and state directory, driven by the CLI.
struct LabCli {
    ns: Ns,
    etc: tempfile::TempDir,
    state_dir: tempfile::TempDir,
}

impl LabCli {
    fn new(tag: &str) -> LabCli {
        LabCli {
            ns: small_lab(tag),
            etc: tempfile::tempdir().unwrap(),
            state_dir: tempfile::tempdir().unwrap(),
        }
    }
    /// `--netns NS --etc-root DIR --state-dir DIR`.
    fn args(&self) -> [&str; 6] {
        [
            "--netns",
            &self.ns.0,
            "--etc-root",
            self.etc.path().to_str().unwrap(),
            "--state-dir",
            self.state_dir.path().to_str().unwrap(),
        ]
    }
    /// What apply may change, as `state_of` reads it.
    fn state(&self) -> serde_json::Value {
        state_of(&self.ns.0, self.etc.path())
    }
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_without_yes_and_without_a_terminal_changes_nothing() {
    require_root("apply_without_yes_and_without_a_terminal_changes_nothing");
    let lab = LabCli::new("noyes");
    let before = lab.state();
    let o = bin()
        .args(lab.args())
        .arg("apply")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(65), "{}", text(&o));
    assert!(text(&o).contains("--yes"), "{}", text(&o));
    assert_eq!(lab.state(), before);

    // A bad policy changes nothing either, and names the field.
    let pol = lab.etc.path().join("bad.yaml");
    std::fs::write(&pol, "routing:\n  table_base: 254\n  bogus: 1\n").unwrap();
    let o = bin()
        .args(lab.args())
        .args(["apply", "--yes", "-f", pol.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(65), "{}", text(&o));
    assert!(text(&o).contains("routing"), "{}", text(&o));
    assert_eq!(lab.state(), before);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn plan_then_apply_the_saved_plan_then_persist_dry_run() {
    require_root("plan_then_apply_the_saved_plan_then_persist_dry_run");
    let lab = LabCli::new("plan");
    let root = tempfile::tempdir().unwrap();
    let planf = lab.state_dir.path().join("plan.json");
    let common = lab.args();
    let o = bin()
        .args(common)
        .args(["plan", "-o", planf.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("+ rule from 198.18.2.12 lookup roce_r1(1002) pref 1002"),
        "{}",
        text(&o)
    );
    let o = bin()
        .args(common)
        .args(["apply", "--yes", "--plan", planf.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // Applying the same plan again, now in effect: nothing to do, exit 0,
    // nothing changed (the journal is the first apply's).
    let status = || {
        let o = bin()
            .args(common)
            .args(["--json", "status"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let applied = status();
    let before = lab.state();
    let o = bin()
        .args(common)
        .args(["apply", "--yes", "--plan", planf.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("the host already matches the plan"),
        "{}",
        text(&o)
    );
    assert!(text(&o).len() < 200, "{}", text(&o));
    assert_eq!(status(), applied);
    assert_eq!(lab.state(), before);
    let o = bin().args(common).args(["plan"]).output().unwrap();
    assert!(text(&o).contains("no changes"), "{}", text(&o));
    let o = bin()
        .args(common)
        .args([
            "persist",
            "--backend",
            "rt_tables.d",
            "--dry-run",
            "--root",
            root.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("dry run: nothing written"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "dry run wrote nothing"
    );
    let o = bin()
        .args(common)
        .args([
            "persist",
            "--backend",
            "sysctl.d",
            "--root",
            root.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // `--etc-root` (in the common arguments) moves /etc, `--root` the rest.
    let written =
        std::fs::read_to_string(lab.etc.path().join("sysctl.d/90-roce-net.conf")).unwrap();
    assert!(
        written.contains("net.ipv4.conf.all.arp_ignore = 1"),
        "{written}"
    );
}

/// Another namespace of this host (same /etc) already named tables 1001,
/// 1002 and 1005 for its NICs. `plan` and `apply --yes` here keep those names,
/// say so once with the way out, and rename nothing; `persist --dry-run` keeps
/// line 1005 (another namespace's table) and `persist --remove` leaves the
/// shared file.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn another_namespaces_table_names_are_kept_by_plan_apply_and_persist() {
    require_root("another_namespaces_table_names_are_kept_by_plan_apply_and_persist");
    let lab = LabCli::new("names");
    let common = lab.args();
    let names = lab.etc.path().join("iproute2/rt_tables.d/roce-net.conf");
    std::fs::create_dir_all(names.parent().unwrap()).unwrap();
    let theirs = "1001\troce_ens0f0np0\n1002\troce_ens0f1np1\n1005\troce_ens2f0np0\n";
    std::fs::write(&names, theirs).unwrap();
    let note = "note: table 1001 keeps the name roce_ens0f0np0";

    let o = bin().args(common).arg("plan").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("table-name"), "{}", text(&o));
    assert_eq!(text(&o).matches(note).count(), 1, "{}", text(&o));
    assert!(text(&o).contains("routing.table_base"), "{}", text(&o));

    let o = bin()
        .args(common)
        .args(["apply", "--yes"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("rename table"), "{}", text(&o));
    assert_eq!(text(&o).matches(note).count(), 1, "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&names).unwrap(), theirs);

    let o = bin().args(common).arg("plan").output().unwrap();
    assert!(text(&o).contains("no changes"), "{}", text(&o));
    assert_eq!(text(&o).matches(note).count(), 1, "{}", text(&o));

    let root = tempfile::tempdir().unwrap();
    let persist = |extra: &[&str]| {
        bin()
            .args(common)
            .args(["persist", "--root"])
            .arg(root.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let o = persist(&["--backend", "rt_tables.d", "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("-1005"), "{}", text(&o));
    assert!(!text(&o).contains("-1001"), "{}", text(&o));
    let o = persist(&["--backend", "rt_tables.d"]);
    assert!(o.status.success(), "{}", text(&o));
    let now = std::fs::read_to_string(&names).unwrap();
    assert!(now.ends_with(theirs), "{now}");
    let o = persist(&["--remove"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("left "), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&names).unwrap(), now);
}

/// `routing.table_base` changed after an apply: apply moves roce-net's own
/// names (its names file) to the new tables itself, with the routes and rules,
/// exit 0; `rollback` puts back exactly the names file, routes and rules of the
/// first apply. Another namespace of the same /etc with NICs of the same names
/// is refused (exit 65) without being told to edit roce-net's file, and its
/// lines are left alone. Before, the apply was refused (exit 65) with "remove
/// that entry from rt_tables(.d)": the operator was to edit roce-net's own file.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_changed_table_base_moves_the_names_apply_registered() {
    use crate::support::{text as both, Lab};
    require_root("a_changed_table_base_moves_the_names_apply_registered");
    let lab = Lab::new("base", 2);
    let policy = lab.etc.join("moved.yaml");
    std::fs::write(&policy, "routing:\n  table_base: 2000\n").unwrap();
    let names = lab.etc.join("iproute2/rt_tables.d/roce-net.conf");
    let o = lab.run(&["apply", "--yes"]);
    assert!(o.status.success(), "{}", both(&o));
    let first = lab.state();
    let o = lab
        .cli()
        .args(["apply", "--yes", "-f"])
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(!both(&o).contains("remove that entry"), "{}", both(&o));
    let moved = std::fs::read_to_string(&names).unwrap();
    assert!(
        moved.contains("2001\troce_r0\n2002\troce_r1\n") && !moved.contains("1001"),
        "{moved}"
    );
    let o = lab
        .cli()
        .args(["plan", "-f"])
        .arg(&policy)
        .output()
        .unwrap();
    assert!(both(&o).contains("no changes"), "{}", both(&o));
    let o = lab.run(&["rollback"]);
    assert!(o.status.success(), "{}", both(&o));
    assert_eq!(lab.state(), first, "exactly the first apply's state");

    // Another namespace, same /etc, same NIC names, no roce-net route in
    // tables 1001/1002: those lines are not its own to move.
    let other = Lab::with_etc("base2", 2, Some(&lab.etc));
    let o = other
        .cli()
        .args(["apply", "--yes", "-f"])
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(65), "{}", both(&o));
    let msg = both(&o);
    assert!(
        msg.contains("another network namespace") && !msg.contains("remove that entry"),
        "{msg}"
    );
    assert_eq!(
        lab.state(),
        first,
        "the first namespace's names are left alone"
    );
}

/// `persist --backend sysctl.d` after `--backend ifupdown` once removed the
/// if-up.d/if-down.d hooks ("no longer rendered"): the sysctls were added, the
/// rules lost at the next boot. A rendering that covers only part of
/// the fix keeps the routing persistence another backend wrote, and says so;
/// switching the routing backend (ifupdown -> networkd) removes the old files
/// only with `--switch-backend`, which the dry run shows.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn persist_never_takes_away_another_backends_files_unasked() {
    require_root("persist_never_takes_away_another_backends_files_unasked");
    let lab = LabCli::new("stale");
    let etc = lab.etc.path();
    two_stack_etc(etc);
    let root = tempfile::tempdir().unwrap();
    let persist = |extra: &[&str]| {
        let o = bin()
            .args(lab.args())
            .args(["persist", "--root"])
            .arg(root.path())
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", text(&o));
        text(&o)
    };
    let up = etc.join("network/if-up.d/roce-net");
    let down = etc.join("network/if-down.d/roce-net");
    persist(&["--backend", "ifupdown"]);
    let hook = std::fs::read_to_string(&up).unwrap();
    assert!(down.is_file());

    let t = persist(&["--backend", "sysctl.d"]);
    assert_eq!(std::fs::read_to_string(&up).unwrap(), hook, "{t}");
    assert!(down.is_file(), "{t}");
    assert!(
        t.contains(&format!("kept roce-net's earlier {}", up.display())),
        "{t}"
    );
    assert!(!t.contains("removed roce-net's"), "{t}");

    let t = persist(&["--backend", "networkd", "--dry-run"]);
    assert!(t.contains("--switch-backend"), "{t}");
    assert!(!t.contains("would remove roce-net's"), "{t}");
    let t = persist(&["--backend", "networkd", "--switch-backend", "--dry-run"]);
    assert!(
        t.contains(&format!("would remove roce-net's earlier {}", up.display())),
        "{t}"
    );
    assert!(up.is_file() && down.is_file(), "a dry run changes nothing");
    persist(&["--backend", "networkd"]);
    assert!(up.is_file() && down.is_file(), "not asked to switch");
    assert!(etc
        .join("systemd/network/20-r0.network.d/90-roce-net.conf")
        .is_file());
    let t = persist(&["--backend", "networkd", "--switch-backend"]);
    assert!(!up.exists() && !down.exists(), "{t}");
    assert!(
        t.contains(&format!("removed roce-net's earlier {}", up.display())),
        "{t}"
    );
}

/// Nothing is persisted for an apply that awaits confirmation: `persist`
/// after `apply --confirm-timeout` is refused (exit 75) naming `confirm`, and
/// writes nothing under the etc root or the root; its dry run still answers.
/// Once confirmed, the same `persist` writes.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn persist_is_refused_while_an_apply_awaits_confirmation() {
    require_root("persist_is_refused_while_an_apply_awaits_confirmation");
    let lab = LabCli::new("pendpersist");
    let root = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bin()
            .args(lab.args())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let persist = |extra: &[&str]| {
        let mut a = vec!["persist", "--backend", "sysctl.d", "--root"];
        a.push(root.path().to_str().unwrap());
        a.extend_from_slice(extra);
        run(&a)
    };
    let o = run(&["apply", "--yes", "--confirm-timeout", "600"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (etc, files) = (tree_of(lab.etc.path()), tree_of(root.path()));

    let o = persist(&[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(75), "{t}");
    assert!(
        t.contains("awaits confirmation") && t.contains(" confirm`, then persist"),
        "{t}"
    );
    assert_eq!(
        tree_of(lab.etc.path()),
        etc,
        "nothing written under the etc root"
    );
    assert_eq!(
        tree_of(root.path()),
        files,
        "nothing written under the root"
    );
    let o = persist(&["--dry-run"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a dry run writes nothing: {}",
        text(&o)
    );
    assert_eq!(tree_of(lab.etc.path()), etc);

    let o = run(&["confirm"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = persist(&[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "confirmed, persisted: {}",
        text(&o)
    );
    assert!(
        tree_of(lab.etc.path())
            .keys()
            .any(|p| p.starts_with("sysctl.d")),
        "the sysctl.d file written once confirmed"
    );
}

/// A real `kill -9` of `persist` (ifupdown, rule priorities 2001..) at
/// spread-out points over its run (0..60 ms, 30 runs) on a node where an
/// earlier persist wrote the 1001.. set. After each kill the two hooks are both
/// the old set or both the new one; or, when the kill landed in the switch, the
/// links it left are there, and what repairs them leaves one whole set with no
/// link left: the boot-time repair persist installed, run as its unit runs it
/// at boot (even runs), or the next `persist`, which says what it did (odd
/// runs). Never a mix, and never one a reboot would boot. The tally (how many
/// runs ended in each case) is printed.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn persist_killed_at_any_point_leaves_one_set() {
    require_root("persist_killed_at_any_point_leaves_one_set");
    let lab = LabCli::new("kill");
    let etc = lab.etc.path();
    ifupdown_etc(etc);
    let root = tempfile::tempdir().unwrap();
    let policy = |base: u32| {
        let p = root.path().join(format!("p{base}.yaml"));
        std::fs::write(&p, format!("routing:\n  rule_priority_base: {base}\n")).unwrap();
        p
    };
    let (old, new) = (policy(1000), policy(2000));
    let cmd = |p: &Path| {
        let mut c = bin();
        c.args(lab.args())
            .args(["persist", "--backend", "ifupdown", "--root"])
            .arg(root.path())
            .arg("-f")
            .arg(p)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let up = etc.join("network/if-up.d/roce-net");
    let down = etc.join("network/if-down.d/roce-net");
    let set_of = |p: &Path| -> &'static str {
        let t = std::fs::read_to_string(p).unwrap_or_default();
        match (t.contains("pref 1001"), t.contains("pref 2001")) {
            (true, false) => "old",
            (false, true) => "new",
            _ => "other",
        }
    };
    let markers = || {
        [&up, &down].iter().any(|p| {
            std::fs::read_dir(p.parent().unwrap())
                .unwrap()
                .filter_map(|e| e.ok())
                .any(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.contains(".roce-net-old.") || n.contains(".roce-net-absent.")
                })
        })
    };
    let repair = etc.join("systemd/system-generators/roce-net-persist-repair");
    let (mut before, mut after, mut at_boot, mut by_next) = (0, 0, 0, 0);
    const RUNS: u64 = 30;
    for i in 0..RUNS {
        let o = cmd(&old).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!((set_of(&up), set_of(&down)), ("old", "old"), "run {i}");
        let mut child = cmd(&new).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(i * 60_000 / RUNS));
        let _ = child.kill();
        let _ = child.wait();
        match (set_of(&up), set_of(&down), markers()) {
            ("old", "old", false) => before += 1,
            ("new", "new", false) => after += 1,
            (u, d, true) if i % 2 == 0 => {
                // Killed while switching, then the node reboots: the
                // boot-time repair persist installed runs before the network.
                let o = Command::new("/bin/sh")
                    .arg(&repair)
                    .arg("--repair")
                    .arg(etc)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "run {i} ({u}/{d}): {}", text(&o));
                let whole = (set_of(&up), set_of(&down));
                assert!(
                    matches!(whole, ("old", "old") | ("new", "new")) && !markers(),
                    "run {i} ({u}/{d}): the boot-time repair left {whole:?}: {}",
                    text(&o)
                );
                at_boot += 1;
            }
            (u, d, true) => {
                // Killed while switching: the next persist repairs the set
                // first and says so, then writes its own (here: the old policy).
                let o = cmd(&old).output().unwrap();
                assert!(o.status.success(), "run {i}: {}", text(&o));
                assert!(
                    text(&o).contains("put back the previous")
                        || text(&o).contains("did not exist before persist")
                        || text(&o).contains("had switched its whole set"),
                    "run {i} ({u}/{d}): {}",
                    text(&o)
                );
                assert!(!markers(), "run {i}");
                by_next += 1;
            }
            (u, d, false) => panic!("run {i}: a mixed set left silently: if-up {u}, if-down {d}"),
        }
    }
    eprintln!(
        "persist killed {RUNS} times: {before} before any change, {after} after the switch, \
         {} during it ({at_boot} repaired by the boot-time repair, {by_next} by the next \
         persist)",
        at_boot + by_next
    );
}

/// Every file under `dir` with its content, relative to it.
fn tree_of(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap_or_default(),
                );
            }
        }
    }
    out
}

/// `persist` (ifupdown: the sysctl drop-in, the table and protocol names, the
/// if-up.d and if-down.d hooks, each with its backup) killed by `SIGKILL` at
/// every point of its switch where it touches the disk: at its 1st, 2nd, ...
/// `renameat`, `fsync` and `unlinkat` (strace's fault injection,
/// `-e inject=SYSCALL:signal=KILL:when=N`, on the real binary), until a run
/// gets through. After each kill, the boot-time repair the first persist
/// installed is run as its unit runs it at boot (`/bin/sh
/// .../roce-net-persist-repair --repair ETC`): the tree is then exactly the
/// previous set or exactly the new one, byte for byte, as uninterrupted
/// persists leave them (no link or marker left). Before, a kill between the
/// first and the last rename left a mixed set that the next boot booted.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_reboot_after_persist_is_killed_at_any_syscall_boots_one_whole_set() {
    require_root("a_reboot_after_persist_is_killed_at_any_syscall_boots_one_whole_set");
    assert!(
        Command::new("strace").arg("-V").output().is_ok(),
        "needs strace (scripts/test.sh installs it)"
    );
    let ns = small_lab("killsys");
    let work = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let policy = |base: u32| {
        let p = work.path().join(format!("p{base}.yaml"));
        std::fs::write(&p, format!("routing:\n  rule_priority_base: {base}\n")).unwrap();
        p
    };
    let (old, new) = (policy(1000), policy(2000));
    // A node's root with its etc (the admin's ifupdown stanzas) and the
    // first persist's set in it.
    let fresh = |name: &str| {
        let root = work.path().join(name);
        ifupdown_etc(&root.join("etc"));
        root
    };
    let persist = |root: &Path, p: &Path| {
        let mut c = bin();
        c.args(["--netns", &ns.0, "--etc-root"])
            .arg(root.join("etc"))
            .args(["--state-dir"])
            .arg(root.join("state"))
            .args(["persist", "--backend", "ifupdown", "--root"])
            .arg(root)
            .arg("-f")
            .arg(p)
            .stdin(Stdio::null());
        c
    };
    let reference = fresh("reference");
    let o = persist(&reference, &old).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let before = tree_of(&reference);
    let o = persist(&reference, &new).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let after = tree_of(&reference);
    assert_ne!(before, after);
    let (mut kept_old, mut kept_new, mut runs) = (0, 0, Vec::new());
    for syscall in ["renameat", "fsync", "unlinkat"] {
        for n in 1.. {
            let root = fresh(&format!("{syscall}-{n}"));
            let o = persist(&root, &old).output().unwrap();
            assert!(o.status.success(), "{}", text(&o));
            let strace = format!("strace -f -qq -o /dev/null -e trace={syscall} -e inject={syscall}:signal=KILL:when={n}");
            let c = persist(&root, &new);
            let argv: Vec<_> = std::iter::once(c.get_program().to_owned())
                .chain(c.get_args().map(|a| a.to_owned()))
                .collect();
            let o = Command::new(strace.split(' ').next().unwrap())
                .args(strace.split(' ').skip(1))
                .args(&argv)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            if o.status.success() {
                // Past the last such call: the whole new set, as uninterrupted.
                assert_eq!(tree_of(&root), after, "{syscall} {n}: {}", text(&o));
                runs.push(format!("{} {syscall}", n - 1));
                break;
            }
            let etc = root.join("etc");
            let repair = etc.join("systemd/system-generators/roce-net-persist-repair");
            let r = Command::new("/bin/sh")
                .arg(&repair)
                .arg("--repair")
                .arg(&etc)
                .output()
                .unwrap();
            assert!(r.status.success(), "{syscall} {n}: {}", text(&r));
            let now = tree_of(&root);
            if now == before {
                kept_old += 1;
            } else {
                assert!(
                    now == after,
                    "{syscall} {n}: what would boot is not one whole set: {:?}\nrepair: {}",
                    now.keys().collect::<Vec<_>>(),
                    text(&r)
                );
                kept_new += 1;
            }
            std::fs::remove_dir_all(&root).unwrap();
        }
    }
    eprintln!(
        "persist killed at each of its {}: the boot-time repair kept the previous set \
         {kept_old} times, the new one {kept_new} times",
        runs.join(", ")
    );
    assert!(kept_old > 0 && kept_new > 0, "both outcomes seen");
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn read_only_verbs_without_privileges() {
    let as_nobody = |args: &[&str]| -> Output {
        let mut c = bin();
        c.args(args).stdin(Stdio::null());
        // SAFETY: setgid/setuid in the child before exec; async-signal-safe.
        unsafe {
            c.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c.output().unwrap()
    };
    // Reading the current namespace needs no privilege: a full result.
    let o = as_nobody(&["--json", "snapshot"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!v["interfaces"].as_array().unwrap().is_empty());
    // Entering another namespace does: a clear permission error, exit 77.
    require_root("read_only_verbs_without_privileges");
    let ns = small_lab("nobody");
    let o = as_nobody(&["--netns", &ns.0, "show"]);
    assert_eq!(o.status.code(), Some(77), "{}", text(&o));
    assert!(text(&o).contains("run as root"), "{}", text(&o));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn confirm_timeout_watchdog_process_rolls_back_unless_confirmed() {
    require_root("confirm_timeout_watchdog_process_rolls_back_unless_confirmed");
    let lab = LabCli::new("wd");
    let before = lab.state();
    let common = lab.args();

    // Not confirmed: the detached watchdog restores the host by itself.
    let o = bin()
        .args(common)
        .args(["apply", "--yes", "--confirm-timeout", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("confirm"), "{}", text(&o));
    let applied = lab.state();
    assert_ne!(applied, before);
    let t0 = Instant::now();
    while lab.state() != before {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the watchdog did not roll back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The host is back before the watchdog has recorded it (and let go of
    // the namespace lock): wait for its record, as `status` shows it.
    loop {
        let o = bin().args(common).arg("status").output().unwrap();
        if text(&o).contains("watchdog") && text(&o).contains("rolled_back at") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the watchdog did not record its rollback: {}",
            text(&o)
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Confirmed in time: kept after the deadline (5 s: under load, an apply
    // and a confirm of a 2 s deadline raced its watchdog).
    let o = bin()
        .args(common)
        .args(["apply", "--yes", "--confirm-timeout", "5"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = bin().args(common).arg("confirm").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::thread::sleep(Duration::from_millis(6500));
    assert_eq!(lab.state(), applied, "a confirmed apply is kept");
    let o = bin().args(common).arg("confirm").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(66),
        "nothing left to confirm: {}",
        text(&o)
    );
}

#[test]
fn metrics_writes_the_textfile_atomically_and_matches_stdout() {
    let snap = fixture("doctor/rdma-retransmits.bad.json");
    let snap = snap.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("roce_net.prom");
    std::fs::write(&prom, "old\n").unwrap();
    let o = run(&["metrics", "--from", snap, "-o", prom.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.is_empty());
    let written = std::fs::read_to_string(&prom).unwrap();
    let o = run(&["metrics", "--from", snap]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), written);
    assert!(written.contains("# TYPE roce_net_rdma_retransmits_total counter"));
    assert!(written.contains("roce_net_check_findings{check=\"rdma-retransmits\"} "));
    // Only the target is left: the temporary file was renamed over it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("roce_net.prom")]);
    // A directory that does not exist: an error naming the file, nothing written.
    let missing = dir.path().join("no/such/roce_net.prom");
    let o = run(&["metrics", "--from", snap, "-o", missing.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("roce_net.prom"), "{}", text(&o));
}

/// `probe arp` exits 0 only when exactly one MAC answers: ARP flux (several) and
/// silence (none) are exit 6, so a script can gate on it.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn probe_arp_exit_code_says_flux_or_silence() {
    require_root("probe_arp_exit_code_says_flux_or_silence");
    let lab = roce_net::Lab::seed_tagged("cliarp", 2).unwrap();
    let (host, peer) = (lab.host_ns().unwrap(), lab.peer_ns().unwrap());
    let p0 = lab.peer_nic().unwrap().name.clone();
    let target = lab.nics()[1].address.to_string();
    let probe = |target: &str| {
        let o = run(&[
            "--netns",
            peer,
            "--json",
            "probe",
            "arp",
            "--dev",
            &p0,
            "--target",
            target,
            "--count",
            "2",
            "--timeout",
            "1",
        ]);
        let v: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        (o.status.code(), v["replies"].as_array().unwrap().len())
    };
    // The seed host answers for r1's address from both NICs.
    assert_eq!(probe(&target), (Some(6), 2), "ARP flux");
    // Nobody has this address.
    assert_eq!(probe("198.18.0.250"), (Some(6), 0), "no answer");
    for (k, v) in [("arp_ignore", "1"), ("arp_announce", "2")] {
        let s = Command::new("ip")
            .args(["netns", "exec", host, "sysctl", "-qw"])
            .arg(format!("net.ipv4.conf.all.{k}={v}"))
            .status()
            .unwrap();
        assert!(s.success());
    }
    assert_eq!(probe(&target), (Some(0), 1), "fixed: one MAC");
}

/// `probe nd`, IPv6's `probe arp`, gates alike: exit 0 when exactly one MAC is
/// advertised for the address (Linux answers only from the NIC that holds
/// it), 6 when a second NIC answers too (proxy ND on `r0` for `r1`'s
/// address, a router then) or nobody holds the address; the text names the
/// MACs and the source, `--source` is used.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn probe_nd_exit_code_says_several_or_silence() {
    require_root("probe_nd_exit_code_says_several_or_silence");
    let lab = roce_net::Lab::seed_families("clind", 2, roce_net::AddressFamilies::Ipv6).unwrap();
    let (host, peer) = (lab.host_ns().unwrap(), lab.peer_ns().unwrap());
    let p0 = lab.peer_nic().unwrap().name.clone();
    let target = lab.nics()[1].addresses[0].addr().to_string();
    let mac = |dev: &str| {
        let st = roce_net::Host::netns(host).unwrap().snapshot().unwrap();
        st.interface(dev).unwrap().mac.as_ref().unwrap().to_string()
    };
    let probe = |target: &str, extra: &[&str]| {
        let mut args = vec![
            "--netns",
            peer,
            "probe",
            "nd",
            "--dev",
            &p0,
            "--target",
            target,
            "--count",
            "2",
            "--timeout",
            "1",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let json = |o: &Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
    };
    let macs = |v: &serde_json::Value| -> Vec<String> {
        let mut m: Vec<String> = v["replies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["mac"].as_str().unwrap().to_string())
            .collect();
        m.sort();
        m
    };

    // Healthy: r1 alone answers, from its own MAC.
    let o = probe(&target, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(macs(&v), [mac("r1")], "{v}");
    assert_eq!(v["source"], "fd00:198:18::100", "{v}");
    assert_eq!(v["requests_sent"], 2, "{v}");
    let o = probe(&target, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains(&format!(
            "ND probe for {target} from {p0} (source fd00:198:18::100): 2 solicitation(s), 1 distinct MAC(s) answered"
        )) && t.contains(&mac("r1")),
        "{t}"
    );

    // Mis-set: r0 answers for r1's address too (proxy ND, which the kernel
    // does only on a forwarding NIC; `router`: its advertisements carry the
    // router flag, NTF_ROUTER of the proxy entry, ndisc_recv_ns):
    // sysctl proxy_ndp=1 forwarding=1;
    // ip -6 neigh add proxy fd00:198:18::12 dev r0 router
    for k in ["proxy_ndp", "forwarding"] {
        let s = Command::new("ip")
            .args(["netns", "exec", host, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.r0.{k}=1"))
            .status()
            .unwrap();
        assert!(s.success());
    }
    ip(host, &format!("-6 neigh add proxy {target} dev r0 router"));
    let o = probe(&target, &["--json"]);
    assert_eq!(o.status.code(), Some(6), "several MACs: {}", text(&o));
    let mut want = vec![mac("r0"), mac("r1")];
    want.sort();
    assert_eq!(macs(&json(&o)), want);
    let t = text(&probe(&target, &[]));
    assert!(
        t.contains("several interfaces answer for one address"),
        "{t}"
    );
    assert!(
        t.contains(", router)"),
        "r0's proxy entry says router, its advertisement too: {t}"
    );

    // Nobody holds the address, asked from an explicit source.
    let o = probe(
        "fd00:198:18::250",
        &["--json", "--source", "fd00:198:18::101"],
    );
    assert_eq!(o.status.code(), Some(6), "no answer: {}", text(&o));
    let v = json(&o);
    assert!(macs(&v).is_empty(), "{v}");
    assert_eq!(v["source"], "fd00:198:18::101", "{v}");

    // Not an IPv6 address: a usage error, nothing sent.
    let o = probe("198.18.0.12", &[]);
    assert_eq!(o.status.code(), Some(64), "{}", text(&o));
}

/// The shared objects a built executable asks the loader for (`DT_NEEDED`, as
/// binutils' `objdump -p` lists them).
fn needed(exe: &Path) -> Vec<String> {
    let o = Command::new("objdump")
        .arg("-p")
        .arg(exe)
        .output()
        .expect("objdump (binutils) runs");
    assert!(
        o.status.success(),
        "objdump -p {}: {}",
        exe.display(),
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(|n| n.trim().to_string())
        .collect()
}

/// How build.rs linked the unwinder into this build, and why: `static` with
/// the default `cc` linker and GCC's `libgcc_eh.a`, `shared: ...` otherwise.
const UNWINDER: &str = env!("ROCE_NET_UNWINDER");
const STATIC_UNWINDER: bool = matches!(UNWINDER.as_bytes(), b"static");

/// The CLI starts without loading `libgcc_s.so.1` where build.rs links GCC's
/// static unwinder in its place (its constructor's `cpuid` probes and the
/// library's loading were about 5% of an 8-NIC apply's CPU time), and needs
/// it where build.rs says it did not.
#[test]
fn cli_starts_without_libgcc_s() {
    let libs = needed(Path::new(env!("CARGO_BIN_EXE_roce-net")));
    assert!(libs.iter().any(|l| l.starts_with("libc.so")), "{libs:?}");
    assert_eq!(
        libs.iter().any(|l| l.starts_with("libgcc_s")),
        !STATIC_UNWINDER,
        "build.rs says the unwinder is {UNWINDER}; the CLI needs {libs:?}"
    );
    if UNWINDER == "shared: no libgcc_eh.a" {
        // Only when GCC really has none (a wrong look-up must not pass).
        let o = Command::new("cc")
            .arg("-print-file-name=libgcc_eh.a")
            .output();
        let found = o.is_ok_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_file());
        assert!(!found, "cc has a libgcc_eh.a, but build.rs did not find it");
    }
}

/// What the unwinder must still do in an executable linked as the CLI is
/// (this test binary is, by the same build script): unwind a panic to
/// `catch_unwind`, running destructors on the way, and walk the stack for a
/// backtrace.
#[test]
fn the_linked_in_unwinder_unwinds_and_walks_the_stack() {
    struct Dropped<'a>(&'a std::cell::Cell<bool>);
    impl Drop for Dropped<'_> {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let exe = std::env::current_exe().expect("the test's own path");
    assert_eq!(
        needed(&exe).iter().any(|l| l.starts_with("libgcc_s")),
        !STATIC_UNWINDER,
        "this test binary is not linked as the CLI is"
    );
    let dropped = std::cell::Cell::new(false);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _d = Dropped(&dropped);
        std::panic::resume_unwind(Box::new("unwound"));
    }));
    assert_eq!(
        caught.err().and_then(|e| e.downcast_ref::<&str>().copied()),
        Some("unwound")
    );
    assert!(
        dropped.get(),
        "a destructor on the unwound frame did not run"
    );
    let bt = std::backtrace::Backtrace::force_capture();
    assert_eq!(bt.status(), std::backtrace::BacktraceStatus::Captured);
    let shown = bt.to_string();
    assert!(
        shown.contains("the_linked_in_unwinder_unwinds_and_walks_the_stack"),
        "the backtrace does not reach this test's frame: {shown}"
    );
}
