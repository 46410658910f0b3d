//! A newcomer's first day, round two: what the tool prints is meant to be run
//! as printed, so each test here runs it, as printed, against the real thing.

use crate::support;

use std::process::Command;
use support::{bin, text};

/// The seed lab's host namespace and a private `/etc` root for it.
struct Seed {
    lab: roce_net::Lab,
    etc: tempfile::TempDir,
}

impl Seed {
    fn new(tag: &str) -> Seed {
        let lab = roce_net::Lab::seed_tagged(tag, 4).unwrap();
        // The peer asks for every host address, as RDMA traffic would: the
        // host then knows the peer as a neighbour, and the doctor checks egress
        // toward it. (ARP flux: several MACs answer, exit 6.)
        let peer = lab.peer_ns().unwrap();
        let p0 = lab.peer_nic().unwrap().name.clone();
        for n in lab.nics() {
            let o = bin()
                .args([
                    "--netns", peer, "probe", "arp", "--dev", &p0, "--count", "1",
                ])
                .args(["--target", &n.address.to_string()])
                .output()
                .unwrap();
            assert!(matches!(o.status.code(), Some(0 | 6)), "{}", text(&o));
        }
        Seed {
            lab,
            etc: tempfile::tempdir().unwrap(),
        }
    }

    fn host(&self) -> &str {
        self.lab.host_ns().unwrap()
    }

    /// `roce-net --netns HOST --etc-root ETC ARGS`.
    fn run(&self, args: &[&str]) -> std::process::Output {
        bin()
            .args(["--netns", self.host(), "--etc-root"])
            .arg(self.etc.path())
            .args(args)
            .output()
            .unwrap()
    }
}

/// Every `fix:` line `roce-net doctor` prints on the seed lab, pasted in the
/// order printed into a real shell with `set -e`, runs (the same source rule
/// was printed by `asymmetric-egress` and by `source-rule-missing`, and the
/// second `ip rule add` failed with "File exists"), and together they fix
/// every error. Diagnostics (`rdma link show`, which fails where there is no
/// RDMA subsystem) are printed as `check:`, never as `fix:`.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_doctors_fix_lines_run_in_printed_order_on_the_seed_lab() {
    support::require_root("the_doctors_fix_lines_run_in_printed_order_on_the_seed_lab");
    let seed = Seed::new("fixorder");
    let o = seed.run(&["doctor"]);
    let t = text(&o);
    for id in [
        "arp-ignore",
        "arp-announce",
        "asymmetric-egress",
        "source-rule-missing",
        "no-rdma-devices",
    ] {
        assert!(t.contains(&format!("[{id}]")), "{id} missing: {t}");
    }
    let fixes: Vec<&str> = t
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("fix: "))
        .collect();
    for (i, c) in fixes.iter().enumerate() {
        assert!(!fixes[..i].contains(c), "{c:?} printed twice:\n{t}");
        assert!(
            !c.contains("rdma link show") && !c.contains("ls /sys"),
            "a diagnostic printed as a fix: {c:?}"
        );
    }
    assert!(
        t.contains(&format!(
            "check: ip netns exec {} rdma link show",
            seed.host()
        )),
        "{t}"
    );
    // The findings whose fix was printed above say so.
    assert!(
        t.contains("(fixed by the fix above under [asymmetric-egress] r1 198.18.0.12)"),
        "{t}"
    );
    let script = format!("set -e\n{}\n", fixes.join("\n"));
    let sh = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        sh.status.success() && sh.stderr.is_empty(),
        "{script}\nfailed: {}",
        text(&sh)
    );
    eprintln!("{} fix lines ran with set -e", fixes.len());
    let after = seed.run(&["--json", "doctor"]);
    let v: serde_json::Value =
        serde_json::from_slice(&after.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&after)));
    let left: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(left.is_empty(), "left after the fixes: {left:#?}");
}

