//! systemd-networkd's read side: the `.network` file that applies to a NIC
//! (rules in `persist/discover.rs`'s module documentation). The writer is
//! `super` (`persist/networkd.rs`).

use crate::persist::config::{dir_names, read_bounded, Claim, Facts, NicConfig};
use crate::persist::ini::{self, Dialect};
use crate::persist::write::PersistRoot;
use crate::policy::glob::fnmatch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One `.network` file with its `[Match]` settings (main file then drop-ins).
pub(in crate::persist) struct NetworkFile {
    pub name: String,
    pub path: PathBuf,
    pub matches: Vec<(String, String)>,
}

/// systemd 252's `NETWORK_DIRS` (`CONF_PATHS("systemd/network")`, with
/// `/lib` on Debian's split-usr build), highest priority first.
pub(in crate::persist) fn dirs(root: &PersistRoot) -> Vec<PathBuf> {
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

pub(in crate::persist) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Vec<NetworkFile> {
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

pub(in crate::persist) fn claims(
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
        let generated = p.starts_with("/run/systemd/network") && name.starts_with("10-netplan-");
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
