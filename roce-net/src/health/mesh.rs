//! The cluster mesh's last word on this host, counted in its verdict
//! (`roce-net check --mesh`, docs/health.md "The cluster mesh").
//!
//! A merged mesh report ([`MeshReport`], docs/mesh.md) names broken elements:
//! a host, a NIC, a rail, a pair of NICs. The faults that involve this host —
//! a host or NIC fault naming it, a pair fault with it at either end, a rail
//! fault on a rail one of its NICs is on — count under the ids
//! `mesh-host`, `mesh-nic`, `mesh-pair` and `mesh-rail`, which the policy's
//! `health` section treats as it treats the doctor's: listed in `critical`,
//! CRITICAL (by default `mesh-host` and `mesh-nic`: this host's own hardware
//! or configuration failed with every peer); otherwise WARNING; listed in
//! `ignore`, not counted. A report that does not name the host, that is older
//! than the bound, or that records no run, makes the verdict UNKNOWN: a mesh
//! result that cannot vouch for the host never makes it OK.

use super::{HealthStatus, HealthVerdict, IdCount};
use crate::mesh::{FaultElement, MeshFault, MeshReport};
use crate::policy::HealthPolicy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The ids under which a mesh fault counts, by the element it names.
pub const MESH_CHECK_IDS: &[&str] = &["mesh-host", "mesh-nic", "mesh-rail", "mesh-pair"];

/// Faults kept in the verdict (the rest are counted).
const MAX_FAULTS: usize = 32;
/// Node names listed when the report does not name the host.
const MAX_NAMES: usize = 8;

/// The id a fault of `element` counts under.
pub(crate) fn mesh_check_id(element: FaultElement) -> &'static str {
    match element {
        FaultElement::Host => "mesh-host",
        FaultElement::Nic => "mesh-nic",
        FaultElement::Rail => "mesh-rail",
        FaultElement::Pair => "mesh-pair",
    }
}

/// What a mesh report says about this host: the verdict's `mesh`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct MeshHealth {
    /// Where the report was read from (the `--mesh` file).
    pub source: String,
    /// The report's plan id (empty when it could not be read).
    pub plan: String,
    /// The node name the faults were looked up by.
    pub host: String,
    /// When the mesh's last run ended, seconds since the Unix epoch (0 when
    /// not known).
    pub tested_at: u64,
    /// The bound on the report's age, seconds.
    pub max_age: u64,
    /// How many faults involve this host (the policy's ignored ones included).
    pub fault_count: usize,
    /// Those faults (at most 32), as the report has them without their
    /// doctor findings (the verdict's own findings are this host's).
    pub faults: Vec<MeshFault>,
}

impl MeshHealth {
    /// The mesh part of a verdict whose report could not be used.
    fn unread(source: &str, host: &str, max_age: u64) -> MeshHealth {
        MeshHealth {
            source: source.to_string(),
            plan: String::new(),
            host: host.to_string(),
            tested_at: 0,
            max_age,
            fault_count: 0,
            faults: Vec::new(),
        }
    }
}

/// Whether `f` involves node `host`, whose NICs are on `rails`.
fn involves(f: &MeshFault, host: &str, rails: &[String]) -> bool {
    match f.element {
        FaultElement::Host | FaultElement::Nic => f.host.as_deref() == Some(host),
        FaultElement::Pair => {
            f.host.as_deref() == Some(host)
                || f.peer
                    .as_deref()
                    .and_then(|p| p.split_once(' '))
                    .is_some_and(|(h, _)| h == host)
        }
        FaultElement::Rail => f.rail.as_ref().is_some_and(|r| rails.contains(r)),
    }
}

impl HealthVerdict {
    /// This verdict with the faults of a cluster mesh `report` (read from
    /// `source`) that involve node `host` counted under `policy` (see the
    /// module docs); UNKNOWN as well when the report is more than `max_age`
    /// seconds old at `now` (seconds since the Unix epoch), records no run, or
    /// does not name `host`.
    pub fn with_mesh(
        mut self,
        report: &MeshReport,
        source: &str,
        host: &str,
        max_age: u64,
        now: u64,
        policy: &HealthPolicy,
    ) -> HealthVerdict {
        let tested_at = report.tested_at_ms / 1000;
        let mut mesh = MeshHealth {
            plan: report.plan.clone(),
            tested_at,
            ..MeshHealth::unread(source, host, max_age)
        };
        let why = if report.nodes.is_empty() || report.tested_at_ms == 0 {
            Some(format!(
                "{source}: mesh report {} records no run (no node sent a result, or it was \
                 written by a roce-net that does not record when and where the mesh ran): \
                 merge the results again with `roce-net mesh report`",
                report.plan
            ))
        } else if now.saturating_sub(tested_at) > max_age {
            Some(format!(
                "{source}: mesh report {} is {} s old, more than {max_age} s (run the cluster \
                 mesh again, or raise --mesh-max-age)",
                report.plan,
                now.saturating_sub(tested_at)
            ))
        } else {
            None
        };
        let node = report.nodes.iter().find(|n| n.host == host);
        let why = why.or_else(|| {
            node.is_none().then(|| {
                let mut names: Vec<&str> = report
                    .nodes
                    .iter()
                    .take(MAX_NAMES)
                    .map(|n| n.host.as_str())
                    .collect();
                if report.nodes.len() > MAX_NAMES {
                    names.push("...");
                }
                format!(
                    "{source}: mesh report {} has no node named {host} (its nodes: {}): give \
                     the name the mesh used with --mesh-host",
                    report.plan,
                    names.join(", ")
                )
            })
        });
        if let Some(why) = why {
            self.mark_unknown(why);
            self.mesh = Some(mesh);
            return self;
        }
        let rails = node.map(|n| n.rails.as_slice()).unwrap_or(&[]);
        let mut critical = Vec::new();
        let mut warning = Vec::new();
        let mut ignored = Vec::new();
        for f in report.faults.iter().filter(|f| involves(f, host, rails)) {
            mesh.fault_count += 1;
            let id = mesh_check_id(f.element);
            let class = if policy.ignore.iter().any(|i| i == id) {
                &mut ignored
            } else if policy.critical.iter().any(|c| c == id) {
                &mut critical
            } else {
                &mut warning
            };
            add(class, id);
            if mesh.faults.len() < MAX_FAULTS {
                let mut f = f.clone();
                f.findings.clear();
                mesh.faults.push(f);
            }
        }
        self.critical.extend(critical);
        self.warning.extend(warning);
        self.ignored.extend(ignored);
        self.mesh = Some(mesh);
        self.status = self.status.max_rank(self.counted_status());
        self
    }

    /// This verdict with a mesh report that could not be read from `source`
    /// (`why` says what failed): UNKNOWN, unless something is CRITICAL.
    pub fn with_unreadable_mesh(
        mut self,
        source: &str,
        host: &str,
        max_age: u64,
        why: impl Into<String>,
    ) -> HealthVerdict {
        self.mark_unknown(why.into());
        self.mesh = Some(MeshHealth::unread(source, host, max_age));
        self
    }

    /// Add a reason the verdict is not known.
    fn mark_unknown(&mut self, why: String) {
        self.unknown.push(why);
        self.status = self.status.max_rank(HealthStatus::Unknown);
    }
}

/// Count one more of `id` in `list`.
fn add(list: &mut Vec<IdCount>, id: &str) {
    match list.iter_mut().find(|c| c.id == id) {
        Some(c) => c.count += 1,
        None => list.push(IdCount {
            id: id.to_string(),
            count: 1,
        }),
    }
}
