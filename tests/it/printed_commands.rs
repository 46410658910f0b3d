//! Every command `roce-net doctor` and `roce-net fleet` print, pasted as printed
//! into a real `sh -c`, runs only the argv it means, whatever the host's names
//! hold: interface, RDMA device, host and namespace names with `;`, `$`, `(`,
//! `` ` ``, `'`, `|`, `&` and terminal control characters, from snapshots (which
//! can come from other nodes or a support bundle). Every program the commands
//! name is a stub on `PATH` that records its argv; `ssh` is a stub that records
//! its own and hands the remote part to a second `sh -c` (as `ssh` does: its
//! arguments joined by spaces), in its own directory. An injected command shows
//! up as a `touch` invocation or a file in either directory; a name split or
//! changed by quoting shows up as an argument holding part of a name.

use crate::support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{bin, text};

/// Interface names the kernel accepts (at most 15 bytes, no `/`, `:` or space).
const IFNAMES: &[&str] = &[
    "x;touch${IFS}A",
    "$(touch${IFS}B)",
    "`touch${IFS}C`",
    "x|touch${IFS}D",
    "x&touch${IFS}E",
    "x';touch${IFS}F",
    "r0\u{1b}]0;pwned\u{7}",
];
/// RDMA device names, namespaces and host names from snapshots.
const DEVICES: &[&str] = &["m;touch${IFS}R", "m\u{1b}[2Jpwned"];
const NETNS: &str = "n$(touch I)";
const HOSTS: &[&str] = &[
    "node-c;touch G",
    "-oProxyCommand=touch${IFS}H",
    "h\u{1b}]0;pwned\u{7}",
];

/// Every program a printed command may name.
const PROGRAMS: &[&str] = &[
    "ip",
    "sysctl",
    "ethtool",
    "grep",
    "dcb",
    "rdma",
    "cat",
    "ls",
    "mlnx_qos",
    "ibv_devinfo",
    "ibv_devices",
    "dpkg",
    "rpm",
    "roce-net",
    "arping",
    "mstflint",
    "touch",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("roce-net/tests/fixtures/doctor")
}

fn all_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = IFNAMES
        .iter()
        .chain(DEVICES)
        .chain(HOSTS)
        .copied()
        .collect();
    v.push(NETNS);
    v
}

/// Every string and object key equal to a key of `map` replaced by its value.
fn rename(v: &mut Value, map: &[(String, String)]) {
    let swap = |s: &str| {
        map.iter()
            .find(|(a, _)| a == s)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| s.to_string())
    };
    match v {
        Value::String(s) => *s = swap(s),
        Value::Array(a) => a.iter_mut().for_each(|x| rename(x, map)),
        Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut x) in old {
                rename(&mut x, map);
                o.insert(swap(&k), x);
            }
        }
        _ => {}
    }
}

/// A fixture with its interfaces (but `lo`) and RDMA devices renamed to the
/// crafted names, starting at `shift` so each fixture uses other names.
fn crafted(doc: &Value, shift: usize) -> Value {
    let mut map = Vec::new();
    let names = |key: &str, field: &str| -> Vec<String> {
        doc[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i[field].as_str().map(str::to_string))
                    .filter(|n| n != "lo")
                    .collect()
            })
            .unwrap_or_default()
    };
    for (i, n) in names("interfaces", "name").into_iter().enumerate() {
        map.push((n, IFNAMES[(i + shift) % IFNAMES.len()].to_string()));
    }
    for (i, n) in names("rdma", "name").into_iter().enumerate() {
        map.push((n, DEVICES[(i + shift) % DEVICES.len()].to_string()));
    }
    let mut v = doc.clone();
    rename(&mut v, &map);
    v
}

struct Shell {
    _dir: tempfile::TempDir,
    stubs: PathBuf,
    log: PathBuf,
    local: PathBuf,
    remote: PathBuf,
}

