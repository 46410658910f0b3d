//! Namespace helpers and `require_root`: every namespace is named
//! `rnt-sf-<tag>-<pid>` and deleted by a guard, even when the test fails.

use std::process::Command;

/// Lab tests are `#[ignore = "needs root ..."]`: plain `cargo test` lists them as
/// ignored, and `--include-ignored` (what `scripts/test.sh` runs) runs them. Run
/// that way without root, they fail: a lab test never passes by skipping.
pub fn require_root(test: &str) {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "{test}: needs root to create network namespaces; run it as root \
         (sudo scripts/test.sh), or leave it out with plain `cargo test`"
    );
}

/// Root and iproute2 (`ip`), which these tests drive; fails without them.
pub fn require_namespaces(test: &str) {
    require_root(test);
    let ip = Command::new("ip").arg("-V").output().is_ok();
    assert!(
        ip,
        "{test}: needs iproute2 (`ip`) to create network namespaces"
    );
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
