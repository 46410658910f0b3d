//! Discovery: which stack manages each NIC on this node, and under which name.
//!
//! Everything is read under a [`PersistRoot`] (the node's `/`, or a copy of its
//! trees in tests), and nothing is guessed: a NIC is managed by a stack only when
//! that stack's own configuration, read by that stack's own rules, says so.
//!
//! * **netplan** (netplan.io 0.106, `netplan(5)`): `*.yaml` in `lib/netplan`,
//!   `etc/netplan`, `run/netplan`; a file in `/run` shadows the same name in
//!   `/etc`, which shadows `/lib`; files are merged in lexical order of their
//!   names. A definition applies to a NIC by its ID (no `match:`), or by
//!   `match:` (`name` glob, `macaddress`) and `set-name:`. The renderer is the
//!   device's `renderer:`, else its section's, else the global one (the last file
//!   that sets it wins), else `networkd`.
//! * **NetworkManager** (1.42, `nm-settings-keyfile(5)`): keyfiles in
//!   `etc/NetworkManager/system-connections` and `run/NetworkManager/
//!   system-connections`; a profile applies to a NIC by `interface-name=` or
//!   `[ethernet] mac-address=`; NetworkManager ignores files whose permissions let
//!   group or others in (`nms_keyfile_utils_check_file_permissions`), and so does
//!   this. Profiles are addressed by UUID. Keyfiles netplan generated
//!   (`run/.../netplan-*.nmconnection`) belong to netplan.
//! * **systemd-networkd** (252, `systemd.network(5)`): `.network` files in
//!   `/etc/systemd/network`, `/run/systemd/network`, `/usr/local/lib/systemd/network`,
//!   `/usr/lib/systemd/network` and `/lib/systemd/network`. "All configuration files
//!   are collectively sorted and processed in alphanumeric order, regardless of the
//!   directories in which they live. However, files with identical filenames replace
//!   each other" (`/etc` first, then `/run`, then the library directories); an empty
//!   file or a symlink to `/dev/null` masks the name. "The first (in alphanumeric
//!   order) of the network files that matches a given interface is applied"; a file
//!   matches when every `[Match]` setting is satisfied, and one without `[Match]`
//!   settings matches every interface. `Name=`, `MACAddress=`,
//!   `PermanentMACAddress=` (unknown here: never matches), `Type=` and `Kind=` are
//!   evaluated (globs, a leading `!` inverts the list, an empty assignment resets
//!   it); a file that needs anything else (`Driver=`, `Path=`, `Property=`,
//!   `Host=`, ...) makes the answer undetermined rather than guessed, unless
//!   networkd runs and says itself (`/run/systemd/netif/links/<ifindex>`
//!   `NETWORK_FILE=`; only consulted then, because with `--netns` the ifindex
//!   may belong to another namespace). Files netplan generated
//!   (`run/.../10-netplan-*`) belong to netplan.
//! * **ifupdown** (0.8.41, `interfaces(5)`): `etc/network/interfaces` with its
//!   `source` (globs) and `source-directory` includes, relative paths relative to
//!   the including file's directory; an `iface <name> inet|inet6 ...` stanza
//!   manages the NIC; `auto`/`allow-*` say whether it is brought up at boot;
//!   `no-scripts` stops the hook scripts roce-net relies on.

use super::ifupdown::read as ifupdown;
use super::netplan::read as netplan;
use super::networkd::read as networkd;
use super::nm::read as nm;
use super::write::PersistRoot;
use super::Backend;
use crate::model::{HwAddr, Interface};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Most files read from one configuration directory.
const MAX_DIR_ENTRIES: usize = 4096;
/// Deepest `source` nesting followed in ifupdown's interfaces files.
pub(super) const MAX_SOURCE_DEPTH: usize = 8;

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

/// Read the node's configuration under `root` and say, for each NIC named in
/// `nics` (looked up in `interfaces` for its MAC, kind and index), which stack
/// configures it and under which name. Never fails: unreadable files become
/// warnings.
pub fn discover_config(root: &PersistRoot, interfaces: &[Interface], nics: &[&str]) -> NodeConfig {
    let mut out = NodeConfig::default();
    let netplan = netplan::read(root, &mut out.warnings);
    let nm = nm::read(root, &mut out.warnings);
    let networkd = networkd::read(root, &mut out.warnings);
    let ifupdown = ifupdown::read(root, &mut out.warnings);
    out.active = active_stacks(root);
    for name in nics {
        let iface = interfaces.iter().find(|i| i.name == *name);
        let facts = Facts {
            name,
            mac: iface.and_then(|i| i.mac.as_ref()),
            kind: iface.and_then(|i| i.kind.as_deref()),
            index: iface.map(|i| i.index),
        };
        let mut nic = NicConfig {
            ifname: name.to_string(),
            claims: Vec::new(),
            undetermined: Vec::new(),
        };
        netplan::claims(&netplan, &facts, &mut nic);
        let by_netplan = !nic.claims.is_empty();
        nm::claims(&nm, &facts, by_netplan, &mut nic);
        networkd::claims(root, &networkd, &facts, by_netplan, &mut nic);
        ifupdown::claims(&ifupdown, &facts, &mut nic);
        out.nics.push(nic);
    }
    out
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
        match (self.mac, parse_mac(text)) {
            (Some(m), Some(want)) => m.as_bytes() == want.as_slice(),
            _ => false,
        }
    }
}