impl Shell {
    fn new() -> Shell {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| {
            let d = dir.path().join(n);
            std::fs::create_dir(&d).unwrap();
            d
        };
        let (stubs, log, local, remote) = (p("bin"), p("log"), p("local"), p("remote"));
        // Builtins only: PATH holds nothing but the stubs. One file per
        // invocation (`$$`), its argv separated by RS (\036).
        let record = "printf '%s\\036' \"${0##*/}\" \"$@\" > \"$LOG/$$\"\n";
        let write = |name: &str, body: &str| {
            let f = stubs.join(name);
            std::fs::write(&f, format!("#!/bin/sh\n{record}{body}")).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        for prog in PROGRAMS {
            write(prog, "exit 0\n");
        }
        write(
            "ssh",
            "[ \"$1\" = -- ] && shift\nshift\ncd \"$REMOTE\" || exit 99\nexec /bin/sh -c \"$*\"\n",
        );
        Shell {
            _dir: dir,
            stubs,
            log,
            local,
            remote,
        }
    }

    /// Run `cmd` as printed; the argv of every program it ran.
    fn paste(&self, cmd: &str) -> Vec<Vec<String>> {
        for e in std::fs::read_dir(&self.log).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        let o = Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .env_clear()
            .env("PATH", &self.stubs)
            .env("LOG", &self.log)
            .env("REMOTE", &self.remote)
            .current_dir(&self.local)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{cmd:?} as printed failed in sh: {}",
            text(&o)
        );
        let mut runs = Vec::new();
        for e in std::fs::read_dir(&self.log).unwrap() {
            let b = std::fs::read(e.unwrap().path()).unwrap();
            let s = String::from_utf8(b).unwrap();
            let argv: Vec<String> = s
                .strip_suffix('\u{1e}')
                .unwrap_or(&s)
                .split('\u{1e}')
                .map(str::to_string)
                .collect();
            runs.push(argv);
        }
        for d in [&self.local, &self.remote] {
            let left: Vec<_> = std::fs::read_dir(d).unwrap().collect();
            assert!(left.is_empty(), "{cmd:?} created files: {left:?}");
        }
        runs
    }
}

/// Paste every command; check that nothing but the intended argv ran and that
/// every crafted name reached its program whole. The crafted names seen whole.
fn check_all(shell: &Shell, cmds: &[String]) -> BTreeSet<String> {
    let names = all_names();
    let mut seen = BTreeSet::new();
    for cmd in cmds {
        assert!(
            !cmd.chars().any(char::is_control),
            "{cmd:?} prints a control character raw"
        );
        let runs = shell.paste(cmd);
        let mut whole = false;
        for argv in &runs {
            assert_ne!(
                argv[0], "touch",
                "{cmd:?} ran an injected command: {runs:?}"
            );
            if argv[0] == "ssh" {
                // `ssh [--] HOST REMOTE`: the host is one whole name, never an option.
                let host = if argv[1] == "--" { &argv[2] } else { &argv[1] };
                assert!(
                    !host.starts_with('-') || argv[1] == "--",
                    "{cmd:?}: ssh takes the host {host:?} for an option"
                );
                assert!(
                    HOSTS.contains(&host.as_str()) || !host.contains("touch"),
                    "{cmd:?}: ssh got host {host:?}"
                );
                if HOSTS.contains(&host.as_str()) {
                    seen.insert(host.clone());
                    whole = true;
                }
                continue;
            }
            for a in &argv[1..] {
                let hit: Vec<&&str> = names.iter().filter(|n| a.contains(**n)).collect();
                for n in &hit {
                    seen.insert(n.to_string());
                    whole = true;
                }
                if hit.is_empty() {
                    assert!(
                        !a.contains("touch") && !a.contains("pwned"),
                        "{cmd:?}: argument {a:?} of {argv:?} holds part of a name"
                    );
                }
            }
        }
        if cmd.contains("touch") || cmd.contains("pwned") {
            assert!(whole, "{cmd:?} names no crafted name whole: {runs:?}");
        }
    }
    seen
}

/// The commands printed to paste: `fix:` lines and `check:` lines (which only
/// show more, but are pasted all the same).
fn fix_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.strip_prefix("fix: ")
                .or_else(|| l.strip_prefix("check: "))
        })
        .map(str::to_string)
        .collect()
}

/// No raw ESC or BEL anywhere in the output; the names shown escaped.
fn no_raw_controls(what: &str, out: &str) {
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "{what} printed a control character raw: {out:?}"
    );
}

