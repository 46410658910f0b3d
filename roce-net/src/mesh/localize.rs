//! The merge: every node's result against the plan, and the faults found by
//! elimination (`MeshMerger`, [`mesh_report`]).
//!
//! Each pair of NICs that probed each other is passed or failed (failed when a
//! level of a probe between them failed). Then, largest element first, each
//! failure is explained once:
//!
//! 1. **host, no result**: a node that sent no result. Its pairs are
//!    explained by it.
//! 2. **rail**: every pair of the rail failed, on at least three hosts: the
//!    switch or the fabric of that rail (one bad NIC leaves the pairs of the
//!    others passing; a rail whose pairs all fail needs one explanation, not
//!    one per NIC).
//! 3. **NIC**: a NIC that failed with every partner (at least two) while some
//!    partner passes with others: its link, cable, port or configuration.
//! 4. **host**: two or more NICs of one host failed that way, and either all
//!    of its NICs did, or they share a cause that is the host's (ARP flux,
//!    asymmetric routing: the host's configuration, which all its NICs share);
//!    or every pair of its NICs among themselves failed while they pass with
//!    other hosts. Three or more NICs of one rail on three or more hosts
//!    failing with one cause, half the rail or more, are the rail's.
//! 5. **pair**: what is left, one fault per pair of NICs; which side is named
//!    follows the cause (the prober's route or neighbour entry, or the
//!    target's return path), and a pair whose request arrived but whose
//!    reply did not (the target's responder saw it) fails one way only.
//!
//! Each fault carries the probes' own most specific cause (a NIC's `link-down`
//! before its peers' `no-answer`), counts and samples as evidence, the fix,
//! and its host's doctor findings. Memory is bounded for any fleet: per probe
//! a few bytes, and the failures' details kept for a few per NIC.

use super::result::{causes, MeshLevel, MeshNodeResult, MeshStatus, NicSeen};
use super::schedule::{Layout, MeshPlan, MeshProbe};
use crate::doctor::{Finding, Severity};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{in_netns, over_ssh};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

/// The element a fault names.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FaultElement {
    /// A whole host.
    Host,
    /// A rail (its switch or fabric).
    Rail,
    /// One NIC.
    Nic,
    /// One pair of NICs.
    Pair,
}

impl FaultElement {
    /// The name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            FaultElement::Host => "host",
            FaultElement::Rail => "rail",
            FaultElement::Nic => "nic",
            FaultElement::Pair => "pair",
        }
    }
}

/// One broken element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshFault {
    /// What is broken.
    pub element: FaultElement,
    /// The host (`host`, `nic`, `pair`: the side the cause points to).
    pub host: Option<String>,
    /// The NIC (`nic`, `pair`).
    pub nic: Option<String>,
    /// The rail (`rail`, `nic`, `pair` between hosts).
    pub rail: Option<String>,
    /// The other end of a `pair`: `host nic`.
    pub peer: Option<String>,
    /// The probes' most specific cause (`link-down`, `mtu`, `arp-flux`, ...).
    pub cause: String,
    /// The level it failed at first.
    pub level: Option<MeshLevel>,
    /// One sentence for people.
    pub message: String,
    /// Counts, the peers, sample failures.
    pub evidence: BTreeMap<String, serde_json::Value>,
    /// What to do.
    pub fix: Vec<String>,
    /// The doctor's findings (warnings, errors) on the element's host and NICs.
    pub findings: Vec<Finding>,
}

impl MeshFault {
    /// A fault of rail `rail`: no host, NIC or peer; its findings come later
    /// (`Merge::rail_findings`), if at all.
    fn rail(
        rail: &str,
        cause: String,
        level: Option<MeshLevel>,
        message: String,
        evidence: BTreeMap<String, serde_json::Value>,
        fix: Vec<String>,
    ) -> MeshFault {
        MeshFault {
            element: FaultElement::Rail,
            host: None,
            nic: None,
            rail: Some(rail.to_string()),
            peer: None,
            cause,
            level,
            message,
            evidence,
            fix,
            findings: Vec::new(),
        }
    }
}

/// Counts of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshSummary {
    /// Nodes in the plan.
    pub nodes: usize,
    /// Nodes that sent a result.
    pub results: usize,
    /// NICs in the plan.
    pub nics: usize,
    /// Rails.
    pub rails: usize,
    /// Rounds.
    pub rounds: u32,
    /// Probes in the schedule.
    pub probes: usize,
    /// Probes that passed.
    pub passed: usize,
    /// Probes that failed.
    pub failed: usize,
    /// Probes not made (their node sent no result or started late) or skipped.
    pub not_run: usize,
    /// Failed probes by cause.
    pub causes: BTreeMap<String, usize>,
    /// NICs in scope without an address to probe on (each named as a
    /// fault, not in `nics`).
    #[serde(default)]
    pub unprobed: usize,
}

/// The merged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshReport {
    /// The plan's id.
    pub plan: String,
    /// `pass` (no fault) or `fail`.
    pub verdict: String,
    /// The verdict is `pass`.
    pub passed: bool,
    /// The verdict in one line.
    pub message: String,
    /// Counts.
    pub summary: MeshSummary,
    /// One per broken element, hosts first, then rails, NICs, pairs.
    pub faults: Vec<MeshFault>,
    /// Remarks (levels not run, and where).
    pub notes: Vec<String>,
    /// When the last node's run ended (its start plus its length), ms since
    /// the Unix epoch; 0 when no node sent a result (or the report was
    /// written by a roce-net that did not record it). What `check --mesh`
    /// measures the report's age by.
    #[serde(default)]
    pub tested_at_ms: u64,
    /// Every node of the plan, in the plan's order: whether it sent a result
    /// and the rails of its NICs (what `check --mesh` finds a host's faults
    /// by). Empty in a report written by a roce-net that did not record it.
    #[serde(default)]
    pub nodes: Vec<MeshReportNode>,
}

/// A node of the plan, as the report saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshReportNode {
    /// The node, as the plan names it (its host name, `hostname:netns` for a
    /// host in a network namespace).
    pub host: String,
    /// It sent a result.
    pub result: bool,
    /// The rails of its NICs, each once.
    pub rails: Vec<String>,
}

/// How many failures' details are kept per prober NIC.
const DETAILS_PER_NIC: usize = 4;
/// How many peers or samples an evidence list names.
const EVIDENCE_SAMPLE: usize = 8;
/// How many doctor findings a fault carries.
const FINDINGS_PER_FAULT: usize = 16;

/// Causes that are the host's configuration, shared by all its NICs.
const HOST_CAUSES: &[&str] = &[causes::ARP_FLUX, causes::ASYMMETRIC_EGRESS];

