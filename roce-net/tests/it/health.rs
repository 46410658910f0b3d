//! `roce-net check`'s verdict on fixture snapshots: which findings make a host
//! CRITICAL, WARNING, UNKNOWN or OK under the default and other policies, and
//! the two renderings (Nagios' status line with performance data, the one
//! bounded line node-problem-detector and Slurm read). The CLI's exit codes
//! and the lab hosts are `tests/it/health.rs` of the CLI.

use crate::doctor_support::load;
use roce_net::{
    doctor, health_verdict, validate_health_policy, HealthPolicy, HealthStatus, HealthVerdict,
    HostState, Policy, NPD_MAX_LINE,
};

fn verdict(fixture: &str, policy: &HealthPolicy) -> (HostState, HealthVerdict) {
    let st = load(fixture);
    let v = health_verdict(&st, &doctor(&st), policy);
    (st, v)
}

fn ids(v: &[roce_net::IdCount]) -> Vec<&str> {
    v.iter().map(|c| c.id.as_str()).collect()
}

/// The default: ARP flux is critical, a healthy host OK, a lone MTU mismatch
/// (a warning) WARNING, a partial snapshot UNKNOWN.
#[test]
fn the_default_policy_calls_a_host_that_cannot_carry_rdma_critical() {
    let p = HealthPolicy::default();
    let (_, v) = verdict("arp-ignore.bad.json", &p);
    assert_eq!(v.status, HealthStatus::Critical, "{v:?}");
    assert_eq!(ids(&v.critical), ["arp-ignore"]);
    let (_, v) = verdict("healthy.json", &p);
    assert_eq!(v.status, HealthStatus::Ok, "{v:?}");
    assert!(v.critical.is_empty() && v.warning.is_empty() && v.unknown.is_empty());
    let (_, v) = verdict("mtu-mismatch.bad.json", &p);
    assert_eq!(v.status, HealthStatus::Warning, "{v:?}");
    assert_eq!(ids(&v.warning), ["mtu-mismatch"]);
    let (st, v) = verdict("snapshot-partial.bad.json", &p);
    assert_eq!(v.status, HealthStatus::Unknown, "{v:?}");
    assert_eq!(v.unknown.len(), st.warnings.len());
    assert!(v.unknown[0].contains(&st.warnings[0].source), "{v:?}");
    for f in [
        "gid-rocev2-missing.bad.json",
        "source-rule-missing.bad.json",
        "source-table-incomplete.bad.json",
        "port-down.bad.json",
        "arp-announce.bad.json",
        "asymmetric-egress.bad.json",
        "ipv6-dad.bad.json",
    ] {
        let (_, v) = verdict(f, &p);
        assert_eq!(v.status, HealthStatus::Critical, "{f}: {v:?}");
    }
    // IPv6 disabled on a NIC whose IPv4 GID still works, an RA default route:
    // the node still carries RDMA.
    for f in ["ipv6-disabled.bad.json", "ra-default-route.bad.json"] {
        let (_, v) = verdict(f, &p);
        assert_eq!(v.status, HealthStatus::Warning, "{f}: {v:?}");
    }
}

/// The policy decides: a check made critical turns its error findings
/// CRITICAL, one left out of the list makes them WARNING, an ignored one does
/// not count at all (a partial snapshot included, which is otherwise UNKNOWN).
#[test]
fn the_policy_says_what_is_critical_and_what_is_ignored() {
    let p = Policy::from_yaml("health: {critical: [duplicate-address]}\n").unwrap();
    let (_, v) = verdict("duplicate-address.bad.json", &p.health);
    assert_eq!(v.status, HealthStatus::Critical);
    let (_, v) = verdict("arp-ignore.bad.json", &p.health);
    assert_eq!(
        v.status,
        HealthStatus::Warning,
        "not critical any more: {v:?}"
    );
    let p = Policy::from_yaml("health: {ignore: [arp-ignore, snapshot-partial]}\n").unwrap();
    let (_, v) = verdict("arp-ignore.bad.json", &p.health);
    assert_eq!(v.status, HealthStatus::Ok, "{v:?}");
    assert_eq!(ids(&v.ignored), ["arp-ignore"]);
    assert!(v.findings.iter().all(|f| f.id != "arp-ignore"));
    let (_, v) = verdict("snapshot-partial.bad.json", &p.health);
    assert_ne!(v.status, HealthStatus::Unknown, "{v:?}");
    // Ids are checked: a misspelt one is refused, naming the field.
    let p = Policy::from_yaml("health: {critical: [arp-ignor]}\n").unwrap();
    let e = validate_health_policy(&p.health).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("health.critical[0]: arp-ignor is not a check"),
        "{e}"
    );
    for (doc, msg) in [
        (
            "health: {critical: [Arp]}\n",
            "health.critical[0]: \"Arp\" is not a check id",
        ),
        (
            "health: {ignore: [mtu-mismatch, mtu-mismatch]}\n",
            "health.ignore[1]: mtu-mismatch is listed twice",
        ),
        ("health: {critcal: []}\n", "unknown field `critcal`"),
    ] {
        let e = Policy::from_yaml(doc).unwrap_err();
        assert!(e.to_string().contains(msg), "{doc}: {e}");
    }
    assert_eq!(
        HealthPolicy::default().critical,
        roce_net::DEFAULT_CRITICAL_CHECKS
    );
}

