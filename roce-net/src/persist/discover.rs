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

use super::config::{Facts, NicConfig, NodeConfig};
use super::ifupdown::read as ifupdown;
use super::netplan::read as netplan;
use super::networkd::read as networkd;
use super::nm::read as nm;
use super::write::PersistRoot;
use super::Backend;
use crate::model::Interface;
use std::collections::BTreeMap;
use std::path::Path;

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
                 choose with --backend: {}",
                problems.join("; "),
                crate::policy::Backend::choices()
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