/// How specific a cause is: a fault names its most specific one.
fn rank(cause: &str) -> u32 {
    match cause {
        causes::NO_RESULT => 110,
        causes::LINK_DOWN => 100,
        causes::ABSENT => 99,
        causes::NO_ADDRESS => 97,
        causes::NO_NICS => 96,
        "port-not-active" => 95,
        causes::MTU | "path-mtu-above-active" => 90,
        causes::ARP_FLUX => 80,
        causes::ASYMMETRIC_EGRESS => 75,
        causes::WRONG_MAC => 70,
        "gid-link-local" | "gid-roce-v1" | "gid-wrong-family" => 65,
        "no-route-or-arp" => 60,
        "retry-exceeded" | "rnr-retry-exceeded" | "remote-access" => 50,
        causes::NO_ANSWER => 40,
        causes::NO_REPLY => 35,
        "peer-unreachable" => 30,
        "device-error" => 28,
        "timeout" => 20,
        "peer-failed" => 15,
        causes::PROBE_ERROR => 10,
        "unknown" => 5,
        _ => 25,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The prober sent no result.
    Missing,
    /// In the prober's result, not run (late, skipped).
    NotRun,
    Pass,
    Fail,
}

#[derive(Debug, Clone, Copy)]
struct Outcome {
    state: State,
    level: u8,
    cause: u16,
    /// Index into `details`, or `u32::MAX`.
    detail: u32,
    /// The target's responder saw the IP request and replied.
    seen: bool,
}

/// A failure kept for evidence.
#[derive(Debug, Clone)]
struct Detail {
    probe: u32,
    message: String,
    evidence: BTreeMap<String, serde_json::Value>,
    fix: Vec<String>,
}

#[derive(Debug, Clone, Default)]
struct NodeInfo {
    /// When its run ended, ms since the epoch.
    ended_at_ms: u64,
    hostname: String,
    netns: Option<String>,
    findings: Vec<Finding>,
    served: Vec<MeshLevel>,
    nics: BTreeMap<String, super::result::NicSeen>,
    notes: Vec<String>,
}

/// Builds a [`MeshReport`] one node result at a time: each is reduced to a few
/// bytes per probe as it is added, so a fleet of 100 000 NICs merges in
/// bounded memory. [`MeshMerger::finish`] finds the faults.
#[derive(Debug)]
pub struct MeshMerger {
    plan: MeshPlan,
    layout: Layout,
    probes: Vec<MeshProbe>,
    index: HashMap<(u32, u32), u32>,
    outcome: Vec<Outcome>,
    details: Vec<Detail>,
    per_nic_details: Vec<u8>,
    nodes: Vec<Option<NodeInfo>>,
    addresses: HashMap<IpAddr, u32>,
    cause_ids: HashMap<String, u16>,
    cause_names: Vec<String>,
}

impl MeshMerger {
    /// A merger of `plan`'s results.
    pub fn new(plan: &MeshPlan) -> MeshMerger {
        let layout = Layout::new(plan);
        let probes = plan.probes();
        let mut index = HashMap::with_capacity(probes.len());
        for (i, p) in probes.iter().enumerate() {
            index.insert((p.from.0, p.to.0), i as u32);
        }
        let mut addresses = HashMap::with_capacity(layout.nics.len());
        for (g, &(n, k)) in layout.nics.iter().enumerate() {
            let nic = &plan.inventory.nodes[n as usize].nics[k as usize];
            addresses.insert(nic.address, g as u32);
        }
        let outcome = vec![
            Outcome {
                state: State::Missing,
                level: 0,
                cause: 0,
                detail: u32::MAX,
                seen: false,
            };
            probes.len()
        ];
        MeshMerger {
            nodes: vec![None; plan.inventory.nodes.len()],
            per_nic_details: vec![0; layout.nics.len()],
            plan: plan.clone(),
            layout,
            probes,
            index,
            outcome,
            details: Vec::new(),
            addresses,
            cause_ids: HashMap::new(),
            cause_names: Vec::new(),
        }
    }

    fn cause_id(&mut self, c: &str) -> u16 {
        if let Some(&i) = self.cause_ids.get(c) {
            return i;
        }
        // Causes are a short vocabulary; a flood of made-up ones shares one slot.
        if self.cause_names.len() >= 1000 {
            return self.cause_id_unknown();
        }
        let i = self.cause_names.len() as u16;
        self.cause_names.push(c.to_string());
        self.cause_ids.insert(c.to_string(), i);
        i
    }

    fn cause_id_unknown(&mut self) -> u16 {
        if let Some(&i) = self.cause_ids.get("unknown") {
            return i;
        }
        let i = self.cause_names.len() as u16;
        self.cause_names.push("unknown".to_string());
        self.cause_ids.insert("unknown".to_string(), i);
        i
    }

    /// The global id of `host`'s NIC `nic`.
    fn nic_id(&self, node: u32, nic: &str) -> Option<u32> {
        let n = &self.plan.inventory.nodes[node as usize];
        let k = n.nics.iter().position(|x| x.name == nic)?;
        Some(self.layout.first[node as usize] + k as u32)
    }

    /// Add one node's result. `InvalidInput` when it is of another plan or of
    /// a node the plan does not have; a second result of one node replaces
    /// the first.
    pub fn add(&mut self, r: MeshNodeResult) -> Result<()> {
        if r.plan != self.plan.id {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "the result of {} is of mesh plan {}, not {}: merge the results of one run",
                    r.host, r.plan, self.plan.id
                ),
            ));
        }
        let Some(&ni) = self.layout.hosts.get(&r.host) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "the result of {} names a node mesh plan {} does not have",
                    r.host, r.plan
                ),
            ));
        };
        for rec in &r.probes {
            let Some(from) = self.nic_id(ni, &rec.from) else {
                continue;
            };
            let Some(&tn) = self.layout.hosts.get(&rec.to_host) else {
                continue;
            };
            let Some(to) = self.nic_id(tn, &rec.to) else {
                continue;
            };
            let Some(&pi) = self.index.get(&(from, to)) else {
                continue;
            };
            let fail = rec.levels.iter().find(|l| l.status == MeshStatus::Fail);
            let ran = rec.levels.iter().any(|l| l.status != MeshStatus::Skipped);
            let o = match fail {
                Some(l) => {
                    let cause = self.cause_id(l.cause.as_deref().unwrap_or("unknown"));
                    let mut detail = u32::MAX;
                    if usize::from(self.per_nic_details[from as usize]) < DETAILS_PER_NIC {
                        self.per_nic_details[from as usize] += 1;
                        detail = self.details.len() as u32;
                        self.details.push(Detail {
                            probe: pi,
                            message: l.message.clone(),
                            evidence: l.evidence.clone(),
                            fix: l.fix.clone(),
                        });
                    }
                    Outcome {
                        state: State::Fail,
                        level: l.level as u8,
                        cause,
                        detail,
                        seen: self.outcome[pi as usize].seen,
                    }
                }
                None if ran => Outcome {
                    state: State::Pass,
                    seen: self.outcome[pi as usize].seen,
                    ..self.outcome[pi as usize]
                },
                None => Outcome {
                    state: State::NotRun,
                    seen: self.outcome[pi as usize].seen,
                    ..self.outcome[pi as usize]
                },
            };
            self.outcome[pi as usize] = o;
        }
        for a in &r.responder.answered {
            if a.level != MeshLevel::Ip {
                continue;
            }
            let (Some(&from), Some(to)) =
                (self.addresses.get(&a.from_address), self.nic_id(ni, &a.to))
            else {
                continue;
            };
            if let Some(&pi) = self.index.get(&(from, to)) {
                self.outcome[pi as usize].seen = true;
            }
        }
        let mut findings: Vec<Finding> = r
            .findings
            .into_iter()
            .filter(|f| f.severity >= Severity::Warning)
            .collect();
        findings.truncate(256);
        self.nodes[ni as usize] = Some(NodeInfo {
            ended_at_ms: r.started_at_ms.saturating_add(r.elapsed_ms),
            hostname: r.hostname,
            netns: r.netns,
            findings,
            served: r.responder.levels,
            nics: r.nics.into_iter().map(|n| (n.name.clone(), n)).collect(),
            notes: r.notes.into_iter().take(16).collect(),
        });
        Ok(())
    }

    /// Parse and add one node result (JSON).
    pub fn add_json(&mut self, text: &str) -> Result<()> {
        let r: MeshNodeResult = serde_json::from_str(text).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("not a mesh node result (roce-net mesh run -o): {e}"),
            )
        })?;
        self.add(r)
    }

    /// Find the faults.
    pub fn finish(self) -> MeshReport {
        Merge::new(self).run()
    }
}

/// Merge every result at once ([`MeshMerger`] one at a time).
pub fn mesh_report(plan: &MeshPlan, results: Vec<MeshNodeResult>) -> Result<MeshReport> {
    let mut m = MeshMerger::new(plan);
    for r in results {
        m.add(r)?;
    }
    Ok(m.finish())
}

