//! What the packages ship for the health check (`packaging/`, docs/health.md),
//! judged by the tools that read it: systemd itself (`systemd-analyze verify`
//! and its offline security review) for the service and timer, a model of
//! node-problem-detector's own config checks for the custom plugin monitor, the
//! shells for the Slurm program and the NHC check. The Slurm program against
//! real daemons is `slurm_health.rs`; the timer's metrics served by
//! node_exporter, `health_metrics.rs`.

use crate::support::text;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A root holding the units where the .deb puts them, the binary under test
/// as `/usr/bin/roce-net` (what their ExecStart names), and the machine's
/// targets they refer to.
fn unit_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let units = root.path().join("lib/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::create_dir_all(root.path().join("usr/bin")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_roce-net"),
        root.path().join("usr/bin/roce-net"),
    )
    .unwrap();
    for u in ["roce-net-health.service", "roce-net-health.timer"] {
        std::fs::copy(repo().join("packaging/systemd").join(u), units.join(u)).unwrap();
    }
    for e in std::fs::read_dir("/lib/systemd/system").expect("/lib/systemd/system (systemd)") {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "target") {
            std::fs::copy(&p, units.join(p.file_name().unwrap())).unwrap();
        }
    }
    root
}

fn analyze(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new("systemd-analyze")
        .args(args)
        .arg(format!("--root={}", root.display()))
        .args(["roce-net-health.service", "roce-net-health.timer"])
        .output()
        .expect("systemd-analyze (Debian's systemd; scripts/test.sh installs it)")
}

/// `systemd-analyze verify` passes without a word (an unknown key or a
/// missing binary is only a warning there, so any output fails the test too),
/// and the offline security review rates the service's exposure as "OK"
/// (at most 2.0 of 10 here: root, but one capability and a read-only system).
#[test]
#[ignore = "needs systemd-analyze (Debian's systemd; scripts/test.sh installs it)"]
fn the_units_pass_systemd_analyze_verify_and_are_hardened() {
    let root = unit_root();
    let o = analyze(root.path(), &["verify"]);
    assert!(
        o.status.success() && text(&o).trim().is_empty(),
        "{}",
        text(&o)
    );
    // The judge judges: a misspelt key is reported.
    let svc = root
        .path()
        .join("lib/systemd/system/roce-net-health.service");
    let good = std::fs::read_to_string(&svc).unwrap();
    std::fs::write(&svc, good.replace("NoNewPrivileges=", "NoNewPrivilege=")).unwrap();
    let o = analyze(root.path(), &["verify"]);
    assert!(text(&o).contains("Unknown key"), "{}", text(&o));
    std::fs::write(&svc, &good).unwrap();

    let o = Command::new("systemd-analyze")
        .args(["security", "--offline=true"])
        .arg(format!("--root={}", root.path().display()))
        .arg("roce-net-health.service")
        .output()
        .unwrap();
    let out = text(&o);
    let level = out
        .lines()
        .find_map(|l| l.split("roce-net-health.service: ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{out}"));
    assert!(level <= 2.0, "exposure {level}:\n{out}");
    // What the unit keeps and what it gives up, as the review reads it.
    for line in [
        "✓ NoNewPrivileges=",
        "✓ ProtectKernelTunables=",
        "✓ IPAddressDeny=",
        "✓ RestrictAddressFamilies=~AF_(INET|INET6)",
        "✓ CapabilityBoundingSet=~CAP_SYS_ADMIN",
        "✓ CapabilityBoundingSet=~CAP_NET_ADMIN",
        "✓ PrivateTmp=",
        "✓ ProtectHome=",
    ] {
        assert!(out.contains(line), "{line} missing:\n{out}");
    }
}

/// A Go duration as node-problem-detector parses it with `time.ParseDuration`
/// (the units its configs use: `ms`, `s`, `m`, `h`), in milliseconds.
fn go_duration_ms(s: &str) -> u64 {
    let (n, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| s.split_at(i))
        .unwrap_or_else(|| panic!("{s:?}: no unit"));
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("{s:?}"));
    n * match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        u => panic!("{s:?}: unit {u:?}"),
    }
}