/// `persist --backend`'s help says what each backend writes as it renders it:
/// it said `rt_tables.d` wrote the table names alone, and it writes the sysctl
/// file and the protocol names too.
#[test]
fn the_backend_help_says_what_each_backend_writes() {
    let o = bin().args(["persist", "--help"]).output().unwrap();
    let t = text(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(o.status.success(), "{t}");
    assert!(!t.contains("table names alone"), "{t}");
    assert!(
        t.contains("rt_tables.d the sysctls and the table and protocol names, no routes or rules"),
        "{t}"
    );
    assert!(t.contains("sysctl.d writes the sysctls alone"), "{t}");
}

/// The paths `persist` shows are where it writes: under `--etc-root CONF`, no
/// `/etc/...` path (`Create /etc/sysctl.d/...`, `+++ /etc/...` named files it
/// wrote under CONF, for a user who gave `--etc-root` to stay off `/etc`); and
/// a dry run, which writes nothing, suggests loading no file as if it were
/// there (`sysctl -p CONF/...` failed with "cannot open").
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn persist_names_only_the_paths_it_writes() {
    support::require_root("persist_names_only_the_paths_it_writes");
    let lab = support::Lab::new("pst", 2);
    let t = tempfile::tempdir().unwrap();
    // Not under a directory named etc: any "/etc" in the output is the machine's.
    let conf = t.path().join("conf");
    let net = conf.join("systemd/network");
    std::fs::create_dir_all(&net).unwrap();
    for (i, nic) in ["r0", "r1"].iter().enumerate() {
        std::fs::write(
            net.join(format!("10-{nic}.network")),
            format!(
                "[Match]\nName={nic}\n\n[Network]\nAddress=198.18.2.{}/24\n",
                11 + i
            ),
        )
        .unwrap();
    }
    let conf_s = conf.to_str().unwrap();
    let persist = |args: &[&str]| {
        let o = bin()
            .args(["--netns", &lab.ns.0, "--etc-root", conf_s, "persist"])
            .args(args)
            .output()
            .unwrap();
        let t = text(&o);
        assert!(o.status.success(), "persist {args:?}: {t}");
        t
    };
    for backend in ["sysctl.d", "rt_tables.d", "networkd"] {
        let out = persist(&["--dry-run", "--backend", backend]);
        // Prose may name the directory networkd reads ("/etc"), never a file in it.
        assert!(
            !out.contains("/etc/"),
            "persist --dry-run --backend {backend}:\n{out}"
        );
        let shown: Vec<&str> = out
            .lines()
            .filter_map(|l| {
                l.strip_prefix("Create ")
                    .or_else(|| l.strip_prefix("Modify "))
                    .or_else(|| l.strip_prefix("+++ "))
                    .or_else(|| l.strip_prefix("note: ").and_then(|n| n.split(": ").next()))
            })
            .collect();
        assert!(shown.len() >= 3, "{backend}: {out}");
        for p in shown {
            assert!(
                p.starts_with(conf_s),
                "{backend}: {p} is not under {conf_s}:\n{out}"
            );
        }
        assert!(!out.contains("to load it now"), "{backend}: {out}");
        assert!(
            out.contains("once persist has written it (run without --dry-run)"),
            "{backend}: {out}"
        );
        assert!(!conf.join("sysctl.d").exists(), "a dry run wrote: {out}");
    }
    // Written for real: the file the note names is there, and loads.
    let out = persist(&["--backend", "sysctl.d"]);
    assert!(!out.contains("/etc/"), "{out}");
    let file = conf.join("sysctl.d/90-roce-net.conf");
    let load = format!(
        "`ip netns exec {} sysctl -p {}` to load it now",
        lab.ns.0,
        file.display()
    );
    assert!(out.contains(&load), "{out}");
    assert!(file.exists(), "{out}");
}

/// `rollback` names the tables as `plan` does (`lookup roce_r0(1001)`): it
/// showed the bare numbers for the tables the plan had just shown by name.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn rollback_names_the_tables_as_plan_does() {
    support::require_root("rollback_names_the_tables_as_plan_does");
    let lab = support::Lab::new("rbnames", 2);
    let plan = lab.run(&["plan"]);
    let p = text(&plan);
    assert!(p.contains("lookup roce_r0(1001)"), "{p}");
    let a = lab.run(&["apply", "--yes"]);
    assert!(a.status.success(), "{}", text(&a));
    let r = lab.run(&["rollback"]);
    let t = text(&r);
    assert!(r.status.success(), "{t}");
    assert!(
        t.contains("delete rule from 198.18.2.11 lookup roce_r0(1001)"),
        "{t}"
    );
    assert!(t.contains("table roce_r1(1002)"), "{t}");
    for l in t
        .lines()
        .filter(|l| l.contains("route ") || l.contains(" rule "))
    {
        assert!(
            !l.contains("table 100") && !l.contains("lookup 100"),
            "a table shown by number where plan names it: {l}\n{t}"
        );
    }
}

