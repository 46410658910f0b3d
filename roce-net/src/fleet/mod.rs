//! Fleet report: per-host summaries of many snapshots and the findings that only
//! show when hosts are compared (`fleet_report(&[HostState]) -> FleetReport`).
//!
//! A fleet of thousands of hosts is built one snapshot at a time with
//! [`FleetBuilder`]: each snapshot is summarised as it is added and only what the
//! cross-host checks read is kept, so memory grows with the number of hosts, not
//! with the size of their snapshots.
//!
//! Hosts are compared with each other: for each property (GID index, MTUs, number
//! of NICs in scope, subnets) a host whose value differs from the one more hosts
//! hold than any other gets a finding naming it; when values tie for most common
//! no side is taken as right and every host is named ([`consensus`]).
//!
//! A host is named by [`fleet_host_label`]: its host name, and for a snapshot taken
//! inside a named network namespace `hostname:netns` (lab hosts share the
//! machine's host name). The cross-host checks that need more than one
//! host's findings live in their own files: [`neighbors`] (a peer's entry for
//! another host's address holding
//! the wrong MAC) and [`subnets`] (NIC count and MTU per subnet).

mod consensus;
mod neighbors;
mod nic_count;
mod subnets;

use consensus::Consensus;

use crate::doctor::{self, DoctorOptions, Finding, Severity, Subject, Summary};
use crate::error::Result;
use crate::model::{ifname_word, HostState, Scope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Cross-host check ids.
pub const FLEET_CHECK_IDS: &[&str] = &[
    "fleet-gid-index-differs",
    "fleet-mtu-differs",
    "fleet-duplicate-address",
    nic_count::ID,
    "fleet-subnet-layout-differs",
    neighbors::ID,
    subnets::NIC_COUNT_ID,
    subnets::MTU_ID,
    "fleet-firmware-differs",
    "fleet-rate-differs",
    "fleet-qos-differs",
    "fleet-host-repeated",
];

/// At most this many hosts (or NICs) in one finding's `hosts` (`nics`) evidence.
pub const FLEET_MAX_EVIDENCE_HOSTS: usize = 32;

/// The evidence a cross-host comparison carries about the others, bounded for
/// any fleet size: a sample of `all` (name -> value) of at most
/// [`FLEET_MAX_EVIDENCE_HOSTS`] entries (every entry when there are no more; else the
/// ones whose value is not `common` first, then the rest, in name order) and how
/// many entries have each value.
pub(super) fn bounded<K: Ord + Clone, V: Ord + Clone>(
    all: &BTreeMap<K, V>,
    common: &V,
) -> (BTreeMap<K, V>, BTreeMap<V, usize>) {
    let mut counts: BTreeMap<V, usize> = BTreeMap::new();
    for v in all.values() {
        *counts.entry(v.clone()).or_default() += 1;
    }
    let odd = all.iter().filter(|(_, v)| *v != common);
    let usual = all.iter().filter(|(_, v)| *v == common);
    let sample = odd
        .chain(usual)
        .take(FLEET_MAX_EVIDENCE_HOSTS)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (sample, counts)
}

/// How the fleet report names a host: `hostname`, or `hostname:netns` for a
/// snapshot taken inside a named network namespace.
pub fn fleet_host_label(state: &HostState) -> String {
    match &state.netns {
        Some(ns) => format!("{}:{ns}", state.hostname),
        None => state.hostname.clone(),
    }
}

/// A fix command to run on one fleet host: `ssh HOST 'CMD'`, and for a snapshot
/// taken inside a network namespace, the command in that namespace
/// ([`crate::model::in_netns`]; without it the command would act on the
/// machine's own namespace, which lab hosts share). The remote command is
/// quoted once more for the shell `ssh` hands it to ([`crate::model::over_ssh`]).
pub(super) fn on_host(state_hostname: &str, netns: Option<&str>, cmd: &str) -> String {
    crate::model::over_ssh(state_hostname, &crate::model::in_netns(netns, cmd))
}

/// [`on_host`] for the host of a snapshot.
pub(super) fn on_state(state: &HostState, cmd: &str) -> String {
    on_host(&state.hostname, state.netns.as_deref(), cmd)
}

/// One host's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct HostSummary {
    /// Host name, as [`fleet_host_label`] gives it.
    pub hostname: String,
    /// NICs in scope (see [`crate::nic_scope`]).
    pub nics: Vec<String>,
    /// RDMA device names.
    pub rdma_devices: Vec<String>,
    /// The host's own doctor findings, counted by severity.
    pub findings: Summary,
    /// The worst of them.
    pub max_severity: Option<Severity>,
    /// The NCCL GID index recommended for the host (`None` when there is no single one).
    pub gid_index: Option<u32>,
    /// MTUs of the NICs in scope.
    pub mtus: BTreeSet<u32>,
    /// IPv4 subnets of the NICs in scope.
    pub subnets: BTreeSet<ipnet::IpNet>,
    /// Firmware versions by device model (PCI device id, else HCA type).
    pub firmware: BTreeMap<String, BTreeSet<String>>,
    /// Rates (Gb/s) of the active RDMA ports.
    pub rates: BTreeSet<String>,
    /// The QoS of the NICs in scope that report DCB (PFC priorities, trust, DSCP
    /// map; see `qos-inconsistent`), one entry per distinct setting.
    pub qos: BTreeSet<String>,
}

