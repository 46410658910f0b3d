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
pub(crate) use write::{
    lock_names_dir, own_table_names, update_table_names, NameUpdate, NamesHeld,
};

/// The file roce-net registers its table names in, under an `/etc` root. roce-net
/// writes no other iproute2 file. This module owns it: its header
/// (`NAMES_HEADER`), the rule for names (`check_table_name`), its text
/// (`render_names_file`) and its host-wide lock. Apply edits it only through
/// `update_table_names` (see `write.rs`: the lock, unique temporary files,
/// exact updates); `persist` writes the text this module renders while holding
/// the same lock (`lock_names_dir`).
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
// Not read by the snapshot yet; for persistence to check roce-net's protocol
// registration against.
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
    warnings.push(crate::model::Warning::about_file(path, message));
}

/// Read one database file into `out`. Returns false only when the file does not
/// exist (so the caller can fall back); other failures are warnings.
fn read_file(
    path: &Path,
    max: u32,
    out: &mut BTreeMap<u32, String>,
    warnings: &mut Vec<Warning>,
) -> bool {
    let text = match crate::input::read_input_if_exists(path, crate::input::InputKind::TableNames) {
        Ok(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(None) => return false,
        Err(e) => {
            warn(warnings, path, format!("cannot read: {e}"));
            return true;
        }
    };
    parse_names_text(&text, path, max, out, warnings);
    true
}

/// The `<number> <name>` lines of one database file's text into `out`; bad lines
/// are warnings (at most 16 per file, then one summary).
pub(crate) fn parse_names_text(
    text: &str,
    path: &Path,
    max: u32,
    out: &mut BTreeMap<u32, String>,
    warnings: &mut Vec<Warning>,
) {
    // At most this many warnings per file: a file of garbage is one short report.
    const MAX_LINE_WARNINGS: usize = 16;
    let mut bad = 0usize;
    let mut note = |warnings: &mut Vec<Warning>, msg: String| {
        bad += 1;
        if bad <= MAX_LINE_WARNINGS {
            warn(warnings, path, msg);
        }
    };
    for (n, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some((id, _))) if id > max => note(
                warnings,
                format!(
                    "line {}: number {id} is above the maximum {max}; skipped",
                    n + 1
                ),
            ),
            Ok(Some((id, name))) => {
                out.insert(id, name.to_string());
            }
            Err(why) => note(warnings, format!("line {}: {why}; skipped", n + 1)),
        }
    }
    if bad > MAX_LINE_WARNINGS {
        warn(
            warnings,
            path,
            format!("{} more lines skipped (not shown)", bad - MAX_LINE_WARNINGS),
        );
    }
}

