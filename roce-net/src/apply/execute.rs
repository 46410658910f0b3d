//! Carrying out one [`Change`] on a host: netlink for routes, rules and
//! neighbours, `/proc/sys` for sysctls, a file for table names.

use crate::error::{Error, ErrorKind, Result};
use crate::model::Neighbor;
use crate::observe::netlink::Netlink;
use crate::observe::procfs;
use crate::plan::Change;
use std::path::Path;

/// The file roce-net registers its table names in.
pub const TABLE_NAMES_FILE: &str = "iproute2/rt_tables.d/roce-net.conf";

/// Where a change is carried out.
pub struct Target<'a> {
    /// Netlink socket inside the namespace.
    pub nl: &'a mut Netlink,
    /// `/proc/sys` as seen from inside the namespace.
    pub proc_sys: &'a Path,
    /// `/etc` root for table names.
    pub etc_root: &'a Path,
}

/// Carry out one change. `tolerant` makes "already there" / "already gone"
/// outcomes succeed, which rollback needs after a crash (a step may or may not
/// have reached the kernel).
pub fn execute(t: &mut Target<'_>, change: &Change, tolerant: bool) -> Result<()> {
    let ok_if = |r: Result<()>, errno: i32| -> Result<()> {
        match r {
            Err(e) if tolerant && e.errno_value() == Some(errno) => Ok(()),
            other => other,
        }
    };
    match change {
        Change::SetSysctl { sysctl, after, .. } => procfs::set_sysctl(t.proc_sys, sysctl, after),
        Change::AddRoute { route } => ok_if(t.nl.route_add(route), libc::EEXIST),
        Change::DeleteRoute { route } => ok_if(t.nl.route_del(route), libc::ESRCH),
        Change::ReplaceRoute { after, .. } => t.nl.route_replace(after),
        Change::AddRule { rule } => ok_if(t.nl.rule_add(rule), libc::EEXIST),
        Change::DeleteRule { rule } => ok_if(t.nl.rule_del(rule), libc::ENOENT),
        Change::FlushNeighbors { entries, .. } => {
            for n in entries {
                match t.nl.neigh_del(n) {
                    // Gone already (expired or flushed by the kernel): that is the goal.
                    Err(e) if e.errno_value() == Some(libc::ENOENT) => {}
                    other => other?,
                }
            }
            Ok(())
        }
        Change::RestoreNeighbors { entries, .. } => {
            for n in entries {
                restore_neighbor(t.nl, n)?;
            }
            Ok(())
        }
        Change::RegisterTableName { id, name, .. } => set_table_name(t.etc_root, *id, Some(name)),
        Change::UnregisterTableName { id, .. } => set_table_name(t.etc_root, *id, None),
    }
}

fn restore_neighbor(nl: &mut Netlink, n: &Neighbor) -> Result<()> {
    match nl.neigh_add(n) {
        Err(e) if e.errno_value() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

/// Set (or with `None`, remove) the name of table `id` in roce-net's own
/// `rt_tables.d` file, atomically. Other files are never edited.
pub fn set_table_name(etc_root: &Path, id: u32, name: Option<&str>) -> Result<()> {
    set_table_names(etc_root, &[(id, name)])
}

/// Refuse a table name `rt_tables` cannot hold.
pub(crate) fn check_table_name(id: u32, name: &str) -> Result<()> {
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("table name {name:?} for table {id} must be one word"),
        ));
    }
    Ok(())
}

/// The file's text after setting (or removing) one name; `None` when nothing
/// but comments would be left, so the file is removed.
fn name_update(old: &str, id: u32, name: Option<&str>) -> Result<Option<String>> {
    let mut lines: Vec<String> = old
        .lines()
        .filter(|l| {
            let first = l.split_whitespace().next().unwrap_or("");
            first.parse::<u32>().ok() != Some(id)
        })
        .map(str::to_string)
        .collect();
    if let Some(n) = name {
        check_table_name(id, n)?;
        lines.push(format!("{id}\t{n}"));
    }
    if lines.is_empty() || lines.iter().all(|l| l.starts_with('#')) {
        return Ok(None);
    }
    if !old.contains("# Managed by roce-net") {
        lines.insert(
            0,
            "# Managed by roce-net: routing tables of its per-NIC source routing.".into(),
        );
    }
    Ok(Some(lines.join("\n") + "\n"))
}

/// Several [`set_table_name`] updates in order, with one read and one atomic
/// write of the file: the result is the file the updates one by one would leave.
/// On an invalid name nothing is written.
pub(crate) fn set_table_names(etc_root: &Path, updates: &[(u32, Option<&str>)]) -> Result<()> {
    let path = etc_root.join(TABLE_NAMES_FILE);
    let old = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(e, format!("reading {}", path.display()))),
    };
    let mut text = Some(old);
    for (id, name) in updates {
        text = name_update(text.as_deref().unwrap_or(""), *id, *name)?;
    }
    let Some(text) = text else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io(e, format!("removing {}", path.display())))
            }
            _ => Ok(()),
        };
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(e, format!("creating {}", dir.display())))?;
    }
    let tmp = path.with_extension("conf.roce-net-tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| Error::io(e, format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(etc: &Path) -> Option<String> {
        std::fs::read_to_string(etc.join(TABLE_NAMES_FILE)).ok()
    }

    type Updates<'a> = Vec<(u32, Option<&'a str>)>;

    #[test]
    fn batched_table_names_leave_the_file_one_by_one_would() {
        let cases: Vec<(Option<&str>, Updates)> = vec![
            (
                None,
                vec![(1001, Some("a")), (1002, Some("b")), (1003, Some("c"))],
            ),
            (
                Some("1001\told\n# a note\n"),
                vec![(1001, Some("a")), (1002, Some("b")), (1001, None)],
            ),
            (
                Some("# Managed by roce-net: x\n1001\ta\n"),
                vec![(1001, None), (1002, Some("b"))],
            ),
            (Some("1001\ta\n"), vec![(1001, None)]),
            (
                None,
                vec![(1001, Some("a")), (1001, None), (1002, Some("b"))],
            ),
        ];
        for (start, updates) in cases {
            let one = tempfile::tempdir().unwrap();
            let all = tempfile::tempdir().unwrap();
            for d in [one.path(), all.path()] {
                if let Some(s) = start {
                    let p = d.join(TABLE_NAMES_FILE);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, s).unwrap();
                }
            }
            for (id, name) in &updates {
                set_table_name(one.path(), *id, *name).unwrap();
            }
            set_table_names(all.path(), &updates).unwrap();
            assert_eq!(read(one.path()), read(all.path()), "{start:?} {updates:?}");
        }
    }

    #[test]
    fn an_invalid_name_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let e =
            set_table_names(d.path(), &[(1001, Some("a")), (1002, Some("two words"))]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("1002"), "{e}");
        assert_eq!(read(d.path()), None);
    }
}