/// Summaries and cross-host findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct FleetReport {
    /// One summary per snapshot, in input order.
    pub hosts: Vec<HostSummary>,
    /// Cross-host findings (`fleet-*` ids), sorted like doctor findings.
    pub findings: Vec<Finding>,
}

/// Summarise one host.
pub fn summarize_host(state: &HostState, opts: &DoctorOptions) -> HostSummary {
    let scope = crate::scope::nic_scope(state);
    let findings = doctor::doctor_with(state, opts);
    let gid_index = crate::nccl::nccl_env(state)
        .get("NCCL_IB_GID_INDEX")
        .and_then(|v| v.value.as_ref())
        .and_then(|v| v.parse().ok());
    HostSummary {
        hostname: fleet_host_label(state),
        nics: scope.names(),
        rdma_devices: state.rdma.iter().map(|d| d.name.clone()).collect(),
        findings: doctor::summarize(&findings),
        max_severity: doctor::max_severity(&findings),
        gid_index,
        mtus: scope
            .nics
            .iter()
            .filter_map(|n| state.interface(&n.ifname).map(|i| i.mtu))
            .collect(),
        subnets: scope
            .nics
            .iter()
            .flat_map(|n| n.global.iter().map(|a| a.network()))
            .collect(),
        firmware: {
            let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for d in &state.rdma {
                if let (Some(model), Some(fw)) =
                    (d.pci_device_id.as_ref().or(d.hca_type.as_ref()), &d.fw_ver)
                {
                    m.entry(model.clone()).or_default().insert(fw.clone());
                }
            }
            m
        },
        rates: state
            .rdma
            .iter()
            .flat_map(|d| &d.ports)
            .filter(|p| p.is_active())
            .filter_map(|p| p.rate_gbps())
            .map(|r| r.to_string())
            .collect(),
        qos: scope
            .nics
            .iter()
            .filter_map(|n| state.interface(&n.ifname)?.qos.as_ref())
            .filter(|q| q.dcb_available)
            .map(crate::doctor::qos_signature)
            .collect(),
    }
}

fn host_subject(h: &str) -> Subject {
    Subject {
        host: Some(h.to_string()),
        ..Default::default()
    }
}

/// A fleet report built one snapshot at a time: [`FleetBuilder::add`] summarises
/// a snapshot (its doctor findings, NCCL GID index, NICs: a [`HostSummary`]) and
/// keeps only what the cross-host checks read, so the caller can load, add and
/// drop snapshots one by one; [`FleetBuilder::finish`] runs the cross-host
/// comparisons. The result is the same as [`fleet_report_with`] on all the snapshots
/// at once.
///
/// What is kept of each snapshot: everything but its routes, rules, sysctls,
/// table names and warnings, which a host's own doctor run (in its summary)
/// already judged and no cross-host check compares. Those are the bulk of a
/// snapshot (a host with a full routing table holds 100 000s of routes); a
/// cross-host check that needs one of them must stop `slim` from dropping it.
#[derive(Debug, Clone)]
pub struct FleetBuilder {
    opts: DoctorOptions,
    hosts: Vec<HostSummary>,
    states: Vec<HostState>,
}

