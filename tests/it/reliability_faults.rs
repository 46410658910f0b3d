//! Faults around the confirm watchdog and the locks, each as a test of the
//! real CLI against lab namespaces (each failed before its fix): a watchdog
//! told to stop or killed, a local user holding a lock, a route added with
//! `append`, a NIC gone between plan and apply. The in-process ones (a full state directory, a wall-clock step)
//! are in roce-net/src/apply/tests_faults.rs.

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::*;

fn ok(lab: &Lab, args: &[&str]) -> Output {
    let o = lab.run(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    o
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Whether process `pid` is gone (or a zombie).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

fn watchdog_pid(lab: &Lab) -> u32 {
    let s = lab.status();
    s["watchdog"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no watchdog pid: {s}")) as u32
}

/// A watchdog asked to stop (`SIGTERM` as `pkill roce-net` or a
/// shutdown sends, `SIGHUP` as a logout, `SIGINT`) before its apply is
/// confirmed rolls it back then and records which signal; on main it died and
/// left the apply in place, unguarded.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_watchdog_told_to_stop_rolls_back_its_unconfirmed_apply() {
    require_root("a_watchdog_told_to_stop_rolls_back_its_unconfirmed_apply");
    let lab = Lab::new("wdsig", 2);
    let prior = lab.state();
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
    ] {
        ok(&lab, &["apply", "--yes", "--confirm-timeout", "120"]);
        assert_ne!(lab.state(), prior);
        let pid = watchdog_pid(&lab);
        signal(pid, sig);
        wait_until(
            &format!("{name}: the watchdog rolls back"),
            Duration::from_secs(20),
            || lab.state() == prior,
        );
        wait_until("the outcome is recorded", Duration::from_secs(5), || {
            lab.status()["watchdog"]["outcome"] == "rolled_back"
        });
        let msg = lab.status()["watchdog"]["message"].to_string();
        assert!(msg.contains(name) && msg.contains("rolled back"), "{msg}");
        wait_until("the watchdog exits", Duration::from_secs(5), || gone(pid));
        assert_eq!(lab.journal_state(), "rolled_back");
    }
    // Confirmed, the same signal changes nothing.
    ok(&lab, &["apply", "--yes", "--confirm-timeout", "120"]);
    let applied = lab.state();
    let pid = watchdog_pid(&lab);
    ok(&lab, &["confirm"]);
    signal(pid, libc::SIGTERM);
    wait_until("the watchdog exits", Duration::from_secs(5), || gone(pid));
    assert_eq!(lab.state(), applied);
    assert_eq!(lab.journal_state(), "committed");
    ok(&lab, &["rollback"]);
}

/// After `kill -9` of the watchdog, `status` and `confirm` say that
/// nothing will roll the apply back by itself (on main: "it rolls back once
/// it holds the lock", "the watchdog rolls this apply back").
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn status_and_confirm_tell_the_truth_about_a_killed_watchdog() {
    require_root("status_and_confirm_tell_the_truth_about_a_killed_watchdog");
    let lab = Lab::new("wdkill", 2);
    let prior = lab.state();
    ok(&lab, &["apply", "--yes", "--confirm-timeout", "3"]);
    let applied = lab.state();
    let pid = watchdog_pid(&lab);
    signal(pid, libc::SIGKILL);
    wait_until("the watchdog is gone", Duration::from_secs(5), || gone(pid));
    let t = text(&ok(&lab, &["status"]));
    assert!(t.contains("NOT running") && t.contains(" rollback`"), "{t}");
    assert!(!t.contains("then rolled back"), "{t}");
    std::thread::sleep(Duration::from_secs(4));
    let o = lab.run(&["confirm"]);
    let t = text(&o);
    assert!(!o.status.success(), "too late: {t}");
    assert!(t.contains("not running") && t.contains(" rollback`"), "{t}");
    assert!(!t.contains("the watchdog rolls this apply back"), "{t}");
    assert_eq!(lab.state(), applied, "nothing rolled it back");
    ok(&lab, &["rollback"]);
    assert_eq!(lab.state(), prior);
}

/// A child holding `flock` on `lock` (as `nobody` with `unprivileged`),
/// once it says it holds it; `None` when it could not take it.
fn hold(lock: &std::path::Path, unprivileged: bool) -> Option<std::process::Child> {
    let mut c = if unprivileged {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "flock"]);
        c
    } else {
        Command::new("flock")
    };
    let mut child = c
        .arg("-xn")
        .arg(lock)
        .args(["-c", "echo held; exec sleep 60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let out = child.stdout.take().unwrap();
    let _ = BufReader::new(out).read_line(&mut line);
    if line.trim() == "held" {
        Some(child)
    } else {
        let _ = child.wait();
        None
    }
}

fn end(mut c: std::process::Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// A local user cannot hold the namespace lock: lock files are
/// private (0600), one left readable by an older roce-net is replaced (who
/// holds it holds nothing), and a lock another program holds is not blamed on
/// roce-net. On main `nobody` held it and root's rollback exited 75 "another
/// roce-net ... holds the lock".
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_local_user_cannot_hold_the_namespace_lock() {
    require_root("a_local_user_cannot_hold_the_namespace_lock");
    let lab = Lab::new("lockuser", 2);
    // Others may reach the state directory (as under /run/roce-net).
    let parent = lab.state.parent().unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prior = lab.state();
    ok(&lab, &["apply", "--yes"]);
    let lock = lab.state_file(".lock").unwrap();
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", lock.display());
    assert!(hold(&lock, true).is_none(), "nobody took the lock");

    // A lock file others can open, as an older roce-net left it, held by nobody.
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    let squatter = hold(&lock, true).expect("nobody holds the old lock file");
    let o = lab.run(&["rollback"]);
    assert!(o.status.success(), "rollback: {}", text(&o));
    assert_eq!(lab.state(), prior);
    end(squatter);
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Another (root) program holding it is named, and not called roce-net.
    let holder = hold(&lock, false).expect("root's flock holds it");
    let o = lab.run(&["apply", "--yes"]);
    let t = text(&o);
    end(holder);
    assert_eq!(code(&o), 75, "{t}");
    assert!(
        t.contains("\"flock\"") && t.contains("not a roce-net"),
        "{t}"
    );
    assert!(!t.contains("another roce-net"), "{t}");
    assert_eq!(lab.state(), prior);
}

/// A local user cannot hold the host-wide lock of the
/// table names. `nobody` holds a `flock` on everything it can open under the
/// etc root's `rt_tables.d` (the directory itself, which was the lock, and
/// `roce-net.conf`); root's apply, persist and rollback go on, and the lock
/// file (`.roce-net.lock`, 0600, there only while root holds it) is one
/// `nobody` can neither open nor make. On main the
/// apply waited 30 s for the directory's lock, failed, and its rollback
/// waited 30 s more: exit 4, `rollback_failed` "mixed state" on an unchanged
/// host; persist waited 30 s and failed.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_local_user_cannot_hold_the_table_names_lock() {
    require_root("a_local_user_cannot_hold_the_table_names_lock");
    let lab = Lab::new("nameslock", 2);
    // Others may reach the etc root (as /etc), and rt_tables.d (0755) exists.
    let parent = lab.state.parent().unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = lab.etc.join("iproute2/rt_tables.d");
    std::fs::create_dir_all(&dir).unwrap();
    for d in [&lab.etc, &lab.etc.join("iproute2"), &dir] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let prior = lab.state();
    let mut squatters = vec![hold(&dir, true).expect("nobody holds rt_tables.d")];
    let o = lab.run(&["apply", "--yes"]);
    let t = text(&o);
    if !o.status.success() {
        squatters.into_iter().for_each(end);
        panic!("apply: {t}");
    }
    let applied = lab.state();
    assert_ne!(applied, prior);
    assert!(applied["names_file"].is_string(), "{applied}");
    // The lock file exists only while root's writer holds it (0600 then:
    // rt_tables::write's unit test), and nobody cannot make one to hold
    // in its place.
    let lock = dir.join(".roce-net.lock");
    assert!(!lock.exists(), "{} left behind", lock.display());
    assert!(hold(&lock, true).is_none(), "nobody took the lock");
    // The names file (0644) too.
    squatters.push(hold(&dir.join("roce-net.conf"), true).expect("nobody holds roce-net.conf"));

    let root = parent.join("root");
    std::fs::create_dir(&root).unwrap();
    let o = lab.run(&[
        "persist",
        "--backend",
        "rt_tables.d",
        "--root",
        root.to_str().unwrap(),
    ]);
    let persisted = o.status.success();
    let pt = text(&o);
    let o = lab.run(&["rollback"]);
    squatters.into_iter().for_each(end);
    assert!(persisted, "persist: {pt}");
    assert!(o.status.success(), "rollback: {}", text(&o));
    assert_eq!(lab.journal_state(), "rolled_back");
    // The names persist wrote for boot stay; the host is otherwise
    // as before.
    let after = lab.state();
    for k in ["routes", "rules", "sysctls"] {
        assert_eq!(after[k], prior[k], "{k}");
    }
}

/// Two leftover routes of roce-net's sharing one key (the second
/// added with `ip route append`) are deleted by apply and both put back by
/// rollback, the second beside the first (append semantics). On main the
/// rollback re-added it exclusively, got EEXIST and exited 4 with advice that
/// could never succeed.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_route_added_with_append_is_restored() {
    require_root("a_route_added_with_append_is_restored");
    let lab = Lab::new("append", 2);
    ip(
        &lab.ns.0,
        "route add 198.19.9.0/24 dev r1 table 1001 proto 201",
    );
    ip(
        &lab.ns.0,
        "route append 198.19.9.0/24 dev r0 table 1001 proto 201",
    );
    let prior = lab.state();
    ok(&lab, &["apply", "--yes"]);
    assert_ne!(lab.state(), prior);
    let o = lab.run(&["rollback"]);
    assert!(o.status.success(), "rollback: {}", text(&o));
    assert_eq!(lab.state(), prior);
    assert_eq!(lab.journal_state(), "rolled_back");
}