#[test]
fn doctor_fix_commands_pasted_into_a_shell_run_only_what_they_say() {
    let shell = Shell::new();
    let t = tempfile::tempdir().unwrap();
    let mut cmds = Vec::new();
    let mut files = 0;
    for (k, e) in std::fs::read_dir(fixtures()).unwrap().enumerate() {
        let path = e.unwrap().path();
        if !path.to_string_lossy().ends_with(".bad.json") {
            continue;
        }
        let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let mut v = crafted(&doc, k);
        // Every other fixture as if taken in a crafted namespace.
        if k % 2 == 0 {
            v["netns"] = Value::String(NETNS.into());
        }
        let f = t.path().join(path.file_name().unwrap());
        std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
        files += 1;
        for sub in ["doctor", "show"] {
            let o = bin().arg(sub).arg("--from").arg(&f).output().unwrap();
            let out = text(&o);
            assert!(
                !out.contains("error:"),
                "{sub} --from {}: {out}",
                f.display()
            );
            no_raw_controls(&format!("{sub} --from {}", f.display()), &out);
            if sub == "doctor" {
                cmds.extend(fix_lines(&out));
            }
        }
    }
    assert!(files >= 30, "{files} fixtures");
    let seen = check_all(&shell, &cmds);
    let crafted_cmds = cmds
        .iter()
        .filter(|c| c.contains("touch") || c.contains("pwned"))
        .count();
    eprintln!(
        "{} fix commands pasted, {crafted_cmds} naming crafted names",
        cmds.len()
    );
    assert!(crafted_cmds >= 40, "{crafted_cmds}: {cmds:#?}");
    for n in IFNAMES.iter().chain(DEVICES).chain([&NETNS]) {
        assert!(seen.contains(*n), "no command named {n:?} whole: {seen:?}");
    }
}

#[test]
fn fleet_ssh_lines_pasted_into_a_shell_run_only_what_they_say() {
    let shell = Shell::new();
    let t = tempfile::tempdir().unwrap();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("healthy-hw.json")).unwrap())
            .unwrap();
    let mut files = Vec::new();
    // Two plain hosts set the common MTU (9000); the crafted ones differ from
    // it and share their addresses with the plain ones.
    for (i, host) in ["gpu1", "gpu2"].iter().chain(HOSTS).enumerate() {
        let mut v = if i < 2 { doc.clone() } else { crafted(&doc, i) };
        v["hostname"] = Value::String(host.to_string());
        if i == 2 {
            v["netns"] = Value::String(NETNS.into());
        }
        if i >= 2 {
            for ifc in v["interfaces"].as_array_mut().unwrap() {
                if ifc["mtu"] == 9000 {
                    ifc["mtu"] = 4200.into();
                }
            }
        }
        let f = t.path().join(format!("h{i}.json"));
        std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
        files.push(f);
    }
    let o = bin().arg("fleet").args(&files).output().unwrap();
    let out = text(&o);
    no_raw_controls("fleet", &out);
    let cmds = fix_lines(&out);
    let seen = check_all(&shell, &cmds);
    eprintln!("{} fleet commands pasted", cmds.len());
    for h in HOSTS {
        assert!(seen.contains(*h), "no ssh line for {h:?}: {cmds:#?}");
    }
    assert!(seen.contains(NETNS), "{cmds:#?}");
    assert!(
        IFNAMES.iter().filter(|n| seen.contains(**n)).count() >= 3,
        "{seen:?}: {cmds:#?}"
    );
}

/// `ip ARGS` on the machine, panicking on failure.
fn ip_cmd(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", text(&o));
}

/// A namespace with four NICs in one subnet (ARP flux, no source routing):
/// `r0`, two whose names hold shell syntax and one with ESC and BEL, made for
/// real by the kernel.
fn flux_ns(tag: &str) -> support::Ns {
    let ns = support::Ns(support::ns_name(tag));
    ip_cmd(&["netns", "add", &ns.0]);
    for (i, name) in [
        "r0",
        "x;touch${IFS}A",
        "$(touch${IFS}B)",
        "r\u{1b}]0;x\u{7}",
    ]
    .iter()
    .enumerate()
    {
        let peer = format!("p{i}");
        let addr = format!("198.18.2.{}/24", 11 + i);
        ip_cmd(&[
            "-n", &ns.0, "link", "add", name, "type", "veth", "peer", "name", &peer,
        ]);
        ip_cmd(&["-n", &ns.0, "addr", "add", &addr, "dev", name]);
        ip_cmd(&["-n", &ns.0, "link", "set", name, "up"]);
        ip_cmd(&["-n", &ns.0, "link", "set", &peer, "up"]);
    }
    ns
}