/// Parse one line: `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<(u32, &str)>, String> {
    let t = line.trim_start_matches([' ', '\t']);
    if t.trim().is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let mut words = t.split_whitespace();
    let (Some(num), Some(name)) = (words.next(), words.next()) else {
        return Err(format!(
            "expected `<number> <name>`, found {}",
            crate::input::excerpt(t.trim(), 64)
        ));
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

/// The comment line `persist` adds after the header, listing the table ids
/// whose names it wrote as boot configuration: a rollback of a live apply
/// leaves those names in place. Apply writes no such line (and keeps it).
pub(crate) const BOOT_MARK: &str = "# Written for boot by roce-net persist, tables:";

/// Whether the names file `lines` mark table `id`'s name as boot configuration
/// (see [`BOOT_MARK`]).
pub(crate) fn is_boot_name(lines: &[String], id: u32) -> bool {
    lines.iter().any(|l| {
        l.strip_prefix(BOOT_MARK).is_some_and(|ids| {
            ids.split_whitespace()
                .any(|w| w.parse::<u32>().ok() == Some(id))
        })
    })
}

/// The [`BOOT_MARK`] line for `ids`.
fn boot_line(ids: impl Iterator<Item = u32>) -> String {
    let mut s = BOOT_MARK.to_string();
    for id in ids {
        s.push_str(&format!(" {id}"));
    }
    s
}

/// The longest table name roce-net writes, in bytes.
///
/// iproute2 (lib/rt_names.c, 6.1 here) reads each `rt_tables` line with
/// `fgets` into a 512-byte buffer: a longer line is reported as "Database ... is
/// corrupted" and every line after it in that file is lost (tried here with a
/// 600-character name). 63 bytes keeps every line far below that and `ip route`
/// output readable; an interface name adds at most 15 bytes to the prefix, so
/// a prefix may have [`MAX_TABLE_PREFIX_LEN`] bytes.
pub const MAX_TABLE_NAME_LEN: usize = 63;

/// The longest `routing.table_name_prefix`: [`MAX_TABLE_NAME_LEN`] less the 15
/// bytes of the longest interface name.
pub const MAX_TABLE_PREFIX_LEN: usize = MAX_TABLE_NAME_LEN - 15;

/// Why `name` cannot be a table name in `rt_tables`, or `None` when it can:
/// 1..=[`MAX_TABLE_NAME_LEN`] bytes of ASCII letters, digits, `_`, `-`, `.`; not a
/// number (iproute2 would read `ip route show table 123` as table id 123); not one
/// of iproute2's built-in names (`local`, `main`, `default`, `unspec`).
pub fn table_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".to_string());
    }
    if name.len() > MAX_TABLE_NAME_LEN {
        return Some(format!(
            "it has {} bytes, more than the {MAX_TABLE_NAME_LEN} iproute2's rt_tables files \
             hold safely",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Some(format!(
            "it contains {}; use letters, digits, '_', '-' or '.'",
            crate::input::excerpt(&c.to_string(), 4)
        ));
    }
    let numeric = name.bytes().all(|b| b.is_ascii_digit())
        || name
            .strip_prefix("0x")
            .or_else(|| name.strip_prefix("0X"))
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Some("it is a number, which iproute2 reads as a table id".to_string());
    }
    if matches!(name, "local" | "main" | "default" | "unspec") {
        return Some("it is one of iproute2's built-in table names".to_string());
    }
    None
}

/// Refuse a table name `rt_tables` cannot hold.
pub(crate) fn check_table_name(id: u32, name: &str) -> Result<()> {
    if let Some(why) = table_name_problem(name) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "table name {} for table {id} is not a valid iproute2 table name: {why}",
                crate::input::excerpt(name, 64)
            ),
        ));
    }
    Ok(())
}

/// The whole text of roce-net's names file holding `names` (what `persist`
/// writes for boot; apply edits the same file line by line). Every name is
/// checked with `check_table_name`.
pub(crate) fn render_names_file(names: &BTreeMap<u32, String>) -> Result<String> {
    use std::fmt::Write;
    let mut t = String::new();
    t.push_str(NAMES_HEADER);
    t.push('\n');
    if !names.is_empty() {
        t.push_str(&boot_line(names.keys().copied()));
        t.push('\n');
    }
    for (id, name) in names {
        check_table_name(*id, name)?;
        let _ = writeln!(t, "{id}\t{name}");
    }
    Ok(t)
}

