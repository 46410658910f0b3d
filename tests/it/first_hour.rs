//! Small untruths a newcomer trips on in the first hour, each checked against
//! the binary (no root needed).

use crate::support;

use std::path::Path;
use support::{bin, text};

#[test]
fn probe_arp_timeout_zero_is_refused_by_a_message_that_refuses_it() {
    let o = bin()
        .args(["probe", "arp", "--dev", "lo", "--target", "198.18.0.1"])
        .args(["--timeout", "0"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(65), "{t}");
    assert!(!t.contains("between 0 and"), "says 0 is allowed: {t}");
    assert!(
        t.contains("--timeout must be more than 0 and at most 3600 seconds, not 0"),
        "{t}"
    );
}

#[test]
fn lab_help_says_which_global_options_it_refuses() {
    let o = bin().args(["lab", "--help"]).output().unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("--netns and --sysfs-root are refused here"),
        "{t}"
    );
    for opt in ["--netns", "--sysfs-root"] {
        let o = bin().args([opt, "x", "lab"]).output().unwrap();
        assert_eq!(o.status.code(), Some(64), "{opt}: {}", text(&o));
    }
}

/// The egress check names which destination it routed to and why (the demo's
/// "before" named 198.18.0.1, an address that exists nowhere in the lab).
#[test]
fn asymmetric_egress_says_which_destination_it_checks_and_why() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("roce-net/tests/fixtures/doctor/asymmetric-egress.bad.json");
    let o = bin().arg("doctor").arg("--from").arg(&f).output().unwrap();
    let t = text(&o);
    let line = t
        .lines()
        .find(|l| l.contains("[asymmetric-egress]"))
        .unwrap_or_else(|| panic!("no asymmetric-egress finding: {t}"));
    assert!(
        line.contains("standing for any peer there: no neighbour on it is known")
            || line.contains("to its neighbour "),
        "{line}"
    );
}

/// The `roce-net` commands in backquotes in `text`.
fn quoted_commands(text: &str) -> Vec<String> {
    quoted(text, |c| c.starts_with("roce-net"))
}

/// What `text` has in backquotes that `keep` keeps.
fn quoted(text: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| keep(c))
        .map(str::to_string)
        .collect()
}

/// Run `cmd` as printed, through a shell, with `roce-net` the binary under test.
fn run_printed(cmd: &str, extra: &str) -> std::process::Output {
    let exe = env!("CARGO_BIN_EXE_roce-net");
    let dir = Path::new(exe).parent().unwrap();
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd}{extra}"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// `plan -f POLICY` ends by telling how to apply what was reviewed: the
/// printed `apply` carries the same policy (it used to be a bare `apply`, which
/// copied as printed applied the default policy instead), and with `-o FILE`
/// the printed `apply --plan` names that file. Each, run as printed (with
/// `--yes`: no terminal here), leaves nothing for the same plan to do.
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_apply_a_plan_prints_applies_what_was_reviewed() {
    support::require_root("the_apply_a_plan_prints_applies_what_was_reviewed");
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("only arp.yaml");
    std::fs::write(&policy, "routing:\n  enabled: false\nrp_filter: keep\n").unwrap();
    let pol = policy.to_str().unwrap();
    let saved = dir.path().join("plan.json");

    for with_file in [false, true] {
        let lab = support::Lab::new(if with_file { "fhp" } else { "fhf" }, 2);
        let mut args = vec!["plan", "-f", pol];
        let saved_s = saved.to_str().unwrap();
        if with_file {
            args.extend(["-o", saved_s]);
        }
        let o = lab.run(&args);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        let hint = t
            .lines()
            .find(|l| l.starts_with("review, then apply"))
            .unwrap_or_else(|| panic!("no hint: {t}"));
        let cmds = quoted_commands(hint);
        let apply = if with_file {
            cmds.iter()
                .find(|c| c.contains("apply --plan"))
                .unwrap_or_else(|| panic!("{hint}"))
        } else {
            cmds.iter()
                .find(|c| c.ends_with(" apply -f '{pol}'".replace("{pol}", pol).as_str()))
                .unwrap_or_else(|| panic!("no apply with the policy: {hint}"))
        };
        assert!(!apply.contains("FILE"), "{hint}");
        let r = run_printed(apply, " --yes");
        assert!(r.status.success(), "{apply}: {}", text(&r));
        let again = lab.run(&["plan", "-f", pol]);
        assert!(
            text(&again).contains("no changes"),
            "{apply} left changes: {}",
            text(&again)
        );
        // Only the policy's changes were made: routing stayed off.
        let rules = std::process::Command::new("ip")
            .args(["-n", &lab.ns.0, "rule"])
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&rules.stdout).contains("1001"),
            "the default policy was applied: {}",
            String::from_utf8_lossy(&rules.stdout)
        );
    }
}