/// A pair of NICs that probed each other (either direction), as one edge.
#[derive(Debug, Clone, Copy)]
struct Edge {
    a: u32,
    b: u32,
    fail: bool,
    /// A failed probe of the pair (its outcome index), else a passed one.
    probe: u32,
    intra: bool,
    explained: bool,
}

struct Merge {
    m: MeshMerger,
    edges: Vec<Edge>,
    /// Per NIC: the edges it is in.
    adj: Vec<Vec<u32>>,
    faulty_host: Vec<bool>,
    faults: Vec<MeshFault>,
    /// Rail faults (their index) and their rings, for their findings.
    rails: Vec<(usize, Vec<u32>)>,
    /// Each judged probe's edge (`u32::MAX`: not judged).
    probe_edge: Vec<u32>,
}

impl Merge {
    fn new(m: MeshMerger) -> Merge {
        Merge {
            adj: vec![Vec::new(); m.layout.nics.len()],
            faulty_host: vec![false; m.plan.inventory.nodes.len()],
            probe_edge: vec![u32::MAX; m.probes.len()],
            m,
            edges: Vec::new(),
            faults: Vec::new(),
            rails: Vec::new(),
        }
    }

    fn node_of(&self, g: u32) -> u32 {
        self.m.layout.node_of(g)
    }

    fn nic_name(&self, g: u32) -> (&str, &str) {
        let (n, k) = self.m.layout.nics[g as usize];
        let node = &self.m.plan.inventory.nodes[n as usize];
        (&node.host, &node.nics[k as usize].name)
    }

    fn rail_of(&self, g: u32) -> &str {
        let (n, k) = self.m.layout.nics[g as usize];
        &self.m.plan.inventory.nodes[n as usize].nics[k as usize].rail
    }

    fn run(mut self) -> MeshReport {
        let not_served = self.unserved();
        let summary = self.summary();
        // 1. Hosts without a result.
        for ni in 0..self.m.nodes.len() {
            if self.m.nodes[ni].is_none() {
                self.faulty_host[ni] = true;
                let host = self.m.plan.inventory.nodes[ni].host.clone();
                let mut ev = BTreeMap::new();
                ev.insert(
                    "nics".into(),
                    serde_json::json!(self.m.plan.inventory.nodes[ni].nics.len()),
                );
                self.faults.push(MeshFault {
                    element: FaultElement::Host,
                    host: Some(host.clone()),
                    nic: None,
                    rail: None,
                    peer: None,
                    cause: causes::NO_RESULT.into(),
                    level: None,
                    message: format!(
                        "{host} sent no result: it did not run the mesh, or its result was \
                         not collected; its peers' probes to it are not judged"
                    ),
                    evidence: ev,
                    fix: vec![format!(
                        "run the mesh on {host} (is it reachable, is roce-net installed?), \
                         then merge again"
                    )],
                    findings: Vec::new(),
                });
            }
        }
        self.build_edges();
        self.rails_all_failed();
        self.nics_and_hosts();
        self.unprobed();
        self.pairs();
        self.rail_findings();
        let mut faults = std::mem::take(&mut self.faults);
        faults.sort_by(|a, b| {
            (a.element, &a.host, &a.rail, &a.nic, &a.peer)
                .cmp(&(b.element, &b.host, &b.rail, &b.nic, &b.peer))
        });
        let mut notes: Vec<String> = not_served;
        for (ni, info) in self.m.nodes.iter().enumerate() {
            if let Some(info) = info {
                for n in &info.notes {
                    if notes.len() < 64 {
                        notes.push(format!("{}: {n}", self.m.plan.inventory.nodes[ni].host));
                    }
                }
            }
        }
        // A schedule none of whose probes was made proves nothing: nodes that
        // all started after their slots, or results without probes, are not a
        // pass even though no element could be blamed.
        let judged = summary.passed + summary.failed;
        let nothing_judged = judged == 0;
        let passed = faults.is_empty() && !nothing_judged;
        let message = if summary.probes == 0 && faults.is_empty() {
            format!(
                "the plan schedules no probe ({} NICs of {} nodes, no rail with NICs on two \
                 hosts): nothing is proven; give the mesh the nodes' NICs (mesh node --nic)",
                summary.nics, summary.nodes
            )
        } else if nothing_judged && faults.is_empty() {
            format!(
                "no probe was judged: none of the {} scheduled probes was made (did every \
                 node start after the plan's start time, or send a result without probes? \
                 see the notes); nothing is proven, run the mesh again with a later start",
                summary.probes
            )
        } else if passed {
            format!(
                "every probed pair passed: {} probes between {} NICs of {} nodes on {} rails",
                summary.passed, summary.nics, summary.nodes, summary.rails
            )
        } else {
            let names: Vec<String> = faults.iter().take(6).map(fault_line).collect();
            format!(
                "{} fault(s): {}{}",
                faults.len(),
                names.join("; "),
                if faults.len() > 6 { "; ..." } else { "" }
            )
        };
        let tested_at_ms = self
            .m
            .nodes
            .iter()
            .flatten()
            .map(|n| n.ended_at_ms)
            .max()
            .unwrap_or(0);
        let nodes = self
            .m
            .plan
            .inventory
            .nodes
            .iter()
            .zip(&self.m.nodes)
            .map(|(node, info)| MeshReportNode {
                host: node.host.clone(),
                result: info.is_some(),
                rails: node
                    .nics
                    .iter()
                    .map(|n| n.rail.clone())
                    .chain(node.unprobed.iter().filter_map(|u| u.rail.clone()))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            })
            .collect();
        MeshReport {
            plan: self.m.plan.id.clone(),
            verdict: if passed { "pass" } else { "fail" }.to_string(),
            passed,
            message,
            summary,
            faults,
            notes,
            tested_at_ms,
            nodes,
        }
    }

    /// A level the target's responder did not serve (RDMA on a node where
    /// it is not available) is not judged: its probes are not run.
    fn unserved(&mut self) -> Vec<String> {
        let mut notes = BTreeMap::new();
        for (pi, p) in self.m.probes.iter().enumerate() {
            let o = &mut self.m.outcome[pi];
            if o.state != State::Fail || o.level != MeshLevel::Rdma as u8 {
                continue;
            }
            let tn = self.m.layout.node_of(p.to.0) as usize;
            if let Some(info) = &self.m.nodes[tn] {
                if !info.served.contains(&MeshLevel::Rdma) {
                    o.state = State::NotRun;
                    *notes.entry(tn).or_insert(0usize) += 1;
                }
            }
        }
        notes
            .into_iter()
            .map(|(tn, n)| {
                format!(
                    "{} served no RDMA probes (see its notes): {n} RDMA probe(s) to it not judged",
                    self.m.plan.inventory.nodes[tn].host
                )
            })
            .collect()
    }

    fn summary(&self) -> MeshSummary {
        let mut s = MeshSummary {
            nodes: self.m.plan.inventory.nodes.len(),
            results: self.m.nodes.iter().filter(|n| n.is_some()).count(),
            nics: self.m.layout.nics.len(),
            rails: self.m.layout.rails.len(),
            rounds: self.m.plan.round_count(),
            probes: self.m.probes.len(),
            unprobed: self
                .m
                .plan
                .inventory
                .nodes
                .iter()
                .map(|n| n.unprobed.len())
                .sum(),
            ..MeshSummary::default()
        };
        for o in &self.m.outcome {
            match o.state {
                State::Pass => s.passed += 1,
                State::Fail => {
                    s.failed += 1;
                    *s.causes
                        .entry(self.m.cause_names[o.cause as usize].clone())
                        .or_default() += 1;
                }
                State::Missing | State::NotRun => s.not_run += 1,
            }
        }
        s
    }

