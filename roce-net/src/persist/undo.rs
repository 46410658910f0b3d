//! What one `persist` changed under a [`PersistRoot`], and putting it back.
//!
//! [`capture`] reads every path a persist may touch (roce-net's own paths, the
//! files of the rendering, each one's `.roce-net.bak` and `.roce-net.orig`)
//! and which of their directories exist; [`changes`] compares two captures
//! (before and after a persist) into [`PersistedFile`]s: each changed path with
//! its previous content (or its absence) and a digest of what persist left.
//! [`restore`] puts them back through the persistence writer
//! ([`super::switch::write_all`]: staged, all or nothing, never through a
//! link, repaired at boot when killed half way), after checking that nothing
//! changed them since: a file someone else changed is refused, named, with
//! what to do.
//!
//! roce-net's table-names file (`rt_tables.d/roce-net.conf`) is host-wide and
//! every live apply edits it line by line: it is put back under its host-wide
//! lock, and when another writer changed its lines since the persist, only the
//! boot marks that persist added are taken out (the rest is theirs); the
//! rollback's own journal then removes the names its apply registered.

use super::existing::inspect;
use super::write::{owned_candidates, PersistRoot, BACKUP_SUFFIX, ORIGINAL_SUFFIX};
use crate::error::{Error, ErrorKind, Result};
use crate::files::walk::{relative, walk_parent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most a recorded file's previous content may hold: roce-net's paths
/// hold small configuration files; a bigger one is refused, not truncated.
pub(crate) const MAX_RECORDED_FILE: usize = 1 << 20;
/// The most every recorded file's previous content may hold together.
pub(crate) const MAX_RECORDED_TOTAL: usize = 8 << 20;

/// A file's content as recorded: text when it is UTF-8, else hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordedContent {
    /// UTF-8 text, as is.
    Text(String),
    /// Any other bytes, two hex digits each.
    Hex(String),
}

impl RecordedContent {
    fn of(bytes: &[u8]) -> RecordedContent {
        match std::str::from_utf8(bytes) {
            Ok(s) => RecordedContent::Text(s.to_string()),
            Err(_) => RecordedContent::Hex(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        }
    }

    fn bytes(&self) -> Result<Vec<u8>> {
        match self {
            RecordedContent::Text(s) => Ok(s.as_bytes().to_vec()),
            RecordedContent::Hex(h) => {
                let bad =
                    || Error::new(ErrorKind::Parse, "a recorded file's hex content is not hex");
                if h.len() % 2 != 0 {
                    return Err(bad());
                }
                (0..h.len())
                    .step_by(2)
                    .map(|i| {
                        h.get(i..i + 2)
                            .and_then(|d| u8::from_str_radix(d, 16).ok())
                            .ok_or_else(bad)
                    })
                    .collect()
            }
        }
    }
}

/// What was at a path before a persist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileBefore {
    /// Permission bits.
    pub mode: u32,
    /// The content.
    pub content: RecordedContent,
}

/// One path a persist changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PersistedFile {
    /// The path as on the target host (`/etc/sysctl.d/90-roce-net.conf`).
    pub path: PathBuf,
    /// What was there before (`None`: nothing).
    pub before: Option<FileBefore>,
    /// Digest of what persist left there (`None`: nothing, it removed it).
    pub after: Option<String>,
}

/// Every path under `target` that a persist rendering `files` may touch: the
/// files, roce-net's own paths, and each one's backup and original.
pub(crate) fn candidates(target: &PersistRoot, files: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    for p in owned_candidates(target)
        .into_iter()
        .chain(files.iter().cloned())
    {
        for s in ["", BACKUP_SUFFIX, ORIGINAL_SUFFIX] {
            let q = PathBuf::from(format!("{}{s}", p.display()));
            if !v.contains(&q) {
                v.push(q);
            }
        }
    }
    v
}

/// The paths of [`candidates`] as they are now, and which of their parent
/// directories (under the root they live in) exist.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    files: BTreeMap<PathBuf, Option<(Vec<u8>, u32)>>,
    dirs: BTreeMap<PathBuf, bool>,
}

