//! Pure checks over a [`HostState`]: `doctor(&state) -> Vec<Finding>`.
//!
//! One check per file; each has a stable id (see [`CHECK_IDS`] and
//! `docs/checks.md`). Every finding carries the values it saw (`evidence`), the
//! exact commands that fix it and the roce-net policy setting that keeps it fixed.
//! Findings come back sorted: most severe first, then by id and subject.

mod arp_announce;
mod arp_ignore;
mod asymmetric_egress;
mod duplicate_address;
mod firmware_differs;
mod gid_index_inconsistent;
mod gid_rocev2_missing;
mod hw;
mod ipv6_dad;
mod ipv6_disabled;
mod link_degraded;
mod mtu_mismatch;
mod multiple_default_routes;
mod neighbor_conflict;
mod neighbor_failed;
mod netdev_backlog_low;
mod nic_phy_errors;
mod nic_rx_discards;
mod nic_rx_out_of_buffer;
mod no_rdma_devices;
mod pfc_pause_frames;
mod pfc_pause_storm;
mod port_down;
mod qos_inconsistent;
mod qos_trust_not_dscp;
mod ra_default_route;
mod rdma_retransmits;
mod roce_priority_no_pfc;
mod rp_filter_strict;
mod rx_drops;

mod snapshot_partial;
mod source_rule_missing;
mod source_table_incomplete;
mod udp_mem_low;
mod verbs_sysfs_mismatch;

use crate::model::{
    ConfKey, ConfTarget, Family, HostState, IpVerb, Rule, RuleAction, Sysctl, RT_TABLE_LOCAL,
    RT_TABLE_MAIN,
};
use crate::plan::{Change, NicDesired, Plan};
use crate::policy::{ForeignObject, Obstacle, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::scope::{nic_scope, NicScope};

pub(crate) use qos_inconsistent::signature as qos_signature;

/// Every check id this module can report, in documentation order.
pub const CHECK_IDS: &[&str] = &[
    arp_ignore::ID,
    arp_announce::ID,
    rp_filter_strict::ID,
    source_rule_missing::ID,
    source_table_incomplete::ID,
    asymmetric_egress::ID,
    ipv6_dad::ID,
    ipv6_disabled::ID,
    ra_default_route::ID,
    neighbor_conflict::ID,
    neighbor_failed::ID,
    duplicate_address::ID,
    mtu_mismatch::ID,
    gid_rocev2_missing::ID,
    gid_index_inconsistent::ID,
    port_down::ID,
    netdev_backlog_low::ID,
    rx_drops::ID,
    rdma_retransmits::ID,
    nic_rx_discards::ID,
    nic_rx_out_of_buffer::ID,
    nic_phy_errors::ID,
    pfc_pause_storm::ID,
    pfc_pause_frames::ID,
    roce_priority_no_pfc::ID,
    qos_trust_not_dscp::ID,
    qos_inconsistent::ID,
    link_degraded::ID,
    firmware_differs::ID,
    udp_mem_low::ID,
    no_rdma_devices::ID,
    verbs_sysfs_mismatch::ID,
    multiple_default_routes::ID,
    snapshot_partial::ID,
];

/// How bad a finding is. Ordered from least to most severe, so `max()` is the worst.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is broken.
    Info,
    /// Degrades performance or breaks some traffic patterns.
    Warning,
    /// Breaks RDMA traffic.
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// What a finding is about. Unused fields are `None`.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize, JsonSchema,
)]
pub struct Subject {
    /// Host name (set by fleet findings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Interface (netdev) name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// RDMA device name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// RDMA port number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
    /// IP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Link-layer address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

impl Subject {
    /// A subject naming an interface.
    pub fn interface(name: &str) -> Subject {
        Subject {
            interface: Some(name.to_string()),
            ..Default::default()
        }
    }

    /// The same subject with an address.
    pub fn with_address(mut self, a: impl ToString) -> Subject {
        self.address = Some(a.to_string());
        self
    }