/// Nagios: one status line naming the checks by id with performance data
/// counting findings by severity, then the findings; nothing from the host can
/// open the performance data early (`|`) or break the line.
#[test]
fn the_nagios_rendering_is_one_status_line_with_performance_data() {
    let (_, v) = verdict("arp-ignore.bad.json", &HealthPolicy::default());
    let text = v.nagios();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("ROCE-NET CRITICAL - cannot carry RDMA: arp-ignore(1)"),
        "{first}"
    );
    let (_, perf) = first.split_once(" | ").unwrap();
    assert_eq!(
        perf,
        format!(
            "critical=1;;;0 error={};;;0 warning={};;;0 info={};;;0",
            v.summary.error, v.summary.warning, v.summary.info
        )
    );
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .starts_with("CRITICAL arp-ignore ens4: "),
        "{text}"
    );
    let (_, v) = verdict("healthy.json", &HealthPolicy::default());
    assert!(
        v.nagios()
            .starts_with("ROCE-NET OK - no error or warning found"),
        "{}",
        v.nagios()
    );
    let mut v = HealthVerdict::unknown("", Some("gone"), "namespace gone: no such file | x\ny");
    assert_eq!(
        v.nagios(),
        "ROCE-NET UNKNOWN - namespace gone: no such file ¦ x y\n"
    );
    v.unknown.push("more".into());
    assert!(v.nagios().contains("(and 1 more)"));
}

/// node-problem-detector and Slurm: one line, `roce-net: <ids>` when
/// critical, at most NPD_MAX_LINE (80) bytes however many ids there are.
#[test]
fn the_npd_line_is_bounded_and_names_the_checks() {
    let (_, v) = verdict("arp-ignore.bad.json", &HealthPolicy::default());
    assert_eq!(v.npd_line(), "roce-net: arp-ignore");
    let (_, v) = verdict("healthy.json", &HealthPolicy::default());
    assert_eq!(v.npd_line(), "roce-net: ok");
    let (_, v) = verdict("mtu-mismatch.bad.json", &HealthPolicy::default());
    assert_eq!(v.npd_line(), "roce-net: warning: mtu-mismatch");
    // Every check critical and present: the line is cut with a count of the rest.
    let mut v = v;
    v.status = HealthStatus::Critical;
    v.critical = roce_net::CHECK_IDS
        .iter()
        .map(|id| roce_net::IdCount {
            id: id.to_string(),
            count: 1,
        })
        .collect();
    let line = v.npd_line();
    assert!(line.len() <= NPD_MAX_LINE, "{} bytes: {line}", line.len());
    let (named, more) = line.rsplit_once(",+").unwrap();
    let named = named.strip_prefix("roce-net: ").unwrap().split(',').count();
    assert_eq!(
        named + more.parse::<usize>().unwrap(),
        roce_net::CHECK_IDS.len(),
        "{line}"
    );
    let v = HealthVerdict::unknown("", None, "x".repeat(500) + "\u{1b}");
    assert_eq!(v.npd_line().len(), NPD_MAX_LINE);
    assert!(v.npd_line().starts_with("roce-net: unknown: xxx"));
}

/// A cached verdict older than the timer keeps it is UNKNOWN, never the OK it said.
#[test]
fn a_stale_cached_verdict_is_unknown() {
    let (_, v) = verdict("healthy.json", &HealthPolicy::default());
    let at = v.checked_at;
    let fresh = v.clone().expire(300, at + 300, "/c.json");
    assert_eq!(fresh.status, HealthStatus::Ok);
    let stale = v.expire(300, at + 301, "/c.json");
    assert_eq!(stale.status, HealthStatus::Unknown);
    assert!(
        stale.unknown[0].starts_with("/c.json: the verdict is 301 s old"),
        "{stale:?}"
    );
    let back: HealthVerdict =
        serde_json::from_str(&serde_json::to_string(&stale).unwrap()).unwrap();
    assert_eq!(back, stale);
}
