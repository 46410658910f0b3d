//! Issue 25 defect 1: `roce-net lab` interrupted by SIGINT (Ctrl-C), SIGTERM (a
//! CI timeout) or SIGHUP (a dropped SSH session) at several points removes its
//! namespaces and temporary directories and says so.

mod support;

use std::process::Stdio;
use std::time::Duration;
use support::*;

/// The lab's namespaces (`rnt-demo-<pid>-*`) and temporary directories
/// (`roce-net-lab-<pid>-*` under `tmp`) still there.
fn leftovers(pid: u32, tmp: &std::path::Path) -> Vec<String> {
    let mut left = Vec::new();
    let ns = format!("rnt-demo-{pid}-");
    let dir = format!("roce-net-lab-{pid}-");
    for (d, prefix) in [(std::path::Path::new("/run/netns"), &ns), (tmp, &dir)] {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n.starts_with(prefix.as_str()) {
                    left.push(e.path().display().to_string());
                }
            }
        }
    }
    left
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_interrupted_lab_removes_what_it_built_and_says_so() {
    require_root("an_interrupted_lab_removes_what_it_built_and_says_so");
    let tmp = tempfile::tempdir().unwrap();
    let mut interrupted = 0;
    let mut early = 0;
    let mut runs = 0;
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        // While the directories and namespaces are made, while the lab is
        // observed and applied, and late in the run.
        for delay_ms in [30u64, 300, 900, 1800] {
            let child = bin()
                .arg("lab")
                .env("TMPDIR", tmp.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            std::thread::sleep(Duration::from_millis(delay_ms));
            signal(pid, sig);
            let o = child.wait_with_output().unwrap();
            runs += 1;
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            let left = leftovers(pid, tmp.path());
            assert!(
                left.is_empty(),
                "{name} after {delay_ms} ms left {left:?}: {err}"
            );
            match o.status.code() {
                // Finished before the signal: it cleaned up as always.
                Some(0) => {}
                Some(c) => {
                    assert_eq!(c, 128 + sig, "{name} after {delay_ms} ms: {err}");
                    assert!(
                        err.contains(&format!("roce-net lab: interrupted by {name}: removed namespaces rnt-demo-{pid}-")),
                        "{name} after {delay_ms} ms: {err}"
                    );
                    assert!(err.contains("directories"), "{err}");
                    interrupted += 1;
                }
                // Ended by the signal itself: it came before the lab took the
                // signals over (process start-up on a loaded machine), when
                // nothing was built yet, as `left` above shows.
                None => early += 1,
            }
        }
    }
    eprintln!(
        "{interrupted} of {runs} runs interrupted and cleaned up, {early} ended by the signal \
         before building anything; none left anything behind"
    );
    assert!(interrupted >= 6, "{interrupted} of {runs} interrupted");
}
