//! A rollback of an apply also undoes what `persist` wrote for it: the real
//! CLI in lab namespaces, with its own etc root, root and state directory
//! (never the machine's `/etc` or `/run`), compared byte for byte (content,
//! mode, and which files and directories exist).

use crate::support::{cli_in, netns, require_root, text, two_stack_etc, Ns};
use crate::test_support::{tree_listing, Entry};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// Each file and directory of a tree: its kind, mode and content.
type Tree = BTreeMap<PathBuf, Entry>;

/// A lab of two NICs whose etc root configures them with systemd-networkd
/// and ifupdown, and holds a sysctl drop-in of the operator's at roce-net's
/// path (persist keeps it as `.roce-net.orig`, rollback must put it back).
struct Lab {
    ns: Ns,
    etc: tempfile::TempDir,
    root: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let lab = Lab {
            ns: netns(tag, 2),
            etc: tempfile::tempdir().unwrap(),
            root: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        let etc = lab.etc.path();
        two_stack_etc(etc);
        // Where the names file and its lock go (as on any Debian or RHEL).
        std::fs::create_dir_all(etc.join("iproute2/rt_tables.d")).unwrap();
        std::fs::create_dir_all(etc.join("sysctl.d")).unwrap();
        let mine = etc.join("sysctl.d/90-roce-net.conf");
        std::fs::write(&mine, "# the operator's own\nnet.ipv4.ip_forward = 0\n").unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o640)).unwrap();
        lab
    }

    fn run(&self, args: &[&str]) -> Output {
        cli_in(&self.ns.0, self.etc.path(), self.state.path())
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        text(&o)
    }

    /// `--json ARGS`, which must exit 0: its report.
    fn json(&self, args: &[&str]) -> serde_json::Value {
        let o = self.run(&[&["--json"], args].concat());
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&o)))
    }

    /// `persist --backend BACKEND --root ROOT`.
    fn persist_args<'a>(&'a self, backend: &'a str) -> Vec<&'a str> {
        let root = self.root.path().to_str().unwrap();
        vec!["persist", "--backend", backend, "--root", root]
    }

    fn persist(&self, backend: &str) -> Output {
        self.run(&self.persist_args(backend))
    }

    /// A persist with no committed apply to record it for (none, or only one
    /// rolled back): it writes, and records nothing a rollback would undo.
    fn persist_recording_nothing(&self) {
        let v = self.json(&self.persist_args("networkd"));
        assert_eq!(v.get("recorded"), Some(&serde_json::Value::Null), "{v}");
    }

    /// `rollback`, which must exit 0 and put back no boot file (`--json`'s
    /// `restored_files` empty).
    fn rollback_restoring_nothing(&self) {
        let v = self.json(&["rollback"]);
        assert_eq!(v["restored_files"], serde_json::json!([]), "{v}");
    }

    /// The etc root and the root, as files. Nothing is left out: the names
    /// file's lock (`iproute2/rt_tables.d/.roce-net.lock`) exists only while
    /// a command holds it, so it is no trace of an apply either.
    fn files(&self) -> (Tree, Tree) {
        (
            tree_listing(self.etc.path()),
            tree_listing(self.root.path()),
        )
    }

    /// The live state apply changes (links, addresses, rules, routes).
    fn live(&self) -> String {
        let mut s = String::new();
        for args in [
            vec!["-4", "addr"],
            vec!["-4", "rule"],
            vec!["-6", "rule"],
            vec!["-4", "route", "show", "table", "all"],
        ] {
            let o = std::process::Command::new("ip")
                .args(["-n", &self.ns.0])
                .args(&args)
                .output()
                .unwrap();
            s.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        s
    }
}

/// `apply` → `persist --backend B` → `rollback`, for systemd-networkd and
/// ifupdown (each also writes the sysctl drop-in, the routing-table and
/// protocol names and the boot-time repair): the rollback puts the etc root
/// and the root back byte for byte as they were before the apply (files,
/// modes, directories; the operator's sysctl drop-in back in place), says
/// which files it put back, and restores the live state.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_puts_back_the_boot_files_persisted_for_the_apply() {
    require_root("rollback_puts_back_the_boot_files_persisted_for_the_apply");
    for backend in ["networkd", "ifupdown"] {
        let lab = Lab::new("rbp");
        let (etc0, root0) = lab.files();
        let live0 = lab.live();
        lab.ok(&["apply", "--yes"]);
        let o = lab.persist(backend);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{backend}: {t}");
        assert!(
            t.contains("`roce-net") && t.contains("rollback` puts these files back"),
            "{backend}: {t}"
        );
        let (etc1, _) = lab.files();
        assert_ne!(etc1, etc0, "{backend}: persist wrote under the etc root");
        for p in [
            "sysctl.d/90-roce-net.conf.roce-net.orig",
            "iproute2/rt_protos.d/roce-net.conf",
        ] {
            assert!(
                etc1.contains_key(Path::new(p)),
                "{backend}: {p} written: {t}"
            );
        }

        let t = lab.ok(&["rollback"]);
        assert!(
            t.contains("boot configuration persisted for it"),
            "{backend}: {t}"
        );
        assert!(
            t.contains(&format!(
                "put back {} as it was before persist",
                lab.etc.path().join("sysctl.d/90-roce-net.conf").display()
            )),
            "{backend}: {t}"
        );
        let (etc2, root2) = lab.files();
        let changed: Vec<_> = etc0
            .keys()
            .chain(etc2.keys())
            .filter(|k| etc0.get(*k) != etc2.get(*k))
            .collect();
        assert!(
            changed.is_empty(),
            "{backend}: the etc root differs at {changed:?}: {t}"
        );
        assert_eq!(root2, root0, "{backend}: the root is as before");
        assert_eq!(lab.live(), live0, "{backend}: the live state is as before");
    }
}

