//! Bad input at the command line: files that are not files,
//! floods from sysfs, names iproute2 cannot hold. Each case must end quickly with
//! a clear error (or a bounded warning) and change nothing.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures")
        .join(p)
}

/// Run roce-net with a deadline: a hang is a test failure, not a stuck suite.
fn run_within(args: &[&std::ffi::OsStr], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running roce-net");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waiting").is_some() {
            return child.wait_with_output().expect("collecting output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("collecting output");
            panic!(
                "roce-net {:?} still running after {limit:?} (hung); stderr so far: {}",
                args,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

const QUICK: Duration = Duration::from_secs(20);

#[test]
fn a_fifo_or_a_device_named_as_a_file_is_refused_at_once() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    mkfifo(&fifo);
    let snap = fixture("doctor/healthy.json");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (vec![os("show"), os("--from"), fifo.as_os_str()], "snapshot"),
        (
            vec![os("doctor"), os("--from"), os("/dev/zero")],
            "snapshot",
        ),
        (
            vec![
                os("doctor"),
                os("--from"),
                snap.as_os_str(),
                os("-f"),
                fifo.as_os_str(),
            ],
            "policy",
        ),
        (
            vec![
                os("doctor"),
                os("--from"),
                snap.as_os_str(),
                os("-f"),
                os("/dev/zero"),
            ],
            "policy",
        ),
        (
            vec![os("fleet"), snap.as_os_str(), fifo.as_os_str()],
            "snapshot",
        ),
        (
            vec![
                os("--state-dir"),
                d.path().as_os_str(),
                os("apply"),
                os("--yes"),
                os("--plan"),
                fifo.as_os_str(),
            ],
            "plan",
        ),
        (
            vec![os("show"), os("--from"), d.path().as_os_str()],
            "snapshot",
        ),
    ];
    for (args, noun) in cases {
        let o = run_within(&args, QUICK);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(65), "{args:?}: {t}");
        assert!(t.contains(noun), "{args:?} names the kind of file: {t}");
        assert!(
            t.contains("FIFO") || t.contains("character device") || t.contains("directory"),
            "{args:?} names what the path is: {t}"
        );
        assert!(
            t.len() < 2000,
            "{args:?}: a short error, got {} bytes",
            t.len()
        );
    }
}

#[test]
fn an_oversized_policy_is_refused_not_read_whole() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.yaml");
    // 2 MiB of comments: valid YAML, over the 1 MiB policy limit.
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(0).unwrap();
    std::fs::write(&big, "#".repeat(2 << 20)).unwrap();
    let snap = fixture("doctor/healthy.json");
    let o = run_within(
        &[
            os("doctor"),
            os("--from"),
            snap.as_os_str(),
            os("-f"),
            big.as_os_str(),
        ],
        QUICK,
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(65), "{t}");
    assert!(t.contains("1048576"), "the limit is named: {t}");
}