/// A NIC deleted, renamed, stripped of its address or put in a
/// bridge between `plan -o` and `apply --plan` is drift (exit 73, "the host
/// changed"), not an edited plan (65). On main each gave 65 "the plan was
/// edited or made by something else". Nothing is applied either way.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_nic_gone_between_plan_and_apply_is_drift() {
    require_root("a_nic_gone_between_plan_and_apply_is_drift");
    for (what, script) in [
        ("deleted", "link del r2\n"),
        (
            "renamed",
            "link set r2 down\nlink set r2 name q2\nlink set q2 up\n",
        ),
        ("stripped of its address", "addr flush dev r2\n"),
        (
            "bridged",
            "link add br9 type bridge\nlink set br9 up\nlink set r2 master br9\n",
        ),
    ] {
        let lab = Lab::new("plandrift", 3);
        let plan = lab.state.parent().unwrap().join("plan.json");
        let p = plan.to_str().unwrap();
        ok(&lab, &["plan", "-o", p]);
        ip_batch(&lab.ns.0, script);
        let before = lab.state();
        let o = lab.run(&["apply", "--yes", "--plan", p]);
        let t = text(&o);
        assert_eq!(code(&o), 73, "r2 {what}: {t}");
        assert!(!t.contains("edited or made by something else"), "{t}");
        assert_eq!(lab.state(), before, "r2 {what}: nothing applied");
    }
}