    /// The same subject with an RDMA port.
    pub fn with_port(mut self, device: &str, port: u32) -> Subject {
        self.device = Some(device.to_string());
        self.port = Some(port);
        self
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(h) = &self.host {
            parts.push(format!("host {h}"));
        }
        if let Some(i) = &self.interface {
            parts.push(i.clone());
        }
        if let (Some(d), Some(p)) = (&self.device, self.port) {
            parts.push(format!("{d}:{p}"));
        } else if let Some(d) = &self.device {
            parts.push(d.clone());
        }
        if let Some(a) = &self.address {
            parts.push(a.clone());
        }
        if let Some(m) = &self.mac {
            parts.push(m.clone());
        }
        if parts.is_empty() {
            f.write_str("host")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

/// How to fix a finding.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Remediation {
    /// Exact commands that fix it now (not persistent across reboots), each
    /// quoted for a POSIX shell ([`crate::shell_word`]) and, for a snapshot taken
    /// in a named network namespace, acting in it ([`crate::in_netns`]).
    pub commands: Vec<String>,
    /// The roce-net policy setting that fixes it for good, e.g. `arp.arp_ignore: 1`.
    pub policy: Option<String>,
    /// Commands that show more about the finding and change nothing (`rdma link
    /// show`, `ethtool -S DEV`), quoted and placed like `commands`: to look
    /// with, not to fix with. Some fail where there is nothing to show (no RDMA
    /// subsystem, a driver without the counter), so they are never listed as
    /// fixes, which a script runs with `set -e`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// One problem found on a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Finding {
    /// Stable check id (`arp-ignore`, `asymmetric-egress`, ...).
    pub id: String,
    /// Severity.
    pub severity: Severity,
    /// What it is about.
    pub subject: Subject,
    /// One sentence for people.
    pub message: String,
    /// The values seen, by name.
    pub evidence: BTreeMap<String, serde_json::Value>,
    /// The fix.
    pub remediation: Remediation,
}

impl Finding {
    /// A finding without evidence or remediation yet.
    pub fn new(id: &str, severity: Severity, subject: Subject, message: String) -> Finding {
        Finding {
            id: id.to_string(),
            severity,
            subject,
            message,
            evidence: BTreeMap::new(),
            remediation: Remediation::default(),
        }
    }

    /// Add one piece of evidence.
    pub fn evidence(mut self, key: &str, v: impl Serialize) -> Finding {
        self.evidence.insert(
            key.to_string(),
            serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
        );
        self
    }

    /// Set the remediation's fix: commands and policy setting.
    pub fn fix(mut self, commands: Vec<String>, policy: Option<&str>) -> Finding {
        self.remediation.commands = commands;
        self.remediation.policy = policy.map(str::to_string);
        self
    }

    /// Set the remediation's diagnostics: commands that show more and change
    /// nothing ([`Remediation::checks`]).
    pub fn checks(mut self, commands: Vec<String>) -> Finding {
        self.remediation.checks = commands;
        self
    }
}

/// Thresholds used by the checks, and the policy their routing fixes come from.
/// `Default` holds the documented values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct DoctorOptions {
    /// `net.core.netdev_max_backlog` below this is reported (default 250000, the
    /// value NIC vendors recommend for 100G+ ports; the kernel default is 1000).
    pub min_netdev_max_backlog: u64,
    /// A NIC's `rx_dropped` is reported from this many packets (default 1000) ...
    pub rx_drops_min: u64,
    /// ... when it is also at least this fraction of `rx_packets` (default 0.0001).
    pub rx_drops_ratio: f64,
    /// An RDMA retransmit/timeout counter is reported from this value (default 1).
    pub rdma_retransmit_min: u64,
    /// The MTU every NIC in scope should have; `None` compares NICs with each other.
    pub expected_mtu: Option<u32>,
    /// Physical-layer errors (`rx_crc_errors_phy` + `rx_symbol_err_phy`) are
    /// reported from this many (default 1).
    pub phy_errors_min: u64,
    /// Pause frames on a PFC priority are reported (info) from this many
    /// (default 1000000).
    pub pause_frames_min: u64,
    /// `net.ipv4.udp_mem` below this (pages: min, pressure, max) is reported
    /// (default 764304 1019072 1528608, the seed case's tuning).
    pub min_udp_mem: [u64; 3],
    /// The policy whose plan the routing fixes (tables, source rules) are rendered
    /// from; `None` is [`Policy::default`], what `roce-net apply` uses without a
    /// policy file.
    pub policy: Option<Policy>,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        DoctorOptions {
            min_netdev_max_backlog: 250_000,
            rx_drops_min: 1000,
            rx_drops_ratio: 0.0001,
            rdma_retransmit_min: 1,
            expected_mtu: None,
            phy_errors_min: 1,
            pause_frames_min: 1_000_000,
            min_udp_mem: [764_304, 1_019_072, 1_528_608],
            policy: None,
        }
    }
}

/// Counts of findings by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Summary {
    /// Errors.
    pub error: usize,
    /// Warnings.
    pub warning: usize,
    /// Infos.
    pub info: usize,
}

