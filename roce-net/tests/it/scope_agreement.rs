//! One scope: on every snapshot fixture and on the live seed lab, the doctor, the
//! planner (`nics: auto`), NCCL advice and the fleet summary agree on which NICs
//! are managed and which address of each; and the doctor's routing fixes are the
//! planner's own plan (same tables, priorities, routes and rules).

use crate::lab_support;

use roce_net::{Change, Finding, HostState, IpVerb, NicScope, Policy};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Checks whose findings are about one NIC in scope.
const PER_NIC: &[&str] = &[
    "arp-ignore",
    "arp-announce",
    "rp-filter-strict",
    "source-rule-missing",
    "source-table-incomplete",
    "asymmetric-egress",
];

/// Checks whose findings are about a NIC's managed address and carry its fix.
const ROUTING: &[&str] = &[
    "source-rule-missing",
    "source-table-incomplete",
    "asymmetric-egress",
];

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("doctor")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("json") {
            out.push(p);
        }
    }
    for e in std::fs::read_dir(root.join("plan")).unwrap() {
        let p = e.unwrap().path().join("current.json");
        if p.exists() {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The `ip` command the doctor shows for a routing change of the plan.
fn command(c: &Change) -> Option<String> {
    Some(match c {
        Change::AddRoute { route } => route.ip_command(IpVerb::Replace),
        Change::ReplaceRoute { after, .. } => after.ip_command(IpVerb::Replace),
        Change::DeleteRoute { route } => route.ip_command(IpVerb::Delete),
        Change::AddRule { rule } => rule.ip_command(IpVerb::Add),
        Change::DeleteRule { rule } => rule.ip_command(IpVerb::Delete),
        _ => return None,
    })
}

/// Everything that must agree on one snapshot; returns how many NICs it covered
/// and whether the default policy could be planned there.
fn agree(name: &str, st: &HostState) -> (usize, bool) {
    let scope: NicScope = roce_net::nic_scope(st);
    let names = scope.names();
    let mut sorted = names.clone();
    sorted.sort_by(|a, b| roce_net::natural_cmp(a, b));
    assert_eq!(names, sorted, "{name}: scope is in natural name order");

    // The planner's `nics: auto` manages exactly the addressed NICs in scope,
    // with the scope's address, numbered in scope order.
    let policy = Policy::default();
    let addressed: Vec<(String, std::net::IpAddr, u8)> = scope
        .addressed()
        .map(|(n, a)| (n.ifname.clone(), a.address, a.prefix_len))
        .collect();
    let desired = roce_net::desired_state(st, &policy);
    let planned: Option<Vec<roce_net::NicDesired>> = match &desired {
        Ok(d) => {
            let got: Vec<(String, std::net::IpAddr, u8)> = d
                .nics
                .iter()
                .flat_map(|n| {
                    n.addresses
                        .iter()
                        .map(|a| (n.ifname.clone(), a.addr(), a.prefix_len()))
                })
                .collect();
            assert_eq!(got, addressed, "{name}: planner vs scope");
            for (i, n) in d.nics.iter().enumerate() {
                assert_eq!(n.table, 1001 + i as u32, "{name}: {} table", n.ifname);
                assert_eq!(n.rule_priority, 1001 + i as u32, "{name}: {}", n.ifname);
            }
            Some(d.nics.clone())
        }
        Err(e) => {
            // A host may refuse the default policy (foreign objects in the way,
            // a clashing table name): then the doctor's routing findings say so.
            assert_eq!(e.kind(), roce_net::ErrorKind::Policy, "{name}: {e}");
            None
        }
    };

    // The doctor's per-NIC findings are about NICs in scope, its routing
    // findings about their managed address, with the planner's numbers.
    let findings: Vec<Finding> = roce_net::doctor(st);
    for f in findings.iter().filter(|f| PER_NIC.contains(&f.id.as_str())) {
        let ifname = f.subject.interface.as_deref().unwrap_or("");
        let nic = scope
            .get(ifname)
            .unwrap_or_else(|| panic!("{name}: {} on {ifname}, not in scope", f.id));
        if ROUTING.contains(&f.id.as_str()) {
            let said: std::net::IpAddr = f
                .subject
                .address
                .as_deref()
                .expect("a routing finding names its address")
                .parse()
                .unwrap();
            let a = nic
                .address(roce_net::Family::of(&said))
                .expect("routing finding on an addressed NIC");
            assert_eq!(
                f.subject.address.as_deref(),
                Some(a.address.to_string().as_str()),
                "{name}: {} {ifname}",
                f.id
            );
            match &planned {
                Some(nics) => {
                    let nd = nics.iter().find(|n| n.ifname == ifname).unwrap();
                    assert_eq!(f.evidence["proposed_table"], serde_json::json!(nd.table));
                    assert_eq!(
                        f.evidence["proposed_priority"],
                        serde_json::json!(nd.rule_priority)
                    );
                    assert!(
                        !f.remediation.commands.is_empty(),
                        "{name}: {} {ifname} has no fix",
                        f.id
                    );
                }
                None => assert!(
                    f.evidence.contains_key("plan_error")
                        || f.evidence.contains_key("proposed_table"),
                    "{name}: {} {ifname} neither planned nor explained",
                    f.id
                ),
            }
        }
    }

    // NCCL advice covers the active RoCE ports of the NICs in scope that have a
    // GID of their NIC's address (`nccl::target_gid`) in the job's family (IPv6
    // when every such port's target is IPv6, else IPv4); the others are left
    // out and named in the reason. Its GID index is the one of each NIC's
    // managed address.
    let nccl = roce_net::nccl_env(st);
    let mut active: Vec<String> = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    let mut targets = Vec::new();
    for r in scope.nics.iter().flat_map(|n| n.rdma_ports.iter()) {
        let Some(d) = st.rdma.iter().find(|d| d.name == r.device) else {
            continue;
        };
        let Some(p) = d.ports.iter().find(|p| p.port == r.port) else {
            continue;
        };
        if !(p.is_roce() && p.is_active()) {
            continue;
        }
        targets.push((r.to_string(), roce_net::target_gid(st, d, p)));
    }
    let ipv6_job = !targets.is_empty()
        && targets
            .iter()
            .all(|(_, t)| t.is_some_and(|(_, a)| a.is_ipv6()));
    for (r, t) in targets {
        match t {
            Some((_, a)) if a.is_ipv6() == ipv6_job => active.push(r),
            _ => left_out.push(r),
        }
    }
    let hca = nccl.get("NCCL_IB_HCA");
    match hca.and_then(|v| v.value.clone()) {
        Some(v) => {
            let ports: Vec<String> = v
                .trim_start_matches('=')
                .split(',')
                .map(str::to_string)
                .collect();
            assert_eq!(ports, active, "{name}: NCCL_IB_HCA");
        }
        None => assert!(active.is_empty(), "{name}: no NCCL_IB_HCA for {active:?}"),
    }
    for r in &left_out {
        let reason = &hca.unwrap().reason;
        assert!(
            reason.contains(&format!("{r}:")),
            "{name}: {r} left out silently: {reason}"
        );
    }
    if let Some(i) = nccl.get("NCCL_IB_GID_INDEX").and_then(|v| v.value.clone()) {
        let i: u32 = i.parse().unwrap();
        let fam = if ipv6_job {
            roce_net::Family::Inet6
        } else {
            roce_net::Family::Inet
        };
        for (nic, a) in scope.addressed_in(fam) {
            for r in &nic.rdma_ports {
                let d = st.rdma.iter().find(|d| d.name == r.device).unwrap();
                let p = d.ports.iter().find(|p| p.port == r.port).unwrap();
                if p.is_roce() && p.is_active() && active.contains(&r.to_string()) {
                    assert_eq!(
                        roce_net::roce_v2_gid_index(p, a.address),
                        Some(i),
                        "{name}: {r}"
                    );
                }
            }
        }
    }

    // The fleet summary counts the same NICs.
    let fleet = roce_net::fleet_report(std::slice::from_ref(st));
    assert_eq!(fleet.hosts[0].nics, names, "{name}: fleet");
    (names.len(), planned.is_some())
}

#[test]
fn doctor_planner_nccl_and_fleet_agree_on_every_fixture() {
    let (mut covered, mut planned) = (0, 0);
    let files = fixtures();
    assert!(files.len() >= 25, "only {} fixtures", files.len());
    for p in &files {
        let st = HostState::load(p).unwrap();
        let (n, ok) = agree(&p.display().to_string(), &st);
        covered += n;
        planned += usize::from(ok);
    }
    assert!(covered >= 80, "only {covered} NICs covered");
    assert!(
        planned >= 20,
        "the default policy planned only {planned} fixtures"
    );
}

/// Routing findings' fixes in finding order, each command once.
fn routing_commands(findings: &[Finding]) -> Vec<String> {
    let mut cmds: Vec<String> = Vec::new();
    for f in findings.iter().filter(|f| ROUTING.contains(&f.id.as_str())) {
        for c in &f.remediation.commands {
            if !cmds.contains(c) {
                cmds.push(c.clone());
            }
        }
    }
    cmds
}

#[test]
#[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
fn seed_lab_agrees_and_the_doctors_fix_is_the_plan() {
    let test = "seed_lab_agrees_and_the_doctors_fix_is_the_plan";
    let lab = lab_support::seed(test, 4);
    // The kernel's defaults (a new namespace may inherit other values).
    let ns = lab.host_ns().unwrap().to_string();
    for key in ["arp_ignore", "arp_announce", "rp_filter"] {
        for dev in ["all", "default", "r0", "r1", "r2", "r3"] {
            let out = std::process::Command::new("ip")
                .args(["netns", "exec", &ns, "sysctl", "-qw"])
                .arg(format!("net.ipv4.conf.{dev}.{key}=0"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let host = lab.host().unwrap();
    let st = host.snapshot().unwrap();
    assert_eq!(agree(test, &st), (4, true));

    // The routing part of the doctor's remediation is exactly the routing part
    // of the default policy's plan: same routes and rules, nothing else.
    let plan = roce_net::plan(&st, &Policy::default()).unwrap();
    // The doctor's commands act where the snapshot was taken (`ip -n NS`).
    let want: BTreeSet<String> = plan
        .changes
        .iter()
        .filter_map(command)
        .map(|c| roce_net::in_netns(st.netns.as_deref(), &c))
        .collect();
    let findings = roce_net::doctor(&st);
    let got = routing_commands(&findings);
    assert_eq!(got.len(), want.len(), "{got:#?}");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
    assert_eq!(want.len(), 8, "a route and a rule per NIC");

    // Its sysctl fixes are the plan's settings for the NICs (the plan also sets
    // `all` and rp_filter, which the findings do not need).
    let plan_sysctls: BTreeSet<String> = plan
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::SetSysctl { sysctl, after, .. } => Some(roce_net::in_netns(
                st.netns.as_deref(),
                &sysctl.write_command(after),
            )),
            _ => None,
        })
        .collect();
    let doctor_sysctls: Vec<&String> = findings
        .iter()
        .flat_map(|f| f.remediation.commands.iter())
        .filter(|c| c.contains(" sysctl ") || c.starts_with("sysctl "))
        .collect();
    assert!(!doctor_sysctls.is_empty());
    for c in doctor_sysctls {
        assert!(plan_sysctls.contains(c), "{c} is not in the plan");
    }
}