    /// One edge per pair of NICs with a judged probe: probes whose prober
    /// sent a result, minus those of a faulty host (no result).
    fn build_edges(&mut self) {
        let mut pairs: HashMap<(u32, u32), u32> = HashMap::with_capacity(self.m.probes.len());
        for (pi, p) in self.m.probes.iter().enumerate() {
            let o = self.m.outcome[pi];
            let judged = matches!(o.state, State::Pass | State::Fail);
            let (fa, tb) = (
                self.m.layout.node_of(p.from.0),
                self.m.layout.node_of(p.to.0),
            );
            if !judged || self.faulty_host[fa as usize] || self.faulty_host[tb as usize] {
                continue;
            }
            let key = (p.from.0.min(p.to.0), p.from.0.max(p.to.0));
            let fail = o.state == State::Fail;
            self.probe_edge[pi] = pairs.get(&key).copied().unwrap_or(self.edges.len() as u32);
            match pairs.get(&key) {
                Some(&e) => {
                    let edge = &mut self.edges[e as usize];
                    if fail && !edge.fail {
                        edge.fail = true;
                        edge.probe = pi as u32;
                    }
                }
                None => {
                    pairs.insert(key, self.edges.len() as u32);
                    self.adj[key.0 as usize].push(self.edges.len() as u32);
                    self.adj[key.1 as usize].push(self.edges.len() as u32);
                    self.edges.push(Edge {
                        a: key.0,
                        b: key.1,
                        fail,
                        probe: pi as u32,
                        intra: p.intra,
                        explained: false,
                    });
                }
            }
        }
    }

    /// The causes of a set of failed edges: counts, the most specific one,
    /// and the level it was seen at first.
    fn causes_of(&self, edges: &[u32]) -> (String, Option<MeshLevel>, BTreeMap<String, usize>) {
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        let mut level: BTreeMap<String, u8> = BTreeMap::new();
        for &e in edges {
            let edge = self.edges[e as usize];
            if !edge.fail {
                continue;
            }
            let o = self.m.outcome[edge.probe as usize];
            let c = self.m.cause_names[o.cause as usize].clone();
            let l = level.entry(c.clone()).or_insert(o.level);
            *l = (*l).min(o.level);
            *count.entry(c).or_default() += 1;
        }
        let best = count
            .iter()
            .max_by_key(|(c, n)| (rank(c), **n))
            .map(|(c, _)| c.clone())
            .unwrap_or_else(|| "unknown".to_string());
        let lvl = level.get(&best).map(|&l| match l {
            0 => MeshLevel::Neighbor,
            1 => MeshLevel::Ip,
            _ => MeshLevel::Rdma,
        });
        (best, lvl, count)
    }

    /// Sample failures (message, evidence, fix) of some edges.
    fn samples(&self, edges: &[u32], cause: &str) -> (Vec<serde_json::Value>, Vec<String>) {
        let mut out = Vec::new();
        let mut fix: Vec<String> = Vec::new();
        for &e in edges {
            let edge = self.edges[e as usize];
            if !edge.fail {
                continue;
            }
            let o = self.m.outcome[edge.probe as usize];
            if o.detail == u32::MAX || self.m.cause_names[o.cause as usize] != cause {
                continue;
            }
            let d = &self.m.details[o.detail as usize];
            let p = self.m.probes[d.probe as usize];
            let (fh, fnic) = self.nic_name(p.from.0);
            let (th, tnic) = self.nic_name(p.to.0);
            if out.len() < 3 {
                out.push(serde_json::json!({
                    "probe": format!("{fh} {fnic} -> {th} {tnic}"),
                    "message": d.message,
                    "evidence": d.evidence,
                }));
            }
            for f in &d.fix {
                if fix.len() < 6 && !fix.contains(f) {
                    fix.push(f.clone());
                }
            }
            if out.len() >= 3 && fix.len() >= 6 {
                break;
            }
        }
        (out, fix)
    }

    fn findings(&self, node: u32, nics: Option<&BTreeSet<String>>) -> Vec<Finding> {
        let Some(info) = &self.m.nodes[node as usize] else {
            return Vec::new();
        };
        info.findings
            .iter()
            .filter(|f| match (nics, &f.subject.interface) {
                (Some(set), Some(i)) => set.contains(i),
                _ => true,
            })
            .take(FINDINGS_PER_FAULT)
            .cloned()
            .collect()
    }

    fn on_host(&self, node: u32, cmd: &str) -> String {
        match &self.m.nodes[node as usize] {
            Some(i) => over_ssh(&i.hostname, &in_netns(i.netns.as_deref(), cmd)),
            None => over_ssh(&self.m.plan.inventory.nodes[node as usize].host, cmd),
        }
    }

    fn rails_all_failed(&mut self) {
        let rails: Vec<(String, Vec<u32>)> = self
            .m
            .layout
            .rails
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (name, ring) in rails {
            let mut edges: BTreeSet<u32> = BTreeSet::new();
            for &g in &ring {
                for &e in &self.adj[g as usize] {
                    let edge = self.edges[e as usize];
                    if !edge.intra && self.rail_of(edge.a) == name && self.rail_of(edge.b) == name {
                        edges.insert(e);
                    }
                }
            }
            let edges: Vec<u32> = edges.into_iter().collect();
            let hosts: BTreeSet<u32> = edges
                .iter()
                .flat_map(|&e| [self.edges[e as usize].a, self.edges[e as usize].b])
                .map(|g| self.node_of(g))
                .collect();
            if edges.len() < 3
                || hosts.len() < 3
                || edges.iter().any(|&e| !self.edges[e as usize].fail)
            {
                continue;
            }
            self.rail_fault(&name, &ring, &edges, "every pair of the rail failed");
        }
    }

    fn rail_fault(&mut self, name: &str, ring: &[u32], edges: &[u32], why: &str) {
        let (cause, level, counts) = self.causes_of(edges);
        let (samples, mut fix) = self.samples(edges, &cause);
        let failed = edges
            .iter()
            .filter(|&&e| self.edges[e as usize].fail)
            .count();
        let hosts: BTreeSet<u32> = ring.iter().map(|&g| self.node_of(g)).collect();
        let mtus: BTreeSet<u32> = ring
            .iter()
            .map(|&g| {
                let (n, k) = self.m.layout.nics[g as usize];
                self.m.plan.inventory.nodes[n as usize].nics[k as usize].mtu
            })
            .collect();
        let mut ev = BTreeMap::new();
        ev.insert("why".into(), serde_json::json!(why));
        ev.insert("failed_pairs".into(), serde_json::json!(failed));
        ev.insert("pairs".into(), serde_json::json!(edges.len()));
        ev.insert("hosts".into(), serde_json::json!(hosts.len()));
        ev.insert("nics".into(), serde_json::json!(ring.len()));
        ev.insert("causes".into(), serde_json::json!(counts));
        ev.insert("nic_mtus".into(), serde_json::json!(mtus));
        ev.insert("samples".into(), serde_json::json!(samples));
        let message =
            match cause.as_str() {
                causes::MTU | "path-mtu-above-active" => format!(
                "rail {name}: {failed} of {} pairs on {} hosts fail at the NICs' MTU ({}) while \
                 small probes pass: the rail's switch ports carry less than its NICs send",
                edges.len(),
                hosts.len(),
                mtus.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
            ),
                _ => format!(
                    "rail {name}: {failed} of {} pairs on {} hosts fail ({cause}): the rail's \
                 switch or fabric, not one host or NIC",
                    edges.len(),
                    hosts.len()
                ),
            };
        if matches!(cause.as_str(), causes::MTU | "path-mtu-above-active") {
            // The probes' own fixes name one pair each: the rail's is the one.
            fix.clear();
            fix.insert(
                0,
                format!(
                    "set the MTU of every switch port of rail {name} to at least the NICs' \
                     ({}), or the NICs' MTU to what the switch carries",
                    mtus.iter().max().copied().unwrap_or(1500)
                ),
            );
        } else {
            fix.insert(
                0,
                format!("check the switch (or fabric) of rail {name}: every pair on it fails"),
            );
        }
        // Its findings once every host fault is known (`rail_findings`).
        self.rails.push((self.faults.len(), ring.to_vec()));
        for &e in edges {
            self.edges[e as usize].explained = true;
        }
        self.faults
            .push(MeshFault::rail(name, cause, level, message, ev, fix));
    }

