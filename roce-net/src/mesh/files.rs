//! Reading the mesh's documents (plans, inventories, node results), each
//! through the one bounded reader of outside files, and the run's token.

use super::inventory::{mesh_node, MeshInventory, MeshNode, RailBy};
use super::localize::MeshMerger;
use super::result::{MeshNodeResult, MESH_RESULT_VERSION};
use super::schedule::{MeshPlan, MESH_PLAN_VERSION};
use crate::error::{Error, ErrorKind, Result};
use crate::input::{read_input_text, InputKind};
use crate::model::HostState;
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
    /// gzip too: one node by [`mesh_node`] with `rail_by`), a node's own entry
    /// (`roce-net mesh node -o`) or a whole inventory (`{"nodes": [...]}`).
    pub fn load_files(paths: &[impl AsRef<Path>], rail_by: RailBy) -> Result<MeshInventory> {
        let mut nodes = Vec::new();
        for p in paths {
            let path = p.as_ref();
            if path.extension().is_some_and(|e| e == "gz") {
                nodes.push(mesh_node(&HostState::load(path)?, rail_by));
                continue;
            }
            let text = read_input_text(path, InputKind::Mesh)?;
            let k: Keys = parse(&text, path, "JSON document")?;
            if k.schema_version.is_some() && k.interfaces.is_some() {
                let st: HostState = HostState::load(path)?;
                nodes.push(mesh_node(&st, rail_by));
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