/// `rendered` (a names file from `render_names_file`, what `persist` writes)
/// with the lines of `existing` (the file on disk now, if any) for the tables
/// `rendered` does not name: the whole file again, every table by id. The names
/// file is host-wide: another namespace's apply (same numbers, other NICs), or a
/// live apply of a table the policy no longer has, put those lines there, and
/// persisting one namespace must not take them away. A kept line whose name
/// `rendered` gives another table, or that is no valid name, is dropped. With
/// nothing to keep, `rendered` is returned as is.
pub(crate) fn merge_names_file(rendered: &str, existing: Option<&[u8]>) -> String {
    use std::fmt::Write;
    let names = |text: &str| -> BTreeMap<u32, String> {
        text.lines()
            .filter_map(|l| parse_line(l).ok().flatten())
            .map(|(id, n)| (id, n.to_string()))
            .collect()
    };
    let Some(existing) = existing else {
        return rendered.to_string();
    };
    let mut all = names(rendered);
    let boot: Vec<u32> = all.keys().copied().collect();
    let kept: Vec<(u32, String)> = names(&String::from_utf8_lossy(existing))
        .into_iter()
        .filter(|(id, n)| {
            !all.contains_key(id)
                && !all.values().any(|o| o == n)
                && table_name_problem(n).is_none()
        })
        .collect();
    if kept.is_empty() {
        return rendered.to_string();
    }
    // A kept name another persist wrote for boot stays boot configuration.
    let old_lines: Vec<String> = String::from_utf8_lossy(existing)
        .lines()
        .map(str::to_string)
        .collect();
    let mut boot = boot;
    boot.extend(
        kept.iter()
            .map(|(id, _)| *id)
            .filter(|id| is_boot_name(&old_lines, *id)),
    );
    boot.sort_unstable();
    all.extend(kept);
    // As render_names_file (every name is checked: the rendered ones there,
    // the kept ones above).
    let mut t = String::new();
    t.push_str(NAMES_HEADER);
    t.push('\n');
    if !boot.is_empty() {
        t.push_str(&boot_line(boot.into_iter()));
        t.push('\n');
    }
    for (id, name) in &all {
        let _ = writeln!(t, "{id}\t{name}");
    }
    t
}

/// The names file `current` without the boot marks `persist` added since
/// `before` (the file as it was before that persist): each table id marked in
/// `current` but not in `before` loses its mark, every other line is kept (a
/// rollback of the apply then removes that apply's own lines).
pub(crate) fn unmark_boot_names(current: &str, before: &str) -> String {
    let old: Vec<String> = before.lines().map(str::to_string).collect();
    let mut t = String::new();
    for l in current.lines() {
        match l.strip_prefix(BOOT_MARK) {
            Some(ids) => {
                let keep: Vec<u32> = ids
                    .split_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok())
                    .filter(|id| is_boot_name(&old, *id))
                    .collect();
                if !keep.is_empty() {
                    t.push_str(&boot_line(keep.into_iter()));
                    t.push('\n');
                }
            }
            None => {
                t.push_str(l);
                t.push('\n');
            }
        }
    }
    t
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

    /// Persist's names file keeps the lines of tables it does not name (another
    /// namespace's), drops a kept line whose name it now gives another table,
    /// and is stable: merging its own output again changes nothing.
    #[test]
    fn merged_names_keep_other_tables() {
        let mut ours = BTreeMap::new();
        ours.insert(1001, "roce_ens0f0np0".to_string());
        ours.insert(1002, "roce_ens0f1np1".to_string());
        let rendered = render_names_file(&ours).unwrap();
        let on_disk = format!(
            "{NAMES_HEADER}\n1001\troce_r0\n1002\troce_ens0f1np1\n1005\troce_ens2\n\
             1006\troce_ens0f0np0\n1007\tbad/name\n"
        );
        let merged = merge_names_file(&rendered, Some(on_disk.as_bytes()));
        assert_eq!(merged, format!("{rendered}1005\troce_ens2\n"));
        // Kept lines go where their table id puts them.
        let mut ours = BTreeMap::new();
        ours.insert(1003, "roce_b".to_string());
        let r = render_names_file(&ours).unwrap();
        let on_disk = format!("{NAMES_HEADER}\n1001\troce_a\n1005\troce_c\n");
        assert_eq!(
            merge_names_file(&r, Some(on_disk.as_bytes())),
            format!("{NAMES_HEADER}\n{BOOT_MARK} 1003\n1001\troce_a\n1003\troce_b\n1005\troce_c\n")
        );
        assert_eq!(merge_names_file(&rendered, Some(merged.as_bytes())), merged);
        assert_eq!(merge_names_file(&rendered, None), rendered);
        assert_eq!(
            merge_names_file(&rendered, Some(rendered.as_bytes())),
            rendered
        );
    }
}

#[cfg(test)]
mod tests;
