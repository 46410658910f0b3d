//! Routing table and routing protocol names, read the way iproute2 reads them.
//!
//! Order (later entries for the same number win, as in iproute2):
//! 1. `<etc>/iproute2/<db>`, or when that file does not exist, the distribution's
//!    `<dist>/iproute2/<db>` (`/usr/share/iproute2` or `/usr/lib/iproute2`);
//! 2. `<dist>/iproute2/<db>.d/*.conf`, except names that also exist in
//!    `<etc>/iproute2/<db>.d/` (those override them);
//! 3. `<etc>/iproute2/<db>.d/*.conf`.
//!
//! Files in a `.d` directory are read in name order. Lines are `<number> <name>`,
//! the number decimal or `0x` hex; blank lines and `#` comments are skipped and
//! anything after the name is ignored. A malformed line is a [`Warning`] and the
//! rest of the file is still read (iproute2 stops at it).

use crate::error::{Error, ErrorKind, Result};
use crate::model::Warning;

mod write;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
pub(crate) use write::{lock_names_dir, own_table_names, update_table_names, NameUpdate};

/// The file roce-net registers its table names in, under an `/etc` root. roce-net
/// writes no other iproute2 file. This module owns it: its header
/// ([`NAMES_HEADER`]), the rule for names ([`check_table_name`]), its text
/// ([`render_names_file`]) and its host-wide lock. Apply edits it only through
/// [`update_table_names`] (see `write.rs`: the lock, unique temporary files,
/// exact updates); `persist` writes the text this module renders while holding
/// the same lock ([`lock_names_dir`]).
pub const TABLE_NAMES_FILE: &str = "iproute2/rt_tables.d/roce-net.conf";

/// Where distributions install iproute2's default databases, in lookup order.
pub const DIST_ROOTS: [&str; 2] = ["/usr/share", "/usr/lib"];

/// The distribution root in use: the first of [`DIST_ROOTS`] with an `iproute2`
/// directory (the first one when none has).
pub fn default_dist_root() -> PathBuf {
    DIST_ROOTS
        .iter()
        .map(Path::new)
        .find(|r| r.join("iproute2").is_dir())
        .unwrap_or(Path::new(DIST_ROOTS[0]))
        .to_path_buf()
}

/// Table names from `<etc>/iproute2/rt_tables`, `rt_tables.d/*.conf` and the
/// distribution fallback (see the module documentation).
pub fn read_table_names(etc: &Path, warnings: &mut Vec<Warning>) -> BTreeMap<u32, String> {
    read_table_names_with(etc, &default_dist_root(), warnings)
}

/// [`read_table_names`] with an explicit distribution root (`/usr/share` holds
/// `iproute2/rt_tables`).
pub fn read_table_names_with(
    etc: &Path,
    dist: &Path,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<u32, String> {
    read_db(etc, dist, "rt_tables", u32::MAX, warnings)
}

/// Routing protocol names from `<etc>/iproute2/rt_protos`, `rt_protos.d/*.conf`
/// and the distribution fallback (this is where roce-net's own protocol number is
/// registered by name).
// Not read by the snapshot yet; persistence will check roce-net's protocol
// registration against it (issue 9).
#[allow(dead_code)]
pub fn read_protocol_names(etc: &Path, warnings: &mut Vec<Warning>) -> BTreeMap<u8, String> {
    read_protocol_names_with(etc, &default_dist_root(), warnings)
}

/// [`read_protocol_names`] with an explicit distribution root.
pub fn read_protocol_names_with(
    etc: &Path,
    dist: &Path,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<u8, String> {
    read_db(etc, dist, "rt_protos", u32::from(u8::MAX), warnings)
        .into_iter()
        .filter_map(|(k, v)| u8::try_from(k).ok().map(|k| (k, v)))
        .collect()
}

fn read_db(
    etc: &Path,
    dist: &Path,
    db: &str,
    max: u32,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<u32, String> {
    let etc_dir = etc.join("iproute2");
    let dist_dir = dist.join("iproute2");
    let mut out = BTreeMap::new();
    if !read_file(&etc_dir.join(db), max, &mut out, warnings) {
        read_file(&dist_dir.join(db), max, &mut out, warnings);
    }
    let d = format!("{db}.d");
    let etc_d = etc_dir.join(&d);
    for name in conf_files(&dist_dir.join(&d), warnings) {
        if std::fs::symlink_metadata(etc_d.join(&name)).is_ok() {
            continue;
        }
        read_file(&dist_dir.join(&d).join(&name), max, &mut out, warnings);
    }
    for name in conf_files(&etc_d, warnings) {
        read_file(&etc_d.join(&name), max, &mut out, warnings);
    }
    out
}

/// `*.conf` names in a directory (not starting with `.`), sorted; a missing
/// directory is empty.
fn conf_files(dir: &Path, warnings: &mut Vec<Warning>) -> Vec<String> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warn(warnings, dir, format!("cannot list: {e}"));
            return Vec::new();
        }
    };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n.len() > 5 && n.ends_with(".conf"))
        .collect();
    names.sort();
    names
}