/// The lab's ARP probe says whose MAC each answer carries: the probed NIC's own
/// (the right answer) or another NIC's (flux); it listed bare MACs.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_labs_arp_probe_says_which_mac_is_the_nics_own() {
    support::require_root("the_labs_arp_probe_says_which_mac_is_the_nics_own");
    let tmp = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["lab", "--nics", "2"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let (before, after) = t.split_once("=== after ===").unwrap();
    let answers = |part: &str| -> Vec<String> {
        part.lines()
            .skip_while(|l| !l.starts_with("wire:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(str::to_string)
            .collect()
    };
    let b = answers(before);
    assert_eq!(b.len(), 2, "{t}");
    assert!(
        b.iter()
            .any(|l| l.ends_with("(r1's own MAC: the right answer)")),
        "{t}"
    );
    assert!(
        b.iter()
            .any(|l| l.ends_with("(r0's MAC: r0 answers for r1's address)")),
        "{t}"
    );
    let a = answers(after);
    assert_eq!(a.len(), 1, "{t}");
    assert!(a[0].ends_with("(r1's own MAC: the right answer)"), "{t}");
}

/// The plan says why it changes `rp_filter` when no finding asked for it (the
/// doctor reports strict rp_filter only; the policy's default `loose` sets 2
/// where the lab has 0), and names only the sysctls that were not strict.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_plan_says_why_it_changes_rp_filter_no_finding_asked_for() {
    support::require_root("the_plan_says_why_it_changes_rp_filter_no_finding_asked_for");
    let lab = support::Lab::new("rpf", 2);
    let doctor = text(&lab.run(&["doctor"]));
    assert!(
        !doctor.contains("rp_filter") && !doctor.contains("rp-filter"),
        "{doctor}"
    );
    let p = text(&lab.run(&["plan"]));
    assert!(
        p.contains("~ sysctl net.ipv4.conf.r0.rp_filter 0 -> 2"),
        "{p}"
    );
    assert!(
        p.contains("note: rp_filter becomes 2 on all, r0, r1 because the policy says so"),
        "{p}"
    );
    // r0 strict: the doctor reports it, and its change is a fix, not a note.
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns.0,
            "sysctl",
            "-qw",
            "net.ipv4.conf.r0.rp_filter=1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let doctor = text(&lab.run(&["doctor"]));
    assert!(doctor.contains("[rp-filter-strict] r0"), "{doctor}");
    let p = text(&lab.run(&["plan"]));
    assert!(
        p.contains("note: rp_filter becomes 2 on all, r1 because"),
        "{p}"
    );
    // With `rp_filter: keep` nothing of it is planned or noted.
    let keep = lab.etc.join("keep.yaml");
    std::fs::write(&keep, "rp_filter: keep\n").unwrap();
    let p = text(&lab.run(&["plan", "-f", keep.to_str().unwrap()]));
    assert!(!p.contains("rp_filter"), "{p}");
}

/// One release build serves both demos: `scripts/lab.sh` built without the
/// `verbs` feature, then `scripts/vm-lab.sh` built again with it (two fat-LTO
/// builds, 16 and 20 minutes on a shared 2-core machine). Both now run the one
/// command, which the README gives too (the feature loads libibverbs at run
/// time: the binary runs without it).
#[test]
fn one_release_build_serves_the_lab_and_the_vm_demo() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = |f: &str| -> Vec<String> {
        std::fs::read_to_string(root.join(f))
            .unwrap()
            .lines()
            .filter_map(|l| {
                l.split_once("cargo build ")
                    .map(|(_, r)| format!("cargo build {r}"))
            })
            .map(|c| c.trim_end_matches(['`', ' ']).to_string())
            .collect()
    };
    let want = "cargo build --release --locked --features verbs --bin roce-net";
    for f in ["scripts/lab.sh", "scripts/vm-lab.sh"] {
        assert_eq!(build(f), vec![want.to_string()], "{f}");
    }
    let readme = build("README.md");
    assert!(readme.iter().any(|c| c.starts_with(want)), "{readme:#?}");
    for c in &readme {
        assert!(
            !c.starts_with("cargo build --release") || c.starts_with(want),
            "the README builds another binary than the demos: {c}"
        );
    }
}

/// The README and the examples say "as root" rather than assuming `sudo`: their
/// `sudo install ...` failed on a machine where the user is root and `sudo`
/// is absent. No command they give starts with `sudo`.
#[test]
fn the_readme_and_examples_say_as_root_instead_of_assuming_sudo() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in ["examples/python", "examples/ansible"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let mut bad = Vec::new();
    for f in &files {
        let Ok(body) = std::fs::read_to_string(f) else {
            continue;
        };
        for (i, l) in body.lines().enumerate() {
            let l = l.trim_start();
            if l.starts_with("sudo ") || l.starts_with("$ sudo ") {
                bad.push(format!("{}:{}: {l}", f.display(), i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "commands assuming sudo: {bad:#?}");
}

/// A build without the `verbs` feature says how to get it with the README's
/// own build line (it suggested `cargo build --features verbs`: a debug
/// build of every binary).
#[cfg(not(feature = "verbs"))]
#[test]
fn a_build_without_verbs_names_the_readmes_build_line() {
    let o = bin().arg("verbs").output().unwrap();
    let t = text(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        t.contains("cargo build --release --locked --features verbs --bin roce-net"),
        "{t}"
    );
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    assert!(
        readme.contains("cargo build --release --locked --features verbs --bin roce-net"),
        "the README's build line changed: say the same in kernel/verbs/mod.rs"
    );
}
