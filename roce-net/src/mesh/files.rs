//! Reading the mesh's documents (plans, inventories, node results), each
//! through the one bounded reader of outside files, and the run's token.

use super::inventory::{mesh_node, MeshInventory, MeshNode, RailBy};
use super::localize::{MeshMerger, MeshReport};
use super::result::{MeshNodeResult, MESH_RESULT_VERSION};
use super::schedule::{MeshNodePlan, MeshOptions, MeshPlan, MESH_PLAN_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::input::{read_input_text, InputKind};
use crate::model::{Family, HostState};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::path::Path;

fn parse<T: serde::de::DeserializeOwned>(text: &str, path: &Path, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Parse,
            format!("{} is not a {what}: {e}", path.display()),
        )
    })
}

impl MeshPlan {
    /// Read a plan (`roce-net mesh plan -o FILE`).
    pub fn load(path: &Path) -> Result<MeshPlan> {
        let text = read_input_text(path, InputKind::Mesh)?;
        let plan: MeshPlan = parse(&text, path, "mesh plan (roce-net mesh plan -o)")?;
        if plan.version != MESH_PLAN_VERSION {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "mesh plan {} is version {}, this roce-net reads {MESH_PLAN_VERSION}: make \
                     the plan with the roce-net the nodes run",
                    path.display(),
                    plan.version
                ),
            ));
        }
        plan.options.validate()?;
        plan.inventory.validate()?;
        Ok(plan)
    }
}

/// A plan file: a whole plan (`roce-net mesh plan -o`), or one node's part of
/// one ([`MeshPlan::node_plan`], what an orchestrator hands each node).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MeshPlanFile {
    /// A whole plan.
    Whole(MeshPlan),
    /// One node's part.
    Node(MeshNodePlan),
}

/// Which plan document a JSON file is.
#[derive(Deserialize)]
struct PlanKeys {
    version: Option<u32>,
    schedule: Option<IgnoredAny>,
    inventory: Option<IgnoredAny>,
}

impl MeshPlanFile {
    /// Read a plan file of either kind.
    pub fn load(path: &Path) -> Result<MeshPlanFile> {
        let text = read_input_text(path, InputKind::Mesh)?;
        let k: PlanKeys = parse(&text, path, "mesh plan (roce-net mesh plan -o)")?;
        if let Some(v) = k.version.filter(|&v| v != MESH_PLAN_VERSION) {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "mesh plan {} is version {v}, this roce-net reads {MESH_PLAN_VERSION}: make \
                     the plan with the roce-net the nodes run",
                    path.display()
                ),
            ));
        }
        if k.schedule.is_some() {
            let p: MeshNodePlan = parse(&text, path, "node's part of a mesh plan")?;
            p.options.validate()?;
            return Ok(MeshPlanFile::Node(p));
        }
        if k.inventory.is_none() {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "{} is not a mesh plan (roce-net mesh plan -o) nor a node's part of one",
                    path.display()
                ),
            ));
        }
        MeshPlan::load(path).map(MeshPlanFile::Whole)
    }

    /// The part node `host` runs: the whole plan's, or the node part itself
    /// when it is `host`'s (`InvalidInput` when it is another node's).
    pub fn for_node(&self, host: &str) -> Result<MeshNodePlan> {
        match self {
            MeshPlanFile::Whole(p) => p.node_plan(host),
            MeshPlanFile::Node(p) if p.schedule.host == host => Ok(p.clone()),
            MeshPlanFile::Node(p) => Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "this is mesh plan {}'s part for node {}, not for {host}: give each node \
                     its own part, or the whole plan",
                    p.schedule.plan, p.schedule.host
                ),
            )),
        }
    }
}

impl MeshNodeResult {
    /// Read a node's result (`roce-net mesh run -o FILE`).
    pub fn load(path: &Path) -> Result<MeshNodeResult> {
        let text = read_input_text(path, InputKind::Mesh)?;
        let r: MeshNodeResult = parse(&text, path, "mesh node result (roce-net mesh run -o)")?;
        if r.version != MESH_RESULT_VERSION {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "mesh result {} is version {}, this roce-net reads {MESH_RESULT_VERSION}",
                    path.display(),
                    r.version
                ),
            ));
        }
        Ok(r)
    }
}

/// `fleet --mesh --json`'s document: the fleet report with the mesh's report
/// under `mesh`.
#[derive(Deserialize)]
struct FleetWithMesh {
    mesh: MeshReport,
}