/// Count findings by severity.
pub fn summarize(findings: &[Finding]) -> Summary {
    let mut s = Summary::default();
    for f in findings {
        match f.severity {
            Severity::Error => s.error += 1,
            Severity::Warning => s.warning += 1,
            Severity::Info => s.info += 1,
        }
    }
    s
}

/// The worst severity among findings (`None` when there are none).
pub fn max_severity(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).max()
}

/// Sort findings deterministically: most severe first, then id, subject, message.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| a.message.cmp(&b.message))
    });
}

/// Run every check with the default options.
pub fn doctor(state: &HostState) -> Vec<Finding> {
    doctor_with(state, &DoctorOptions::default())
}

/// Run every check.
pub fn doctor_with(state: &HostState, opts: &DoctorOptions) -> Vec<Finding> {
    let ctx = Ctx::new(state, opts);
    let checks: [fn(&Ctx) -> Vec<Finding>; 34] = [
        arp_ignore::check,
        arp_announce::check,
        rp_filter_strict::check,
        source_rule_missing::check,
        source_table_incomplete::check,
        asymmetric_egress::check,
        ipv6_dad::check,
        ipv6_disabled::check,
        ra_default_route::check,
        neighbor_conflict::check,
        neighbor_failed::check,
        duplicate_address::check,
        mtu_mismatch::check,
        gid_rocev2_missing::check,
        gid_index_inconsistent::check,
        port_down::check,
        netdev_backlog_low::check,
        rx_drops::check,
        rdma_retransmits::check,
        nic_rx_discards::check,
        nic_rx_out_of_buffer::check,
        nic_phy_errors::check,
        pfc_pause_storm::check,
        pfc_pause_frames::check,
        roce_priority_no_pfc::check,
        qos_trust_not_dscp::check,
        qos_inconsistent::check,
        link_degraded::check,
        firmware_differs::check,
        udp_mem_low::check,
        no_rdma_devices::check,
        verbs_sysfs_mismatch::check,
        multiple_default_routes::check,
        snapshot_partial::check,
    ];
    let mut out: Vec<Finding> = checks.iter().flat_map(|c| c(&ctx)).collect();
    in_snapshot_netns(state, &mut out);
    sort_findings(&mut out);
    out
}

/// Make the findings' commands act where the findings are: in the network
/// namespace the snapshot was taken in ([`crate::in_netns`]), so a command
/// copied as printed never acts on the machine's own namespace instead.
pub(crate) fn in_snapshot_netns(state: &HostState, findings: &mut [Finding]) {
    let Some(ns) = state.netns.as_deref() else {
        return;
    };
    for f in findings {
        let r = &mut f.remediation;
        for c in r.commands.iter_mut().chain(r.checks.iter_mut()) {
            *c = crate::model::in_netns(Some(ns), c);
        }
    }
}