    /// Each rail fault's findings: its NICs', once per host and check, from
    /// hosts not at fault themselves (theirs go with their host).
    fn rail_findings(&mut self) {
        for (i, ring) in std::mem::take(&mut self.rails) {
            let mut findings = Vec::new();
            let mut ids: BTreeSet<(u32, String)> = BTreeSet::new();
            for &g in &ring {
                let node = self.node_of(g);
                if findings.len() >= FINDINGS_PER_FAULT || self.faulty_host[node as usize] {
                    continue;
                }
                let (_, nic) = self.nic_name(g);
                let set: BTreeSet<String> = [nic.to_string()].into();
                for f in self.findings(node, Some(&set)) {
                    if f.subject.interface.is_some()
                        && findings.len() < FINDINGS_PER_FAULT
                        && ids.insert((node, f.id.clone()))
                    {
                        findings.push(f);
                    }
                }
            }
            self.faults[i].findings = findings;
        }
    }

    /// NICs that fail with every partner, and the hosts and rails they add up to.
    fn nics_and_hosts(&mut self) {
        let n = self.m.layout.nics.len();
        // Candidates, judged on the NIC's peers on its rail (pairs within its
        // host are another path; they count once a NIC or host is at fault,
        // below): every unexplained pair failed, or every probe to it, or
        // every probe from it (a NIC whose address another NIC answers for
        // fails as a target only), at least two each.
        let mut candidate = vec![false; n];
        let mut passes = vec![false; n];
        // (probes, failed) to and from each NIC.
        let mut inbound = vec![(0u32, 0u32); n];
        let mut outbound = vec![(0u32, 0u32); n];
        for (pi, p) in self.m.probes.iter().enumerate() {
            let e = self.probe_edge[pi];
            if e == u32::MAX || p.intra || self.edges[e as usize].explained {
                continue;
            }
            let failed = u32::from(self.m.outcome[pi].state == State::Fail);
            inbound[p.to.0 as usize].0 += 1;
            inbound[p.to.0 as usize].1 += failed;
            outbound[p.from.0 as usize].0 += 1;
            outbound[p.from.0 as usize].1 += failed;
        }
        let all_failed = |(total, failed): (u32, u32)| total >= 2 && failed == total;
        for g in 0..n {
            let live: Vec<Edge> = self.adj[g]
                .iter()
                .map(|&e| self.edges[e as usize])
                .filter(|e| !e.explained && !e.intra)
                .collect();
            passes[g] = live.iter().any(|e| !e.fail);
            candidate[g] = (live.len() >= 2 && live.iter().all(|e| e.fail))
                || all_failed(inbound[g])
                || all_failed(outbound[g]);
        }
        let mut confirmed: Vec<u32> = Vec::new();
        for (g, _) in candidate.iter().enumerate().filter(|(_, c)| **c) {
            let some_partner_passes = self.adj[g]
                .iter()
                .map(|&e| self.edges[e as usize])
                .filter(|e| !e.explained && !e.intra)
                .any(|e| {
                    let o = if e.a == g as u32 { e.b } else { e.a };
                    passes[o as usize]
                });
            if some_partner_passes {
                confirmed.push(g as u32);
            }
        }
        // Hosts.
        let mut by_host: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &g in &confirmed {
            by_host.entry(self.node_of(g)).or_default().push(g);
        }
        let mut nic_faults: Vec<u32> = Vec::new();
        for (node, bad) in by_host {
            let first = self.m.layout.first[node as usize];
            let count = self.m.plan.inventory.nodes[node as usize].nics.len() as u32;
            let with_pairs: Vec<u32> = (first..first + count)
                .filter(|&g| {
                    self.adj[g as usize].iter().any(|&e| {
                        let edge = self.edges[e as usize];
                        !edge.explained && !edge.intra
                    })
                })
                .collect();
            let edges: Vec<u32> = bad
                .iter()
                .flat_map(|&g| self.adj[g as usize].iter().copied())
                .filter(|&e| !self.edges[e as usize].explained)
                .collect();
            let (cause, _, _) = self.causes_of(&edges);
            let all = bad.len() == with_pairs.len();
            if bad.len() >= 2 && (all || HOST_CAUSES.contains(&cause.as_str())) {
                let names: Vec<&str> = bad.iter().map(|&g| self.nic_name(g).1).collect();
                let total = self.m.plan.inventory.nodes[node as usize].nics.len();
                let why = if all && bad.len() == total {
                    format!("all {} of its NICs fail with every peer", bad.len())
                } else if all {
                    format!(
                        "its NICs {} fail with every peer (the others' pairs are explained by \
                         their rail)",
                        names.join(", ")
                    )
                } else {
                    format!(
                        "{} of its {} NICs fail with every peer, with a cause of the host's \
                         configuration ({cause})",
                        bad.len(),
                        with_pairs.len()
                    )
                };
                self.host_fault(node, &bad, &with_pairs, &why);
            } else {
                nic_faults.extend(bad);
            }
        }
        // Rails: many NICs of one rail, on many hosts, with one cause.
        let mut by_rail: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for &g in &nic_faults {
            by_rail
                .entry(self.rail_of(g).to_string())
                .or_default()
                .push(g);
        }
        let mut left = Vec::new();
        for (rail, bad) in by_rail {
            let ring = self.m.layout.rails.get(&rail).cloned().unwrap_or_default();
            let hosts: BTreeSet<u32> = bad.iter().map(|&g| self.node_of(g)).collect();
            let edges: Vec<u32> = bad
                .iter()
                .flat_map(|&g| self.adj[g as usize].iter().copied())
                .filter(|&e| !self.edges[e as usize].explained)
                .collect();
            let (_, _, counts) = self.causes_of(&edges);
            if bad.len() >= 3
                && hosts.len() >= 3
                && counts.len() == 1
                && 2 * bad.len() >= ring.len()
            {
                let mut rail_edges: BTreeSet<u32> = BTreeSet::new();
                for &g in &ring {
                    for &e in &self.adj[g as usize] {
                        let edge = self.edges[e as usize];
                        if !edge.intra
                            && !edge.explained
                            && self.rail_of(edge.a) == rail
                            && self.rail_of(edge.b) == rail
                        {
                            rail_edges.insert(e);
                        }
                    }
                }
                let rail_edges: Vec<u32> = rail_edges.into_iter().collect();
                self.rail_fault(
                    &rail,
                    &ring,
                    &rail_edges,
                    &format!(
                        "{} of its {} NICs, on {} hosts, fail with every peer",
                        bad.len(),
                        ring.len(),
                        hosts.len()
                    ),
                );
            } else {
                left.extend(bad);
            }
        }
        for g in left {
            self.nic_fault(g);
        }
        // Hosts whose NICs fail among themselves but pass with other hosts.
        for node in 0..self.m.plan.inventory.nodes.len() as u32 {
            if self.faulty_host[node as usize] {
                continue;
            }
            let first = self.m.layout.first[node as usize];
            let count = self.m.plan.inventory.nodes[node as usize].nics.len() as u32;
            let mut intra = BTreeSet::new();
            let mut inter_pass = false;
            for g in first..first + count {
                for &e in &self.adj[g as usize] {
                    let edge = self.edges[e as usize];
                    if edge.explained {
                        continue;
                    }
                    if edge.intra {
                        intra.insert(e);
                    } else if !edge.fail {
                        inter_pass = true;
                    }
                }
            }
            let intra: Vec<u32> = intra.into_iter().collect();
            if intra.len() >= 2 && inter_pass && intra.iter().all(|&e| self.edges[e as usize].fail)
            {
                let nics: Vec<u32> = (first..first + count).collect();
                self.host_intra_fault(node, &nics, &intra);
            }
        }
    }

