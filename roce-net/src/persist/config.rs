//! What discovery reports and what each stack's reader shares: the node's
//! configuration as it concerns the NICs ([`NodeConfig`], [`NicConfig`], each
//! stack's [`Claim`]), the facts a reader matches a NIC by ([`Facts`]), and the
//! bounded reads of configuration files and directories. Below `discover.rs`
//! and every `<stack>/read.rs`, which all use it; it uses neither.

use super::Backend;
use crate::model::HwAddr;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// Most files read from one configuration directory.
const MAX_DIR_ENTRIES: usize = 4096;

/// netplan's renderer for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NetplanRenderer {
    /// `renderer: networkd` (netplan's default).
    #[serde(rename = "networkd")]
    Networkd,
    /// `renderer: NetworkManager`.
    #[serde(rename = "NetworkManager")]
    NetworkManager,
}

impl fmt::Display for NetplanRenderer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetplanRenderer::Networkd => "networkd",
            NetplanRenderer::NetworkManager => "NetworkManager",
        })
    }
}

/// One piece of the node's configuration that configures a NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stack", rename_all = "lowercase")]
pub enum Claim {
    /// A netplan definition.
    Netplan {
        /// The file that (last) defines it.
        file: PathBuf,
        /// Its device-type section (`ethernets`, `vlans`, `bonds`, ...).
        kind: String,
        /// Its netplan ID.
        id: String,
        /// The renderer netplan hands it to.
        renderer: NetplanRenderer,
    },
    /// A NetworkManager connection profile (keyfile).
    #[serde(rename = "networkmanager")]
    NetworkManager {
        /// The keyfile.
        file: PathBuf,
        /// `connection.uuid` (absent only in keyfiles NetworkManager did not write).
        uuid: Option<String>,
        /// `connection.id`, the profile's name.
        id: String,
        /// Matched by `interface-name` (true) or by `mac-address` (false).
        by_name: bool,
    },
    /// The systemd-networkd `.network` file that matches the NIC.
    Networkd {
        /// The file (in whichever directory won).
        file: PathBuf,
        /// Its name, which names the drop-in directory (`<name>.d/`).
        name: String,
        /// Taken from networkd's own state file rather than evaluated.
        from_state: bool,
    },
    /// An ifupdown `iface` stanza.
    Ifupdown {
        /// The file holding the stanza.
        file: PathBuf,
        /// Its line number (1-based).
        line: usize,
        /// Listed by `auto` or `allow-*` (brought up at boot or on hotplug).
        brought_up: bool,
        /// Listed by `no-scripts`: ifupdown runs no hook scripts for it.
        no_scripts: bool,
    },
}

impl Claim {
    /// The persistence backend that writes for this stack.
    pub fn backend(&self) -> Backend {
        match self {
            Claim::Netplan { .. } => Backend::Netplan,
            Claim::NetworkManager { .. } => Backend::NetworkManager,
            Claim::Networkd { .. } => Backend::Networkd,
            Claim::Ifupdown { .. } => Backend::Ifupdown,
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::Netplan {
                file,
                kind,
                id,
                renderer,
            } => write!(
                f,
                "netplan {kind}.{id} in {} (renderer {renderer})",
                file.display()
            ),
            Claim::NetworkManager { file, uuid, id, .. } => write!(
                f,
                "NetworkManager profile {id:?} ({}) in {}",
                uuid.as_deref().unwrap_or("no uuid"),
                file.display()
            ),
            Claim::Networkd {
                file, from_state, ..
            } => write!(
                f,
                "systemd-networkd {}{}",
                file.display(),
                if *from_state {
                    " (networkd's own state)"
                } else {
                    ""
                }
            ),
            Claim::Ifupdown { file, line, .. } => {
                write!(f, "ifupdown stanza at {}:{line}", file.display())
            }
        }
    }
}

/// What the node's configuration says about one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicConfig {
    /// Kernel interface name.
    pub ifname: String,
    /// Every stack's configuration that applies to it.
    pub claims: Vec<Claim>,
    /// Why a stack's answer for this NIC could not be determined, if so.
    pub undetermined: Vec<String>,
}

impl NicConfig {
    /// The claims of one stack.
    pub fn claims_of(&self, b: Backend) -> impl Iterator<Item = &Claim> {
        self.claims.iter().filter(move |c| c.backend() == b)
    }

    /// The distinct stacks that configure it.
    pub fn stacks(&self) -> Vec<Backend> {
        let mut v: Vec<Backend> = self.claims.iter().map(Claim::backend).collect();
        v.dedup();
        v.sort_by_key(|b| b.name());
        v.dedup();
        v
    }
}

/// The node's network configuration as it concerns roce-net's NICs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeConfig {
    /// One entry per NIC asked about, in the order asked.
    pub nics: Vec<NicConfig>,
    /// Stacks that are running or enabled, with the evidence.
    pub active: Vec<(Backend, String)>,
    /// Things read but not used, and why (unreadable or insecure files, ...).
    pub warnings: Vec<String>,
}

impl NodeConfig {
    /// The entry for `ifname`.
    pub fn nic(&self, ifname: &str) -> Option<&NicConfig> {
        self.nics.iter().find(|n| n.ifname == ifname)
    }
}

/// What discovery knows about a NIC.
pub(super) struct Facts<'a> {
    pub(super) name: &'a str,
    pub(super) mac: Option<&'a HwAddr>,
    pub(super) kind: Option<&'a str>,
    pub(super) index: Option<u32>,
}

impl Facts<'_> {
    /// networkd's `Type=` for the link (ARPHRD name; `ether` for Ethernet).
    pub(super) fn link_type(&self) -> Option<&'static str> {
        if self.name == "lo" {
            Some("loopback")
        } else if self.mac.is_some_and(|m| m.as_bytes().len() == 6) {
            Some("ether")
        } else {
            None
        }
    }
    pub(super) fn mac_is(&self, text: &str) -> bool {
        match (self.mac, HwAddr::from_config(text)) {
            (Some(m), Some(want)) => *m == want,
            _ => false,
        }
    }
}

/// Read a configuration file through `input.rs` (a regular file of at most
/// [`InputKind::NodeConfig`](crate::input::InputKind::NodeConfig)'s limit, a
/// FIFO refused without waiting); `None` (with a warning) if unreadable.
pub(super) fn read_bounded(path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    match crate::input::read_input_text(path, crate::input::InputKind::NodeConfig) {
        Ok(t) => Some(t),
        Err(e) => {
            warnings.push(format!("{e}; not read"));
            None
        }
    }
}

/// Sorted names of the entries of `dir` (empty when it does not exist).
pub(super) fn dir_names(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .take(MAX_DIR_ENTRIES)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}