impl MeshReport {
    /// Read a merged report: `roce-net mesh report --json` (or `-o FILE`), or
    /// `roce-net fleet --mesh-plan PLAN --mesh ... --json`, whose `mesh` holds
    /// it. At most 256 MiB is read ([`InputKind::Mesh`]).
    pub fn load(path: &Path) -> Result<MeshReport> {
        let text = read_input_text(path, InputKind::Mesh)?;
        MeshReport::from_json(&text).map_err(|e| e.context(format!("in {}", path.display())))
    }

    /// Parse a merged report from either document [`MeshReport::load`] reads.
    pub fn from_json(text: &str) -> Result<MeshReport> {
        let direct = match serde_json::from_str::<MeshReport>(text) {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        match serde_json::from_str::<FleetWithMesh>(text) {
            Ok(f) => Ok(f.mesh),
            Err(_) => Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "not a mesh report (roce-net mesh report --json or -o, or roce-net fleet \
                     --mesh --json): {direct}"
                ),
            )),
        }
    }
}

impl MeshMerger {
    /// Read and add one node's result file.
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let r = MeshNodeResult::load(path)?;
        self.add(r)
            .map_err(|e| e.context(format!("in {}", path.display())))
    }
}

/// Which document a JSON file is, from its top-level keys.
#[derive(Deserialize)]
struct Keys {
    schema_version: Option<IgnoredAny>,
    interfaces: Option<IgnoredAny>,
    nodes: Option<IgnoredAny>,
    host: Option<IgnoredAny>,
    nics: Option<IgnoredAny>,
}

impl MeshInventory {
    /// The inventory of these files, each a snapshot (`roce-net snapshot -o`,
    /// gzip too: one node by [`mesh_node`] with `rail_by` and `family`), a
    /// node's own entry
    /// (`roce-net mesh node -o`) or a whole inventory (`{"nodes": [...]}`).
    pub fn load_files(
        paths: &[impl AsRef<Path>],
        rail_by: RailBy,
        family: Option<Family>,
    ) -> Result<MeshInventory> {
        let mut nodes = Vec::new();
        for p in paths {
            let path = p.as_ref();
            if path.extension().is_some_and(|e| e == "gz") {
                nodes.push(mesh_node(&HostState::load(path)?, rail_by, family));
                continue;
            }
            let text = read_input_text(path, InputKind::Mesh)?;
            let k: Keys = parse(&text, path, "JSON document")?;
            if k.schema_version.is_some() && k.interfaces.is_some() {
                let st: HostState = HostState::load(path)?;
                nodes.push(mesh_node(&st, rail_by, family));
            } else if k.nodes.is_some() {
                let inv: MeshInventory = parse(&text, path, "mesh inventory")?;
                nodes.extend(inv.nodes);
            } else if k.host.is_some() && k.nics.is_some() {
                nodes.push(parse::<MeshNode>(
                    &text,
                    path,
                    "mesh node (roce-net mesh node -o)",
                )?);
            } else {
                return Err(Error::new(
                    ErrorKind::Parse,
                    format!(
                        "{} is neither a snapshot (roce-net snapshot -o), a mesh node \
                         (roce-net mesh node -o) nor a mesh inventory ({{\"nodes\": [...]}})",
                        path.display()
                    ),
                ));
            }
        }
        let inv = MeshInventory::new(nodes);
        inv.validate()?;
        Ok(inv)
    }
}

/// A fresh token for a run: 32 hex digits from the kernel's random pool (or,
/// where that fails, the clock and the process id).
pub fn mesh_token() -> String {
    let mut b = [0u8; 16];
    if !crate::sys::getrandom(&mut b) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = (t ^ (u128::from(std::process::id()) << 96)).to_ne_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// When a plan starts: beside `mesh_token`, which it draws.
impl MeshOptions {
    /// Round 1 starts `seconds` from now (0 to 3600), with a fresh
    /// [`mesh_token`]: what `mesh plan --start-in` sets.
    /// `InvalidInput` for a time out of range, which changes nothing.
    pub fn start_in(&mut self, seconds: f64) -> Result<()> {
        if !(seconds.is_finite() && (0.0..=3600.0).contains(&seconds)) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("start in {seconds} s: give 0 to 3600 seconds"),
            ));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.start_at_ms = now + (seconds * 1000.0) as u64;
        self.token = mesh_token();
        Ok(())
    }
}