#[test]
fn a_huge_gid_file_gives_one_short_warning() {
    // A sysfs tree whose only GID slot is a 100 MB (sparse) file of zero bytes.
    let d = tempfile::tempdir().unwrap();
    let port = d.path().join("class/infiniband/mlx5_0/ports/1");
    std::fs::create_dir_all(port.join("gids")).unwrap();
    std::fs::create_dir_all(port.join("gid_attrs/types")).unwrap();
    std::fs::create_dir_all(port.join("gid_attrs/ndevs")).unwrap();
    for (f, v) in [
        ("state", "4: ACTIVE"),
        ("phys_state", "5: LinkUp"),
        ("link_layer", "Ethernet"),
        ("rate", "100 Gb/sec (4X EDR)"),
    ] {
        std::fs::write(port.join(f), format!("{v}\n")).unwrap();
    }
    let gid = std::fs::File::create(port.join("gids/0")).unwrap();
    gid.set_len(100 << 20).unwrap();
    drop(gid);
    let out = d.path().join("snap.json");
    let o = run_within(
        &[
            os("--sysfs-root"),
            d.path().as_os_str(),
            os("snapshot"),
            os("-o"),
            out.as_os_str(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let size = std::fs::metadata(&out).unwrap().len();
    assert!(size < 4 << 20, "snapshot stays small: {size} bytes");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let warnings = v["warnings"].as_array().unwrap();
    let w = warnings
        .iter()
        .find(|w| w["source"].as_str().unwrap().ends_with("gids/0"))
        .unwrap_or_else(|| panic!("a warning about the GID file: {warnings:?}"));
    let msg = w["message"].as_str().unwrap();
    assert!(
        msg.len() < 1024,
        "the warning is short: {} bytes",
        msg.len()
    );
    assert!(msg.contains("4096"), "it says why: {msg}");
}

#[test]
fn a_table_prefix_iproute2_cannot_hold_is_a_policy_error() {
    let d = tempfile::tempdir().unwrap();
    let snap = fixture("plan/fresh/current.json");
    for (prefix, why) in [
        ("a".repeat(5000), "at most 48"),
        ("a".repeat(49), "at most 48"),
    ] {
        let p = d.path().join("p.yaml");
        std::fs::write(
            &p,
            format!("nics:\n  include: [\"r*\"]\nrouting:\n  table_name_prefix: \"{prefix}\"\n"),
        )
        .unwrap();
        let o = run_within(
            &[
                os("doctor"),
                os("--from"),
                snap.as_os_str(),
                os("-f"),
                p.as_os_str(),
            ],
            QUICK,
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(65), "{prefix:.20}: {t}");
        assert!(t.contains("routing.table_name_prefix"), "{t}");
        assert!(t.contains(why), "{t}");
        assert!(
            t.len() < 2000,
            "the error does not echo the prefix whole: {} bytes",
            t.len()
        );
    }
}

#[test]
fn a_policy_key_given_twice_is_refused_in_yaml_and_json() {
    // A second `routing:` used to replace the first without a word.
    let d = tempfile::tempdir().unwrap();
    let snap = fixture("plan/fresh/current.json");
    let yaml = d.path().join("dup.yaml");
    std::fs::write(
        &yaml,
        "routing:\n  table_base: 2000\narp:\n  arp_ignore: 1\nrouting:\n  rule_priority_base: 500\n",
    )
    .unwrap();
    let json = d.path().join("dup.json");
    std::fs::write(
        &json,
        r#"{"routing": {"table_base": 2000}, "arp": {"arp_ignore": 1}, "routing": {"rule_priority_base": 500}}"#,
    )
    .unwrap();
    for p in [&yaml, &json] {
        let o = run_within(
            &[
                os("doctor"),
                os("--from"),
                snap.as_os_str(),
                os("-f"),
                p.as_os_str(),
            ],
            QUICK,
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(65), "{}: {t}", p.display());
        assert!(t.contains("duplicate key \"routing\""), "{t}");
        assert!(t.contains(&p.display().to_string()), "names the file: {t}");
    }
}

#[test]
fn a_confirm_timeout_out_of_range_is_a_usage_error() {
    // `now + 18446744073709551615 s` wrapped into the past: an immediate
    // rollback. The namespace does not exist, so an accepted value fails on it
    // (not 64) and never reaches this machine's own network.
    let d = tempfile::tempdir().unwrap();
    let ns = format!("rnt-absent-{}", std::process::id());
    let run = |secs: &str| {
        run_within(
            &[
                os("--netns"),
                os(&ns),
                os("--state-dir"),
                d.path().as_os_str(),
                os("apply"),
                os("--yes"),
                os("--confirm-timeout"),
                os(secs),
            ],
            QUICK,
        )
    };
    for secs in ["18446744073709551615", "18446744073709551616", "0", "86401"] {
        let o = run(secs);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(64), "--confirm-timeout {secs}: {t}");
        assert!(t.contains("--confirm-timeout"), "{t}");
        assert!(t.contains(secs), "{t}");
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing written to the state directory"
    );
    // The largest accepted value gets past the parser (and fails on the namespace).
    let o = run("86400");
    let t = text(&o);
    assert_ne!(o.status.code(), Some(64), "{t}");
    assert!(t.contains(&ns), "{t}");
}

#[test]
#[ignore = "needs root: creates a network namespace (scripts/test.sh runs it)"]
fn a_non_utf8_interface_name_is_shown_escaped_not_a_failed_snapshot() {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "a_non_utf8_interface_name_is_shown_escaped_not_a_failed_snapshot: needs root \
         to create a network namespace; run it as root (sudo scripts/test.sh)"
    );
    // One link named `r\xff` (the kernel takes any bytes but `/`, NUL and
    // whitespace) used to fail every snapshot with exit 65, naming nothing.
    let mut lab = roce_net::Lab::new("i8b-cli").unwrap();
    let ns = lab.add_namespace("h").unwrap();
    let raw = std::ffi::OsStr::from_bytes(b"r\xff");
    let o = Command::new("ip")
        .args(["-n", &ns, "link", "add"])
        .arg(raw)
        .args(["type", "veth", "peer", "name", "rpeer"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shown = roce_net::ifname_from_kernel(b"r\xff");
    assert!(shown.is_ascii() && shown != "r", "escaped: {shown:?}");
    for verb in ["show", "snapshot", "doctor"] {
        let o = run_within(&[os("--netns"), os(&ns), os(verb)], QUICK);
        let out = String::from_utf8(o.stdout.clone()).expect("the output is UTF-8");
        assert!(
            matches!(o.status.code(), Some(0..=2)),
            "{verb}: exit {:?}: {}",
            o.status.code(),
            text(&o)
        );
        assert!(
            !o.stdout.contains(&0xff),
            "{verb}: no raw byte reaches the terminal"
        );
        let want = match verb {
            // In JSON the escape's backslash is itself escaped.
            "snapshot" => serde_json::to_string(&shown).unwrap(),
            "show" => shown.clone(),
            // doctor names only NICs it finds something on; it must just work.
            _ => continue,
        };
        assert!(out.contains(&want), "{verb} shows {want}: {out}");
    }
}

/// Unreadable input at the command line: a crash-zeroed policy, a NUL
/// half way through a YAML policy, a symbolic link loop named as a file, a
/// snapshot with `prefix_len: 200` or a NUL in an interface name, and an
/// `arp_ignore` no integer type holds are each a clear input error (exit 65),
/// never the default policy, part of a policy, or an internal error (exit 70).
#[test]
fn nuls_loops_and_impossible_values_are_input_errors() {
    let d = tempfile::tempdir().unwrap();
    let snap = fixture("doctor/healthy.json");
    let zeros = d.path().join("zeroed.yaml");
    std::fs::write(&zeros, vec![0u8; 4096]).unwrap();
    let half = d.path().join("half.yaml");
    std::fs::write(&half, "rp_filter: keep\n\0\nrouting: {enabled: false}\n").unwrap();
    let huge = d.path().join("huge.yaml");
    std::fs::write(&huge, "arp:\n  arp_ignore: 99999999999999999999999\n").unwrap();
    let (la, lb) = (d.path().join("loop-a.yaml"), d.path().join("loop-b.yaml"));
    std::os::unix::fs::symlink(&lb, &la).unwrap();
    std::os::unix::fs::symlink(&la, &lb).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&snap).unwrap()).unwrap();
    assert!(v["addresses"][0].is_object(), "the fixture has an address");
    let mut prefix = v.clone();
    prefix["addresses"][0]["prefix_len"] = 200.into();
    let prefix_file = d.path().join("prefix.json");
    std::fs::write(&prefix_file, prefix.to_string()).unwrap();
    v["interfaces"][0]["name"] = "r\u{0}1".into();
    let nul_file = d.path().join("nul-name.json");
    std::fs::write(&nul_file, v.to_string()).unwrap();
    let policy_cases = [
        (&zeros, "a NUL byte"),
        (&half, "line 2 column 1: a NUL byte"),
        (&huge, "out of range"),
        (&la, "loop"),
    ];
    for (p, want) in policy_cases {
        let o = run_within(
            &[
                os("doctor"),
                os("--from"),
                snap.as_os_str(),
                os("-f"),
                p.as_os_str(),
            ],
            QUICK,
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(65), "{}: {t}", p.display());
        assert!(t.contains(want), "{}: {t}", p.display());
    }
    for (p, want) in [
        (&prefix_file, "prefix_len: 200 is longer than 32 bits"),
        (&nul_file, "interfaces[0].name"),
        (&la, "loop"),
    ] {
        let o = run_within(&[os("show"), os("--from"), p.as_os_str()], QUICK);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(65), "{}: {t}", p.display());
        assert!(t.contains(want), "{}: {t}", p.display());
    }
}
