//! The doctor reduced to a health verdict, in the conventions of the places a
//! cluster looks for a broken node: `roce-net check` (docs/health.md).
//!
//! Pure: [`health_verdict`] takes the findings of a snapshot and the policy's
//! `health` section and returns a [`HealthVerdict`] — OK, WARNING, CRITICAL or
//! UNKNOWN — with the check ids behind it. [`HealthVerdict::nagios`] renders it
//! as a Nagios plugin does (`nagios.rs`), [`HealthVerdict::npd_line`] as a
//! node-problem-detector custom plugin does (`npd.rs`); the JSON form is the
//! verdict itself (serde), which is also what `check -o` caches.
//!
//! Which finding counts how (`HealthPolicy`): a check listed in
//! `health.critical` at severity `error` is CRITICAL; any other `error` or
//! `warning` is WARNING; `info` never counts; `health.ignore` never counts.
//! What could not be read is UNKNOWN, never OK: a snapshot that failed
//! ([`HealthVerdict::unknown`]) and a partial one (`snapshot-partial`). The
//! worst wins in the order CRITICAL, UNKNOWN, WARNING, OK: a node found broken
//! in what could be read is broken, whatever could not be read.

mod mesh;
mod nagios;
mod npd;

use mesh::mesh_check_id;
pub use mesh::{MeshHealth, MESH_CHECK_IDS};
#[cfg(any(test, feature = "testing"))]
pub use npd::NPD_MAX_LINE;

use crate::doctor::{Finding, Severity, Summary, CHECK_IDS};
use crate::error::{Error, ErrorKind, Result};
use crate::model::HostState;
use crate::policy::HealthPolicy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The id under which a partial snapshot is reported (the doctor's check of
/// that name): its findings make the verdict UNKNOWN.
const PARTIAL: &str = "snapshot-partial";

/// A health verdict, in Nagios' order of codes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Nothing above info, or only what the policy ignores.
    Ok,
    /// Findings that degrade the node, none the policy calls critical.
    Warning,
    /// The node cannot carry RDMA: a finding the policy calls critical.
    Critical,
    /// Something could not be read: the node is not known to be healthy.
    Unknown,
}

impl HealthStatus {
    /// The status as Nagios plugins print it: `OK`, `WARNING`, `CRITICAL`, `UNKNOWN`.
    pub fn label(self) -> &'static str {
        match self {
            HealthStatus::Ok => "OK",
            HealthStatus::Warning => "WARNING",
            HealthStatus::Critical => "CRITICAL",
            HealthStatus::Unknown => "UNKNOWN",
        }
    }

    /// The worse of the two ("the worst wins").
    fn max_rank(self, other: HealthStatus) -> HealthStatus {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// How bad, for "the worst wins": CRITICAL, then UNKNOWN, then WARNING, then OK.
    fn rank(self) -> u8 {
        match self {
            HealthStatus::Ok => 0,
            HealthStatus::Warning => 1,
            HealthStatus::Unknown => 2,
            HealthStatus::Critical => 3,
        }
    }
}

impl std::fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Check ids and how many findings each has, in the doctor's documentation order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct IdCount {
    /// The check id.
    pub id: String,
    /// Its findings that count in this class.
    pub count: usize,
}

/// What `roce-net check` says about a host (docs/health.md, "JSON").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct HealthVerdict {
    /// The verdict.
    pub status: HealthStatus,
    /// The host name of the snapshot (empty when it could not be read).
    pub host: String,
    /// The network namespace the snapshot was taken in, if named.
    pub netns: Option<String>,
    /// When the state behind the verdict was read, seconds since the Unix epoch.
    pub checked_at: u64,
    /// The checks that make the node CRITICAL, with their finding counts.
    pub critical: Vec<IdCount>,
    /// The checks that make it WARNING.
    pub warning: Vec<IdCount>,
    /// Why the verdict is not known, one sentence each (`cannot read /sys/...:
    /// Permission denied`, the error that stopped the snapshot); non-empty makes
    /// it UNKNOWN unless something is CRITICAL.
    pub unknown: Vec<String>,
    /// Findings by severity, the ignored ones left out (Nagios' performance data).
    pub summary: Summary,
    /// Findings the policy ignores, by id.
    pub ignored: Vec<IdCount>,
    /// Every finding behind the verdict, most severe first (the doctor's order).
    pub findings: Vec<Finding>,
    /// What the cluster mesh's report says about this host (`check --mesh`);
    /// `None` when none was given. Its faults count in `critical`, `warning`
    /// and `ignored` as `mesh-host`, `mesh-nic`, `mesh-rail` and `mesh-pair`.
    #[serde(default)]
    pub mesh: Option<MeshHealth>,
}

impl HealthVerdict {
    /// An UNKNOWN verdict: the host (or the cached verdict) could not be read.
    /// `host`/`netns` name what was asked for, when known.
    pub fn unknown(host: &str, netns: Option<&str>, why: impl Into<String>) -> HealthVerdict {
        HealthVerdict {
            status: HealthStatus::Unknown,
            host: host.to_string(),
            netns: netns.map(str::to_string),
            checked_at: now(),
            critical: Vec::new(),
            warning: Vec::new(),
            unknown: vec![why.into()],
            summary: Summary::default(),
            ignored: Vec::new(),
            findings: Vec::new(),
            mesh: None,
        }
    }

