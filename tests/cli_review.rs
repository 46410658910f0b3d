//! Defects a black-box review of the CLI found (each failed before its fix):
//! plans from another namespace, the watchdog's record after a rollback by
//! hand, and recovery hints that must act on the same namespace and state
//! directory when run as printed. Lab tests, against throwaway namespaces.

mod support;

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
