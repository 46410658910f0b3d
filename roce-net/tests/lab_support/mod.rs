//! Shared helpers for the lab tests: root/CI gating and `ip -j` parsing.
#![allow(dead_code)]

use roce_net::Lab;
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

/// The names iproute2 itself reads for a database (`rt_tables`, `rt_protos`):
/// `/etc/iproute2/<db>`, `<db>.d/*.conf`, and the distribution's copies under
/// `/usr/share` and `/usr/lib`. `ip` prints these names, so a test comparing
/// with `ip -j` must map them back whatever the machine's files say (another
/// tool, or roce-net itself, may have registered names there).
fn iproute2_names(db: &str) -> std::collections::BTreeMap<String, u32> {
    let mut out = std::collections::BTreeMap::new();
    for root in ["/usr/lib/iproute2", "/usr/share/iproute2", "/etc/iproute2"] {
        let mut files = vec![std::path::PathBuf::from(format!("{root}/{db}"))];
        if let Ok(rd) = std::fs::read_dir(format!("{root}/{db}.d")) {
            let mut conf: Vec<_> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("conf"))
                .collect();
            conf.sort();
            files.extend(conf);
        }
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            for line in text.lines() {
                let mut w = line.split_whitespace();
                let (Some(id), Some(name)) = (w.next(), w.next()) else {
                    continue;
                };
                let id = id
                    .strip_prefix("0x")
                    .map_or_else(|| id.parse().ok(), |h| u32::from_str_radix(h, 16).ok());
                if let (Some(id), false) = (id, name.starts_with('#')) {
                    out.insert(name.to_string(), id);
                }
            }
        }
    }
    out
}

/// iproute2's table name to number.
pub fn table_id(v: Option<&serde_json::Value>) -> u32 {
    match v.and_then(|t| t.as_str()) {
        None | Some("main") => 254,
        Some("local") => 255,
        Some("default") => 253,
        Some(n) => n.parse().unwrap_or_else(|_| {
            *iproute2_names("rt_tables").get(n).unwrap_or_else(|| {
                panic!("table {n:?} is neither a number nor a name iproute2 reads")
            })
        }),
    }
}

/// iproute2's protocol name to number (the ones the tests use).
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
            iproute2_names("rt_protos")
                .get(n)
                .and_then(|id| u8::try_from(*id).ok())
                .unwrap_or_else(|| {
                    panic!("protocol {n:?} is neither a number nor a name iproute2 reads")
                })
        }),
    }
}

/// A string field, if present.
pub fn s(v: &serde_json::Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).map(str::to_string)
}
