//! What one node's run reports ([`MeshNodeResult`]): every probe it made, with
//! each level's outcome, cause, evidence and fix; what its responder answered;
//! the NICs as it saw them; and its doctor's findings. The merge reads one
//! such document per node.

use crate::doctor::Finding;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The version of the node result document.
pub const MESH_RESULT_VERSION: u32 = 1;

/// A probe level.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MeshLevel {
    /// Neighbour (ARP / neighbour discovery).
    Neighbor,
    /// IP echo.
    Ip,
    /// RDMA transfer.
    Rdma,
}

impl MeshLevel {
    /// The name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            MeshLevel::Neighbor => "neighbor",
            MeshLevel::Ip => "ip",
            MeshLevel::Rdma => "rdma",
        }
    }
}

impl std::fmt::Display for MeshLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A level's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MeshStatus {
    /// It passed.
    Pass,
    /// It failed (`cause` says why).
    Fail,
    /// It was not run (`cause` says why: `not-built`, `no-rdma`, ...).
    Skipped,
}

/// The causes the mesh's own levels report (the RDMA level reports
/// `probe rdma`'s, docs/rdma-probe.md).
pub mod causes {
    /// The prober's NIC is not up (no carrier, or administratively down).
    pub const LINK_DOWN: &str = "link-down";
    /// Nobody answered the neighbour request for the peer's address.
    pub const NO_ANSWER: &str = "no-answer";
    /// The peer's address is answered by another NIC's MAC, or by several; or
    /// a request or reply arrived on another NIC than the one it was for.
    pub const ARP_FLUX: &str = "arp-flux";
    /// One MAC answered that belongs to no NIC of the plan.
    pub const WRONG_MAC: &str = "wrong-mac";
    /// The request (or the reply) leaves by another NIC than its source's.
    pub const ASYMMETRIC_EGRESS: &str = "asymmetric-egress";
    /// The echo got no reply.
    pub const NO_REPLY: &str = "no-reply";
    /// Small echoes pass, echoes at the path's MTU (DF set) do not.
    pub const MTU: &str = "mtu";
    /// A node sent no result (it did not run, or its result was lost).
    pub const NO_RESULT: &str = "no-result";
    /// The probe could not be made on this node (an error of the node, not
    /// of the network: a socket it could not open, say).
    pub const PROBE_ERROR: &str = "probe-error";
    /// The level is not available on this build or node (skipped).
    pub const NOT_AVAILABLE: &str = "not-available";
    /// The prober started after the probe's round (skipped).
    pub const LATE: &str = "late";
    /// A NIC in scope is up but has no address to probe on (never
    /// configured, or flushed): it is left out of the schedule and named.
    pub const NO_ADDRESS: &str = "no-address";
    /// A NIC the node's entry was asked for does not exist on the node.
    pub const ABSENT: &str = "absent";
    /// A node's entry lists no NIC at all (none in scope): nothing of it can
    /// be probed.
    pub const NO_NICS: &str = "no-nics";
}

/// One level of one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct LevelResult {
    /// The level.
    pub level: MeshLevel,
    /// Its outcome.
    pub status: MeshStatus,
    /// Why it failed or was skipped (see [`causes`]); `None` when it passed.
    pub cause: Option<String>,
    /// One sentence for people.
    pub message: String,
    /// The values that show it.
    pub evidence: BTreeMap<String, serde_json::Value>,
    /// Commands that fix or confirm it.
    pub fix: Vec<String>,
    /// How long it took, ms.
    pub elapsed_ms: u64,
}

impl LevelResult {
    /// A passed level.
    pub fn pass(level: MeshLevel, message: String, elapsed_ms: u64) -> LevelResult {
        LevelResult {
            level,
            status: MeshStatus::Pass,
            cause: None,
            message,
            evidence: BTreeMap::new(),
            fix: Vec::new(),
            elapsed_ms,
        }
    }

    /// A failed (or, with [`MeshStatus::Skipped`], skipped) level.
    pub fn not_passed(
        level: MeshLevel,
        status: MeshStatus,
        cause: &str,
        message: String,
        elapsed_ms: u64,
    ) -> LevelResult {
        LevelResult {
            level,
            status,
            cause: Some(cause.to_string()),
            message,
            evidence: BTreeMap::new(),
            fix: Vec::new(),
            elapsed_ms,
        }
    }

    /// Add one piece of evidence.
    pub fn evidence(mut self, key: &str, v: impl Serialize) -> LevelResult {
        self.evidence.insert(
            key.to_string(),
            serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
        );
        self
    }