/// A source rule that sends a NIC address's traffic to a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRule {
    /// Rule priority.
    pub priority: u32,
    /// Table looked up.
    pub table: u32,
    /// The `from` prefix.
    pub from: ipnet::IpNet,
    /// True when the rule runs after the `lookup main` rule, so main answers first.
    pub shadowed_by_main: bool,
}

/// The priority of the first unconditional `lookup main` rule of the address's family.
pub fn main_rule_priority(state: &HostState, addr: IpAddr) -> Option<u32> {
    crate::fib::rules_in_order(state, crate::model::Family::of(&addr))
        .into_iter()
        .find(|r| {
            r.action == RuleAction::ToTable
                && r.table == RT_TABLE_MAIN
                && !r.invert
                && r.src.map(|n| n.prefix_len() == 0).unwrap_or(true)
                && r.dst.map(|n| n.prefix_len() == 0).unwrap_or(true)
                && r.iif.is_none()
                && r.oif.is_none()
                && r.fwmark.is_none()
                && r.suppress_prefixlen.is_none()
        })
        .map(|r| r.priority)
}

/// The first rule (by priority) that sends traffic sourced from `addr` to a table
/// other than main/local: a plain `from <prefix covering addr> lookup <table>` with
/// no other selectors.
pub fn source_rule_for(state: &HostState, addr: IpAddr) -> Option<SourceRule> {
    let main = main_rule_priority(state, addr);
    let r = first_source_rule(state, addr)?;
    Some(SourceRule {
        priority: r.priority,
        table: r.table,
        from: r.src?,
        shadowed_by_main: main.map(|m| r.priority >= m).unwrap_or(false),
    })
}

/// The rule [`source_rule_for`] describes.
pub(crate) fn first_source_rule(state: &HostState, addr: IpAddr) -> Option<Rule> {
    crate::fib::rules_in_order(state, crate::model::Family::of(&addr))
        .into_iter()
        .find(|r| {
            r.action == RuleAction::ToTable
                && r.table != RT_TABLE_MAIN
                && r.table != RT_TABLE_LOCAL
                && r.table != 0
                && !r.invert
                && r.src
                    .map(|n| n.prefix_len() > 0 && n.contains(&addr))
                    .unwrap_or(false)
                && r.dst.map(|n| n.prefix_len() == 0).unwrap_or(true)
                && r.iif.is_none()
                && r.oif.is_none()
                && r.fwmark.is_none()
                && r.tos == 0
        })
}

/// The plan the routing fixes are rendered from: what the policy's plan does on
/// this host once the foreign objects in its way are removed, and those objects.
pub(crate) struct Remedy {
    /// The plan.
    pub plan: Plan,
    /// Foreign routes and rules in the way, with the NIC each blocks.
    pub obstacles: Vec<Obstacle>,
}

/// Shared, precomputed view for the checks.
pub(crate) struct Ctx<'a> {
    pub state: &'a HostState,
    pub opts: &'a DoctorOptions,
    pub scope: NicScope,
    /// For each NIC in scope and each family (IPv4's, IPv6's): the other NICs
    /// sharing one of its subnets of that family.
    family_peers: [BTreeMap<String, Vec<String>>; 2],
    /// The policy's plan, or why the policy cannot be planned on this host.
    pub remedy: std::result::Result<Remedy, crate::Error>,
}