    fn host_fault(&mut self, node: u32, bad: &[u32], nics: &[u32], why: &str) {
        self.faulty_host[node as usize] = true;
        let edges: Vec<u32> = nics
            .iter()
            .flat_map(|&g| self.adj[g as usize].iter().copied())
            .filter(|&e| !self.edges[e as usize].explained)
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        let (cause, level, counts) = self.causes_of(&edges);
        let (samples, mut fix) = self.samples(&edges, &cause);
        let host = self.m.plan.inventory.nodes[node as usize].host.clone();
        let failed = edges
            .iter()
            .filter(|&&e| self.edges[e as usize].fail)
            .count();
        let mut ev = BTreeMap::new();
        ev.insert("why".into(), serde_json::json!(why));
        ev.insert(
            "failing_nics".into(),
            serde_json::json!(bad
                .iter()
                .map(|&g| self.nic_name(g).1.to_string())
                .collect::<Vec<_>>()),
        );
        ev.insert("failed_pairs".into(), serde_json::json!(failed));
        ev.insert("pairs".into(), serde_json::json!(edges.len()));
        ev.insert("causes".into(), serde_json::json!(counts));
        ev.insert("samples".into(), serde_json::json!(samples));
        if HOST_CAUSES.contains(&cause.as_str()) {
            // The probes' "on HOST: roce-net apply" is this command.
            fix.retain(|f| !f.starts_with(&format!("on {host}:")));
            fix.insert(0, self.on_host(node, "roce-net apply"));
        }
        for f in self.findings(node, None) {
            for c in &f.remediation.commands {
                if fix.len() < 12 && !fix.contains(c) {
                    fix.push(c.clone());
                }
            }
        }
        for &e in &edges {
            self.edges[e as usize].explained = true;
        }
        let message = format!(
            "{host}: {why} ({cause}, {failed} of {} pairs failed)",
            edges.len()
        );
        self.faults.push(MeshFault {
            element: FaultElement::Host,
            host: Some(host),
            nic: None,
            rail: None,
            peer: None,
            cause,
            level,
            message,
            evidence: ev,
            fix,
            findings: self.findings(node, None),
        });
    }

    fn host_intra_fault(&mut self, node: u32, nics: &[u32], intra: &[u32]) {
        self.faulty_host[node as usize] = true;
        let (cause, level, counts) = self.causes_of(intra);
        let (samples, fix) = self.samples(intra, &cause);
        let host = self.m.plan.inventory.nodes[node as usize].host.clone();
        let mut ev = BTreeMap::new();
        ev.insert(
            "why".into(),
            serde_json::json!(
                "every pair of its NICs among themselves fails while they pass with other hosts"
            ),
        );
        ev.insert(
            "nics".into(),
            serde_json::json!(nics
                .iter()
                .map(|&g| self.nic_name(g).1.to_string())
                .collect::<Vec<_>>()),
        );
        ev.insert("failed_pairs".into(), serde_json::json!(intra.len()));
        ev.insert("causes".into(), serde_json::json!(counts));
        ev.insert("samples".into(), serde_json::json!(samples));
        for &e in intra {
            self.edges[e as usize].explained = true;
        }
        self.faults.push(MeshFault {
            element: FaultElement::Host,
            host: Some(host.clone()),
            nic: None,
            rail: None,
            peer: None,
            message: format!(
                "{host}: its NICs reach other hosts but not each other ({cause}, {} pairs): the \
                 path between NICs of one node (the switch's hairpin, or the host's RDMA \
                 configuration; NCCL: NCCL_CROSS_NIC, NCCL_NET_DISABLE_INTRA)",
                intra.len()
            ),
            cause,
            level,
            evidence: ev,
            fix,
            findings: self.findings(node, None),
        });
    }

    fn nic_fault(&mut self, g: u32) {
        let node = self.node_of(g);
        let edges: Vec<u32> = self.adj[g as usize]
            .iter()
            .copied()
            .filter(|&e| !self.edges[e as usize].explained)
            .collect();
        let (mut cause, mut level, counts) = self.causes_of(&edges);
        let (host, nic) = self.nic_name(g);
        let (host, nic) = (host.to_string(), nic.to_string());
        let seen = self.m.nodes[node as usize]
            .as_ref()
            .and_then(|i| i.nics.get(&nic))
            .cloned();
        // Its own node saw its link down: that is the cause, whichever
        // direction of a pair failing both ways was read first (its peers
        // only see `no-answer`).
        if seen.as_ref().is_some_and(NicSeen::is_down) {
            cause = causes::LINK_DOWN.to_string();
            level = Some(MeshLevel::Neighbor);
        }
        let (samples, mut fix) = self.samples(&edges, &cause);
        let rail = self.rail_of(g).to_string();
        let peers: Vec<String> = edges
            .iter()
            .take(EVIDENCE_SAMPLE)
            .map(|&e| {
                let edge = self.edges[e as usize];
                let o = if edge.a == g { edge.b } else { edge.a };
                let (h, n) = self.nic_name(o);
                format!("{h} {n}")
            })
            .collect();
        let mut ev = BTreeMap::new();
        ev.insert("failed_pairs".into(), serde_json::json!(edges.len()));
        ev.insert("peers".into(), serde_json::json!(peers));
        ev.insert("causes".into(), serde_json::json!(counts));
        ev.insert("samples".into(), serde_json::json!(samples));
        if let Some(s) = &seen {
            ev.insert("nic".into(), serde_json::json!(s));
        }
        let state = seen
            .as_ref()
            .and_then(|s| s.oper_state.clone())
            .unwrap_or_else(|| "?".into());
        let message = match cause.as_str() {
            causes::LINK_DOWN => format!(
                "{host} {nic}: its link is down ({state}); it fails with all {} of its peers \
                 while they pass with others",
                edges.len()
            ),
            _ => format!(
                "{host} {nic}: fails with all {} of its peers ({cause}) while they pass with \
                 others: this NIC's link, cable, port or configuration",
                edges.len()
            ),
        };
        if cause == causes::LINK_DOWN {
            let admin_down = seen.as_ref().and_then(|s| s.admin_up) == Some(false);
            let mut f = vec![self.on_host(node, &format!("ip link show dev {nic}"))];
            if admin_down {
                f.push(self.on_host(node, &format!("ip link set dev {nic} up")));
            } else {
                f.push(format!(
                    "check the cable, the transceiver and the switch port of {host} {nic}"
                ));
            }
            for x in fix.drain(..) {
                if !f.contains(&x) {
                    f.push(x);
                }
            }
            fix = f;
        }
        for &e in &edges {
            self.edges[e as usize].explained = true;
        }
        let set: BTreeSet<String> = [nic.clone()].into();
        self.faults.push(MeshFault {
            element: FaultElement::Nic,
            host: Some(host),
            nic: Some(nic),
            rail: Some(rail),
            peer: None,
            cause,
            level,
            message,
            evidence: ev,
            fix,
            findings: self.findings(node, Some(&set)),
        });
    }