    /// Add fix commands.
    pub fn fix(mut self, f: impl IntoIterator<Item = String>) -> LevelResult {
        self.fix.extend(f);
        self
    }
}

/// One probe a node made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ProbeRecord {
    /// Its round, from 0.
    pub round: u32,
    /// Both NICs on this node.
    pub intra: bool,
    /// The prober NIC (this node's).
    pub from: String,
    /// The target's node.
    pub to_host: String,
    /// The target NIC.
    pub to: String,
    /// The target's address.
    pub to_address: IpAddr,
    /// Each level that applied, lowest first.
    pub levels: Vec<LevelResult>,
}

impl ProbeRecord {
    /// The first level that failed.
    pub fn failure(&self) -> Option<&LevelResult> {
        self.levels.iter().find(|l| l.status == MeshStatus::Fail)
    }
}

/// One probe the responder answered (or an RDMA session it served).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct AnsweredProbe {
    /// The level (`ip` or `rdma`).
    pub level: MeshLevel,
    /// The prober's address.
    pub from_address: IpAddr,
    /// This node's NIC the probe was for.
    pub to: String,
    /// The interface the request arrived on (IP level).
    pub arrived_on: Option<String>,
    /// The interface the kernel sends the reply by (IP level).
    pub reply_dev: Option<String>,
    /// The RDMA session passed on this end (RDMA level).
    pub ok: bool,
    /// Why the session failed on this end (RDMA level).
    pub cause: Option<String>,
}

/// What the responder did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct ResponderReport {
    /// The levels it served (`ip`, and `rdma` where it could).
    pub levels: Vec<MeshLevel>,
    /// Why it stopped: `done` (every expected probe came), `deadline`, or
    /// `interrupted`.
    pub stopped: String,
    /// How long it ran, ms.
    pub elapsed_ms: u64,
    /// The probes it answered (at most a few thousand kept).
    pub answered: Vec<AnsweredProbe>,
    /// Expected probes that never came (`host nic -> nic level`), at most a
    /// few hundred named.
    pub missing: Vec<String>,
    /// What kept a part of it from serving (a port in use, no RDMA).
    pub errors: Vec<String>,
}

/// A NIC as the node saw it when its run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct NicSeen {
    /// Interface name.
    pub name: String,
    /// Operational state (`UP`, `DOWN`, `LOWERLAYERDOWN`, ...), `None` when
    /// the NIC is gone.
    pub oper_state: Option<String>,
    /// Carrier.
    pub carrier: Option<bool>,
    /// Administratively up.
    pub admin_up: Option<bool>,
    /// MTU.
    pub mtu: Option<u32>,
    /// MAC.
    pub mac: Option<String>,
}

impl NicSeen {
    /// `name` as `state` shows it (every field `None` when it has no such
    /// interface).
    pub(crate) fn of(state: &crate::model::HostState, name: &str) -> NicSeen {
        let i = state.interface(name);
        NicSeen {
            name: name.to_string(),
            oper_state: i.map(|i| {
                serde_json::to_value(i.oper_state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            }),
            carrier: i.and_then(|i| i.carrier),
            admin_up: i.map(|i| i.admin_up),
            mtu: i.map(|i| i.mtu),
            mac: i.and_then(|i| i.mac.as_ref()).map(|m| m.to_string()),
        }
    }

    /// Whether nothing can leave the NIC: not operationally up (veth and some
    /// drivers report `UNKNOWN` with a carrier, which counts as up).
    pub fn is_down(&self) -> bool {
        let up = self.oper_state.as_deref() == Some("UP")
            || (self.oper_state.as_deref() == Some("UNKNOWN") && self.carrier != Some(false));
        !up
    }
}

/// One node's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshNodeResult {
    /// [`MESH_RESULT_VERSION`].
    pub version: u32,
    /// The plan's id.
    pub plan: String,
    /// The node, as the plan names it.
    pub host: String,
    /// Its host name (for commands over SSH).
    pub hostname: String,
    /// The network namespace it ran in, if any.
    pub netns: Option<String>,
    /// When the run started, ms since the epoch.
    pub started_at_ms: u64,
    /// How long it ran, ms.
    pub elapsed_ms: u64,
    /// Its NICs of the plan, as it saw them.
    pub nics: Vec<NicSeen>,
    /// Its doctor's findings (warnings and errors).
    pub findings: Vec<Finding>,
    /// The probes it made.
    pub probes: Vec<ProbeRecord>,
    /// What its responder did.
    pub responder: ResponderReport,
    /// Remarks (a level not run here, and why).
    pub notes: Vec<String>,
}