impl<'a> Ctx<'a> {
    fn new(state: &'a HostState, opts: &'a DoctorOptions) -> Ctx<'a> {
        let scope = nic_scope(state);
        let family_peers = [
            scope.subnet_peers_in(Family::Inet),
            scope.subnet_peers_in(Family::Inet6),
        ];
        let default_policy;
        let policy = match &opts.policy {
            Some(p) => p,
            None => {
                default_policy = Policy::default();
                &default_policy
            }
        };
        let remedy = crate::plan::plan_past_obstacles(state, policy)
            .map(|(plan, obstacles)| Remedy { plan, obstacles });
        Ctx {
            state,
            opts,
            scope,
            family_peers,
            remedy,
        }
    }

    /// The other NICs in scope sharing one of `ifname`'s subnets of `family`.
    pub fn peers_in(&self, ifname: &str, family: Family) -> Option<&Vec<String>> {
        let i = match family {
            Family::Inet => 0,
            Family::Inet6 => 1,
        };
        self.family_peers[i].get(ifname)
    }

    /// Error when the NIC shares a subnet of `family` with another NIC in
    /// scope, else Warning.
    pub fn flux_severity_in(&self, ifname: &str, family: Family) -> Severity {
        if self.peers_in(ifname, family).is_some_and(|v| !v.is_empty()) {
            Severity::Error
        } else {
            Severity::Warning
        }
    }

    /// What the plan wants for a NIC (its table, rule priority, address).
    pub fn planned(&self, ifname: &str) -> Option<&NicDesired> {
        let r = self.remedy.as_ref().ok()?;
        r.plan.desired.nics.iter().find(|n| n.ifname == ifname)
    }

    /// Attach the routing fix of a NIC's address of `family` to a finding: the
    /// commands that remove what is in the way (`culprit`: a rule that steers the
    /// NIC's traffic before the planned rule can), then the plan's own route and
    /// rule changes for the NIC in that family. When the policy cannot be
    /// planned here, or does not manage the NIC in that family, the finding says
    /// why (`plan_error`) and carries no commands.
    pub fn routing_fix(
        &self,
        f: Finding,
        ifname: &str,
        family: Family,
        culprit: Option<&Rule>,
    ) -> Finding {
        let remedy = match &self.remedy {
            Ok(r) => r,
            Err(e) => {
                return f
                    .evidence("plan_error", e.to_string())
                    .fix(Vec::new(), Some("routing.enabled: true"))
            }
        };
        let Some(nd) = self.planned(ifname) else {
            return f
                .evidence("plan_error", format!("the policy does not manage {ifname}"))
                .fix(Vec::new(), Some("nics.include"));
        };
        if !nd.addresses.iter().any(|a| Family::of(&a.addr()) == family) {
            return f
                .evidence(
                    "plan_error",
                    format!(
                        "the policy does not manage {ifname} in {} (family: {})",
                        match family {
                            Family::Inet => "IPv4",
                            Family::Inet6 => "IPv6",
                        },
                        serde_json::to_value(remedy.plan.policy.family)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    ),
                )
                .fix(Vec::new(), Some("family: both"));
        }
        let mut cmds: Vec<String> = Vec::new();
        let mut push = |c: String| {
            if !cmds.contains(&c) {
                cmds.push(c);
            }
        };
        if let Some(c) = culprit {
            let desired = remedy.plan.desired.rules.iter().any(|r| r.same(c));
            if !desired && c.priority < nd.rule_priority && c.table != RT_TABLE_LOCAL {
                push(c.ip_command(IpVerb::Delete));
            }
        }
        // Rules before routes, as the planner deletes stale objects.
        let mine = || remedy.obstacles.iter().filter(|o| o.ifname == ifname);
        for o in mine() {
            if let ForeignObject::Rule(r) = &o.object {
                if r.family == family {
                    push(r.ip_command(IpVerb::Delete));
                }
            }
        }
        for o in mine() {
            if let ForeignObject::Route(r) = &o.object {
                if r.family == family {
                    push(r.ip_command(IpVerb::Delete));
                }
            }
        }
        let mine = |r: &crate::model::Route| r.table == nd.table && r.family == family;
        for c in &remedy.plan.changes {
            match c {
                Change::AddRoute { route } if mine(route) => {
                    push(route.ip_command(IpVerb::Replace))
                }
                Change::ReplaceRoute { after, .. } if mine(after) => {
                    push(after.ip_command(IpVerb::Replace))
                }
                Change::DeleteRoute { route } if mine(route) => {
                    push(route.ip_command(IpVerb::Delete))
                }
                Change::AddRule { rule } if rule.family == family && rule_is_for(rule, nd) => {
                    push(rule.ip_command(IpVerb::Add))
                }
                Change::DeleteRule { rule } if rule.family == family && rule_is_for(rule, nd) => {
                    push(rule.ip_command(IpVerb::Delete))
                }
                _ => {}
            }
        }
        f.evidence("proposed_table", nd.table)
            .evidence("proposed_priority", nd.rule_priority)
            .fix(cmds, Some("routing.enabled: true"))
    }
}