/// The part of a snapshot the cross-host checks read (see [`FleetBuilder`]).
fn slim(mut state: HostState) -> HostState {
    state.routes = Vec::new();
    state.rules = Vec::new();
    state.sysctls = Default::default();
    state.table_names = Default::default();
    state.warnings = Vec::new();
    state
}

impl FleetBuilder {
    /// An empty fleet, judged with `opts`.
    pub fn new(opts: &DoctorOptions) -> FleetBuilder {
        FleetBuilder {
            opts: opts.clone(),
            hosts: Vec::new(),
            states: Vec::new(),
        }
    }

    /// Summarise one host's snapshot and add it to the fleet (hosts keep the
    /// order they were added in).
    pub fn add(&mut self, state: HostState) {
        self.hosts.push(summarize_host(&state, &self.opts));
        self.states.push(slim(state));
    }

    /// Load snapshot files (JSON or gzip, as [`HostState::load`]) and add them in
    /// the order given, loading and summarising on up to `threads` threads (a
    /// fleet's time goes into parsing and each host's doctor run, which are
    /// independent). Each thread holds one snapshot at a time. When a file cannot
    /// be read, the error of the first such file (in the order given) is returned
    /// and no host is added.
    pub fn add_files(&mut self, paths: &[std::path::PathBuf], threads: usize) -> Result<()> {
        let threads = threads.clamp(1, paths.len().max(1));
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let opts = &self.opts;
        let mut slots: Vec<Option<Result<(HostSummary, HostState)>>> =
            (0..paths.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..threads {
                let tx = tx.clone();
                let (next, failed) = (&next, &failed);
                scope.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= paths.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let r = HostState::load(&paths[i]).map(|s| (summarize_host(&s, opts), slim(s)));
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (i, r) in rx {
                slots[i] = Some(r);
            }
        });
        // Files after a failure may not have been read: look for the first error.
        if let Some(e) = slots.iter_mut().find_map(|s| match s.take() {
            Some(Err(e)) => Some(e),
            other => {
                *s = other;
                None
            }
        }) {
            return Err(e);
        }
        for (summary, state) in slots.into_iter().flatten().flatten() {
            self.hosts.push(summary);
            self.states.push(state);
        }
        Ok(())
    }

    /// Hosts added so far.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// Whether no host was added.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Compare the hosts and build the report.
    pub fn finish(self) -> FleetReport {
        cross_host(self.hosts, &self.states)
    }
}

/// Build the fleet report with the default doctor options.
pub fn fleet_report(states: &[HostState]) -> FleetReport {
    fleet_report_with(states, &DoctorOptions::default())
}

/// Build the fleet report (all snapshots in memory; see [`FleetBuilder`] for
/// one at a time).
pub fn fleet_report_with(states: &[HostState], opts: &DoctorOptions) -> FleetReport {
    let hosts = states.iter().map(|s| summarize_host(s, opts)).collect();
    cross_host(hosts, states)
}

/// The cross-host comparisons over the hosts' summaries and snapshots. A host
/// (by [`fleet_host_label`]) given more than once is compared once, in its first
/// snapshot, and named in a `fleet-host-repeated` finding: counted twice it
/// would outvote the others, and duplicate-address advice would tell it to
/// delete its own address.
fn cross_host(hosts: Vec<HostSummary>, states: &[HostState]) -> FleetReport {
    let mut findings = Vec::new();
    let labels: Vec<String> = states.iter().map(fleet_host_label).collect();
    let first = repeated(&labels, &mut findings);
    if first.len() == labels.len() {
        compare_all(&hosts, states, &labels, &mut findings);
    } else {
        let hs: Vec<HostSummary> = first.iter().map(|&i| hosts[i].clone()).collect();
        let ss: Vec<HostState> = first.iter().map(|&i| states[i].clone()).collect();
        let ls: Vec<String> = first.iter().map(|&i| labels[i].clone()).collect();
        compare_all(&hs, &ss, &ls, &mut findings);
    }
    doctor::sort_findings(&mut findings);
    FleetReport { hosts, findings }
}

