//! Crash, signal, concurrency and churn tests of the real CLI, with no test hooks
//! in the product: the moment of a kill is picked by watching the journal's step
//! log grow. Every run must end in exactly the prior state or exactly the applied
//! state (full comparison of routes, rules, sysctls, table names and the names
//! file). The counts are small enough for CI (the whole file takes well under
//! three minutes on two cores) and each test prints its tally, which
//! docs/reliability.md reports.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// NICs of the lab the kills run in (147 changes).
const NICS: usize = 24;
const APPLY_KILLS: usize = 40;
const ROLLBACK_KILLS: usize = 25;

fn tally(test: &str, t: &BTreeMap<String, usize>) {
    let total: usize = t.values().sum();
    eprintln!("{test}: {total} runs");
    for (k, v) in t {
        eprintln!("  {v:>3}  {k}");
    }
}

/// Spawn `cmd`, wait until the file `log` has `lines` lines (or the child ended),
/// then send `sig`; returns the child's exit status and whether the signal
/// reached it while it ran.
///
/// The child is stopped (`SIGSTOP`) before the signal: a fast CLI can finish
/// between the last look at its log and the signal, and a signal sent to a
/// process that has already exited says nothing. Stopped, it was still running
/// and gets `sig`; exited, it finished first.
fn kill_at(
    mut child: Child,
    log: &Path,
    want: usize,
    sig: i32,
) -> (std::process::ExitStatus, bool) {
    let t0 = Instant::now();
    loop {
        if want == 0 || lines(log) >= want {
            break;
        }
        if let Ok(Some(st)) = child.try_wait() {
            return (st, false);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no progress in {}",
            log.display()
        );
        std::hint::spin_loop();
    }
    signal(child.id(), libc::SIGSTOP);
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: waitpid on our own child with a valid status pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
    if !libc::WIFSTOPPED(status) {
        use std::os::unix::process::ExitStatusExt;
        return (std::process::ExitStatus::from_raw(status), false);
    }
    signal(child.id(), sig);
    signal(child.id(), libc::SIGCONT);
    (child.wait().unwrap(), true)
}