/// Read `paths` under `target` (bounded, never through a link).
pub(crate) fn capture(target: &PersistRoot, paths: &[PathBuf]) -> Result<Capture> {
    let mut c = Capture::default();
    for host in paths {
        let (base, hp) = target.locate(host)?;
        let e = inspect(base, &hp)?;
        c.files.insert(
            host.clone(),
            e.content.map(|b| (b, e.mode.unwrap_or(0o644))),
        );
        let mut d = host.parent();
        while let Some(dir) = d {
            if dir == Path::new("/") || dir == Path::new("/etc") || dir == Path::new("/run") {
                break;
            }
            c.dirs
                .insert(dir.to_path_buf(), target.on_disk(dir)?.is_dir());
            d = dir.parent();
        }
    }
    Ok(c)
}

/// What changed from `before` to `after` (two captures of the same paths):
/// the files, and the directories that did not exist before (deepest first).
pub(crate) fn changes(
    before: &Capture,
    after: &Capture,
) -> Result<(Vec<PersistedFile>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut total = 0usize;
    for (path, now) in &after.files {
        let was = before.files.get(path).cloned().flatten();
        if was == *now {
            continue;
        }
        let before = match was {
            Some((bytes, mode)) => {
                if bytes.len() > MAX_RECORDED_FILE {
                    return Err(too_big(path, bytes.len()));
                }
                total += bytes.len();
                Some(FileBefore {
                    mode,
                    content: RecordedContent::of(&bytes),
                })
            }
            None => None,
        };
        if total > MAX_RECORDED_TOTAL {
            return Err(too_big(path, total));
        }
        files.push(PersistedFile {
            path: path.clone(),
            before,
            after: now.as_ref().map(|(b, _)| super::switch::digest(b)),
        });
    }
    let mut dirs: Vec<PathBuf> = after
        .dirs
        .iter()
        .filter(|(d, now)| **now && before.dirs.get(*d) == Some(&false))
        .map(|(d, _)| d.clone())
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    Ok((files, dirs))
}

fn too_big(path: &Path, len: usize) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{} holds {len} bytes, more than roce-net keeps to put it back on rollback \
             ({MAX_RECORDED_FILE} a file, {MAX_RECORDED_TOTAL} in all); move it aside and \
             persist again",
            path.display()
        ),
    )
}

/// `earlier` (an earlier persist for the same apply) followed by `later`: each
/// path keeps its first `before` and takes its last `after`; a path back where
/// it started is dropped.
pub(crate) fn merge(earlier: &[PersistedFile], later: Vec<PersistedFile>) -> Vec<PersistedFile> {
    let mut out: Vec<PersistedFile> = earlier.to_vec();
    for f in later {
        match out.iter_mut().find(|e| e.path == f.path) {
            Some(e) => e.after = f.after,
            None => out.push(f),
        }
    }
    out.retain(|f| {
        let back = match (&f.before, &f.after) {
            (None, None) => true,
            (Some(b), Some(a)) => b
                .content
                .bytes()
                .map(|x| super::switch::digest(&x) == *a)
                .unwrap_or(false),
            _ => false,
        };
        !back
    });
    out
}

/// What [`restore`] put back (paths on disk).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RestoreReport {
    /// Files given back the content they had before persist.
    pub restored: Vec<PathBuf>,
    /// Files persist created, removed.
    pub removed: Vec<PathBuf>,
    /// Directories persist created, removed (those left empty).
    pub dirs_removed: Vec<PathBuf>,
}

impl RestoreReport {
    /// One line per file, for a report.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .restored
            .iter()
            .map(|p| format!("put back {} as it was before persist", p.display()))
            .collect();
        v.extend(
            self.removed
                .iter()
                .map(|p| format!("removed {} (persist created it)", p.display())),
        );
        v
    }
}