/// `fleet-host-repeated`: every label given by more than one snapshot, with the
/// (1-based) input positions. Returns the index of each label's first snapshot,
/// in input order.
fn repeated(labels: &[String], out: &mut Vec<Finding>) -> Vec<usize> {
    let mut at: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut first = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let seen = at.entry(l.as_str()).or_default();
        if seen.is_empty() {
            first.push(i);
        }
        seen.push(i + 1);
    }
    for (label, inputs) in at {
        if inputs.len() < 2 {
            continue;
        }
        let list = inputs
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        out.push(
            Finding::new(
                "fleet-host-repeated",
                Severity::Warning,
                host_subject(label),
                format!(
                    "{label} is given {} times (snapshots {list}): the same host twice, or two \
                     hosts with one name; only snapshot {} is compared with the fleet",
                    inputs.len(),
                    inputs[0]
                ),
            )
            .evidence("snapshots", &inputs)
            // Nothing to run: give each host's snapshot once (or rename a host).
            .fix(Vec::new(), None),
        );
    }
    first
}

/// Every cross-host check, over distinct hosts (`hosts`, `states` and `labels`
/// are parallel).
fn compare_all(
    hosts: &[HostSummary],
    states: &[HostState],
    labels: &[String],
    findings: &mut Vec<Finding>,
) {
    if hosts.len() < 2 {
        return;
    }
    compare(
        hosts,
        states,
        findings,
        Comparison {
            id: "fleet-gid-index-differs",
            key: |h| h.gid_index.map(|i| i.to_string()),
            what: "NCCL GID index",
            why: "a job-wide NCCL_IB_GID_INDEX cannot be right on hosts that differ; leave \
                  it unset (NCCL 2.21 and later select per device: `roce-net nccl-env` on \
                  the host shows what they pick and whether NCCL_IB_ADDR_RANGE is needed), \
                  or align the GID tables",
            fix: |_, s, _, f| {
                f.fix(vec!["unset NCCL_IB_GID_INDEX".to_string()], None)
                    .checks(vec![on_state(s, "roce-net nccl-env")])
            },
        },
    );
    compare(
        hosts,
        states,
        findings,
        Comparison {
            id: "fleet-mtu-differs",
            key: |h| (!h.mtus.is_empty()).then(|| join(&h.mtus)),
            what: "NIC MTUs",
            why: "set the same MTU on every host (`ip link set`, and in the node's own \
                  network configuration so it survives a reboot; roce-net's policy does not \
                  manage MTUs), or RDMA path MTU negotiation falls to the smaller one and \
                  large messages fail on mismatched links",
            fix: |h, s, common, f| match common.map(str::parse::<u32>) {
                // A single most common MTU: set it on every NIC of the host.
                Some(Ok(m)) => f.fix(
                    h.nics
                        .iter()
                        .map(|n| {
                            on_state(s, &format!("ip link set dev {} mtu {m}", ifname_word(n)))
                        })
                        .collect(),
                    // No policy key: the planner does not change MTUs.
                    None,
                ),
                // Several MTUs on the common hosts, or no common value: which
                // MTU is right is the operator's call.
                _ => f.checks(vec![on_state(s, "ip -br link")]),
            },
        },
    );
    nic_count::check(hosts, states, findings);
    compare(
        hosts,
        states,
        findings,
        Comparison {
            id: "fleet-subnet-layout-differs",
            key: |h| (!h.subnets.is_empty()).then(|| join(&h.subnets)),
            what: "NIC subnets",
            why: "hosts whose NICs sit in different subnets reach each other's rails only \
                  through routing",
            fix: |_, s, _, f| f.checks(vec![on_state(s, "ip -br -4 addr")]),
        },
    );
    firmware(hosts, states, findings);
    compare(
        hosts,
        states,
        findings,
        Comparison {
            id: "fleet-rate-differs",
            key: |h| (!h.rates.is_empty()).then(|| join(&h.rates)),
            what: "RDMA port rates (Gb/s)",
            why: "a slower rail on one host slows every collective that crosses it",
            fix: |_, s, _, f| {
                f.checks(vec![on_state(
                    s,
                    "cat /sys/class/infiniband/*/ports/*/rate",
                )])
            },
        },
    );
    compare(
        hosts,
        states,
        findings,
        Comparison {
            id: "fleet-qos-differs",
            key: |h| {
                (!h.qos.is_empty()).then(|| h.qos.iter().cloned().collect::<Vec<_>>().join("; "))
            },
            what: "NIC QoS",
            why: "hosts that disagree on the lossless priority, trust or DSCP map drop or \
                  pause each other's RoCE traffic",
            fix: |h, s, _, f| {
                f.checks(
                    h.nics
                        .iter()
                        .map(|n| on_state(s, &format!("dcb pfc show dev {}", ifname_word(n))))
                        .collect(),
                )
            },
        },
    );
    duplicates(states, findings);
    neighbors::check(states, labels, findings);
    subnets::check(states, labels, findings);
}