/// `apply --confirm-timeout 120` says how long there is to confirm: at most
/// the 120 s asked for (it said 121 s: a deadline rounded up to the second,
/// less the current second rounded down).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn apply_says_no_more_time_to_confirm_than_was_asked() {
    support::require_root("apply_says_no_more_time_to_confirm_than_was_asked");
    for _ in 0..3 {
        let lab = support::Lab::new("fhc", 2);
        let o = lab.run(&["apply", "--yes", "--confirm-timeout", "120"]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        let secs: u64 = t
            .split(" confirm` within ")
            .nth(1)
            .and_then(|r| r.split('s').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no 'within Ns': {t}"));
        assert!((118..=120).contains(&secs), "{secs} s: {t}");
        // The watchdog leaves once its apply is rolled back.
        let r = lab.run(&["rollback"]);
        assert!(r.status.success(), "{}", text(&r));
    }
}

/// The demo's egress check says which destination it routes to: the peer's
/// address and NIC (it printed `route get <peer>`, a placeholder).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_demo_names_the_address_its_egress_check_routes_to() {
    support::require_root("the_demo_names_the_address_its_egress_check_routes_to");
    let tmp = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["lab", "--nics", "2"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("egress:")).collect();
    assert_eq!(lines.len(), 2, "before and after: {t}");
    for l in lines {
        assert!(!l.contains('<'), "{l}");
        let addr = l
            .strip_prefix("egress: route get ")
            .and_then(|r| r.split(' ').next())
            .unwrap_or_default();
        assert!(
            addr.parse::<std::net::Ipv4Addr>().is_ok() && l.contains("(the peer's p0)"),
            "{l}"
        );
    }
}

/// `persist` in a namespace with its own `--etc-root` and `--root`: every
/// command its notes print acts there when run as printed. It printed a bare
/// `sysctl --system` (the machine's own namespace, and the machine's
/// /etc/sysctl.d, not the file written) and `roce-net persist --remove`
/// without `--netns`, `--etc-root` or `--root` (the machine's /etc).
#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn the_commands_persist_prints_act_where_it_wrote() {
    support::require_root("the_commands_persist_prints_act_where_it_wrote");
    let lab = support::Lab::new("fhs", 2);
    let root = tempfile::tempdir().unwrap();
    // apply writes the table names under the etc root: persist then keeps
    // that file and says how to remove it.
    let a = lab.run(&["apply", "--yes"]);
    assert!(a.status.success(), "{}", text(&a));
    let sysctl_path = lab.etc.join("sysctl.d/90-roce-net.conf");
    let own =
        |k: &str| std::fs::read_to_string(format!("/proc/sys/net/ipv4/conf/all/{k}")).unwrap();
    let machine_before = own("arp_ignore");

    let root_s = root.path().to_str().unwrap();
    let o = lab.run(&["persist", "--backend", "sysctl.d", "--root", root_s]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(sysctl_path.exists(), "{t}");
    let notes: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("note:") || l.starts_with("kept "))
        .collect();
    // The names file there was written by apply, not by a persist.
    assert!(
        t.contains("written by an earlier persist, or by apply, which names its tables there"),
        "{t}"
    );
    let cmds: Vec<String> = notes
        .iter()
        .flat_map(|l| quoted(l, |c| c.starts_with("roce-net") || c.contains("sysctl ")))
        .collect();
    assert!(cmds.iter().any(|c| c.contains("sysctl")), "{t}");
    assert!(cmds.iter().any(|c| c.contains("persist --root")), "{t}");
    for c in &cmds {
        if c.starts_with("roce-net") {
            assert!(
                c.contains(&format!("--netns {}", lab.ns.0))
                    && c.contains(&lab.etc.display().to_string())
                    && c.contains(&format!("--root {root_s}")),
                "{c}"
            );
        } else {
            assert_eq!(
                *c,
                format!(
                    "ip netns exec {} sysctl -p {}",
                    lab.ns.0,
                    sysctl_path.display()
                ),
                "{t}"
            );
            // Run as printed: the namespace gets the persisted values back,
            // the machine keeps its own.
            support::ip(&lab.ns.0, "link show dev r0");
            let w = std::process::Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &lab.ns.0,
                    "sysctl",
                    "-qw",
                    "net.ipv4.conf.r0.arp_ignore=0",
                ])
                .status()
                .unwrap();
            assert!(w.success());
            let r = run_printed(c, "");
            assert!(r.status.success(), "{c}: {}", text(&r));
            let v = std::process::Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &lab.ns.0,
                    "sysctl",
                    "-n",
                    "net.ipv4.conf.r0.arp_ignore",
                ])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), "1", "{c}");
        }
    }
    assert_eq!(
        own("arp_ignore"),
        machine_before,
        "the machine's own namespace"
    );
    // The printed `persist --remove`, run as printed (in its dry run), finds
    // what this persist wrote.
    let remove = cmds
        .iter()
        .find(|c| c.contains("persist --root") && c.ends_with("--remove"))
        .unwrap_or_else(|| panic!("no persist --remove: {t}"));
    let r = run_printed(remove, " --dry-run");
    assert!(r.status.success(), "{remove}: {}", text(&r));
    assert!(
        text(&r).contains("90-roce-net.conf"),
        "{remove}: {}",
        text(&r)
    );
    let rb = lab.run(&["rollback"]);
    assert!(rb.status.success(), "{}", text(&rb));
}