    /// The NICs in scope the schedule left out (no address to probe on),
    /// each named once: a `nic` fault with its own cause (`link-down`,
    /// `no-address`, `absent`) and what its node saw; a host all of whose
    /// NICs (two or more) are such, one `host` fault; and where three hosts
    /// or more lost a rail's NICs, half the rail or more, with one cause,
    /// one `rail` fault.
    fn unprobed(&mut self) {
        self.empty_entries();
        let inv = &self.m.plan.inventory;
        // The rail of a NIC its node could not tell: that of the NICs of its
        // name on the other nodes (most of them).
        let mut by_name: HashMap<&str, BTreeMap<&str, usize>> = HashMap::new();
        for n in &inv.nodes {
            for k in &n.nics {
                *by_name
                    .entry(k.name.as_str())
                    .or_default()
                    .entry(k.rail.as_str())
                    .or_default() += 1;
            }
        }
        let rail_by_name = |name: &str| {
            by_name.get(name).and_then(|r| {
                r.iter()
                    .max_by_key(|(_, c)| **c)
                    .map(|(r, _)| r.to_string())
            })
        };
        let mut items: Vec<(u32, usize, Option<String>)> = Vec::new();
        for (ni, n) in inv.nodes.iter().enumerate() {
            for (ui, u) in n.unprobed.iter().enumerate() {
                let rail = u.rail.clone().or_else(|| rail_by_name(&u.name));
                items.push((ni as u32, ui, rail));
            }
        }
        if items.is_empty() {
            return;
        }
        // Rails: unprobed NICs on three hosts or more, half the rail or more.
        let mut per_rail: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, (_, _, rail)) in items.iter().enumerate() {
            if let Some(r) = rail {
                per_rail.entry(r.clone()).or_default().push(i);
            }
        }
        let mut explained = vec![false; items.len()];
        for (rail, members) in per_rail {
            let hosts: BTreeSet<u32> = members.iter().map(|&i| items[i].0).collect();
            let probed = self.m.layout.rails.get(&rail).map_or(0, Vec::len);
            let causes: BTreeSet<&str> = members
                .iter()
                .map(|&i| self.unprobed_nic(items[i].0, items[i].1).cause.as_str())
                .collect();
            if hosts.len() < 3 || members.len() < probed || causes.len() != 1 {
                continue;
            }
            let cause = causes.into_iter().next().unwrap_or_default().to_string();
            let nics: Vec<String> = members
                .iter()
                .map(|&i| {
                    let (node, u) = (items[i].0, self.unprobed_nic(items[i].0, items[i].1));
                    format!("{} {}", inv.nodes[node as usize].host, u.name)
                })
                .collect();
            let mut ev = BTreeMap::new();
            ev.insert("unprobed".into(), serde_json::json!(members.len()));
            ev.insert("probed".into(), serde_json::json!(probed));
            ev.insert("hosts".into(), serde_json::json!(hosts.len()));
            ev.insert(
                "nics".into(),
                serde_json::json!(nics.iter().take(EVIDENCE_SAMPLE).collect::<Vec<_>>()),
            );
            let message = format!(
                "rail {rail}: {} of its NICs on {} hosts have no address to probe on \
                 ({cause}), {probed} have one: the rail's switch or fabric",
                members.len(),
                hosts.len()
            );
            let fix = vec![format!(
                "check the switch of rail {rail} (is it up, are its ports up?); each NIC \
                 gets its address back when its link comes back (or by roce-net apply)"
            )];
            self.faults
                .push(MeshFault::rail(&rail, cause, None, message, ev, fix));
            for i in members {
                explained[i] = true;
            }
        }
        // Hosts all of whose NICs are unprobed.
        for (ni, n) in inv.nodes.iter().enumerate() {
            let ni = ni as u32;
            let mine: Vec<usize> = (0..items.len())
                .filter(|&i| items[i].0 == ni && !explained[i])
                .collect();
            if !n.nics.is_empty()
                || n.unprobed.len() < 2
                || mine.len() != n.unprobed.len()
                || self.faulty_host[ni as usize]
            {
                continue;
            }
            let cause = n
                .unprobed
                .iter()
                .map(|u| u.cause.as_str())
                .max_by_key(|c| rank(c))
                .unwrap_or(causes::NO_ADDRESS)
                .to_string();
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for u in &n.unprobed {
                *counts.entry(u.cause.as_str()).or_default() += 1;
            }
            let host = n.host.clone();
            let mut ev = BTreeMap::new();
            ev.insert("causes".into(), serde_json::json!(counts));
            ev.insert(
                "nics".into(),
                serde_json::json!(n.unprobed.iter().map(|u| &u.seen).collect::<Vec<_>>()),
            );
            let fault = MeshFault {
                element: FaultElement::Host,
                host: Some(host.clone()),
                nic: None,
                rail: None,
                peer: None,
                cause,
                level: None,
                message: format!(
                    "{host}: none of its {} NICs in scope has an address to probe on \
                     ({}): nothing of it was probed",
                    n.unprobed.len(),
                    counts.keys().copied().collect::<Vec<_>>().join(", ")
                ),
                evidence: ev,
                fix: vec![
                    self.on_host(ni, "ip -br link; ip -br addr"),
                    format!(
                        "bring its links up (cables, switch ports) and its addresses back \
                         (its network configuration, or roce-net apply on {host})"
                    ),
                ],
                findings: self.findings(ni, None),
            };
            self.faulty_host[ni as usize] = true;
            self.faults.push(fault);
            for i in mine {
                explained[i] = true;
            }
        }
        for (i, (node, ui, rail)) in items.into_iter().enumerate() {
            if !explained[i] {
                self.unprobed_fault(node, ui, rail);
            }
        }
    }

    /// A node whose entry lists no NIC at all (none in scope: on a host
    /// without RDMA devices, a NIC that lost its address can take its
    /// siblings' shared subnet, and so the whole scope, with it): one `host`
    /// fault, as nothing of it was probed.
    fn empty_entries(&mut self) {
        for ni in 0..self.m.plan.inventory.nodes.len() {
            let n = &self.m.plan.inventory.nodes[ni];
            if !n.nics.is_empty() || !n.unprobed.is_empty() || self.faulty_host[ni] {
                continue;
            }
            let host = n.host.clone();
            let node = ni as u32;
            let mut ev = BTreeMap::new();
            ev.insert("nics".into(), serde_json::json!(0));
            self.faulty_host[ni] = true;
            self.faults.push(MeshFault {
                element: FaultElement::Host,
                host: Some(host.clone()),
                nic: None,
                rail: None,
                peer: None,
                cause: causes::NO_NICS.into(),
                level: None,
                message: format!(
                    "{host}: its mesh entry lists no NIC (none in scope, or none with an \
                     address): nothing of it was probed"
                ),
                evidence: ev,
                fix: vec![
                    self.on_host(node, "ip -br link; ip -br addr"),
                    format!(
                        "on {host}: bring its NICs' links and addresses back, or name its \
                         rails: roce-net mesh node --nic NIC,..."
                    ),
                ],
                findings: self.findings(node, None),
            });
        }
    }

    fn unprobed_nic(&self, node: u32, ui: usize) -> &super::inventory::MeshUnprobedNic {
        &self.m.plan.inventory.nodes[node as usize].unprobed[ui]
    }

    fn unprobed_fault(&mut self, node: u32, ui: usize, rail: Option<String>) {
        let u = self.unprobed_nic(node, ui).clone();
        let host = self.m.plan.inventory.nodes[node as usize].host.clone();
        let nic = u.name.clone();
        let state = u.seen.oper_state.clone().unwrap_or_else(|| "absent".into());
        let carrier = match u.seen.carrier {
            Some(true) => "carrier",
            Some(false) => "no carrier",
            None => "carrier unknown",
        };
        let message = match u.cause.as_str() {
            causes::LINK_DOWN => format!(
                "{host} {nic}: its link is down ({state}, {carrier}) and it has no address \
                 (systemd-networkd drops a NIC's addresses when it loses its carrier): it \
                 was not probed, its peers cannot reach it"
            ),
            causes::ABSENT => {
                format!("{host} {nic}: the node has no interface {nic}: it was not probed")
            }
            _ => format!(
                "{host} {nic}: it is up ({state}, {carrier}) but has no address to probe on \
                 (never configured, or flushed): it was not probed, its peers cannot reach it"
            ),
        };
        let mut fix = Vec::new();
        match u.cause.as_str() {
            causes::LINK_DOWN => {
                fix.push(self.on_host(node, &format!("ip link show dev {nic}")));
                if u.seen.admin_up == Some(false) {
                    fix.push(self.on_host(node, &format!("ip link set dev {nic} up")));
                } else {
                    fix.push(format!(
                        "check the cable, the transceiver and the switch port of {host} {nic}"
                    ));
                }
                fix.push(format!(
                    "once it has its carrier, its address comes back with its network \
                     configuration (networkctl reconfigure {nic}) or roce-net apply"
                ));
            }
            causes::ABSENT => {
                fix.push(self.on_host(node, "ip -br link"));
                fix.push(format!(
                    "is its driver loaded, was it renamed? the mesh was asked for {nic}"
                ));
            }
            _ => {
                fix.push(self.on_host(node, &format!("ip addr show dev {nic}")));
                fix.push(format!(
                    "give {nic} its address back: its network configuration (networkctl \
                     reconfigure {nic}, netplan apply, nmcli, ifup) or roce-net apply"
                ));
            }
        }
        let mut ev = BTreeMap::new();
        ev.insert("nic".into(), serde_json::json!(u.seen));
        ev.insert("addresses".into(), serde_json::json!(u.addresses));
        ev.insert("rdma".into(), serde_json::json!(u.rdma));
        ev.insert("probed".into(), serde_json::json!(false));
        let set: BTreeSet<String> = [nic.clone()].into();
        self.faults.push(MeshFault {
            element: FaultElement::Nic,
            host: Some(host),
            nic: Some(nic),
            rail,
            peer: None,
            cause: u.cause,
            level: None,
            message,
            evidence: ev,
            fix,
            findings: self.findings(node, Some(&set)),
        });
    }

    /// What is left: one fault per failed pair.
    fn pairs(&mut self) {
        for e in 0..self.edges.len() {
            let edge = self.edges[e];
            if !edge.fail || edge.explained {
                continue;
            }
            let o = self.m.outcome[edge.probe as usize];
            let p = self.m.probes[edge.probe as usize];
            let cause = self.m.cause_names[o.cause as usize].clone();
            // The side the cause points to: the target's return path when its
            // responder saw the request, else the prober.
            let (side, other) = if o.seen {
                (p.to.0, p.from.0)
            } else {
                (p.from.0, p.to.0)
            };
            let (fh, fnic) = self.nic_name(p.from.0);
            let (th, tnic) = self.nic_name(p.to.0);
            let direction = format!("{fh} {fnic} -> {th} {tnic}");
            let (sh, snic) = self.nic_name(side);
            let (oh, onic) = self.nic_name(other);
            let mut ev = BTreeMap::new();
            ev.insert("probe".into(), serde_json::json!(direction));
            let (samples, fix) = self.samples(&[e as u32], &cause);
            let reverse = self
                .m
                .index
                .get(&(p.to.0, p.from.0))
                .map(|&ri| self.m.outcome[ri as usize].state);
            let one_way = o.seen || reverse == Some(State::Pass);
            ev.insert("one_way".into(), serde_json::json!(one_way));
            if o.seen {
                ev.insert(
                    "request_arrived".into(),
                    serde_json::json!("the target's responder saw the request and replied; the reply did not come back"),
                );
            }
            ev.insert("samples".into(), serde_json::json!(samples));
            let message = format!(
                "{direction}: fails{} ({cause}) while both NICs pass with others: {}",
                if one_way { " one way only" } else { "" },
                if o.seen {
                    format!("{sh}'s way back to {oh} {onic} (its neighbour entry or route)")
                } else {
                    format!("{sh} {snic}'s neighbour entry or route for {oh} {onic}")
                }
            );
            let node = self.node_of(side);
            let set: BTreeSet<String> = [snic.to_string()].into();
            let fault = MeshFault {
                element: FaultElement::Pair,
                host: Some(sh.to_string()),
                nic: Some(snic.to_string()),
                rail: if edge.intra {
                    None
                } else {
                    Some(self.rail_of(side).to_string())
                },
                peer: Some(format!("{oh} {onic}")),
                cause,
                level: Some(match o.level {
                    0 => MeshLevel::Neighbor,
                    1 => MeshLevel::Ip,
                    _ => MeshLevel::Rdma,
                }),
                message,
                evidence: ev,
                fix,
                findings: self.findings(node, Some(&set)),
            };
            self.edges[e].explained = true;
            self.faults.push(fault);
        }
    }
}