fn changes(lab: &Lab) -> usize {
    let o = lab.run(&["--json", "plan"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["changes"].as_array().unwrap().len()
}

fn ok(lab: &Lab, args: &[&str]) {
    let o = lab.run(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
}

/// The prior and the applied state of a lab (left in the prior state).
fn prior_and_applied(lab: &Lab) -> (serde_json::Value, serde_json::Value) {
    let prior = lab.state();
    ok(lab, &["apply", "--yes"]);
    let applied = lab.state();
    assert_ne!(prior, applied);
    ok(lab, &["rollback"]);
    assert_eq!(lab.state(), prior, "rollback restores the lab exactly");
    (prior, applied)
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn sigkill_at_random_points_of_apply_and_of_rollback() {
    let test = "sigkill_at_random_points_of_apply_and_of_rollback";
    require_root(test);
    let lab = Lab::new("kill", NICS);
    let n = changes(&lab);
    let (prior, applied) = prior_and_applied(&lab);
    let log = lab.state_file(".journal.log").expect("the step log");
    let mut rng = Rng::new(test);
    let mut t: BTreeMap<String, usize> = BTreeMap::new();

    // Apply, killed after a random number of step-log lines (header, then a
    // `started` and a `done` line per change; 0: at once).
    for _ in 0..APPLY_KILLS {
        let last = lab.status()["apply_id"].clone();
        let _ = std::fs::remove_file(&log);
        let want = rng.below(2 * n as u64 + 3) as usize;
        let child = lab
            .cli()
            .args(["apply", "--yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        kill_at(child, &log, want, libc::SIGKILL);
        let j = lab.status();
        let outcome = if j["apply_id"] == last {
            assert_eq!(
                lab.state(),
                prior,
                "killed before its journal: nothing changed"
            );
            "apply killed before its first change: host unchanged".to_string()
        } else {
            match j["state"].as_str().unwrap() {
                "applying" => {
                    let done = j["steps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|s| s["status"] != "pending")
                        .count();
                    ok(&lab, &["rollback"]);
                    assert_eq!(lab.state(), prior, "rollback after a kill at {done}/{n}");
                    if done == n {
                        "apply killed in verify: `rollback` restored the prior state".into()
                    } else {
                        "apply killed between changes: `rollback` restored the prior state".into()
                    }
                }
                "committed" => {
                    assert_eq!(
                        lab.state(),
                        applied,
                        "a committed apply is the applied state"
                    );
                    ok(&lab, &["rollback"]);
                    assert_eq!(lab.state(), prior);
                    "apply finished before the kill: applied state".into()
                }
                other => panic!("unexpected journal state {other}: {j}"),
            }
        };
        *t.entry(outcome).or_default() += 1;
    }

    // Rollback of a committed apply, killed at a random point.
    for _ in 0..ROLLBACK_KILLS {
        ok(&lab, &["apply", "--yes"]);
        assert_eq!(lab.state(), applied);
        let _ = std::fs::remove_file(&log);
        let want = rng.below(n as u64 + 2) as usize;
        let child = lab
            .cli()
            .arg("rollback")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        kill_at(child, &log, want, libc::SIGKILL);
        let outcome = match lab.journal_state().as_str() {
            "committed" => {
                assert_eq!(
                    lab.state(),
                    applied,
                    "killed before it began: still applied"
                );
                ok(&lab, &["rollback"]);
                "rollback killed before it began: applied state; `rollback` again restored".into()
            }
            "rolling_back" => {
                ok(&lab, &["rollback"]);
                "rollback killed half way: `rollback` again finished it".to_string()
            }
            "rolled_back" => "rollback finished before the kill".to_string(),
            other => panic!("unexpected journal state {other}"),
        };
        assert_eq!(lab.state(), prior, "{outcome}");
        *t.entry(outcome).or_default() += 1;
    }
    tally(test, &t);
    // Where a kill lands depends on scheduling (the apply's 147 changes take a
    // few milliseconds); the test only means something if some landed while the
    // journal was open.
    let hit = |k: &str| {
        t.iter()
            .filter(|(o, _)| o.contains(k))
            .map(|(_, c)| c)
            .sum::<usize>()
    };
    assert!(
        hit("apply killed in") + hit("apply killed between") > 0 && hit("half way") > 0,
        "kills must land in apply and in rollback for this test to mean anything: {t:?}"
    );
}

/// `apply --confirm-timeout` in a session of its own (as an SSH login shell is),
/// hung up, terminated or killed at a random point: the watchdog, armed before
/// the first change, restores the prior state by the deadline.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn hangup_terminate_or_kill_of_a_confirm_timeout_apply_is_rolled_back() {
    let test = "hangup_terminate_or_kill_of_a_confirm_timeout_apply_is_rolled_back";
    require_root(test);
    let lab = Lab::new("hup", NICS);
    let n = changes(&lab);
    let (prior, _) = prior_and_applied(&lab);
    let log = lab.state_file(".journal.log").unwrap();
    let mut rng = Rng::new(test);
    let mut t: BTreeMap<String, usize> = BTreeMap::new();
    for (sig, name) in [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGKILL, "SIGKILL"),
    ]
    .iter()
    .cycle()
    .take(6)
    {
        let last = lab.status()["apply_id"].clone();
        let _ = std::fs::remove_file(&log);
        let want = 1 + rng.below(2 * n as u64 + 1) as usize;
        let err_file = lab.state.with_extension("stderr");
        let mut cmd = lab.cli();
        cmd.args(["apply", "--yes", "--confirm-timeout", "1"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_file).unwrap());
        // SAFETY: setsid and signal(2) in the child before exec. The signals'
        // default actions are set as a login shell's child has them: an ignored
        // disposition is inherited through exec, and this test may itself run
        // under `nohup` (then a hang-up rightly does nothing to the CLI).
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                    libc::signal(s, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        let (st, signalled) = kill_at(cmd.spawn().unwrap(), &log, want, *sig);
        wait_until(
            "the watchdog restores the prior state",
            Duration::from_secs(15),
            || lab.state() == prior,
        );
        let j = lab.status();
        assert_ne!(j["apply_id"], last, "the apply got as far as its journal");
        wait_until(
            "the watchdog records its outcome",
            Duration::from_secs(5),
            || lab.status()["watchdog"]["outcome"] == "rolled_back",
        );
        let j = lab.status();
        assert_eq!(j["state"], "rolled_back", "{j}");
        let was_applying = j["watchdog"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("was applying");
        let what = if !signalled {
            assert!(
                st.success(),
                "{st:?}: {}",
                std::fs::read_to_string(&err_file).unwrap_or_default()
            );
            "the CLI exited before the signal"
        } else if was_applying {
            "the journal was left `applying`"
        } else {
            "the apply finished first (the signal is held during the transaction)"
        };
        if signalled {
            assert_eq!(
                st.signal(),
                Some(*sig),
                "the CLI ends by the signal, not {st:?}: {}; journal {j}",
                std::fs::read_to_string(&err_file).unwrap_or_default()
            );
        }
        *t.entry(format!(
            "{name} mid-apply: {what}; the watchdog rolled back at the deadline"
        ))
        .or_default() += 1;
    }
    tally(test, &t);
}

use std::os::unix::process::ExitStatusExt;

/// Several appliers and rollbacks at once in one namespace: the lock serialises
/// them; every round ends in exactly the applied, then the prior state.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn concurrent_appliers_in_one_namespace() {
    let test = "concurrent_appliers_in_one_namespace";
    require_root(test);
    let lab = Lab::new("one", 4);
    let (prior, applied) = prior_and_applied(&lab);
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..5 {
        for (verb, want) in [("apply", &applied), ("rollback", &prior)] {
            let kids: Vec<Child> = (0..4)
                .map(|_| {
                    let mut c = lab.cli();
                    if verb == "apply" {
                        c.args(["apply", "--yes"]);
                    } else {
                        c.arg("rollback");
                    }
                    c.stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect();
            let mut done = 0;
            for k in kids {
                let code = k.wait_with_output().unwrap().status.code().unwrap_or(-1);
                // 0: done (or nothing left to do); 75: locked; 66: already rolled back.
                assert!(matches!(code, 0 | 66 | 75), "{verb} exited {code}");
                done += usize::from(code == 0);
                *codes.entry(format!("{verb} exit {code}")).or_default() += 1;
            }
            assert!(done >= 1, "one {verb} of each round goes through");
            if lab.state() != *want {
                // Every contender was locked out: run it once more, alone.
                ok(
                    &lab,
                    &[verb, "--yes"][..if verb == "apply" { 2 } else { 1 }],
                );
            }
            assert_eq!(lab.state(), *want, "after concurrent {verb}s");
        }
    }
    tally(test, &codes);
}

/// Appliers in several namespaces at once, sharing one `/etc` (so one
/// `rt_tables.d/roce-net.conf`): no update is lost and no name is orphaned.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn concurrent_appliers_across_namespaces_share_the_names_file_safely() {
    let test = "concurrent_appliers_across_namespaces_share_the_names_file_safely";
    require_root(test);
    let etc = tempfile::tempdir().unwrap();
    let labs: Vec<Lab> = (0..3)
        .map(|i| Lab::with_etc(&format!("x{i}"), 3, Some(etc.path())))
        .collect();
    let policies: Vec<std::path::PathBuf> = (0..3)
        .map(|i| {
            let p = etc.path().join(format!("p{i}.yaml"));
            std::fs::write(
                &p,
                format!(
                    "version: 1\nrouting:\n  table_base: {}\n  table_name_prefix: ns{i}_\n",
                    2000 + 100 * i
                ),
            )
            .unwrap();
            p
        })
        .collect();
    let names = etc.path().join("iproute2/rt_tables.d/roce-net.conf");
    let priors: Vec<_> = labs.iter().map(|l| l.state()).collect();
    let mut applied = Vec::new();
    for (l, p) in labs.iter().zip(&policies) {
        ok(l, &["apply", "--yes", "-f", p.to_str().unwrap()]);
    }
    for l in &labs {
        applied.push(l.state());
    }
    for l in &labs {
        ok(l, &["rollback"]);
    }
    let rounds = 8;
    for round in 0..rounds {
        for verb in ["apply", "rollback"] {
            let kids: Vec<Child> = labs
                .iter()
                .zip(&policies)
                .map(|(l, p)| {
                    let mut c = l.cli();
                    if verb == "apply" {
                        c.args(["apply", "--yes", "-f", p.to_str().unwrap()]);
                    } else {
                        c.arg("rollback");
                    }
                    c.stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for k in kids {
                let o = k.wait_with_output().unwrap();
                assert!(o.status.success(), "round {round} {verb}: {}", text(&o));
            }
            let want = if verb == "apply" { &applied } else { &priors };
            for (i, l) in labs.iter().enumerate() {
                // The names file is shared: compare each namespace's own view.
                let mut got = l.state();
                let mut exp = want[i].clone();
                got["names_file"] = serde_json::Value::Null;
                got["tables"] = serde_json::Value::Null;
                exp["names_file"] = serde_json::Value::Null;
                exp["tables"] = serde_json::Value::Null;
                assert_eq!(got, exp, "round {round} after {verb}: namespace {i}");
            }
            let text = std::fs::read_to_string(&names).ok();
            if verb == "apply" {
                let text = text.expect("the names file");
                for i in 0..3 {
                    for nic in 0..3 {
                        let line = format!("{}\tns{i}_r{nic}", 2001 + 100 * i + nic);
                        assert!(
                            text.lines().any(|l| l == line),
                            "round {round}: {line} lost:\n{text}"
                        );
                    }
                }
                assert_eq!(
                    text.lines().filter(|l| !l.starts_with('#')).count(),
                    9,
                    "{text}"
                );
            } else {
                assert_eq!(text, None, "round {round}: no orphan names left");
            }
        }
    }
    // Two namespaces with the same table names: one writes them, the other finds
    // them in place (not its to undo); after both roll back none is orphaned.
    let same = &policies[0];
    for round in 0..4 {
        let kids: Vec<Child> = labs[..2]
            .iter()
            .map(|l| {
                l.cli()
                    .args(["apply", "--yes", "-f", same.to_str().unwrap()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", text(&o));
        }
        for l in &labs[..2] {
            ok(l, &["rollback"]);
        }
        assert_eq!(std::fs::read_to_string(&names).ok(), None, "round {round}");
    }
    eprintln!("{test}: {rounds} rounds of 3 concurrent applies and 3 concurrent rollbacks, 4 rounds of a shared-name pair: no lost update, no orphan");
}

/// Route churn in an unrelated table (5000) during snapshots and applies, both
/// `apply -f` (planned under the lock) and `apply --plan` (a saved plan, checked
/// against what it touches): never refused as drift.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn route_churn_in_an_unrelated_table_is_not_drift() {
    let test = "route_churn_in_an_unrelated_table_is_not_drift";
    require_root(test);
    let lab = Lab::new("churn", 4);
    let prior = lab.state_without(&[5000]);
    let plan = lab.state.parent().unwrap().join("plan.json");
    let pol = lab.state.parent().unwrap().join("p.yaml");
    std::fs::write(&pol, "version: 1\n").unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let runs = 12;
    let mut churned = 0usize;
    std::thread::scope(|s| {
        let churn = s.spawn(|| {
            let mut k = 0usize;
            let add: String = (0..100)
                .map(|i| format!("route add 198.19.{}.0/24 dev r0 table 5000\n", i))
                .collect();
            let del = add.replace("route add", "route del");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                ip_batch(&lab.ns.0, &add);
                ip_batch(&lab.ns.0, &del);
                k += 200;
            }
            k
        });
        // Stop the churn even when an assertion below fails.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let stopper = Stop(&stop);
        for i in 0..runs {
            let o = if i % 2 == 0 {
                lab.run(&["apply", "--yes", "-f", pol.to_str().unwrap()])
            } else {
                let p = lab.run(&["plan", "-o", plan.to_str().unwrap()]);
                assert!(p.status.success(), "{}", text(&p));
                lab.run(&["apply", "--yes", "--plan", plan.to_str().unwrap()])
            };
            assert!(
                o.status.success(),
                "run {i} refused under unrelated churn: {}",
                text(&o)
            );
            ok(&lab, &["rollback"]);
            assert_eq!(lab.state_without(&[5000]), prior, "run {i}");
        }
        drop(stopper);
        churned = churn.join().unwrap();
    });
    eprintln!("{test}: {runs} applies (half saved plans) and rollbacks under {churned} route changes in table 5000: 0 refused");
}