    /// The verdict as a Nagios plugin prints it (docs/health.md, "Nagios"): the
    /// status line `ROCE-NET <STATUS> - <what> | <performance data>`, then one
    /// line per counted finding (at most 20).
    pub fn nagios(&self) -> String {
        nagios::render(self)
    }

    /// The verdict as one line for node-problem-detector (and the Slurm
    /// reason): `roce-net: <critical ids>`, `roce-net: ok`, `roce-net: warning:
    /// <ids>`, `roce-net: unknown: <why>`, at most [`NPD_MAX_LINE`] bytes.
    pub fn npd_line(&self) -> String {
        npd::line(self)
    }

    /// The status the lists alone give: CRITICAL, then UNKNOWN, then WARNING.
    fn counted_status(&self) -> HealthStatus {
        if !self.critical.is_empty() {
            HealthStatus::Critical
        } else if !self.unknown.is_empty() {
            HealthStatus::Unknown
        } else if !self.warning.is_empty() {
            HealthStatus::Warning
        } else {
            HealthStatus::Ok
        }
    }

    /// Age of the verdict at `now` (seconds since the Unix epoch), 0 when it
    /// claims to be from the future.
    pub fn age_at(&self, now: u64) -> u64 {
        now.saturating_sub(self.checked_at)
    }

    /// The verdict read back from `check -o`'s JSON, UNKNOWN when it is older
    /// than `max_age` seconds at `now` (the timer that refreshes it stopped).
    pub fn expire(mut self, max_age: u64, now: u64, source: &str) -> HealthVerdict {
        let age = self.age_at(now);
        if age > max_age {
            self.status = HealthStatus::Unknown;
            self.unknown.insert(
                0,
                format!(
                    "{source}: the verdict is {age} s old, more than {max_age} s \
                     (is roce-net-health.timer running?)"
                ),
            );
        }
        self
    }
}

/// Seconds since the Unix epoch, now (0 if the clock is before it).
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Every id the policy's `health` section names is a check the doctor has
/// (or a mesh fault's id, [`MESH_CHECK_IDS`]): a misspelt id would silently
/// never count. The error names the field.
pub fn validate_health_policy(h: &HealthPolicy) -> Result<()> {
    for (list, ids) in [
        ("health.critical", &h.critical),
        ("health.ignore", &h.ignore),
    ] {
        for (i, id) in ids.iter().enumerate() {
            if !CHECK_IDS.contains(&id.as_str()) && !MESH_CHECK_IDS.contains(&id.as_str()) {
                return Err(Error::new(
                    ErrorKind::Policy,
                    format!(
                        "{list}[{i}]: {id} is not a check of roce-net doctor (docs/checks.md lists \
                         them: {}) nor a mesh fault's ({})",
                        CHECK_IDS.join(", "),
                        MESH_CHECK_IDS.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The verdict for `state` and its doctor `findings` under the policy's
/// `health` section (see the module docs).
pub fn health_verdict(
    state: &HostState,
    findings: &[Finding],
    policy: &HealthPolicy,
) -> HealthVerdict {
    let mut critical = Counter::default();
    let mut warning = Counter::default();
    let mut ignored = Counter::default();
    let mut unknown = Vec::new();
    let mut counted = Vec::new();
    for f in findings {
        if policy.ignore.contains(&f.id) {
            ignored.add(&f.id);
            continue;
        }
        counted.push(f.clone());
        if f.id == PARTIAL {
            unknown.extend(
                state
                    .warnings
                    .iter()
                    .map(|w| format!("cannot read {}: {}", w.source, w.message)),
            );
            if state.warnings.is_empty() {
                unknown.push(f.message.clone());
            }
            continue;
        }
        match f.severity {
            Severity::Error if policy.critical.contains(&f.id) => critical.add(&f.id),
            Severity::Error | Severity::Warning => warning.add(&f.id),
            Severity::Info => {}
        }
    }
    let mut v = HealthVerdict {
        status: HealthStatus::Ok,
        host: state.hostname.clone(),
        netns: state.netns.clone(),
        checked_at: state.captured_at,
        critical: critical.into_list(),
        warning: warning.into_list(),
        unknown,
        summary: crate::doctor::summarize(&counted),
        ignored: ignored.into_list(),
        findings: counted,
        mesh: None,
    };
    v.status = v.counted_status();
    v
}

/// Finding counts per id, listed in the doctor's documentation order (ids it
/// does not know, such as fleet ones, after them by name).
#[derive(Default)]
struct Counter(std::collections::BTreeMap<String, usize>);

impl Counter {
    fn add(&mut self, id: &str) {
        *self.0.entry(id.to_string()).or_default() += 1;
    }

    fn into_list(self) -> Vec<IdCount> {
        let order = |id: &str| {
            CHECK_IDS
                .iter()
                .position(|c| *c == id)
                .unwrap_or(usize::MAX)
        };
        let mut v: Vec<IdCount> = self
            .0
            .into_iter()
            .map(|(id, count)| IdCount { id, count })
            .collect();
        v.sort_by(|a, b| order(&a.id).cmp(&order(&b.id)).then(a.id.cmp(&b.id)));
        v
    }
}

#[cfg(test)]
mod tests;