/// `fleet-firmware-differs`: per device model, hosts whose firmware set differs
/// from the most common one among the hosts with that model (every such host
/// when sets tie for most common).
fn firmware(hosts: &[HostSummary], states: &[HostState], out: &mut Vec<Finding>) {
    let models: BTreeSet<&String> = hosts.iter().flat_map(|h| h.firmware.keys()).collect();
    for model in models {
        let vals: Vec<(&HostSummary, &HostState, String)> = hosts
            .iter()
            .zip(states)
            .filter_map(|(h, s)| h.firmware.get(model).map(|v| (h, s, join(v))))
            .collect();
        let Some(agreed) = Consensus::of(vals.iter().map(|(_, _, k)| k)) else {
            continue;
        };
        if !agreed.disagrees() {
            continue;
        }
        let all: BTreeMap<&str, String> = vals
            .iter()
            .map(|(h, _, k)| (h.hostname.as_str(), k.clone()))
            .collect();
        let says = agreed.says(&format!("hosts with {model}"), &all, |v| v.clone());
        for (h, s, k) in &vals {
            if agreed.is_common(k) {
                continue;
            }
            let mut f = Finding::new(
                "fleet-firmware-differs",
                Severity::Warning,
                host_subject(&h.hostname),
                format!(
                    "{}: {model} firmware {k}; {says}: firmware differences change \
                     congestion control and RoCE behaviour between the two ends of a \
                     connection",
                    h.hostname
                ),
            )
            .evidence("model", model)
            .evidence("value", k)
            .evidence("hosts", &all);
            for (name, v) in agreed.evidence(|v| serde_json::json!(v)) {
                f = f.evidence(name, v);
            }
            out.push(f.checks(vec![on_state(s, "cat /sys/class/infiniband/*/fw_ver")]));
        }
    }
}

fn join<T: std::fmt::Display>(v: &BTreeSet<T>) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// One host-level comparison: `key` gives each host's value (`None`: not
/// compared), `what` names it, `why` says what a difference breaks (in words
/// that blame neither side: on a tie neither is right), and `fix` adds the
/// remediation for a host, given the most common value when there is one.
struct Comparison<'a, K, F>
where
    K: Fn(&HostSummary) -> Option<String>,
    F: Fn(&HostSummary, &HostState, Option<&str>, Finding) -> Finding,
{
    id: &'a str,
    key: K,
    what: &'a str,
    why: &'a str,
    fix: F,
}