/// The custom plugin monitor config parses and passes the checks
/// node-problem-detector makes when it loads one (kubernetes/node-problem-detector
/// at commit 01a6793b, `pkg/custompluginmonitor/types/config.go`:
/// `ApplyConfiguration` parses the durations, `Validate` wants plugin
/// `custom`, rule timeouts within the global one, an existing rule path and a
/// default condition for every permanent rule's condition), and its rule runs
/// `roce-net check --format npd`, whose line fits `max_output_length`.
#[test]
fn the_node_problem_detector_config_parses_and_names_the_check() {
    let p = repo().join("packaging/node-problem-detector/roce-net-monitor.json");
    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(c["plugin"], "custom");
    let g = &c["pluginConfig"];
    let global = go_duration_ms(g["timeout"].as_str().unwrap());
    let interval = go_duration_ms(g["invoke_interval"].as_str().unwrap());
    assert!(
        global <= interval,
        "a check must end before the next starts"
    );
    let max = g["max_output_length"].as_u64().unwrap();
    assert!(max as usize >= roce_net::NPD_MAX_LINE);
    assert!(g["concurrency"].as_u64().unwrap() >= 1);
    let conditions: Vec<&str> = c["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["type"].as_str().unwrap())
        .collect();
    for d in c["conditions"].as_array().unwrap() {
        assert!(d["reason"].is_string() && d["message"].is_string(), "{d}");
    }
    let rules = c["rules"].as_array().unwrap();
    assert!(!rules.is_empty());
    for r in rules {
        let kind = r["type"].as_str().unwrap();
        assert!(kind == "permanent" || kind == "temporary", "{r}");
        if kind == "permanent" {
            assert!(
                conditions.contains(&r["condition"].as_str().unwrap()),
                "{r}"
            );
        }
        if let Some(t) = r["timeout"].as_str() {
            assert!(go_duration_ms(t) <= global, "{r}");
        }
        assert!(r["reason"].is_string(), "{r}");
        // The path the .deb installs, running the check in npd's conventions.
        assert_eq!(r["path"], "/usr/bin/roce-net");
        let args: Vec<&str> = r["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[..3], ["check", "--format", "npd"]);
    }
    // Only the fields node-problem-detector knows (a typo is silently dropped
    // by Go's JSON decoder, so it is caught here).
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    for k in keys(&c) {
        assert!(
            [
                "plugin",
                "pluginConfig",
                "source",
                "conditions",
                "rules",
                "metricsReporting"
            ]
            .contains(&k.as_str()),
            "{k}"
        );
    }
    for k in keys(g) {
        assert!(
            [
                "invoke_interval",
                "timeout",
                "max_output_length",
                "concurrency",
                "enable_message_change_based_condition_update",
                "skip_initial_status"
            ]
            .contains(&k.as_str()),
            "{k}"
        );
    }
    for r in rules {
        for k in keys(r) {
            assert!(
                [
                    "type",
                    "condition",
                    "reason",
                    "path",
                    "args",
                    "timeout",
                    "invoke_interval"
                ]
                .contains(&k.as_str()),
                "{k}"
            );
        }
    }
    // The rule, run as node-problem-detector runs it (the binary under test
    // for /usr/bin/roce-net), on a broken and a healthy snapshot.
    let fixtures = repo().join("roce-net/tests/fixtures/doctor");
    for (snap, code, line) in [
        ("arp-ignore.bad.json", 1, "roce-net: arp-ignore"),
        ("healthy.json", 0, "roce-net: ok"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_roce-net"))
            .args(
                rules[0]["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap()),
            )
            .arg("--from")
            .arg(fixtures.join(snap))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), line);
    }
}

/// The Slurm program and the NHC check are valid for the shells that run
/// them: `sh` (dash on Debian) for the program, bash for NHC's checks.
#[test]
fn the_slurm_program_and_the_nhc_check_parse() {
    for (shell, file) in [
        ("sh", "packaging/slurm/roce-net-slurm-health"),
        ("bash", "packaging/slurm/roce-net-slurm-health"),
        ("sh", "packaging/slurm/roce-net-slurm-mesh"),
        ("bash", "packaging/nhc/roce_net.nhc"),
    ] {
        let o = Command::new(shell)
            .arg("-n")
            .arg(repo().join(file))
            .output()
            .unwrap();
        assert!(o.status.success(), "{shell} -n {file}: {}", text(&o));
    }
}

/// The Ansible role ships the same units, program and config as the .deb:
/// its copies are the packaging files, with the binary's path a variable
/// (`{{ roce_net_health_bin }}`) where the .deb has `/usr/bin/roce-net`.
#[test]
fn the_ansible_role_ships_what_the_deb_ships() {
    let role = repo().join("ansible_collections/roce_net/roce/roles/health");
    for (copy, source) in [
        (
            "templates/roce-net-health.service.j2",
            "packaging/systemd/roce-net-health.service",
        ),
        (
            "files/roce-net-health.timer",
            "packaging/systemd/roce-net-health.timer",
        ),
        (
            "files/roce-net-slurm-health",
            "packaging/slurm/roce-net-slurm-health",
        ),
        (
            "templates/roce-net-monitor.json.j2",
            "packaging/node-problem-detector/roce-net-monitor.json",
        ),
    ] {
        let copy_text = std::fs::read_to_string(role.join(copy)).unwrap();
        let source_text = std::fs::read_to_string(repo().join(source)).unwrap();
        assert_eq!(
            copy_text.replace("{{ roce_net_health_bin }}", "/usr/bin/roce-net"),
            source_text,
            "{copy} differs from {source}: copy the packaging file again \
             (sed 's|/usr/bin/roce-net|{{{{ roce_net_health_bin }}}}|g' for templates)"
        );
    }
}