/// A rule the planner adds or deletes for this NIC: in its table, at its
/// priority, or from its address.
fn rule_is_for(r: &Rule, nd: &NicDesired) -> bool {
    r.table == nd.table
        || r.priority == nd.rule_priority
        || r.src.is_some_and(|s| {
            s.prefix_len() > 0 && nd.addresses.iter().any(|a| s.contains(&a.addr()))
        })
}

/// `sysctl -w` commands that make the effective value of a max-combined
/// `net.ipv4.conf` key equal `want` on `ifname`: lower `all` when it is above
/// `want`, then set the interface value when the combination still differs.
pub(crate) fn max_sysctl_fix(
    state: &HostState,
    ifname: &str,
    key: ConfKey,
    want: i32,
) -> Vec<String> {
    let all = state.sysctls.all.get(key).unwrap_or(0);
    let iface = state
        .sysctls
        .interfaces
        .get(ifname)
        .and_then(|c| c.configured.get(key))
        .unwrap_or(0);
    let cmd = |target: ConfTarget| Sysctl::Conf { target, key }.write_command(&want.to_string());
    let mut out = Vec::new();
    let mut new_all = all;
    if all > want {
        out.push(cmd(ConfTarget::All));
        new_all = want;
    }
    if new_all.max(iface) != want {
        out.push(cmd(ConfTarget::Interface(ifname.to_string())));
    }
    out
}

/// The per-NIC IPv4 sysctl checks (`arp-announce`, `arp-ignore`,
/// `rp-filter-strict`): every NIC in scope with a global IPv4 address (one to
/// answer ARP for, or to filter) whose effective `key` is wrong
/// (`problem(ifname, value)` is the finding's message then, `None` when the
/// value is fine) is a finding of check `id` at ARP flux's severity there,
/// with the sysctl's values, the NICs sharing its subnet, and the fix that
/// raises the interface to `want` (`max(all, iface)`; `policy`: the policy
/// setting that asks for it).
pub(crate) fn inet_sysctl_findings(
    ctx: &Ctx,
    id: &str,
    (key, want): (ConfKey, i32),
    policy: &str,
    problem: impl Fn(&str, i32) -> Option<String>,
) -> Vec<Finding> {
    ctx.scope
        .nics
        .iter()
        .filter(|n| n.global_of(Family::Inet).next().is_some())
        .filter_map(|nic| {
            let eff = ctx.state.sysctls.effective(&nic.ifname, key)?;
            let message = problem(&nic.ifname, eff)?;
            let f = Finding::new(
                id,
                ctx.flux_severity_in(&nic.ifname, Family::Inet),
                Subject::interface(&nic.ifname),
                message,
            );
            let f = sysctl_evidence(f, ctx.state, &nic.ifname, key)
                .evidence(
                    "shares_subnet_with",
                    ctx.peers_in(&nic.ifname, Family::Inet),
                )
                .fix(
                    max_sysctl_fix(ctx.state, &nic.ifname, key, want),
                    Some(policy),
                );
            Some(f)
        })
        .collect()
}

/// The configured `all` and interface values and the effective value of a key.
pub(crate) fn sysctl_evidence(
    f: Finding,
    state: &HostState,
    ifname: &str,
    key: ConfKey,
) -> Finding {
    let iface = state
        .sysctls
        .interfaces
        .get(ifname)
        .and_then(|c| c.configured.get(key));
    f.evidence("all", state.sysctls.all.get(key))
        .evidence("interface", iface)
        .evidence("effective", state.sysctls.effective(ifname, key))
}
