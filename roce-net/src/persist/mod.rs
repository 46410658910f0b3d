//! Boot-persistent configuration: renders a [`DesiredState`] as the files a
//! network configuration backend reads at boot, and writes them safely.
//!
//! The flow is pure until the last step:
//!
//! 1. [`detect`] guesses which backend manages the host (from an `/etc` and a `/run`
//!    root, so it can be pointed at a copy of a host's trees);
//! 2. [`render`] turns the desired state into [`RenderedFile`]s (absolute paths as on
//!    the target host, content, mode, and a note for the operator);
//! 3. [`diff_files`] shows what would change under a root directory;
//! 4. [`write_files`] writes them atomically, keeps the previous content as
//!    `<file>.roce-net.bak`, never writes through a symlink, and leaves unchanged
//!    files alone.
//!
//! Every backend includes the sysctl drop-in, the routing-table names and the
//! protocol name, so each one alone is a complete boot-persistent fix;
//! `docs/persistence.md` says exactly what each backend writes and why.

mod common;
mod detect;
mod diff;
mod ifupdown;
mod netplan;
mod networkd;
mod nm;
mod write;

/// The backends are part of the policy (`persistence.backend`).
pub use crate::policy::Backend;
pub use detect::{detect, detect_explained};
pub use diff::{diff_files, DiffStatus, FileDiff};
pub use write::{write_files, WriteReport, BACKUP_SUFFIX};

use crate::error::Result;
use crate::plan::DesiredState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the sysctl drop-in goes.
pub const SYSCTL_PATH: &str = "/etc/sysctl.d/90-roce-net.conf";
/// Where the routing-table names go.
pub const RT_TABLES_PATH: &str = "/etc/iproute2/rt_tables.d/roce-net.conf";
/// Where the routing-protocol name goes.
pub const RT_PROTOS_PATH: &str = "/etc/iproute2/rt_protos.d/roce-net.conf";
/// The name roce-net's protocol number is registered under.
pub const PROTOCOL_NAME: &str = "roce-net";
/// systemd-networkd global drop-in that stops it deleting foreign rules and routes.
pub const NETWORKD_CONF_PATH: &str = "/etc/systemd/networkd.conf.d/90-roce-net.conf";
/// The netplan file.
pub const NETPLAN_PATH: &str = "/etc/netplan/90-roce-net.yaml";
/// The NetworkManager script of `nmcli` commands.
pub const NM_SCRIPT_PATH: &str = "/etc/roce-net/nm-apply.sh";
/// The ifupdown hook run after an interface comes up.
pub const IFUP_HOOK_PATH: &str = "/etc/network/if-up.d/roce-net";
/// The ifupdown hook run before an interface goes down.
pub const IFDOWN_HOOK_PATH: &str = "/etc/network/if-down.d/roce-net";

/// One file to write on the target host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RenderedFile {
    /// Absolute path as on the target host (e.g. `/etc/sysctl.d/90-roce-net.conf`).
    pub path: PathBuf,
    /// Full content.
    pub content: String,
    /// Permission bits (e.g. `0o644`).
    pub mode: u32,
    /// What the operator must know or do about this file, if anything.
    pub note: Option<String>,
}

/// Where an interface is defined in the existing netplan configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetplanDevice {
    /// The device-type section: `ethernets`, `vlans`, `bonds`, `bridges`, ...
    pub kind: String,
    /// The netplan ID (the key under that section), which may differ from the
    /// kernel name when the existing file uses `match:` / `set-name:`.
    pub id: String,
}

/// Host facts the renderers cannot guess.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RenderOptions {
    /// ifname -> the existing systemd-networkd `.network` file name that matches it
    /// (e.g. `10-ens1f0.network`). Missing entries assume `10-<ifname>.network`
    /// and the rendered drop-in carries a note saying so.
    #[serde(default)]
    pub networkd_files: BTreeMap<String, String>,
    /// ifname -> NetworkManager connection profile name. Missing entries assume
    /// the profile is named like the interface.
    #[serde(default)]
    pub nm_connections: BTreeMap<String, String>,
    /// ifname -> where netplan defines it. Missing entries assume `vlans` for
    /// names with a dot and `ethernets` otherwise, with the ifname as the ID.
    #[serde(default)]
    pub netplan_devices: BTreeMap<String, NetplanDevice>,
}

/// Render the desired state as the files `backend` needs for a boot-persistent fix.
///
/// The sysctl drop-in is always included; every backend except `sysctl.d` also
/// includes the table and protocol names; the network backends add their routes
/// and rules. Output is deterministic (suitable for golden files). Fails with
/// `InvalidInput` on names that are unsafe in a path or a shell script, and with
/// `Unsupported` on routes or rules a backend cannot express.
pub fn render(
    desired: &DesiredState,
    backend: Backend,
    opts: &RenderOptions,
) -> Result<Vec<RenderedFile>> {
    let layout = common::Layout::build(desired, backend)?;
    let mut out = vec![common::render_sysctl(desired)?];
    if backend == Backend::SysctlD {
        return Ok(out);
    }
    out.extend(common::render_names(desired)?);
    match backend {
        Backend::SysctlD | Backend::RtTablesD => {}
        Backend::Networkd => out.extend(networkd::render(desired, &layout, opts)?),
        Backend::Netplan => out.extend(netplan::render(desired, &layout, opts)?),
        Backend::NetworkManager => out.extend(nm::render(desired, &layout, opts)?),
        Backend::Ifupdown => out.extend(ifupdown::render(desired, &layout)?),
    }
    Ok(out)
}
