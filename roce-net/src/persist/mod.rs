//! Boot-persistent configuration: renders a [`DesiredState`] as the files a
//! network configuration backend reads at boot, and writes them safely.
//!
//! The flow is pure until the last step:
//!
//! 1. [`discover_config`] reads each stack's configuration under a [`PersistRoot`] (the
//!    node's `/` or a copy of its trees) and [`choose_backend`] picks the stack
//!    that really configures the NICs;
//! 2. [`render_persistence`] turns the desired state into [`RenderedFile`]s (absolute paths as on
//!    the target host, content, mode, and a note for the operator);
//! 3. [`diff_persistence`] shows what would change under a root directory;
//! 4. [`write_persistence`] writes them as one set, all or nothing, keeps the
//!    previous content as `<file>.roce-net.bak`, never writes through a symlink,
//!    and leaves unchanged files alone; a set a killed persist left half switched
//!    is repaired by the next persist and, at boot, by the repair it installs
//!    ([`BOOT_REPAIR_PATH`]).
//!
//! Every backend includes the sysctl drop-in, the routing-table names and the
//! protocol name, so each one alone is a complete boot-persistent fix;
//! `docs/persistence.md` says exactly what each backend writes and why.

mod boot_repair;
mod common;
mod config;
mod diff;
mod discover;
mod existing;
mod ifupdown;
mod ini;
mod netplan;
mod networkd;
mod nm;
mod stale;
mod switch;
pub(crate) mod undo;
pub(crate) mod write;

/// The backends are part of the policy (`persistence.backend`).
pub use crate::policy::Backend;
pub use boot_repair::BOOT_REPAIR_PATH;
pub use config::{Claim, NetplanRenderer, NicConfig, NodeConfig};
pub use diff::{diff_persistence, DiffStatus, FileDiff};
pub use discover::{choose_backend, discover_config};
pub use stale::remove_stale_persistence;
pub use write::{
    remove_persistence, write_persistence, write_persistence_at, PersistRoot, RemoveReport,
    WriteReport,
};

use crate::error::{Error, ErrorKind, Result};
use crate::model::HostState;
use crate::plan::DesiredState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
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
/// The NetworkManager script that takes them out again.
pub const NM_REMOVE_PATH: &str = "/etc/roce-net/nm-remove.sh";
/// The name of roce-net's drop-in in a `.network.d` directory.
pub const NETWORKD_DROPIN_NAME: &str = "90-roce-net.conf";
/// The ifupdown hook run after an interface comes up.
pub const IFUP_HOOK_PATH: &str = "/etc/network/if-up.d/roce-net";
/// The ifupdown hook run before an interface goes down.
pub const IFDOWN_HOOK_PATH: &str = "/etc/network/if-down.d/roce-net";

/// Every fixed path persistence may write (the networkd drop-ins are found by
/// [`remove_persistence`] in `/etc/systemd/network/*.network.d/`).
pub(crate) const OWNED_PATHS: &[&str] = &[
    SYSCTL_PATH,
    RT_TABLES_PATH,
    RT_PROTOS_PATH,
    NETWORKD_CONF_PATH,
    NETPLAN_PATH,
    NM_SCRIPT_PATH,
    NM_REMOVE_PATH,
    IFUP_HOOK_PATH,
    IFDOWN_HOOK_PATH,
    BOOT_REPAIR_PATH,
];

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
    /// The renderer netplan hands the device to (`networkd` when unset).
    #[serde(default = "default_renderer")]
    pub renderer: NetplanRenderer,
}

fn default_renderer() -> NetplanRenderer {
    NetplanRenderer::Networkd
}

/// A NetworkManager connection profile, addressed by UUID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NmProfile {
    /// `connection.uuid`; `None` only for a keyfile without one (then the
    /// profile is addressed by its name).
    pub uuid: Option<String>,
    /// `connection.id`, the profile's name (for messages).
    pub id: String,
}

/// Host facts the renderers cannot guess: under which name each NIC's stack
/// configures it. [`RenderOptions::from_config`] fills them from [`discover_config`]; a
/// NIC with routes or rules missing from the backend's map is refused by
/// [`render_persistence`] (roce-net never defines an interface the node does not).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RenderOptions {
    /// ifname -> the existing systemd-networkd `.network` file name that matches it
    /// (e.g. `20-r0.network`); the drop-in goes to `<name>.d/`.
    #[serde(default)]
    pub networkd_files: BTreeMap<String, String>,
    /// ifname -> the NetworkManager profile that configures it.
    #[serde(default)]
    pub nm_connections: BTreeMap<String, NmProfile>,
    /// ifname -> where netplan defines it.
    #[serde(default)]
    pub netplan_devices: BTreeMap<String, NetplanDevice>,
    /// NICs that have an ifupdown `iface` stanza.
    #[serde(default)]
    pub ifupdown_ifaces: BTreeSet<String>,
}

