//! netplan's read side: which definitions in the node's netplan YAML claim a
//! NIC, and with which renderer (the rules are in `persist/discover.rs`'s module
//! documentation). The writer is `super` (`persist/netplan.rs`).

use crate::persist::config::{dir_names, read_bounded, Claim, Facts, NetplanRenderer, NicConfig};
use crate::persist::write::PersistRoot;
use crate::policy::glob::fnmatch;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
pub(in crate::persist) struct Def {
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
pub(in crate::persist) struct Netplan {
    pub defs: Vec<Def>,
    pub global_renderer: Option<String>,
    pub section_renderer: BTreeMap<String, String>,
}

pub(in crate::persist) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Netplan {
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

pub(in crate::persist) fn claims(np: &Netplan, f: &Facts<'_>, nic: &mut NicConfig) {
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