/// A MAC in colon, hyphen or dot (`1234.5678.90ab`) notation.
fn parse_mac(s: &str) -> Option<Vec<u8>> {
    let s = s.trim().trim_matches('"');
    let hex: String = if s.contains('.') && s.len() == 14 {
        s.split('.').collect()
    } else {
        s.split([':', '-']).map(|p| format!("{p:0>2}")).collect()
    };
    if hex.len() % 2 != 0 || hex.is_empty() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
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

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Stacks running or enabled on the node, with the path that shows it.
fn active_stacks(root: &PersistRoot) -> Vec<(Backend, String)> {
    let mut v = Vec::new();
    let wants = root.etc.join("systemd/system/multi-user.target.wants");
    let checks = [
        (
            Backend::Networkd,
            root.run.join("systemd/netif/state"),
            "networkd is running",
        ),
        (
            Backend::Networkd,
            wants.join("systemd-networkd.service"),
            "networkd is enabled",
        ),
        (
            Backend::NetworkManager,
            root.run.join("NetworkManager/NetworkManager.pid"),
            "NetworkManager is running",
        ),
        (
            Backend::NetworkManager,
            wants.join("NetworkManager.service"),
            "NetworkManager is enabled",
        ),
        (
            Backend::Ifupdown,
            root.run.join("network/ifstate"),
            "ifupdown has brought interfaces up",
        ),
        (
            Backend::Ifupdown,
            wants.join("networking.service"),
            "ifupdown's networking.service is enabled",
        ),
    ];
    for (b, p, what) in checks {
        if exists(&p) {
            v.push((b, format!("{} exists ({what})", p.display())));
        }
    }
    v
}

/// Which backend to persist with, given what [`discover_config`] found.
///
/// Every NIC must be configured by exactly one stack, the same for all: then that
/// stack's backend, with the reason. A NIC no stack configures, a NIC two stacks
/// configure (they fight over it at boot), NICs split across stacks, or an
/// undetermined answer is an error that names the NICs and the files. No NICs:
/// `sysctl.d`.
pub fn choose_backend(cfg: &NodeConfig) -> crate::Result<(Backend, String)> {
    use crate::error::{Error, ErrorKind};
    if cfg.nics.is_empty() {
        return Ok((
            Backend::SysctlD,
            "no NIC needs routes or rules; only the sysctls are persisted".into(),
        ));
    }
    let mut problems = Vec::new();
    let mut unconfigured = Vec::new();
    let mut by_stack: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
    for n in &cfg.nics {
        let stacks = n.stacks();
        match stacks.as_slice() {
            [] if !n.undetermined.is_empty() => {
                problems.push(format!("{}: {}", n.ifname, n.undetermined.join("; ")))
            }
            [] => unconfigured.push(n.ifname.as_str()),
            [one] => by_stack.entry(one.name()).or_default().push(&n.ifname),
            many => problems.push(format!(
                "{} is configured by {} stacks, which fight over it at boot: {}",
                n.ifname,
                many.len(),
                n.claims
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
    if !unconfigured.is_empty() {
        problems.insert(
            0,
            format!(
                "{}: no netplan, NetworkManager, systemd-networkd or ifupdown configuration on \
                 this node configures {}",
                unconfigured.join(", "),
                if unconfigured.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            ),
        );
    }
    if by_stack.len() > 1 {
        problems.push(format!(
            "the NICs are configured by different stacks ({}); persist each group with \
             --backend",
            by_stack
                .iter()
                .map(|(s, n)| format!("{s}: {}", n.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !problems.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "cannot tell which stack to persist into: {}. Fix the node's configuration, or \
                 choose with --backend: sysctl.d or rt_tables.d persist the sysctls or the table \
                 names alone; networkd, netplan, networkmanager or ifupdown add the routes and \
                 rules to that stack's own configuration of the NICs",
                problems.join("; ")
            ),
        ));
    }
    let (name, nics) = by_stack
        .into_iter()
        .next()
        .ok_or_else(|| Error::new(ErrorKind::InvalidInput, "no stack configures the NICs"))?;
    let b: Backend = name.parse()?;
    let first = cfg
        .nics
        .iter()
        .find_map(|n| n.claims.first())
        .map(|c| c.to_string())
        .unwrap_or_default();
    Ok((
        b,
        format!(
            "{b} configures every NIC ({}); e.g. {first}",
            nics.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_in_every_notation() {
        let want = vec![0x02, 0, 0, 0, 0xab, 0x01];
        assert_eq!(parse_mac("02:00:00:00:ab:01"), Some(want.clone()));
        assert_eq!(parse_mac("02-00-00-00-AB-01"), Some(want.clone()));
        assert_eq!(parse_mac("0200.0000.ab01"), Some(want));
        assert_eq!(parse_mac("zz"), None);
    }
}
