//! `roce-net snapshot` output formats end to end (compact by default, `--pretty`,
//! gzip by `-o F.gz` or `--compress`), read back by `show/doctor/fleet --from` and
//! by the real `gzip`.

use crate::support::{ip, Ns};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running roce-net")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures")
        .join(p)
}

/// `gzip -dc FILE` (Debian's gzip): the real tool must read what we compress.
fn gunzip(p: &Path) -> Vec<u8> {
    let o = Command::new("gzip").arg("-dc").arg(p).output().unwrap();
    assert!(o.status.success(), "gzip -dc {}: {}", p.display(), text(&o));
    o.stdout
}

/// What two captures of the same quiet namespace share (no time, counters or
/// kernel-added IPv6 routes).
fn stable(v: &serde_json::Value) -> serde_json::Value {
    let names: Vec<&serde_json::Value> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["name"])
        .collect();
    serde_json::json!({
        "schema_version": v["schema_version"], "hostname": v["hostname"], "netns": v["netns"],
        "interfaces": names, "addresses": v["addresses"], "rules": v["rules"],
        "sysctls": v["sysctls"], "tables": v["table_names"],
    })
}

#[test]
#[ignore = "needs root: builds a network namespace (scripts/test.sh runs it)"]
fn snapshot_formats_are_one_document_and_read_back() {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "snapshot_formats_are_one_document_and_read_back: needs root (namespaces); \
         run it as root (scripts/test.sh)"
    );
    let ns = Ns(format!("rnt-snapfmt-{}", std::process::id()));
    assert!(Command::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .unwrap()
        .success());
    for (i, a) in ["198.18.3.11", "198.18.3.12"].iter().enumerate() {
        ip(&ns.0, &format!("link add r{i} type veth peer name x{i}"));
        ip(&ns.0, &format!("addr add {a}/24 dev r{i}"));
        ip(&ns.0, &format!("link set r{i} up"));
    }
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    let sys = dir.path().join("sys");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::create_dir_all(&sys).unwrap();
    let base = [
        "--netns",
        &ns.0,
        "--etc-root",
        etc.to_str().unwrap(),
        "--sysfs-root",
        sys.to_str().unwrap(),
    ];
    let snap = |extra: &[&str]| -> Output {
        let mut a: Vec<&str> = base.to_vec();
        a.push("snapshot");
        a.extend_from_slice(extra);
        let o = run(&a);
        assert!(o.status.success(), "snapshot {extra:?}: {}", text(&o));
        o
    };

    // Default: compact JSON on standard output, one line.
    let compact = snap(&[]).stdout;
    assert_eq!(compact.iter().filter(|&&b| b == b'\n').count(), 1);
    assert!(compact.ends_with(b"}\n"));
    let want = stable(&serde_json::from_slice(&compact).unwrap());
    assert_eq!(want["netns"], ns.0.as_str());

    // --pretty: the same document, indented.
    let pretty = snap(&["--pretty"]).stdout;
    assert!(pretty.iter().filter(|&&b| b == b'\n').count() > 50);
    assert_eq!(stable(&serde_json::from_slice(&pretty).unwrap()), want);

    // --compress to a pipe, -o F.json.gz, --compress -o F.json: gzip, by the real tool.
    let piped = snap(&["--compress"]).stdout;
    assert!(piped.starts_with(&[0x1f, 0x8b]));
    let by_pipe = dir.path().join("piped.gz");
    std::fs::write(&by_pipe, &piped).unwrap();
    let gz = dir.path().join("h.json.gz");
    snap(&["-o", gz.to_str().unwrap()]);
    let forced = dir.path().join("forced.json");
    snap(&["--compress", "-o", forced.to_str().unwrap()]);
    let plain = dir.path().join("h.json");
    snap(&["-o", plain.to_str().unwrap()]);
    assert!(!std::fs::read(&plain).unwrap().starts_with(&[0x1f, 0x8b]));
    for p in [&by_pipe, &gz, &forced] {
        let json = gunzip(p);
        assert_eq!(stable(&serde_json::from_slice(&json).unwrap()), want);
        assert!(std::fs::metadata(p).unwrap().len() * 3 < json.len() as u64);
    }

    // Every form reads back through --from (gzip told by its magic, not its name).
    for p in [&by_pipe, &gz, &forced, &plain] {
        let o = run(&["--json", "show", "--from", p.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "show --from {}: {}",
            p.display(),
            text(&o)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(stable(&v), want, "{}", p.display());
    }
}

#[test]
fn fleet_reads_plain_and_gzip_snapshots_and_damaged_gzip_is_a_data_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("doctor/healthy.json");
    let b = dir.path().join("b.json.gz");
    let o = Command::new("gzip")
        .arg("-c")
        .arg(fixture("doctor/gid-index-inconsistent.bad.json"))
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::write(&b, &o.stdout).unwrap();
    let o = run(&["--json", "fleet", a.to_str().unwrap(), b.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hosts"].as_array().unwrap().len(), 2, "{v}");

    let cut = dir.path().join("cut.json.gz");
    let gz = std::fs::read(&b).unwrap();
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let o = run(&["fleet", a.to_str().unwrap(), cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(65), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("decompressing gzip snapshot") && t.contains("cut.json.gz"),
        "{t}"
    );
}

/// `RUST_LOG=roce_net=trace` prints the library's netlink trace (every packet
/// sent and read) on stderr; without `RUST_LOG` stderr stays empty and stdout
/// is the same document.
#[test]
#[ignore = "needs root: builds a network namespace (scripts/test.sh runs it)"]
fn rust_log_traces_netlink_on_stderr_and_is_off_by_default() {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "rust_log_traces_netlink_on_stderr_and_is_off_by_default: needs root \
         (namespaces); run it as root (scripts/test.sh)"
    );
    let ns = Ns(format!("rnt-rustlog-{}", std::process::id()));
    assert!(Command::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .unwrap()
        .success());
    ip(&ns.0, "link set lo up");
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--netns",
        &ns.0,
        "--etc-root",
        dir.path().to_str().unwrap(),
        "snapshot",
    ];
    let quiet = Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet));
    let traced = Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .env("RUST_LOG", "roce_net=trace")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(traced.status.success(), "{}", text(&traced));
    let err = String::from_utf8_lossy(&traced.stderr);
    let sent = err
        .lines()
        .filter(|l| l.contains("send netlink packet"))
        .count();
    let read = err
        .lines()
        .filter(|l| l.contains("read netlink packet"))
        .count();
    assert!(sent >= 4 && read > sent, "sent {sent}, read {read}:\n{err}");
    assert!(
        err.lines().all(|l| l.starts_with("[TRACE roce_net::")),
        "{err}"
    );
    let doc = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    assert_eq!(stable(&doc(&quiet)), stable(&doc(&traced)));
}