/// Put `files` back under `target` as they were before the persist that
/// changed them, and remove the directories it created (`dirs`, deepest
/// first) when left empty. Every file is checked first: one that holds
/// neither what persist left nor what was there before (someone changed it
/// since) fails the whole call with nothing changed (`ErrorKind::Drift`,
/// naming the file and what to do); a missing file is put back (nothing is
/// there to overwrite). A file already as it was is left alone, so a
/// restore interrupted after its switch finishes when run again.
pub(crate) fn restore(
    target: &PersistRoot,
    files: &[PersistedFile],
    dirs: &[PathBuf],
) -> Result<RestoreReport> {
    let mut report = RestoreReport::default();
    let mut todo = Vec::new();
    // The names file is host-wide: checked and written under its lock, held
    // until the set is switched.
    let mut held = Vec::new();
    for f in files {
        let (base, hp) = target.locate(&f.path)?;
        if f.path == Path::new(super::RT_TABLES_PATH) {
            if let Some((dir, _)) = walk_parent(base, &hp, false)? {
                held.push(crate::rt_tables::lock_names_dir(
                    &dir,
                    &base.join(relative(&hp)?),
                )?);
            }
        }
        let on_disk = base.join(relative(&hp)?);
        let now = inspect(base, &hp)?;
        let before = match &f.before {
            Some(b) => Some((b.content.bytes()?, b.mode)),
            None => None,
        };
        let already = match (&now.content, &before) {
            (None, None) => true,
            (Some(c), Some((b, m))) => c == b && now.mode == Some(*m),
            _ => false,
        };
        if already {
            continue;
        }
        let mut before = before;
        if let Some(c) = &now.content {
            if f.after.as_deref() != Some(super::switch::digest(c).as_str()) {
                if f.path != Path::new(super::RT_TABLES_PATH) {
                    return Err(drifted(&on_disk, f.before.is_some()));
                }
                // Another apply changed its lines since: keep them, take out
                // only what persist marked as boot configuration.
                let was = before
                    .as_ref()
                    .map(|(b, _)| String::from_utf8_lossy(b).into_owned());
                let text = crate::rt_tables::unmark_boot_names(
                    &String::from_utf8_lossy(c),
                    was.as_deref().unwrap_or(""),
                );
                before = Some((text.into_bytes(), now.mode.unwrap_or(0o644)));
            }
        }
        match &before {
            Some(_) => report.restored.push(on_disk.clone()),
            None => report.removed.push(on_disk.clone()),
        }
        todo.push((base.to_path_buf(), hp, on_disk, before));
    }
    let mut items = Vec::new();
    for (base, hp, on_disk, before) in todo {
        let Some((dir, name)) = walk_parent(&base, &hp, before.is_some())? else {
            continue;
        };
        let (content, mode) = match before {
            Some((b, m)) => (Some(b), m),
            None => (None, 0),
        };
        items.push(super::switch::Item {
            target: super::switch::Target {
                dir,
                name,
                shown: on_disk,
            },
            content,
            mode,
        });
    }
    if !items.is_empty() {
        super::switch::write_all(&items).map_err(|e| {
            e.context("putting back the boot configuration as it was before persist")
        })?;
    }
    drop(held);
    for d in dirs {
        let on_disk = target.on_disk(d)?;
        // Only an empty directory goes (rmdir fails otherwise: fine, it holds
        // someone's files now); never through a link.
        let is_dir = std::fs::symlink_metadata(&on_disk).is_ok_and(|m| m.is_dir());
        if is_dir && std::fs::remove_dir(&on_disk).is_ok() {
            report.dirs_removed.push(on_disk);
        }
    }
    Ok(report)
}

