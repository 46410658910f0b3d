//! Shared helpers for the lab tests: root/CI gating and `ip -j` parsing.
#![allow(dead_code)]

use roce_net::Lab;
use std::process::Command;

/// Root or a clear failure: the one definition, shared with the unit tests.
pub use crate::test_support::require_root;

/// A seed lab for a test that runs as root (see [`require_root`]).
pub fn seed(test: &str, nics: usize) -> Lab {
    require_root(test);
    Lab::seed_tagged("nl", nics).unwrap_or_else(|e| panic!("{test}: building lab: {e}"))
}

/// Run `ip -n NS ARGS...` and return stdout; panics on failure.
pub fn ip(ns: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .arg("-n")
        .arg(ns)
        .args(args)
        .output()
        .expect("running ip");
    assert!(
        out.status.success(),
        "ip -n {ns} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ip -n NS -j ARGS...` parsed as JSON (an empty output is an empty array).
pub fn ip_json(ns: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["-j"];
    a.extend_from_slice(args);
    let out = ip(ns, &a);
    if out.trim().is_empty() {
        return serde_json::Value::Array(Vec::new());
    }
    serde_json::from_str(&out).expect("ip -j prints JSON")
}

/// `ip -n NS -N -j ARGS...` parsed as JSON: for routes and rules, whose tables
/// and protocols `ip` would otherwise print with the names the machine's
/// `/etc/iproute2` gives them (a node where roce-net ran names tables
/// 1001-1008). With `-N` they are numbers, so no test depends on the host's
/// `/etc`; route types and scopes are numbers too (see [`route_type`]).
pub fn ip_json_numeric(ns: &str, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["-N"];
    a.extend_from_slice(args);
    ip_json(ns, &a)
}

/// A route's type as iproute2 names it, from `-N` output (`"2"`) or a name.
pub fn route_type(v: Option<&serde_json::Value>) -> Option<String> {
    let t = v.and_then(|t| t.as_str())?;
    Some(
        match t {
            "1" => "unicast",
            "2" => "local",
            "3" => "broadcast",
            "4" => "anycast",
            "5" => "multicast",
            "6" => "blackhole",
            "7" => "unreachable",
            "8" => "prohibit",
            "9" => "throw",
            other => other,
        }
        .to_string(),
    )
}

/// Run `ip -n NS -batch -` with `script` on stdin.
pub fn ip_batch(ns: &str, script: &str) {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("running ip -batch");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writing batch");
    assert!(
        child.wait().expect("ip -batch").success(),
        "ip -batch failed"
    );
}

/// iproute2's table number, from `-N` output ([`ip_json_numeric`]); the three
/// names iproute2 builds in are understood too. Any other name means the test
/// read `ip` output without `-N`: the names come from the machine's
/// `/etc/iproute2`, which no test may depend on (a node where roce-net ran names
/// tables 1001-1008), so that is a bug in the test.
pub fn table_id(v: Option<&serde_json::Value>) -> u32 {
    match v.and_then(|t| t.as_str()) {
        None | Some("main") => 254,
        Some("local") => 255,
        Some("default") => 253,
        Some(n) => n.parse().unwrap_or_else(|_| {
            panic!("table {n:?} is a name from the machine's /etc: read `ip` with -N (ip_json_numeric)")
        }),
    }
}

/// iproute2's protocol number, from `-N` output (the names of the ones the tests
/// use are understood too; see [`table_id`] for why others are refused).
pub fn proto_id(v: Option<&serde_json::Value>) -> u8 {
    match v.and_then(|t| t.as_str()) {
        None | Some("boot") => 3,
        Some("unspec") => 0,
        Some("redirect") => 1,
        Some("kernel") => 2,
        Some("static") => 4,
        Some("dhcp") => 16,
        Some("ra") => 9,
        Some(n) => n.parse().unwrap_or_else(|_| {
            panic!("protocol {n:?} is a name from the machine's /etc: read `ip` with -N (ip_json_numeric)")
        }),
    }
}

/// A string field, if present.
pub fn s(v: &serde_json::Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).map(str::to_string)
}