fn fault_line(f: &MeshFault) -> String {
    match f.element {
        FaultElement::Host => format!("host {} {}", f.host.as_deref().unwrap_or("?"), f.cause),
        FaultElement::Rail => format!("rail {} {}", f.rail.as_deref().unwrap_or("?"), f.cause),
        FaultElement::Nic => format!(
            "nic {} {} {}",
            f.host.as_deref().unwrap_or("?"),
            f.nic.as_deref().unwrap_or("?"),
            f.cause
        ),
        FaultElement::Pair => format!(
            "pair {} {} - {} {}",
            f.host.as_deref().unwrap_or("?"),
            f.nic.as_deref().unwrap_or("?"),
            f.peer.as_deref().unwrap_or("?"),
            f.cause
        ),
    }
}

impl MeshReport {
    /// The report as a compact table for people: a head line with the
    /// verdict and counts, one line per fault, then each fault's message and
    /// fix.
    pub fn table(&self) -> Vec<String> {
        let s = &self.summary;
        let mut out = vec![format!(
            "mesh {}: {} — {} nodes ({} results), {} NICs on {} rails, {} rounds, {} probes: \
             {} passed, {} failed, {} not run; {} fault(s)",
            self.plan,
            self.verdict.to_uppercase(),
            s.nodes,
            s.results,
            s.nics,
            s.rails,
            s.rounds,
            s.probes,
            s.passed,
            s.failed,
            s.not_run,
            self.faults.len()
        )];
        if self.faults.is_empty() {
            return out;
        }
        let rows: Vec<[String; 6]> = self
            .faults
            .iter()
            .map(|f| {
                [
                    f.element.name().to_string(),
                    f.host.clone().unwrap_or_else(|| "-".into()),
                    f.nic.clone().unwrap_or_else(|| "-".into()),
                    f.rail.clone().unwrap_or_else(|| "-".into()),
                    f.cause.clone(),
                    f.peer
                        .clone()
                        .map_or_else(String::new, |p| format!("peer {p}")),
                ]
            })
            .collect();
        let head = ["ELEMENT", "HOST", "NIC", "RAIL", "CAUSE", ""].map(String::from);
        let mut w = [0usize; 6];
        for r in std::iter::once(&head).chain(rows.iter()) {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        for r in std::iter::once(&head).chain(rows.iter()) {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect();
            out.push(line.join("  ").trim_end().to_string());
        }
        for f in &self.faults {
            out.push(String::new());
            out.push(f.message.clone());
            for x in f.fix.iter().take(4) {
                out.push(format!("    fix: {x}"));
            }
            for d in f.findings.iter().take(4) {
                out.push(format!(
                    "    doctor: {} {}: {}",
                    d.severity, d.id, d.message
                ));
            }
        }
        out
    }
}