impl RenderOptions {
    /// The names `backend` knows each NIC of `nics` by, from what [`discover_config`]
    /// found; with warnings for the operator (another stack also configures a
    /// NIC; an ifupdown NIC not brought up at boot).
    ///
    /// Fails, naming the NIC and what was found, when the backend does not
    /// configure a NIC, or configures it more than once in a way roce-net cannot
    /// tell apart (two NetworkManager profiles bound to the same interface name).
    pub fn from_config(cfg: &NodeConfig, backend: Backend) -> Result<(RenderOptions, Vec<String>)> {
        let mut o = RenderOptions::default();
        let mut warnings = Vec::new();
        if matches!(backend, Backend::SysctlD | Backend::RtTablesD) {
            return Ok((o, warnings));
        }
        for nic in &cfg.nics {
            let name = &nic.ifname;
            let mine: Vec<&Claim> = nic.claims_of(backend).collect();
            let others: Vec<String> = nic
                .claims
                .iter()
                .filter(|c| c.backend() != backend)
                .map(|c| c.to_string())
                .collect();
            if mine.is_empty() {
                let found = if others.is_empty() {
                    "no stack configures it".to_string()
                } else {
                    format!("it is configured by {}", others.join("; "))
                };
                let why = if nic.undetermined.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", nic.undetermined.join("; "))
                };
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "{name} is not configured by {backend} on this node: {found}{why}. \
                         roce-net extends the node's own definitions and never defines an \
                         interface itself; configure {name} in {backend} first, or persist \
                         with the stack that configures it"
                    ),
                ));
            }
            if !others.is_empty() {
                warnings.push(format!(
                    "{name} is also configured by {}: the stacks may fight over it at boot",
                    others.join("; ")
                ));
            }
            match backend {
                Backend::Netplan => {
                    if mine.len() > 1 {
                        warnings.push(format!(
                            "{name} matches {} netplan definitions; using the first ({})",
                            mine.len(),
                            mine[0]
                        ));
                    }
                    if let Claim::Netplan {
                        kind, id, renderer, ..
                    } = mine[0]
                    {
                        o.netplan_devices.insert(
                            name.clone(),
                            NetplanDevice {
                                kind: kind.clone(),
                                id: id.clone(),
                                renderer: *renderer,
                            },
                        );
                    }
                }
                Backend::NetworkManager => {
                    let by_name: Vec<&&Claim> = mine
                        .iter()
                        .filter(|c| matches!(c, Claim::NetworkManager { by_name: true, .. }))
                        .collect();
                    let pick: Vec<&&Claim> = if by_name.is_empty() {
                        mine.iter().collect()
                    } else {
                        by_name
                    };
                    if pick.len() > 1 {
                        return Err(Error::new(
                            ErrorKind::InvalidInput,
                            format!(
                                "{name} has {} NetworkManager profiles ({}); NetworkManager                                  activates one of them by autoconnect priority and history,                                  which roce-net cannot know offline: delete or unbind the                                  profiles that do not manage {name}",
                                pick.len(),
                                pick.iter().map(|c| c.to_string()).collect::<Vec<_>>().join("; ")
                            ),
                        ));
                    }
                    if let Claim::NetworkManager { uuid, id, .. } = pick[0] {
                        o.nm_connections.insert(
                            name.clone(),
                            NmProfile {
                                uuid: uuid.clone(),
                                id: id.clone(),
                            },
                        );
                    }
                }
                Backend::Networkd => {
                    if let Claim::Networkd { name: file, .. } = mine[0] {
                        o.networkd_files.insert(name.clone(), file.clone());
                    }
                }
                Backend::Ifupdown => {
                    if let Claim::Ifupdown {
                        no_scripts,
                        brought_up,
                        file,
                        line,
                    } = mine[0]
                    {
                        if *no_scripts {
                            return Err(Error::new(
                                ErrorKind::InvalidInput,
                                format!(
                                    "{name} is listed by `no-scripts` in the ifupdown                                      configuration, so ifupdown runs no hook scripts for it and                                      roce-net's if-up.d hook would never run; remove it from                                      no-scripts or persist by hand (post-up lines in {}:{line})",
                                    file.display()
                                ),
                            ));
                        }
                        if !*brought_up {
                            warnings.push(format!(
                                "{name} has an ifupdown stanza ({}:{line}) but no `auto` or                                  `allow-hotplug` line: it is not brought up at boot, so neither                                  is roce-net's configuration for it",
                                file.display()
                            ));
                        }
                        o.ifupdown_ifaces.insert(name.clone());
                    }
                }
                Backend::SysctlD | Backend::RtTablesD => {}
            }
        }
        Ok((o, warnings))
    }
}

/// What [`prepare_persistence`] decided and rendered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistPlan {
    /// The backend rendered for.
    pub backend: Backend,
    /// Why that backend.
    pub reason: String,
    /// The files to write.
    pub files: Vec<RenderedFile>,
    /// What the operator should know (stacks fighting, NICs not brought up, ...).
    pub warnings: Vec<String>,
    /// What discovery found.
    pub config: NodeConfig,
}

/// Discover how the node under `target` configures the desired state's NICs
/// (their MAC, kind and index from `state`), choose the backend (`backend`, or
/// the one stack that configures them all), and render. Fails with a message
/// naming the NICs and files when no backend fits.
pub fn prepare_persistence(
    desired: &DesiredState,
    state: &HostState,
    target: &PersistRoot,
    backend: Option<(Backend, String)>,
) -> Result<PersistPlan> {
    let names: Vec<&str> = desired.nics.iter().map(|n| n.ifname.as_str()).collect();
    let config = discover_config(target, &state.interfaces, &names);
    let (backend, reason) = match backend {
        Some(b) => b,
        None => choose_backend(&config)?,
    };
    let (opts, mut warnings) = RenderOptions::from_config(&config, backend)?;
    warnings.extend(config.warnings.iter().cloned());
    let files = render_persistence(desired, backend, &opts)?;
    Ok(PersistPlan {
        backend,
        reason,
        files,
        warnings,
        config,
    })
}

/// Render the desired state as the files `backend` needs for a boot-persistent fix.
///
/// The sysctl drop-in is always included; every backend except `sysctl.d` also
/// includes the table and protocol names; the network backends add their routes
/// and rules. Output is deterministic (suitable for golden files). Fails with
/// `InvalidInput` on names that are unsafe in a path or a shell script, and with
/// `Unsupported` on routes or rules a backend cannot express.
pub fn render_persistence(
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
        Backend::Ifupdown => out.extend(ifupdown::render(desired, &layout, opts)?),
    }
    Ok(out)
}