fn warn(warnings: &mut Vec<Warning>, path: &Path, message: String) {
    warnings.push(Warning {
        source: path.display().to_string(),
        message,
    });
}

/// Read one database file into `out`. Returns false only when the file does not
/// exist (so the caller can fall back); other failures are warnings.
fn read_file(
    path: &Path,
    max: u32,
    out: &mut BTreeMap<u32, String>,
    warnings: &mut Vec<Warning>,
) -> bool {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return false,
        Err(e) => {
            warn(warnings, path, format!("cannot read: {e}"));
            return true;
        }
    };
    for (n, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some((id, _))) if id > max => warn(
                warnings,
                path,
                format!(
                    "line {}: number {id} is above the maximum {max}; skipped",
                    n + 1
                ),
            ),
            Ok(Some((id, name))) => {
                out.insert(id, name.to_string());
            }
            Err(why) => warn(warnings, path, format!("line {}: {why}; skipped", n + 1)),
        }
    }
    true
}

/// Parse one line: `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<(u32, &str)>, String> {
    let t = line.trim_start_matches([' ', '\t']);
    if t.trim().is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let mut words = t.split_whitespace();
    let (Some(num), Some(name)) = (words.next(), words.next()) else {
        return Err(format!("expected `<number> <name>`, found {:?}", t.trim()));
    };
    let id = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => num.parse::<u32>(),
    }
    .map_err(|_| format!("{num:?} is not a number"))?;
    Ok(Some((id, name)))
}

/// The first line of roce-net's names file, whoever writes it (apply's step or
/// `persist`). A file that starts with it is roce-net's: its `<id> <name>`
/// lines are the ones apply may replace or remove.
pub(crate) const NAMES_HEADER: &str =
    "# Managed by roce-net: routing tables of its per-NIC source routing.";

/// The one rule for a table name roce-net registers, shared by the policy
/// (which refuses a prefix or an interface whose table name breaks it), apply's
/// writer and persist: letters, digits, `.`, `-`, `_`, at most
/// [`MAX_TABLE_NAME`] bytes, and not only digits (iproute2 reads a number as a
/// table id, not a name). Interface names may hold other characters (`+`, `@`,
/// `:`), which `ip route ... table NAME` and the boot-time backends do not all
/// accept.
pub(crate) fn check_table_name(id: u32, name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name.len() > MAX_TABLE_NAME {
        Some(format!(
            "it is {} bytes long (at most {MAX_TABLE_NAME})",
            name.len()
        ))
    } else if name.bytes().all(|b| b.is_ascii_digit()) {
        Some("it is only digits, which iproute2 reads as a table number".to_string())
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
            .map(|c| format!("it contains {c:?}; use letters, digits, '.', '-' or '_'"))
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "table name {name:?} for table {id} cannot be registered in rt_tables.d: {why}"
            ),
        )),
    }
}

/// The longest table name roce-net registers (iproute2 itself reads names into
/// a 512-byte buffer; a NIC's name is at most 15 bytes).
pub(crate) const MAX_TABLE_NAME: usize = 64;

/// The whole text of roce-net's names file holding `names` (what `persist`
/// writes for boot; apply edits the same file line by line). Every name is
/// checked with [`check_table_name`].
pub(crate) fn render_names_file(names: &BTreeMap<u32, String>) -> Result<String> {
    use std::fmt::Write;
    let mut t = String::new();
    t.push_str(NAMES_HEADER);
    t.push('\n');
    for (id, name) in names {
        check_table_name(*id, name)?;
        let _ = writeln!(t, "{id}\t{name}");
    }
    Ok(t)
}

#[cfg(test)]
mod unit {
    use super::*;
    #[test]
    fn lines() {
        assert_eq!(parse_line("255\tlocal"), Ok(Some((255, "local"))));
        assert_eq!(parse_line("  0x10  dhcp # comment"), Ok(Some((16, "dhcp"))));
        assert_eq!(parse_line("1000 nic0 trailing"), Ok(Some((1000, "nic0"))));
        assert_eq!(parse_line("# 100 foo"), Ok(None));
        assert_eq!(parse_line("   "), Ok(None));
        assert_eq!(parse_line(""), Ok(None));
        assert!(parse_line("100").is_err());
        assert!(parse_line("abc def").is_err());
        assert!(parse_line("-1 neg").is_err());
        assert!(parse_line("0xzz bad").is_err());
    }
}

#[cfg(test)]
mod tests;
