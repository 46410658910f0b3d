//! Namespace helpers for the sysfs/procfs/probe tests: every namespace is named
//! `rnt-sf-<tag>-<pid>` and deleted by a guard, even when the test fails.
#![allow(dead_code)]

use std::process::Command;

/// True when namespace tests can run here. In CI (`CI=true`) a missing prerequisite
/// fails the test instead of skipping it.
pub fn can_run_namespaces(test: &str) -> bool {
    let root = unsafe { libc::geteuid() } == 0;
    let ip = Command::new("ip").arg("-V").output().is_ok();
    if root && ip {
        return true;
    }
    let why = format!("{test}: needs root and iproute2 (`ip`) to create network namespaces");
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}");
    }
    eprintln!("skipping {why}");
    false
}

/// Run a command, panicking with its output on failure.
pub fn run(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run a command and return its trimmed stdout.
pub fn output(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A network namespace created with `ip netns add` and deleted on drop.
pub struct Netns {
    /// Its name.
    pub name: String,
}

impl Netns {
    /// Create `rnt-sf-<tag>-<pid>`.
    pub fn new(tag: &str) -> Netns {
        let name = format!("rnt-sf-{tag}-{}", std::process::id());
        // A leftover from an earlier crashed run of the same pid: remove it first.
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(&["ip", "netns", "add", &name]);
        Netns { name }
    }

    /// Run `ip -n <ns> <args...>`.
    pub fn ip(&self, args: &[&str]) {
        let mut v = vec!["ip", "-n", &self.name];
        v.extend_from_slice(args);
        run(&v);
    }

    /// Run a command inside the namespace (`ip netns exec`).
    pub fn exec(&self, args: &[&str]) -> String {
        let mut v = vec!["ip", "netns", "exec", &self.name];
        v.extend_from_slice(args);
        output(&v)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}