fn drifted(on_disk: &Path, had_before: bool) -> Error {
    let after = if had_before {
        "rollback then puts back what was there before persist"
    } else {
        "persist created it, so rollback then leaves it absent"
    };
    Error::new(
        ErrorKind::Drift,
        format!(
            "{} was changed since persist wrote it for this apply: rollback refuses to \
             overwrite it, and changed nothing (neither the network nor any file). Move your \
             version aside (mv {} {}.mine) and run `roce-net rollback` again ({after}), or \
             keep the host as it is and `roce-net archive` the journal",
            on_disk.display(),
            crate::model::shell_word(&on_disk.to_string_lossy()),
            crate::model::shell_word(&on_disk.to_string_lossy())
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::{write_persistence_at, RenderedFile};

    fn file(path: &str, content: &str) -> RenderedFile {
        RenderedFile {
            path: PathBuf::from(path),
            content: format!("{}\n{content}", crate::persist::common::HEADER),
            mode: 0o644,
            note: None,
        }
    }

    fn all(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                if p.is_dir() {
                    stack.push(p);
                    out.insert(rel, None);
                } else {
                    out.insert(rel, Some(std::fs::read(&p).unwrap()));
                }
            }
        }
        out
    }

    /// Two persists (the second replaces the first's sysctl file): restoring
    /// the merged record puts the tree back as it was before the first, an
    /// operator's file at roce-net's path included, and directories persist
    /// made are gone; restoring again changes nothing.
    #[test]
    fn two_persists_are_put_back_as_before_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let t = PersistRoot::new(tmp.path());
        std::fs::create_dir_all(tmp.path().join("etc/sysctl.d")).unwrap();
        std::fs::write(
            tmp.path().join("etc/sysctl.d/90-roce-net.conf"),
            [0xffu8, 0, 1],
        )
        .unwrap();
        let before = all(tmp.path());
        let mut record = Vec::new();
        let mut dirs = Vec::new();
        for v in ["a = 1\n", "a = 2\n"] {
            let files = vec![
                file(super::super::SYSCTL_PATH, v),
                file(super::super::RT_PROTOS_PATH, "201 roce-net\n"),
            ];
            let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
            let c = candidates(&t, &paths);
            let b = capture(&t, &c).unwrap();
            write_persistence_at(&files, &t, false).unwrap();
            let (changed, d) = changes(&b, &capture(&t, &c).unwrap()).unwrap();
            record = merge(&record, changed);
            dirs.extend(d);
        }
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        assert_ne!(all(tmp.path()), before);
        let r = restore(&t, &record, &dirs).unwrap();
        assert_eq!(all(tmp.path()), before, "{r:?}");
        assert!(
            r.restored
                .iter()
                .any(|p| p.ends_with("sysctl.d/90-roce-net.conf")),
            "{r:?}"
        );
        assert_eq!(
            restore(&t, &record, &dirs).unwrap(),
            RestoreReport::default()
        );
    }

    /// A recorded file changed since: refused with nothing changed, the
    /// file named; a missing one is put back.
    #[test]
    fn a_file_changed_since_is_refused_and_nothing_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let t = PersistRoot::new(tmp.path());
        let files = vec![
            file(super::super::SYSCTL_PATH, "a = 1\n"),
            file(super::super::RT_PROTOS_PATH, "201 roce-net\n"),
        ];
        let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
        let c = candidates(&t, &paths);
        let b = capture(&t, &c).unwrap();
        write_persistence_at(&files, &t, false).unwrap();
        let (record, dirs) = changes(&b, &capture(&t, &c).unwrap()).unwrap();
        let sysctl = tmp.path().join("etc/sysctl.d/90-roce-net.conf");
        std::fs::write(&sysctl, "edited\n").unwrap();
        let now = all(tmp.path());
        let e = restore(&t, &record, &dirs).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Drift, "{e}");
        assert!(e.to_string().contains(&sysctl.display().to_string()), "{e}");
        assert_eq!(all(tmp.path()), now, "nothing changed");
        std::fs::remove_file(&sysctl).unwrap();
        restore(&t, &record, &dirs).unwrap();
        assert!(!tmp.path().join("etc/sysctl.d").exists());
    }

    /// The names file changed by another writer since: only persist's boot
    /// marks go, the other lines stay.
    #[test]
    fn the_names_file_loses_only_persists_boot_marks_when_changed_since() {
        let h = crate::rt_tables::NAMES_HEADER;
        let m = crate::rt_tables::BOOT_MARK;
        let before = format!("{h}\n{m} 7\n7\tother\n1001\troce_r0\n");
        let now = format!("{h}\n{m} 7 1001\n7\tother\n1001\troce_r0\n1002\troce_x\n");
        assert_eq!(
            crate::rt_tables::unmark_boot_names(&now, &before),
            format!("{h}\n{m} 7\n7\tother\n1001\troce_r0\n1002\troce_x\n")
        );
        assert_eq!(
            crate::rt_tables::unmark_boot_names(&now, ""),
            format!("{h}\n7\tother\n1001\troce_r0\n1002\troce_x\n")
        );
    }

    #[test]
    fn recorded_content_keeps_any_bytes() {
        for b in [&b"text\n"[..], &[0xff, 0x00, 0x10][..], &[][..]] {
            assert_eq!(RecordedContent::of(b).bytes().unwrap(), b);
        }
        assert!(RecordedContent::Hex("f".into()).bytes().is_err());
        assert!(RecordedContent::Hex("zz".into()).bytes().is_err());
    }
}
