//! Files the CLI writes under a name the user gives (`metrics -o`, `snapshot
//! -o`, `check -o`) into a directory another account owns: node_exporter's
//! textfile directory belongs to its service account, which can plant a link
//! under whatever temporary name root will use next. The temporary name is
//! random and opened with `O_EXCL|O_NOFOLLOW` (roce-net/src/files/atomic.rs), so
//! a planted link is never followed: the file it names stays as it was.

use crate::support::{netns, require_root, text};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// nobody/nogroup: the "other account" that owns the directory and the link.
const OTHER_UID: u32 = 65534;

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures")
        .join(p)
}

/// The CLI as pid 1 of a fresh pid namespace: the pid the writer once put in
/// its temporary name (`.<name>.<pid>.tmp`, `.<name>.tmp-<pid>`) is then known
/// in advance, as an attacker watching a busy node could guess it.
fn cli_as_pid1(args: &[&str]) -> std::process::Output {
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--"])
        .arg(env!("CARGO_BIN_EXE_roce-net"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running unshare (util-linux)");
    o
}

/// A directory owned by another account, with that account's link planted at
/// every temporary name the old writers would have used, each pointing at a
/// root-owned 0600 file; the writes must leave that file alone.
#[test]
#[ignore = "needs root: plants links as another uid, runs the CLI in a pid namespace (scripts/test.sh runs it)"]
fn a_link_planted_at_the_temporary_name_is_never_followed() {
    require_root("a_link_planted_at_the_temporary_name_is_never_followed");
    let ns = netns("outfiles", 0);
    let top = tempfile::tempdir().unwrap();
    let secret = top.path().join("secret");
    std::fs::write(&secret, "root's own\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let textfile = top.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    std::fs::set_permissions(&textfile, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&textfile, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    let plant = |name: &str| {
        let l = textfile.join(name);
        std::os::unix::fs::symlink(&secret, &l).unwrap();
        std::os::unix::fs::lchown(&l, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        l
    };
    let snap = fixture("doctor/healthy.json");
    let prom = textfile.join("roce_net.prom");
    let json = textfile.join("host.json");
    let planted = [
        plant(".roce_net.prom.1.tmp"),
        plant(".host.json.tmp-1"),
        plant(".host.json.1.tmp"),
    ];
    let runs: [Vec<String>; 2] = [
        vec![
            "metrics".into(),
            "--from".into(),
            snap.display().to_string(),
            "-o".into(),
            prom.display().to_string(),
        ],
        vec![
            "--netns".into(),
            ns.0.clone(),
            "snapshot".into(),
            "-o".into(),
            json.display().to_string(),
        ],
    ];
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = cli_as_pid1(&args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let m = std::fs::metadata(&secret).unwrap();
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "root's own\n",
        "the file a planted link named was overwritten"
    );
    assert_eq!((m.mode() & 0o777, m.uid()), (0o600, 0));
    for l in &planted {
        let m = std::fs::symlink_metadata(l).unwrap();
        assert!(m.file_type().is_symlink(), "{} was replaced", l.display());
    }
    let metrics = std::fs::read_to_string(&prom).unwrap();
    assert!(
        metrics.contains("# TYPE roce_net_findings gauge"),
        "{metrics}"
    );
    // Readable by node_exporter's account: 0644 (less a umask that takes no read bit).
    assert_eq!(
        std::fs::metadata(&prom).unwrap().mode() & 0o444,
        0o444,
        "the collector's account must be able to read the metrics"
    );
    let st = roce_net::HostState::load(&json).unwrap();
    assert_eq!(st.netns.as_deref(), Some(ns.0.as_str()));
    // Nothing else left behind: the targets, the planted links.
    let mut names: Vec<String> = std::fs::read_dir(&textfile)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".host.json.1.tmp",
            ".host.json.tmp-1",
            ".roce_net.prom.1.tmp",
            "host.json",
            "roce_net.prom"
        ]
    );
}
