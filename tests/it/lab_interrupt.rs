//! `roce-net lab` interrupted by SIGINT (Ctrl-C), SIGTERM (a
//! CI timeout) or SIGHUP (a dropped SSH session) at several points removes its
//! namespaces and temporary directories and says so.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// The lab's namespaces (`rnt-demo-<pid>-*`) and temporary directories
/// (`roce-net-lab-<pid>-*` under `tmp`) still there.
fn leftovers(pid: u32, tmp: &Path) -> Vec<String> {
    let mut left = Vec::new();
    let ns = format!("rnt-demo-{pid}-");
    let dir = format!("roce-net-lab-{pid}-");
    for (d, prefix) in [(Path::new("/run/netns"), &ns), (tmp, &dir)] {
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

/// Start a lab with `start` (its `TMPDIR` set to `tmp`), signal it with each
/// of SIGINT, SIGTERM and SIGHUP at several points, and check that no run left
/// a namespace or temporary directory and each interrupted one said what it
/// removed. Returns how many runs were interrupted.
fn interrupt_each_way(what: &str, tmp: &Path, start: impl Fn() -> Command) -> usize {
    let mut interrupted = 0;
    let mut early = 0;
    let mut runs = 0;
    let mut with_namespaces = 0;
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        // While the directories and namespaces are made, while the lab is
        // observed and applied, and late in the run.
        for delay_ms in [30u64, 300, 900, 1800] {
            let child = start()
                .env("TMPDIR", tmp)
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
            let left = leftovers(pid, tmp);
            assert!(
                left.is_empty(),
                "{what}: {name} after {delay_ms} ms left {left:?}: {err}"
            );
            match o.status.code() {
                // Finished before the signal: it cleaned up as always.
                Some(0) => {}
                Some(c) => {
                    assert_eq!(c, 128 + sig, "{what}: {name} after {delay_ms} ms: {err}");
                    // What it says depends on how far it got: namespaces (and
                    // the directories made before them), the directories
                    // alone, or nothing yet.
                    let said = format!("roce-net lab: interrupted by {name}: ");
                    let ns = format!("{said}removed namespaces rnt-demo-{pid}-");
                    assert!(
                        err.contains(&ns)
                            || err.contains(&format!("{said}removed directories "))
                            || err.contains(&format!("{said}nothing had been built yet")),
                        "{what}: {name} after {delay_ms} ms: {err}"
                    );
                    if err.contains(&ns) {
                        assert!(err.contains(" and directories "), "{err}");
                        with_namespaces += 1;
                    }
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
        "{what}: {interrupted} of {runs} runs interrupted and cleaned up ({with_namespaces} with \
         namespaces built), {early} ended by the signal before building anything; none left \
         anything behind"
    );
    assert!(
        with_namespaces >= 1,
        "{what}: no run was interrupted with its namespaces built"
    );
    interrupted
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_interrupted_lab_removes_what_it_built_and_says_so() {
    require_root("an_interrupted_lab_removes_what_it_built_and_says_so");
    let tmp = tempfile::tempdir().unwrap();
    let interrupted = interrupt_each_way("roce-net lab", tmp.path(), || {
        let mut c = bin();
        c.arg("lab");
        c
    });
    assert!(interrupted >= 6, "{interrupted} of 12 interrupted");
}

/// `scripts/lab.sh` interrupted the same ways, as root and as a user through
/// sudo. Its release build is stubbed: a `cargo` first on `PATH` that builds
/// nothing, and a `CARGO_TARGET_DIR` whose `release/roce-net` is the binary
/// under test (a real release build takes minutes; what is tested is the
/// script around it). "A user" is an `id` that says uid 1000 and a `sudo` that
/// runs its command as it is (this test runs as root): what is tested is that
/// the signal sent to the script's pid reaches the lab.
fn interrupt_the_script(through_sudo: bool) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let stub = tempfile::tempdir().unwrap();
    let release = stub.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_roce-net"), release.join("roce-net")).unwrap();
    let mut stubs = vec![("cargo", "#!/bin/sh\nexit 0\n".to_string())];
    if through_sudo {
        let id = String::from_utf8(
            Command::new("sh")
                .args(["-c", "command -v id"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        stubs.push((
            "id",
            format!(
                "#!/bin/sh\n[ \"$1\" = -u ] && {{ echo 1000; exit 0; }}\nexec {} \"$@\"\n",
                id.trim()
            ),
        ));
        stubs.push(("sudo", "#!/bin/sh\nexec \"$@\"\n".to_string()));
    }
    for (name, body) in stubs {
        let p = stub.path().join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lab.sh");
    let path = format!(
        "{}:{}",
        stub.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let what = if through_sudo {
        "scripts/lab.sh through sudo"
    } else {
        "scripts/lab.sh as root"
    };
    interrupt_each_way(what, tmp.path(), || {
        let mut c = Command::new(&script);
        c.stdin(Stdio::null())
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", stub.path().join("target"))
            .env_remove("SUDO_USER")
            .env_remove("ROOT_ENV");
        c
    })
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_interrupted_lab_script_removes_what_it_built_and_says_so() {
    require_root("an_interrupted_lab_script_removes_what_it_built_and_says_so");
    let interrupted = interrupt_the_script(false);
    assert!(interrupted >= 6, "{interrupted} of 12 interrupted");
}

/// Through sudo the script waited for it: a signal to the script's pid ended
/// the script alone, and the lab ran on without it.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn an_interrupted_lab_script_through_sudo_removes_what_it_built_and_says_so() {
    require_root("an_interrupted_lab_script_through_sudo_removes_what_it_built_and_says_so");
    let interrupted = interrupt_the_script(true);
    assert!(interrupted >= 6, "{interrupted} of 12 interrupted");
}