/// Name every host whose value differs from the most common one, or every host
/// when values tie for most common ([`consensus`]).
fn compare<K, F>(
    hosts: &[HostSummary],
    states: &[HostState],
    out: &mut Vec<Finding>,
    c: Comparison<'_, K, F>,
) where
    K: Fn(&HostSummary) -> Option<String>,
    F: Fn(&HostSummary, &HostState, Option<&str>, Finding) -> Finding,
{
    let vals: Vec<(&HostSummary, &HostState, String)> = hosts
        .iter()
        .zip(states)
        .filter_map(|(h, s)| (c.key)(h).map(|k| (h, s, k)))
        .collect();
    let Some(agreed) = Consensus::of(vals.iter().map(|(_, _, k)| k)) else {
        return;
    };
    if !agreed.disagrees() {
        return;
    }
    let all: BTreeMap<&str, String> = vals
        .iter()
        .map(|(h, _, k)| (h.hostname.as_str(), k.clone()))
        .collect();
    // Evidence stays bounded however large the fleet (every host's value in every
    // finding made a 10 000-host report quadratic): see `bounded`.
    let odd_one = agreed.common().cloned().unwrap_or_default();
    let (sample, counts) = bounded(&all, &odd_one);
    let says = agreed.says("hosts", &all, |v| v.clone());
    for (summary, state, k) in &vals {
        if agreed.is_common(k) {
            continue;
        }
        let h = &summary.hostname;
        let mut f = Finding::new(
            c.id,
            Severity::Warning,
            host_subject(h),
            format!("{h}: {} {k}; {says}: {}", c.what, c.why),
        )
        .evidence("value", k)
        .evidence("hosts", &sample)
        .evidence("counts", &counts);
        for (name, v) in agreed.evidence(|v| serde_json::json!(v)) {
            f = f.evidence(name, v);
        }
        out.push((c.fix)(
            summary,
            state,
            agreed.common().map(String::as_str),
            f,
        ));
    }
}

/// `fleet-duplicate-address`: a global address held by more than one host
/// (`states` are distinct hosts: see [`cross_host`]). Interfaces of one host
/// holding it are that host's own business (`doctor`), not a fleet finding.
fn duplicates(states: &[HostState], out: &mut Vec<Finding>) {
    let mut by_ip: BTreeMap<IpAddr, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut dels: BTreeMap<IpAddr, Vec<(String, String)>> = BTreeMap::new();
    let mut owners: BTreeMap<IpAddr, BTreeSet<String>> = BTreeMap::new();
    for s in states {
        let label = fleet_host_label(s);
        for a in &s.addresses {
            if a.ifname == "lo" || a.scope != Scope::Universe {
                continue;
            }
            by_ip
                .entry(a.address)
                .or_default()
                .insert((label.clone(), a.ifname.clone()));
            owners.entry(a.address).or_default().insert(label.clone());
            dels.entry(a.address).or_default().push((
                label.clone(),
                on_state(
                    s,
                    &format!(
                        "ip addr del {}/{} dev {}",
                        a.address,
                        a.prefix_len,
                        ifname_word(&a.ifname)
                    ),
                ),
            ));
        }
    }
    for (ip, o) in owners {
        if o.len() < 2 {
            continue;
        }
        let holders: Vec<String> = by_ip
            .get(&ip)
            .map(|v| v.iter().map(|(h, d)| format!("{h}/{d}")).collect())
            .unwrap_or_default();
        out.push(
            Finding::new(
                "fleet-duplicate-address",
                Severity::Error,
                Subject::default().with_address(ip),
                format!(
                    "{ip} is configured on {} hosts ({}): peers reach whichever answered ARP last",
                    o.len(),
                    holders.join(", ")
                ),
            )
            .evidence("holders", &holders)
            .fix(
                // Keep the first host holding it (every interface of that
                // host); remove it from the other hosts.
                dels.get(&ip)
                    .map(|v| {
                        let keep = v.first().map(|(l, _)| l.clone());
                        v.iter()
                            .filter(|(l, _)| Some(l) != keep.as_ref())
                            .map(|(_, c)| c.clone())
                            .collect()
                    })
                    .unwrap_or_default(),
                None,
            ),
        );
    }
}
