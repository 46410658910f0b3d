//! NetworkManager's read side: the keyfile profiles that claim a NIC (rules in
//! `persist/discover.rs`'s module documentation). The writer is `super`
//! (`persist/nm.rs`).

use crate::persist::config::{dir_names, read_bounded, Claim, Facts, NicConfig};
use crate::persist::ini::{self, Dialect};
use crate::persist::write::PersistRoot;
use std::path::PathBuf;

pub(in crate::persist) struct Profile {
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

pub(in crate::persist) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Vec<Profile> {
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

pub(in crate::persist) fn claims(
    ps: &[Profile],
    f: &Facts<'_>,
    by_netplan: bool,
    nic: &mut NicConfig,
) {
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
