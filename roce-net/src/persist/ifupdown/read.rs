//! ifupdown's read side: the `iface` stanzas of `/etc/network/interfaces` and
//! what it sources (rules in `persist/discover.rs`'s module documentation). The
//! writer is `super` (`persist/ifupdown.rs`).

use crate::persist::config::{dir_names, read_bounded, Claim, Facts, NicConfig};
use crate::persist::write::PersistRoot;
use crate::policy::glob::fnmatch;
use std::path::{Path, PathBuf};

/// Deepest `source` nesting followed in ifupdown's interfaces files.
const MAX_SOURCE_DEPTH: usize = 8;

pub(in crate::persist) struct Stanza {
    pub file: PathBuf,
    pub line: usize,
    pub name: String,
}

#[derive(Default)]
pub(in crate::persist) struct Ifupdown {
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

pub(in crate::persist) fn read(root: &PersistRoot, warnings: &mut Vec<String>) -> Ifupdown {
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

pub(in crate::persist) fn claims(ifd: &Ifupdown, f: &Facts<'_>, nic: &mut NicConfig) {
    if let Some(s) = ifd.stanzas.iter().find(|s| s.name == f.name) {
        nic.claims.push(Claim::Ifupdown {
            file: s.file.clone(),
            line: s.line,
            brought_up: ifd.up.iter().any(|n| n == f.name),
            no_scripts: ifd.no_scripts.iter().any(|n| n == f.name),
        });
    }
}
