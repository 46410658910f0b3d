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

use super::ini::{self, Dialect};
use super::write::PersistRoot;
use super::Backend;
use crate::model::{HwAddr, Interface};
use crate::policy::glob::fnmatch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Most files read from one configuration directory.
const MAX_DIR_ENTRIES: usize = 4096;
/// Deepest `source` nesting followed in ifupdown's interfaces files.
const MAX_SOURCE_DEPTH: usize = 8;

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
struct Facts<'a> {
    name: &'a str,
    mac: Option<&'a HwAddr>,
    kind: Option<&'a str>,
    index: Option<u32>,
}

impl Facts<'_> {
    /// networkd's `Type=` for the link (ARPHRD name; `ether` for Ethernet).
    fn link_type(&self) -> Option<&'static str> {
        if self.name == "lo" {
            Some("loopback")
        } else if self.mac.is_some_and(|m| m.as_bytes().len() == 6) {
            Some("ether")
        } else {
            None
        }
    }
    fn mac_is(&self, text: &str) -> bool {
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
fn read_bounded(path: &Path, warnings: &mut Vec<String>) -> Option<String> {
    match crate::input::read_input_text(path, crate::input::InputKind::NodeConfig) {
        Ok(t) => Some(t),
        Err(e) => {
            warnings.push(format!("{e}; not read"));
            None
        }
    }
}

/// Sorted names of the entries of `dir` (empty when it does not exist).
fn dir_names(dir: &Path) -> Vec<String> {
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

mod netplan {
    use super::*;
    use serde_json::Value;

    /// Device-type sections netplan 0.106 knows.
    const KINDS: &[&str] = &[
        "ethernets",
        "bonds",
        "bridges",
        "vlans",
        "wifis",
        "modems",
        "tunnels",
        "vrfs",
        "dummy-devices",
        "virtual-ethernets",
        "nm-devices",
    ];

    #[derive(Default)]
    pub(super) struct Def {
        pub kind: String,
        pub id: String,
        pub file: PathBuf,
        pub match_name: Option<String>,
        pub match_mac: Option<String>,
        pub match_other: bool,
        pub has_match: bool,
        pub set_name: Option<String>,
        pub renderer: Option<String>,
    }

    #[derive(Default)]
    pub(super) struct Netplan {
        pub defs: Vec<Def>,
        pub global_renderer: Option<String>,
        pub section_renderer: BTreeMap<String, String>,
    }

    pub(super) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Netplan {
        // name -> path, /run over /etc over /lib.
        let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
        for dir in [
            root.root.join("lib/netplan"),
            root.etc.join("netplan"),
            root.run.join("netplan"),
        ] {
            for n in dir_names(&dir) {
                if n.ends_with(".yaml") {
                    files.insert(n.clone(), dir.join(n));
                }
            }
        }
        let mut np = Netplan::default();
        for path in files.values() {
            let Some(text) = read_bounded(path, warnings) else {
                continue;
            };
            // The policy's bounded YAML reader (depth, size, aliases, duplicate keys).
            let doc: Value = match crate::policy::yaml::parse(&text) {
                Ok(v) => v,
                Err(e) => {
                    warnings.push(format!(
                        "{} could not be read as YAML ({e}); its definitions are not taken \
                         into account: fix the file (netplan generate reports what it makes of it)",
                        path.display()
                    ));
                    continue;
                }
            };
            let Some(net) = doc.get("network") else {
                continue;
            };
            if let Some(r) = net.get("renderer").and_then(Value::as_str) {
                np.global_renderer = Some(r.to_string());
            }
            for kind in KINDS {
                let Some(sec) = net.get(*kind).and_then(Value::as_object) else {
                    continue;
                };
                for (k, v) in sec {
                    let id = k.as_str();
                    if id == "renderer" {
                        if let Some(r) = v.as_str() {
                            np.section_renderer.insert(kind.to_string(), r.to_string());
                        }
                        continue;
                    }
                    let pos = np.defs.iter().position(|d| d.kind == *kind && d.id == id);
                    let d = match pos {
                        Some(i) => &mut np.defs[i],
                        None => {
                            np.defs.push(Def {
                                kind: kind.to_string(),
                                id: id.to_string(),
                                ..Def::default()
                            });
                            let last = np.defs.len() - 1;
                            &mut np.defs[last]
                        }
                    };
                    // A file that only adds to a definition made elsewhere does not
                    // move it: keep the first file as "the" definition unless this
                    // one changes how it is matched.
                    if d.file.as_os_str().is_empty() {
                        d.file = path.clone();
                    }
                    if let Some(m) = v.get("match").and_then(Value::as_object) {
                        d.has_match = true;
                        for (mk, mv) in m {
                            match (Some(mk.as_str()), mv.as_str()) {
                                (Some("name"), Some(s)) => d.match_name = Some(s.to_string()),
                                (Some("macaddress"), Some(s)) => d.match_mac = Some(s.to_string()),
                                _ => d.match_other = true,
                            }
                        }
                    }
                    if let Some(s) = v.get("set-name").and_then(Value::as_str) {
                        d.set_name = Some(s.to_string());
                    }
                    if let Some(r) = v.get("renderer").and_then(Value::as_str) {
                        d.renderer = Some(r.to_string());
                    }
                }
            }
        }
        np
    }

    fn renderer(np: &Netplan, d: &Def) -> NetplanRenderer {
        let r = d
            .renderer
            .as_deref()
            .or(np.section_renderer.get(&d.kind).map(String::as_str))
            .or(np.global_renderer.as_deref());
        match r {
            Some(r) if r.eq_ignore_ascii_case("NetworkManager") => NetplanRenderer::NetworkManager,
            _ => NetplanRenderer::Networkd,
        }
    }

    pub(super) fn claims(np: &Netplan, f: &Facts<'_>, nic: &mut NicConfig) {
        for d in &np.defs {
            let applies = if let Some(set) = &d.set_name {
                set == f.name
            } else if d.has_match {
                let name_ok = d.match_name.as_deref().is_none_or(|g| fnmatch(g, f.name));
                let mac_ok = d.match_mac.as_deref().is_none_or(|m| f.mac_is(m));
                if d.match_other && name_ok && mac_ok {
                    nic.undetermined.push(format!(
                        "netplan {}.{} in {} matches on more than name and MAC (driver?); \
                         not evaluated",
                        d.kind,
                        d.id,
                        d.file.display()
                    ));
                    false
                } else {
                    name_ok && mac_ok
                }
            } else {
                d.id == f.name
            };
            if applies {
                nic.claims.push(Claim::Netplan {
                    file: d.file.clone(),
                    kind: d.kind.clone(),
                    id: d.id.clone(),
                    renderer: renderer(np, d),
                });
            }
        }
    }
}

mod nm {
    use super::*;

    pub(super) struct Profile {
        pub file: PathBuf,
        pub uuid: Option<String>,
        pub id: String,
        pub ifname: Option<String>,
        pub mac: Option<String>,
        pub netplan: bool,
    }

    /// Names NetworkManager's keyfile plugin skips (`nm_keyfile_utils_ignore_filename`).
    fn ignored(name: &str) -> bool {
        name.starts_with('.')
            || name.ends_with('~')
            || [
                ".bak", ".orig", ".rej", ".tmp", ".swp", ".swpx", ".rpmnew", ".rpmsave", ".pem",
                ".der", ".key",
            ]
            .iter()
            .any(|s| name.ends_with(s))
            || name.contains(".dpkg-")
            || name.contains(".roce-net")
    }

    pub(super) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Vec<Profile> {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        for (dir, volatile) in [
            (root.etc.join("NetworkManager/system-connections"), false),
            (root.run.join("NetworkManager/system-connections"), true),
        ] {
            for n in dir_names(&dir) {
                if ignored(&n) {
                    continue;
                }
                let p = dir.join(&n);
                let Ok(md) = std::fs::metadata(&p) else {
                    continue;
                };
                if !md.is_file() {
                    continue;
                }
                if md.mode() & 0o077 != 0 {
                    warnings.push(format!(
                        "{}: mode {:o} lets group or others in; NetworkManager ignores such \
                         keyfiles, and so does roce-net",
                        p.display(),
                        md.mode() & 0o777
                    ));
                    continue;
                }
                let Some(text) = read_bounded(&p, warnings) else {
                    continue;
                };
                let mut prof = Profile {
                    file: p.clone(),
                    uuid: None,
                    id: n.trim_end_matches(".nmconnection").to_string(),
                    ifname: None,
                    mac: None,
                    netplan: volatile && n.starts_with("netplan-"),
                };
                for (sec, k, v, _) in ini::parse(&text, Dialect::KeyFile) {
                    match (sec.as_str(), k.as_str()) {
                        ("connection", "uuid") => prof.uuid = Some(v),
                        ("connection", "id") => prof.id = v,
                        ("connection", "interface-name") if !v.is_empty() => prof.ifname = Some(v),
                        ("ethernet" | "802-3-ethernet", "mac-address") if !v.is_empty() => {
                            prof.mac = Some(v)
                        }
                        _ => {}
                    }
                }
                out.push(prof);
            }
        }
        out
    }

    pub(super) fn claims(ps: &[Profile], f: &Facts<'_>, by_netplan: bool, nic: &mut NicConfig) {
        for p in ps {
            let by_name = p.ifname.as_deref() == Some(f.name);
            let by_mac = p.mac.as_deref().is_some_and(|m| f.mac_is(m))
                && p.ifname.as_deref().is_none_or(|n| n == f.name);
            if !(by_name || by_mac) {
                continue;
            }
            if p.netplan && by_netplan {
                continue; // netplan's own output for a NIC netplan defines
            }
            nic.claims.push(Claim::NetworkManager {
                file: p.file.clone(),
                uuid: p.uuid.clone(),
                id: p.id.clone(),
                by_name,
            });
        }
    }
}

mod networkd {
    use super::*;

    /// One `.network` file with its `[Match]` settings (main file then drop-ins).
    pub(super) struct NetworkFile {
        pub name: String,
        pub path: PathBuf,
        pub matches: Vec<(String, String)>,
    }

    /// systemd 252's `NETWORK_DIRS` (`CONF_PATHS("systemd/network")`, with
    /// `/lib` on Debian's split-usr build), highest priority first.
    pub(super) fn dirs(root: &PersistRoot) -> Vec<PathBuf> {
        vec![
            root.etc.join("systemd/network"),
            root.run.join("systemd/network"),
            root.root.join("usr/local/lib/systemd/network"),
            root.root.join("usr/lib/systemd/network"),
            root.root.join("lib/systemd/network"),
        ]
    }

    fn masked(p: &Path) -> bool {
        if let Ok(t) = std::fs::read_link(p) {
            if t == Path::new("/dev/null") {
                return true;
            }
        }
        std::fs::metadata(p).map(|m| m.len() == 0).unwrap_or(false)
    }

    pub(super) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Vec<NetworkFile> {
        let dirs = dirs(root);
        let mut chosen: BTreeMap<String, PathBuf> = BTreeMap::new();
        for d in dirs.iter().rev() {
            for n in dir_names(d) {
                if n.ends_with(".network") && !n.starts_with('.') {
                    chosen.insert(n.clone(), d.join(n));
                }
            }
        }
        let mut out = Vec::new();
        for (name, path) in chosen {
            if masked(&path) {
                continue;
            }
            let Some(text) = read_bounded(&path, warnings) else {
                continue;
            };
            let mut matches: Vec<(String, String)> = ini::parse(&text, Dialect::Systemd)
                .into_iter()
                .filter(|(s, ..)| s == "Match")
                .map(|(_, k, v, _)| (k, v))
                .collect();
            // Drop-ins (`<name>.d/*.conf` in every directory, same-name shadowing)
            // are parsed after the main file and may add [Match] settings too.
            let mut drop: BTreeMap<String, PathBuf> = BTreeMap::new();
            for d in dirs.iter().rev() {
                let dd = d.join(format!("{name}.d"));
                for n in dir_names(&dd) {
                    if n.ends_with(".conf") {
                        drop.insert(n.clone(), dd.join(n));
                    }
                }
            }
            for p in drop.values() {
                if masked(p) {
                    continue;
                }
                if let Some(t) = read_bounded(p, warnings) {
                    matches.extend(
                        ini::parse(&t, Dialect::Systemd)
                            .into_iter()
                            .filter(|(s, ..)| s == "Match")
                            .map(|(_, k, v, _)| (k, v)),
                    );
                }
            }
            out.push(NetworkFile {
                name,
                path,
                matches,
            });
        }
        out
    }

    enum Verdict {
        Yes,
        No,
        Unknown(Vec<String>),
    }

    /// A list setting as networkd keeps it: values accumulate, `X=` resets, and
    /// a leading `!` inverts the whole list.
    fn list(matches: &[(String, String)], key: &str) -> Option<(bool, Vec<String>)> {
        let mut seen = false;
        let mut invert = false;
        let mut v: Vec<String> = Vec::new();
        for (k, val) in matches.iter().filter(|(k, _)| k == key) {
            let _ = k;
            seen = true;
            let mut s = val.trim();
            if s.is_empty() {
                v.clear();
                invert = false;
                continue;
            }
            if let Some(rest) = s.strip_prefix('!') {
                invert = true;
                s = rest;
            }
            v.extend(s.split_whitespace().map(str::to_string));
        }
        (seen && !v.is_empty()).then_some((invert, v))
    }

    fn evaluate(file: &NetworkFile, f: &Facts<'_>) -> Verdict {
        const EVALUATED: &[&str] = &["Name", "MACAddress", "PermanentMACAddress", "Type", "Kind"];
        let other: Vec<String> = file
            .matches
            .iter()
            .filter(|(k, v)| !EVALUATED.contains(&k.as_str()) && !v.trim().is_empty())
            .map(|(k, _)| k.clone())
            .collect();
        let mut ok = true;
        if let Some((inv, globs)) = list(&file.matches, "Name") {
            ok &= globs.iter().any(|g| fnmatch(g, f.name)) != inv;
        }
        if let Some((inv, macs)) = list(&file.matches, "MACAddress") {
            ok &= macs.iter().any(|m| f.mac_is(m)) != inv;
        }
        if let Some((inv, _)) = list(&file.matches, "PermanentMACAddress") {
            // The permanent address is not in the snapshot; a real NIC's usually
            // equals its current one.
            ok &= inv;
        }
        if let Some((inv, globs)) = list(&file.matches, "Type") {
            let t = f.link_type();
            ok &= t.is_some_and(|t| globs.iter().any(|g| fnmatch(g, t))) != inv;
        }
        if let Some((inv, globs)) = list(&file.matches, "Kind") {
            ok &= f.kind.is_some_and(|k| globs.iter().any(|g| fnmatch(g, k))) != inv;
        }
        if !ok {
            Verdict::No
        } else if other.is_empty() {
            Verdict::Yes
        } else {
            Verdict::Unknown(other)
        }
    }

    /// networkd's own answer, when it runs: `NETWORK_FILE=` in its link state file.
    fn from_state(root: &PersistRoot, f: &Facts<'_>) -> Option<PathBuf> {
        let idx = f.index?;
        // Absent when networkd does not run: not worth a warning; bounded like
        // every other read.
        let path = root.run.join(format!("systemd/netif/links/{idx}"));
        if !path.is_file() {
            return None;
        }
        let text = read_bounded(&path, &mut Vec::new())?;
        let line = text.lines().find_map(|l| l.strip_prefix("NETWORK_FILE="))?;
        let p = line.trim();
        (!p.is_empty()).then(|| PathBuf::from(p))
    }

    pub(super) fn claims(
        root: &PersistRoot,
        files: &[NetworkFile],
        f: &Facts<'_>,
        by_netplan: bool,
        nic: &mut NicConfig,
    ) {
        let netplan_generated = |p: &Path| {
            p.starts_with(root.run.join("systemd/network")) && {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                n.starts_with("10-netplan-")
            }
        };
        let state = || {
            let p = from_state(root, f)?;
            let name = p.file_name()?.to_string_lossy().into_owned();
            let generated =
                p.starts_with("/run/systemd/network") && name.starts_with("10-netplan-");
            (!(generated && by_netplan)).then_some(Claim::Networkd {
                file: p,
                name,
                from_state: true,
            })
        };
        for file in files {
            match evaluate(file, f) {
                Verdict::No => continue,
                Verdict::Yes => {
                    if !(by_netplan && netplan_generated(&file.path)) {
                        nic.claims.push(Claim::Networkd {
                            file: file.path.clone(),
                            name: file.name.clone(),
                            from_state: false,
                        });
                    }
                    return;
                }
                Verdict::Unknown(keys) => {
                    // networkd's own answer settles what cannot be evaluated here.
                    if let Some(c) = state() {
                        nic.claims.push(c);
                        return;
                    }
                    nic.undetermined.push(format!(
                        "systemd-networkd: {} is the first candidate for {} but matches on {} \
                         too, which roce-net cannot evaluate offline; networkd's own answer is \
                         `NETWORK_FILE=` in /run/systemd/netif/links/<ifindex> while it runs",
                        file.path.display(),
                        f.name,
                        keys.join(", ")
                    ));
                    return;
                }
            }
        }
        if let Some(c) = state() {
            nic.claims.push(c);
        }
    }
}

mod ifupdown {
    use super::*;

    pub(super) struct Stanza {
        pub file: PathBuf,
        pub line: usize,
        pub name: String,
    }

    #[derive(Default)]
    pub(super) struct Ifupdown {
        pub stanzas: Vec<Stanza>,
        pub up: Vec<String>,
        pub no_scripts: Vec<String>,
    }

    /// Map a path as written on the node to where it is under `root`.
    fn on_disk(root: &PersistRoot, p: &Path) -> PathBuf {
        match p.strip_prefix("/etc") {
            Ok(rest) => root.etc.join(rest),
            Err(_) => match p.strip_prefix("/") {
                Ok(rest) => root.root.join(rest),
                Err(_) => p.to_path_buf(),
            },
        }
    }

    /// `*`/`?` globs in the last path component (what `source` lines use).
    fn expand(root: &PersistRoot, pattern: &Path) -> Vec<(PathBuf, PathBuf)> {
        let host_dir = pattern.parent().unwrap_or(Path::new("/"));
        let last = pattern
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !last.contains(['*', '?', '[']) {
            return vec![(pattern.to_path_buf(), on_disk(root, pattern))];
        }
        dir_names(&on_disk(root, host_dir))
            .into_iter()
            .filter(|n| !n.starts_with('.') && fnmatch(&last, n))
            .map(|n| (host_dir.join(&n), on_disk(root, &host_dir.join(&n))))
            .collect()
    }

    pub(super) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Ifupdown {
        let mut out = Ifupdown::default();
        let main = PathBuf::from("/etc/network/interfaces");
        parse(root, &main, &on_disk(root, &main), 0, &mut out, warnings);
        out
    }

    fn parse(
        root: &PersistRoot,
        host_path: &Path,
        disk: &Path,
        depth: usize,
        out: &mut Ifupdown,
        warnings: &mut Vec<String>,
    ) {
        if depth > MAX_SOURCE_DEPTH || !disk.is_file() {
            return;
        }
        let Some(text) = read_bounded(disk, warnings) else {
            return;
        };
        let here = host_path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let abs = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                here.join(p)
            }
        };
        for (i, raw) in text.lines().enumerate() {
            let l = raw.trim();
            let mut w = l.split_whitespace();
            match w.next() {
                Some("iface") => {
                    if let Some(n) = w.next() {
                        out.stanzas.push(Stanza {
                            file: disk.to_path_buf(),
                            line: i + 1,
                            name: n.to_string(),
                        });
                    }
                }
                Some(k) if k == "auto" || k.starts_with("allow-") => {
                    out.up.extend(w.map(str::to_string));
                }
                Some("no-scripts") => out.no_scripts.extend(w.map(str::to_string)),
                Some("source") => {
                    for p in w {
                        for (h, d) in expand(root, &abs(p)) {
                            parse(root, &h, &d, depth + 1, out, warnings);
                        }
                    }
                }
                Some("source-directory") => {
                    for p in w {
                        for (h, d) in expand(root, &abs(p)) {
                            for n in dir_names(&d) {
                                if n.bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                                {
                                    parse(root, &h.join(&n), &d.join(&n), depth + 1, out, warnings);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn claims(ifd: &Ifupdown, f: &Facts<'_>, nic: &mut NicConfig) {
        if let Some(s) = ifd.stanzas.iter().find(|s| s.name == f.name) {
            nic.claims.push(Claim::Ifupdown {
                file: s.file.clone(),
                line: s.line,
                brought_up: ifd.up.iter().any(|n| n == f.name),
                no_scripts: ifd.no_scripts.iter().any(|n| n == f.name),
            });
        }
    }
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