/// A second persist for the same apply (another backend, switching) still
/// rolls back to what was there before the first; the JSON report lists the
/// files put back.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn two_persists_for_one_apply_roll_back_to_before_the_first() {
    require_root("two_persists_for_one_apply_roll_back_to_before_the_first");
    let lab = Lab::new("rbp2");
    let (etc0, root0) = lab.files();
    lab.ok(&["apply", "--yes"]);
    assert_eq!(lab.persist("ifupdown").status.code(), Some(0));
    lab.ok(&[&lab.persist_args("networkd")[..], &["--switch-backend"]].concat());
    let v = lab.json(&["rollback"]);
    let files = v["restored_files"].as_array().expect("restored_files");
    assert!(!files.is_empty(), "{v}");
    assert_eq!(lab.files(), (etc0, root0), "{v}");
}

/// A persisted file changed since by someone else: rollback refuses (exit 73,
/// drift), names the file and what to do, and changes nothing, neither the
/// live state nor any file. Once the changed file is moved aside as it says,
/// rollback goes through and keeps the moved copy.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_refuses_to_overwrite_a_persisted_file_changed_since() {
    require_root("rollback_refuses_to_overwrite_a_persisted_file_changed_since");
    let lab = Lab::new("rbpd");
    let (etc0, _) = lab.files();
    lab.ok(&["apply", "--yes"]);
    assert_eq!(lab.persist("networkd").status.code(), Some(0));
    let dropin = lab
        .etc
        .path()
        .join("systemd/network/20-r0.network.d/90-roce-net.conf");
    let mut edited = std::fs::read(&dropin).unwrap();
    edited.extend_from_slice(b"# an operator's edit\n");
    std::fs::write(&dropin, &edited).unwrap();
    let (files, live) = (lab.files(), lab.live());

    let o = lab.run(&["rollback"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(73), "{t}");
    assert!(t.contains(&dropin.display().to_string()), "{t}");
    assert!(
        t.contains("changed since persist wrote it") && t.contains(".mine"),
        "{t}"
    );
    assert!(t.contains("changed nothing"), "{t}");
    assert_eq!(lab.files(), files, "no file touched");
    assert_eq!(lab.live(), live, "the live state untouched");
    let o = lab.run(&["status"]);
    assert!(text(&o).contains("applied and kept"), "{}", text(&o));

    let mine = PathBuf::from(format!("{}.mine", dropin.display()));
    std::fs::rename(&dropin, &mine).unwrap();
    lab.ok(&["rollback"]);
    let (etc2, _) = lab.files();
    let rel = mine.strip_prefix(lab.etc.path()).unwrap();
    assert_eq!(
        etc2.get(rel).map(|f| &f.2),
        Some(&edited),
        "the moved copy kept"
    );
    let mut rest = etc2.clone();
    rest.remove(rel);
    rest.remove(rel.parent().unwrap());
    assert_eq!(rest, etc0, "everything else as before the apply");
}

/// Nothing persisted: rollback behaves as before (no file touched, nothing
/// listed as put back: apply + rollback leave the etc root byte for byte as
/// they found it, the names file's lock included), and so does a rollback after a persist made for an
/// earlier apply, which a later apply superseded (that persist stays: it is
/// no longer the last apply's to undo).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_with_nothing_persisted_touches_no_file() {
    require_root("rollback_with_nothing_persisted_touches_no_file");
    let lab = Lab::new("rbpn");
    let (etc0, root0) = lab.files();
    lab.ok(&["apply", "--yes"]);
    lab.rollback_restoring_nothing();
    assert_eq!(lab.files(), (etc0, root0));

    // Persisted after the rollback: no committed apply, nothing recorded.
    lab.persist_recording_nothing();
    let persisted = lab.files();
    lab.ok(&["apply", "--yes"]);
    lab.rollback_restoring_nothing();
    assert_eq!(lab.files().0, persisted.0, "the earlier persist is left");
}

/// The dead man's switch: `persist` is refused while the apply awaits
/// confirmation, so when the watchdog rolls it back the etc root and the
/// root are exactly as before the apply (no persisted file appears); a
/// persist after that records nothing for the rolled-back apply.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn a_watchdog_rollback_leaves_no_persisted_file() {
    require_root("a_watchdog_rollback_leaves_no_persisted_file");
    let lab = Lab::new("rbpw");
    let (etc0, root0) = lab.files();
    let live0 = lab.live();
    lab.ok(&["apply", "--yes", "--confirm-timeout", "3"]);
    let o = lab.persist("networkd");
    assert_eq!(o.status.code(), Some(75), "{}", text(&o));
    let t0 = Instant::now();
    loop {
        let o = lab.run(&["status"]);
        if text(&o).contains("rolled_back at") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "no watchdog rollback: {}",
            text(&o)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(lab.live(), live0);
    assert_eq!(
        lab.files(),
        (etc0, root0),
        "the etc root and root as before the apply"
    );
    lab.persist_recording_nothing();
}
