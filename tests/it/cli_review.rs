//! Defects a black-box review of the CLI found (each failed before its fix):
//! plans from another namespace, the watchdog's record after a rollback by
//! hand, and recovery hints that must act on the same namespace and state
//! directory when run as printed. Lab tests, against throwaway namespaces.

use crate::support;

use std::process::Output;
use std::time::Duration;
use support::*;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn ok(lab: &Lab, args: &[&str]) -> Output {
    let o = lab.run(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    o
}

/// A lab whose state directory has a space in its name, so a hint must quote it.
fn lab(tag: &str) -> Lab {
    let mut lab = Lab::new(tag, 2);
    lab.state = lab.state.with_file_name("state dir");
    lab
}

/// Every backquoted `roce-net ...` command in `t`.
fn hints(t: &str) -> Vec<String> {
    t.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("roce-net "))
        .map(str::to_string)
        .collect()
}

/// Run `cmd` exactly as printed, through a shell, with `roce-net` being the
/// binary under test.
fn run_as_printed(cmd: &str) -> Output {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_roce-net"));
    let path = format!(
        "{}:{}",
        exe.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_plan_made_in_another_namespace_is_refused_as_that() {
    require_root("a_plan_made_in_another_namespace_is_refused_as_that");
    let (a, b) = (lab("plana"), lab("planb"));
    let file = a.state.with_file_name("plan.json");
    let f = file.to_str().unwrap();
    ok(&a, &["plan", "-o", f]);
    let before = b.state();
    let o = b.run(&["apply", "--plan", f, "--yes"]);
    let t = text(&o);
    assert_eq!(code(&o), 65, "{t}");
    let host = String::from_utf8(std::fs::read("/proc/sys/kernel/hostname").unwrap()).unwrap();
    let host = host.trim();
    assert!(
        t.contains(&format!(
            "this plan was made for {host}/{}; this is {host}/{}",
            a.ns.0, b.ns.0
        )),
        "{t}"
    );
    assert!(!t.contains("made by something else"), "{t}");
    assert_eq!(b.state(), before, "nothing applied");
    // The hint makes a plan in B, with B's options, as printed.
    let h = hints(&t);
    let plan = h
        .iter()
        .find(|c| c.contains(" plan -o FILE"))
        .expect("a plan hint");
    assert!(plan.contains(&format!("--netns {}", b.ns.0)), "{plan}");
    let fresh = b.state.with_file_name("fresh.json");
    let o = run_as_printed(&plan.replace("FILE", fresh.to_str().unwrap()));
    assert!(o.status.success(), "{plan}: {}", text(&o));
    let o = b.run(&["apply", "--plan", fresh.to_str().unwrap(), "--yes"]);
    assert!(
        o.status.success(),
        "the plan made as hinted applies: {}",
        text(&o)
    );
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_rollback_by_hand_records_that_the_watchdog_stood_down() {
    require_root("a_rollback_by_hand_records_that_the_watchdog_stood_down");
    let lab = lab("standdown");
    ok(&lab, &["apply", "--yes", "--confirm-timeout", "3"]);
    let pid = lab.status()["watchdog"]["pid"]
        .as_u64()
        .expect("a watchdog pid");
    ok(&lab, &["rollback"]);
    let j = lab.status();
    assert_eq!(j["watchdog"]["outcome"], "stood_down", "{j}");
    wait_until("the watchdog exits", Duration::from_secs(10), || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    std::thread::sleep(Duration::from_secs(1));
    let j = lab.status();
    assert_eq!(j["watchdog"]["outcome"], "stood_down", "{j}");
    let t = text(&ok(&lab, &["status"]));
    assert!(
        t.contains(&format!("watchdog (pid {pid}): stood_down at "))
            && t.contains("rolled back by hand; the watchdog stood down"),
        "{t}"
    );
    assert!(!t.contains("waiting for the deadline"), "{t}");
    assert!(t.contains(" s ago)") && !t.contains("(in 0 s)"), "{t}");
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn recovery_hints_run_as_printed_act_on_the_same_namespace_and_state() {
    require_root("recovery_hints_run_as_printed_act_on_the_same_namespace_and_state");
    let lab = lab("hints");
    let o = ok(&lab, &["apply", "--yes", "--confirm-timeout", "600"]);
    let t = text(&o);
    let confirm = hints(&t).into_iter().find(|c| c.ends_with(" confirm"));
    let confirm = confirm.unwrap_or_else(|| panic!("a confirm hint: {t}"));
    assert!(confirm.contains("'"), "the state dir is quoted: {confirm}");
    // A second apply is refused; its hint names confirm and rollback.
    let o = lab.run(&["apply", "--yes"]);
    let t = text(&o);
    assert_eq!(code(&o), 75, "{t}");
    // The deadline is a time people read, not Unix seconds.
    assert!(
        t.contains("awaits confirmation until 20") && t.contains(" UTC (in "),
        "{t}"
    );
    let h = hints(&t);
    let rollback = h
        .iter()
        .find(|c| c.ends_with(" rollback"))
        .expect("rollback");
    for c in &h {
        assert!(
            c.contains(&format!("--netns {}", lab.ns.0)) && c.contains("--state-dir"),
            "{c}"
        );
    }
    // The same under --json.
    let o = lab.run(&["--json", "apply", "--yes"]);
    let e: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert!(
        hints(e["error"]["message"].as_str().unwrap()).contains(rollback),
        "{e}"
    );
    let o = run_as_printed(rollback);
    assert!(o.status.success(), "{rollback}: {}", text(&o));
    assert_eq!(lab.journal_state(), "rolled_back");
    // apply again, then the hint printed by apply confirms it.
    let o = ok(&lab, &["apply", "--yes", "--confirm-timeout", "600"]);
    let confirm = hints(&text(&o))
        .into_iter()
        .find(|c| c.ends_with(" confirm"))
        .unwrap();
    let o = run_as_printed(&confirm);
    assert!(o.status.success(), "{confirm}: {}", text(&o));
    assert_eq!(lab.journal_state(), "committed");
}

fn cli(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn json_error(o: &Output) -> serde_json::Value {
    let e = String::from_utf8_lossy(&o.stderr);
    serde_json::from_str(e.trim()).unwrap_or_else(|_| panic!("not one JSON error: {e}"))
}

/// Command-line errors under `--json` are the documented JSON error, exit 64,
/// wherever `--json` stands; without it, the parser's text.
#[test]
fn usage_errors_under_json_are_json() {
    for args in [
        &["--json", "show", "--bogus"][..],
        &["show", "--bogus", "--json"],
        &["--json", "route-get", "not-an-ip"],
    ] {
        let o = cli(args);
        assert_eq!(code(&o), 64, "{args:?}: {}", text(&o));
        let v = json_error(&o);
        assert_eq!(v["error"]["kind"], "usage", "{v}");
        assert!(v["error"]["causes"].as_array().unwrap().is_empty(), "{v}");
        assert!(o.stdout.is_empty());
    }
    let v = json_error(&cli(&["--json", "show", "--bogus"]));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'--bogus'"),
        "{v}"
    );
    let o = cli(&["show", "--bogus"]);
    assert_eq!(code(&o), 64);
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("error: unexpected argument"));
    // `--json` after `--` is no option.
    let o = cli(&["gids", "--", "--json"]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .find("{\"error\"")
            .is_none(),
        "{}",
        text(&o)
    );
}

/// The internal watchdog verb is not offered when a subcommand is missing.
#[test]
fn a_missing_subcommand_does_not_list_the_internal_watchdog() {
    for args in [&["--state-dir", "/nonexistent-rn"][..], &["--json"]] {
        let o = cli(args);
        assert_eq!(code(&o), 64, "{}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("requires a subcommand") && t.contains("apply"),
            "{t}"
        );
        assert!(!t.contains("__watchdog"), "{t}");
    }
}

/// `metrics` writes one format, Prometheus text; `--json` is a usage error.
#[test]
fn metrics_refuses_json() {
    let o = cli(&["--json", "metrics", "--from", "/nonexistent-rn.json"]);
    assert_eq!(code(&o), 64, "{}", text(&o));
    assert!(o.stdout.is_empty());
    let v = json_error(&o);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Prometheus"),
        "{v}"
    );
}

/// Out-of-range values are usage errors (64) at parse time, not data errors.
#[test]
fn bad_option_values_exit_64() {
    for args in [
        &["lab", "--nics", "1"][..],
        &["lab", "--nics", "65"],
        &[
            "persist",
            "--backend",
            "bogus",
            "--dry-run",
            "--root",
            "/nonexistent-rn",
        ],
    ] {
        let o = cli(args);
        assert_eq!(code(&o), 64, "{args:?}: {}", text(&o));
    }
    let t = text(&cli(&["lab", "--nics", "1"]));
    assert!(t.contains("from 2 to 64"), "{t}");
}

/// A hint printed by a command given `--sysfs-root` names it too: the command
/// it hints at observes the same RDMA devices.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_hint_keeps_the_sysfs_root() {
    require_root("a_hint_keeps_the_sysfs_root");
    let lab = lab("sysfshint");
    let sys = tempfile::tempdir().unwrap();
    let file = lab.state.with_file_name("plan.json");
    let o = ok(
        &lab,
        &[
            "--sysfs-root",
            sys.path().to_str().unwrap(),
            "plan",
            "-o",
            file.to_str().unwrap(),
        ],
    );
    let t = text(&o);
    let h = hints(&t);
    let apply = h
        .iter()
        .find(|c| c.contains(" apply"))
        .expect("an apply hint");
    assert!(
        apply.contains(&format!("--sysfs-root {}", sys.path().display())),
        "{apply}"
    );
}

/// A `--sysfs-root` that does not exist is an error naming it; an empty one
/// is named where `show` says it found no RDMA device.
#[test]
fn the_sysfs_root_looked_at_is_named() {
    let o = cli(&["--sysfs-root", "/nonexistent-rn", "show"]);
    assert_eq!(code(&o), 66, "{}", text(&o));
    assert!(
        text(&o).contains("--sysfs-root /nonexistent-rn: no such directory"),
        "{}",
        text(&o)
    );
    let d = tempfile::tempdir().unwrap();
    let o = cli(&["--sysfs-root", d.path().to_str().unwrap(), "show"]);
    assert!(o.status.success(), "{}", text(&o));
    let want = format!("none (none in {}/class/infiniband)", d.path().display());
    assert!(text(&o).contains(&want), "{}", text(&o));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_json_has_the_same_keys_with_or_without_changes() {
    require_root("apply_json_has_the_same_keys_with_or_without_changes");
    let lab = Lab::new("applyjson", 2);
    let keys = |o: &Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let want = [
        "announced",
        "applied",
        "apply_id",
        "changes",
        "confirm_deadline",
        "journal",
        "notes",
    ];
    let first = ok(&lab, &["--json", "apply", "--yes"]);
    assert_eq!(keys(&first), want);
    let again = ok(&lab, &["--json", "apply", "--yes"]);
    assert_eq!(keys(&again), want);
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["applied"], 0);
    assert!(v["journal"].is_null() && v["apply_id"].is_null() && v["confirm_deadline"].is_null());
    assert_eq!(v["notes"], serde_json::json!([]));
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_with_nothing_to_roll_back_creates_nothing() {
    require_root("rollback_with_nothing_to_roll_back_creates_nothing");
    let lab = Lab::new("rbnothing", 1);
    let o = lab.run(&["rollback"]);
    assert_eq!(code(&o), 66, "{}", text(&o));
    assert!(text(&o).contains("nothing to roll back"), "{}", text(&o));
    assert!(!lab.state.exists(), "the state directory was created");
    // An existing state directory gets no lock file either.
    std::fs::create_dir(&lab.state).unwrap();
    let o = lab.run(&["rollback"]);
    assert_eq!(code(&o), 66, "{}", text(&o));
    assert_eq!(std::fs::read_dir(&lab.state).unwrap().count(), 0);
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn entering_a_namespace_without_privilege_names_cap_sys_admin() {
    use std::os::unix::process::CommandExt;
    require_root("entering_a_namespace_without_privilege_names_cap_sys_admin");
    let ns = netns("eperm", 0);
    let mut c = bin();
    c.args(["--netns", &ns.0, "show"]);
    // SAFETY: setgroups/setgid/setuid in the child before exec.
    unsafe {
        c.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    let t = text(&o);
    assert_eq!(code(&o), 77, "{t}");
    assert!(
        t.contains("entering a network namespace needs CAP_SYS_ADMIN"),
        "{t}"
    );
    assert!(!t.contains("CAP_NET_ADMIN"), "{t}");
}