/// The findings of `doctor --netns NS -f POLICY`: (id, subject) with their fix
/// commands.
fn doctor_in(ns: &str, etc: &Path, policy: &Path) -> Vec<(String, String, Vec<String>)> {
    let o = bin()
        .args(["--json", "--netns", ns, "--etc-root"])
        .arg(etc)
        .args(["doctor", "-f"])
        .arg(policy)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}", text(&o)));
    v["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings array: {v}"))
        .iter()
        .map(|f| {
            let cmds = f["remediation"]["commands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            (
                f["id"].as_str().unwrap().to_string(),
                f["subject"].to_string(),
                cmds,
            )
        })
        .collect()
}

/// Under `--netns`, every fix command the doctor prints, run as printed (by a
/// real shell, in a decoy namespace standing for the machine's own), fixes the
/// finding in the lab namespace and leaves the decoy exactly as it was. The
/// decoy has the lab's interface names, so a command that ignored `--netns`
/// would succeed there and change it.
#[test]
#[ignore = "needs root: creates network namespaces"]
fn doctor_fixes_under_netns_act_in_that_namespace_as_printed() {
    support::require_root("doctor_fixes_under_netns_act_in_that_namespace_as_printed");
    let lab = flux_ns("fix");
    let decoy = flux_ns("decoy");
    let t = tempfile::tempdir().unwrap();
    let etc = t.path().join("etc");
    let cwd = t.path().join("cwd");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    // iproute2 table names cannot hold `;`: the routing fixes use numbers.
    let policy = t.path().join("policy.yaml");
    std::fs::write(&policy, "register_table_names: false\n").unwrap();
    let decoy_before = support::state_of(&decoy.0, &etc, &[]);
    let before = doctor_in(&lab.0, &etc, &policy);
    // Every NIC is read whole, the one named with ESC included (its ethtool
    // statistics and DCB are asked for by the kernel's name, not the escaped text).
    assert!(
        !before.iter().any(|f| f.0 == "snapshot-partial"),
        "{before:#?}"
    );
    // no-rdma-devices only lists diagnostics (`rdma link show`), which fail
    // where there is no RDMA subsystem; every other finding here is fixed by
    // its commands.
    let fixable: Vec<_> = before
        .iter()
        .filter(|f| !f.2.is_empty() && f.0 != "no-rdma-devices")
        .collect();
    // Each distinct command once, in order: findings about one NIC repeat its
    // routing fix (`ip rule add` a second time is "File exists").
    let mut ran = 0;
    let mut done = BTreeSet::new();
    for (id, subject, cmds) in &fixable {
        for c in cmds {
            if !done.insert(c.clone()) {
                continue;
            }
            let o = Command::new("ip")
                .args(["netns", "exec", &decoy.0, "sh", "-c", c])
                .current_dir(&cwd)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{id} {subject}: {c:?} failed: {}",
                text(&o)
            );
            ran += 1;
        }
    }
    let left: Vec<_> = std::fs::read_dir(&cwd).unwrap().collect();
    assert!(left.is_empty(), "the fix commands created files: {left:?}");
    let after = doctor_in(&lab.0, &etc, &policy);
    let ids: BTreeSet<&str> = fixable.iter().map(|f| f.0.as_str()).collect();
    eprintln!(
        "{} findings with {ran} fix commands ({ids:?}); after: {:?}",
        fixable.len(),
        after.iter().map(|f| (&f.0, &f.1)).collect::<Vec<_>>()
    );
    for k in ["arp-ignore", "arp-announce", "source-rule-missing"] {
        assert!(ids.contains(k), "{k} not found before the fixes: {ids:?}");
    }
    assert!(fixable.len() >= 6, "{before:#?}");
    for f in &fixable {
        assert!(
            !after.iter().any(|a| a.0 == f.0 && a.1 == f.1),
            "{} {} is still there after its fix {:?}: {after:#?}",
            f.0,
            f.1,
            f.2
        );
    }
    assert_eq!(
        support::state_of(&decoy.0, &etc, &[]),
        decoy_before,
        "the decoy (the machine's own namespace) changed"
    );
}
