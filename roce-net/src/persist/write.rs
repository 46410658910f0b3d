//! Writing rendered files safely: relative to a root, component by component with
//! `openat(O_NOFOLLOW)`, atomically (temp file + fsync + rename), keeping a backup,
//! and never through a symlink; and removing what roce-net wrote.

use super::diff::{diff_one, DiffStatus, FileDiff};
use super::existing::{inspect, merged_names, Existing};
use super::RenderedFile;
use crate::error::{Error, ErrorKind, Result};
use crate::files::walk::{cstr, is_kind, lstat_at, relative, symlink_refused, walk_parent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Suffix of the file that keeps a file's previous content.
pub const BACKUP_SUFFIX: &str = ".roce-net.bak";
/// Suffix of the file that keeps what was there before roce-net first wrote a
/// path (restored by [`remove_persistence`]).
pub const ORIGINAL_SUFFIX: &str = ".roce-net.orig";

/// Where the node's trees are: the target host's `/`, with `/etc` and `/run`
/// possibly elsewhere (`--root`, `--etc-root`; temp dirs in tests).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistRoot {
    /// The host's `/` (paths outside `/etc` and `/run` live under it).
    pub root: PathBuf,
    /// The host's `/etc`.
    pub etc: PathBuf,
    /// The host's `/run`.
    pub run: PathBuf,
}

impl PersistRoot {
    /// `root`, with `root/etc` and `root/run`.
    pub fn new(root: impl Into<PathBuf>) -> PersistRoot {
        let root = root.into();
        PersistRoot {
            etc: root.join("etc"),
            run: root.join("run"),
            root,
        }
    }

    /// The same, with `/etc` at `etc`.
    pub fn with_etc(mut self, etc: impl Into<PathBuf>) -> PersistRoot {
        self.etc = etc.into();
        self
    }

    /// The same, with `/run` at `run`.
    pub fn with_run(mut self, run: impl Into<PathBuf>) -> PersistRoot {
        self.run = run.into();
        self
    }

    /// The directory a host path lives under and the path relative to it, as an
    /// absolute path (`/etc/x` -> (`etc`, `/x`)).
    pub(crate) fn locate(&self, host: &Path) -> Result<(&Path, PathBuf)> {
        relative(host)?;
        for (prefix, base) in [("/etc", &self.etc), ("/run", &self.run)] {
            // The default layout is walked from the root itself, so that a
            // symlinked `etc` under it is refused like any other component.
            if *base == self.root.join(&prefix[1..]) {
                continue;
            }
            if let Ok(rest) = host.strip_prefix(prefix) {
                return Ok((base.as_path(), Path::new("/").join(rest)));
            }
        }
        Ok((self.root.as_path(), host.to_path_buf()))
    }

    /// Where a host path is on disk.
    pub fn on_disk(&self, host: &Path) -> Result<PathBuf> {
        let (base, rel) = self.locate(host)?;
        Ok(base.join(relative(&rel)?))
    }
}

/// What [`write_persistence`] did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WriteReport {
    /// True when nothing was changed on disk.
    pub dry_run: bool,
    /// Files written (would be written), as paths on disk (under the root).
    pub written: Vec<PathBuf>,
    /// Files whose content and mode already matched; not touched.
    pub unchanged: Vec<PathBuf>,
    /// Backups of previous contents (`<file>.roce-net.bak`) made (would be made).
    pub backups: Vec<PathBuf>,
    /// Files roce-net did not write that it replaced, kept as
    /// `<file>.roce-net.orig` for [`remove_persistence`] to restore.
    pub originals: Vec<PathBuf>,
    /// One diff per input file, in input order.
    pub diffs: Vec<FileDiff>,
    /// What was put back of an earlier persist that was interrupted while
    /// switching files (a `kill -9`), before this one looked at anything.
    pub recovered: Vec<String>,
    /// The boot-time repair of an interrupted persist
    /// ([`BOOT_REPAIR_PATH`](super::BOOT_REPAIR_PATH)) on disk, when this
    /// persist installed or updated it (would, in a dry run) before switching
    /// its files.
    #[serde(default)]
    pub boot_repair: Option<PathBuf>,
}

/// Write `files` under `root` (`/` on a real host; their absolute paths are taken
/// relative to it). Same as [`write_persistence_at`] with [`PersistRoot::new`].
pub fn write_persistence(
    files: &[RenderedFile],
    root: &Path,
    dry_run: bool,
) -> Result<WriteReport> {
    write_persistence_at(files, &PersistRoot::new(root), dry_run)
}

/// Write `files` under `target` (`/etc/...` paths under `target.etc`).
///
/// All files are checked before anything is written: a symlink anywhere under
/// the root on a file's path, a non-regular file at the target, or a path that is
/// not absolute and plain fails the whole call with nothing changed. Then each
/// changed file is written to a temp file in its directory (`O_CREAT|O_EXCL|
/// O_NOFOLLOW`), given its mode, fsynced, and renamed over the target; the
/// previous content, if any, is kept as `<file>.roce-net.bak` (replacing an older
/// backup), and a file roce-net did not write is also kept, once, as
/// `<file>.roce-net.orig`. Missing parent directories are created (mode 0755).
/// Files whose content and mode already match are not rewritten. With `dry_run`,
/// nothing is written and the report lists what would be.
pub fn write_persistence_at(
    files: &[RenderedFile],
    target: &PersistRoot,
    dry_run: bool,
) -> Result<WriteReport> {
    let mut report = WriteReport {
        dry_run,
        recovered: recover_interrupted(target, files, dry_run)?,
        ..WriteReport::default()
    };
    let mut todo = Vec::new();
    for f in files {
        let (base, hp) = target.locate(&f.path)?;
        let existing = inspect(base, &hp)?;
        let d = diff_one(
            &merged_names(f, &existing),
            &existing,
            &target.on_disk(&f.path)?,
        );
        let on_disk = base.join(relative(&hp)?);
        match d.status {
            DiffStatus::Unchanged => report.unchanged.push(on_disk),
            _ => {
                let mut keep_orig = false;
                if let Some(old) = &existing.content {
                    report.backups.push(suffixed(&on_disk, BACKUP_SUFFIX));
                    let orig = suffixed(&hp, ORIGINAL_SUFFIX);
                    if !is_ours(old) && inspect(base, &orig)?.content.is_none() {
                        report.originals.push(suffixed(&on_disk, ORIGINAL_SUFFIX));
                        keep_orig = true;
                    }
                }
                report.written.push(on_disk);
                todo.push((f, base, hp, existing, keep_orig));
            }
        }
        report.diffs.push(d);
    }
    if !todo.is_empty() {
        report.boot_repair = install_boot_repair(target, dry_run)?;
    }
    if dry_run {
        return Ok(report);
    }
    // Netplan's YAML last: its systemd generator reads it at boot before the
    // boot-time repair can run, and the last file switched decides whether
    // the repair keeps the new set or puts the old one back.
    todo.sort_by_key(|(f, ..)| f.path == Path::new(super::NETPLAN_PATH));
    let mut items = Vec::new();
    // The host-wide lock of the table names, held until the set is switched.
    let mut held = Vec::new();
    for (f, base, hp, existing, keep_orig) in todo {
        stage_one(&mut items, &mut held, base, &hp, f, &existing, keep_orig)
            .map_err(|e| e.context(format!("writing {}", f.path.display())))?;
    }
    super::switch::write_all(&items)?;
    drop(held);
    Ok(report)
}

/// Install the boot-time repair of an interrupted persist
/// ([`super::boot_repair`]) under `target` unless it is there already; with
/// `dry_run` only say whether it would be. Returns the file on disk when it
/// was (or would be) written.
fn install_boot_repair(target: &PersistRoot, dry_run: bool) -> Result<Option<PathBuf>> {
    use super::boot_repair::{BOOT_REPAIR_PATH, MODE, SCRIPT};
    let (base, hp) = target.locate(Path::new(BOOT_REPAIR_PATH))?;
    let on_disk = base.join(relative(&hp)?);
    let now = inspect(base, &hp)?;
    match &now.content {
        Some(c) if c == SCRIPT.as_bytes() && now.mode == Some(MODE) => return Ok(None),
        Some(c) if !is_ours(c) => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{} exists and was not written by roce-net; move it aside so persist can \
                     install its boot-time repair there",
                    on_disk.display()
                ),
            ))
        }
        _ => {}
    }
    if dry_run {
        return Ok(Some(on_disk));
    }
    let Some((dir, name)) = walk_parent(base, &hp, true)? else {
        return Err(Error::new(
            ErrorKind::Io,
            format!("could not create the directory of {}", on_disk.display()),
        ));
    };
    let item = super::switch::Item {
        target: super::switch::Target {
            dir,
            name,
            shown: on_disk.clone(),
        },
        content: Some(SCRIPT.as_bytes().to_vec()),
        mode: MODE,
    };
    super::switch::write_all(&[item])
        .map_err(|e| e.context("installing the boot-time repair of an interrupted persist"))?;
    Ok(Some(on_disk))
}

/// [`recover_interrupted`] alone, for tests.
#[cfg(test)]
pub(crate) fn recover_for_test(target: &PersistRoot) -> Result<Vec<String>> {
    recover_interrupted(target, &[], false)
}

/// Put back what an interrupted persist left half switched (see
/// [`super::switch`]) under every directory persistence writes to.
fn recover_interrupted(
    target: &PersistRoot,
    files: &[RenderedFile],
    dry_run: bool,
) -> Result<Vec<String>> {
    let mut by_base: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    let hosts = owned_candidates(target)
        .into_iter()
        .chain(files.iter().map(|f| f.path.clone()));
    for host in hosts {
        let (base, hp) = target.locate(&host)?;
        match by_base.iter_mut().find(|(b, _)| b == base) {
            Some((_, v)) => v.push(hp),
            None => by_base.push((base.to_path_buf(), vec![hp])),
        }
    }
    // Every directory first: whether a persist finished its switch is
    // decided over its whole set, which may span the etc root and the root.
    let mut found = Vec::new();
    for (base, paths) in by_base {
        found.extend(super::switch::scan(&base, &paths)?);
    }
    super::switch::repair(&found, dry_run)
}

fn suffixed(p: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", p.display()))
}

/// True when a file's text carries roce-net's header in its first lines.
pub(crate) fn is_ours(content: &[u8]) -> bool {
    let head: Vec<u8> = content.iter().take(512).copied().collect();
    String::from_utf8_lossy(&head)
        .lines()
        .take(3)
        // The table-names file carries its one owner's header (rt_tables/): apply
        // and persist write it alike.
        .any(|l| l == super::common::HEADER || l == crate::rt_tables::NAMES_HEADER)
}

/// What [`remove_persistence`] did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RemoveReport {
    /// True when nothing was changed on disk.
    pub dry_run: bool,
    /// roce-net's files removed (on-disk paths).
    pub removed: Vec<PathBuf>,
    /// Files put back from `<file>.roce-net.orig` (on-disk paths).
    pub restored: Vec<PathBuf>,
    /// Files at roce-net's paths that roce-net did not write: left alone.
    pub foreign: Vec<PathBuf>,
    /// roce-net's files deliberately left, with what to do about them.
    pub left: Vec<(PathBuf, String)>,
    /// Files removed (or put back) that had been changed since roce-net wrote
    /// them, or that carry no record of what it wrote: their content as found is
    /// kept in `<file>.roce-net.bak` (the paths listed here).
    #[serde(default)]
    pub edited: Vec<PathBuf>,
    /// What was put back of an earlier persist that was interrupted while
    /// switching files, before this removal looked at anything.
    #[serde(default)]
    pub recovered: Vec<String>,
}

/// Every host path roce-net's persistence may have written under `target`: the
/// fixed paths and the systemd-networkd drop-ins in `/etc/systemd/network`.
pub(crate) fn owned_candidates(target: &PersistRoot) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = super::OWNED_PATHS.iter().map(PathBuf::from).collect();
    let dir = target.etc.join("systemd/network");
    if let Ok(rd) = std::fs::read_dir(&dir) {
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .take(4096)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".network.d"))
            .collect();
        names.sort();
        for n in names {
            v.push(PathBuf::from(format!(
                "/etc/systemd/network/{n}/{}",
                super::NETWORKD_DROPIN_NAME
            )));
        }
    }
    v
}

/// Remove what roce-net's persistence wrote under `target`, except the files in
/// `keep` (what a new rendering writes), and put back what it replaced.
///
/// Only files that carry roce-net's header are touched: a file at one of
/// roce-net's paths that someone else wrote is listed in `foreign` and left
/// alone. For each removed file, `<file>.roce-net.orig` (what was there before
/// roce-net first wrote the path) is restored if present, and
/// `<file>.roce-net.bak` is deleted; a drop-in directory left empty is removed.
/// A full removal (empty `keep`) leaves the NetworkManager undo script in place
/// (listed in `left`): the profiles it changed are NetworkManager's to change.
/// roce-net's table-names file (`rt_tables.d/roce-net.conf`) is not removed
/// while it names any table (listed in `left`): it is host-wide, and live
/// applies in any namespace write it too and rely on its names.
pub fn remove_persistence(
    target: &PersistRoot,
    keep: &[RenderedFile],
    dry_run: bool,
) -> Result<RemoveReport> {
    let kept: Vec<&Path> = keep.iter().map(|f| f.path.as_path()).collect();
    remove_where(target, keep, dry_run, &|host: &Path| {
        if kept.contains(&host) {
            Decide::Skip
        } else {
            Decide::Remove
        }
    })
}

/// What [`remove_where`] does with one of roce-net's paths.
pub(crate) enum Decide {
    /// Not looked at (the new rendering writes it).
    Skip,
    /// Removed (or put back from `.roce-net.orig`) when it is roce-net's.
    Remove,
    /// Left in place when it is roce-net's, listed in `left` with this reason.
    Keep(String),
}

/// [`remove_persistence`] with a decision per path; `rendered` is what the new
/// rendering writes (empty for a full removal).
pub(crate) fn remove_where(
    target: &PersistRoot,
    rendered: &[RenderedFile],
    dry_run: bool,
    decide: &dyn Fn(&Path) -> Decide,
) -> Result<RemoveReport> {
    let keep = rendered;
    let mut report = RemoveReport {
        dry_run,
        recovered: recover_interrupted(target, keep, dry_run)?,
        ..RemoveReport::default()
    };
    let mut todo = Vec::new();
    for host in owned_candidates(target) {
        let why_kept = match decide(&host) {
            Decide::Skip => continue,
            Decide::Remove => None,
            Decide::Keep(why) => Some(why),
        };
        let (base, hp) = target.locate(&host)?;
        let existing = inspect(base, &hp)?;
        let Some(content) = existing.content else {
            continue;
        };
        let on_disk = base.join(relative(&hp)?);
        if !is_ours(&content) {
            report.foreign.push(on_disk);
            continue;
        }
        if let Some(why) = why_kept {
            report.left.push((on_disk, why));
            continue;
        }
        let names_any = || {
            String::from_utf8_lossy(&content)
                .lines()
                .any(|l| matches!(crate::rt_tables::parse_line(l), Ok(Some(_))))
        };
        if host == Path::new(super::RT_TABLES_PATH) && names_any() {
            // Host-wide and shared: live applies (in any namespace) write the
            // same file and rely on its names, which persist cannot tell from
            // its own. Names are display only and harmless at boot. (A file
            // that names no table is removed like the others.)
            report.left.push((
                on_disk,
                "shared with live applies in every namespace of the host (the names `ip` \
                 shows for their tables): `roce-net rollback` removes the names an apply \
                 registered; delete the file by hand once no namespace uses the tables it names"
                    .into(),
            ));
            continue;
        }
        if keep.is_empty() && host == Path::new(super::NM_REMOVE_PATH) {
            report.left.push((
                on_disk,
                "run it once as root to take roce-net's routes and rules out of the                  NetworkManager profiles (nmcli connection modify <uuid> -ipv4.routes ...),                  then delete it"
                    .into(),
            ));
            continue;
        }
        // A file changed since roce-net wrote it (its recorded digest differs,
        // or it has none: an editor that wrote a new file, a file system without
        // extended attributes, an older roce-net) is someone's work: its
        // content goes to the backup, and the report says so. The names file is
        // edited line by line by every apply, by design.
        let edited = host != Path::new(super::RT_TABLES_PATH)
            && existing.recorded.as_deref() != Some(super::switch::digest(&content).as_str());
        let keep = edited.then_some(content);
        if keep.is_some() {
            report.edited.push(suffixed(&on_disk, BACKUP_SUFFIX));
        }
        let orig = inspect(base, &suffixed(&hp, ORIGINAL_SUFFIX))?;
        if orig.content.is_some() {
            report.restored.push(on_disk);
        } else {
            report.removed.push(on_disk);
        }
        todo.push((base, hp, orig, keep));
    }
    if dry_run {
        return Ok(report);
    }
    for (base, hp, orig, keep) in todo {
        remove_one(base, &hp, &orig, keep.as_deref()).map_err(|e| {
            e.context(format!(
                "removing roce-net's {}",
                base.join(relative(&hp).unwrap_or_default()).display()
            ))
        })?;
    }
    Ok(report)
}

fn unlink_at(dir: &OwnedFd, name: &str, shown: &Path, flags: libc::c_int) -> Result<()> {
    let c = CString::new(name)
        .map_err(|_| Error::new(ErrorKind::InvalidInput, "file name contains a NUL byte"))?;
    // SAFETY: valid fd and NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOENT) {
            return Err(Error::io(e, format!("removing {}", shown.display())));
        }
    }
    Ok(())
}

fn remove_one(base: &Path, hp: &Path, orig: &Existing, keep: Option<&[u8]>) -> Result<()> {
    let shown = base.join(relative(hp)?);
    let Some((dir, name)) = walk_parent(base, hp, false)? else {
        return Ok(());
    };
    let file = String::from_utf8_lossy(name.as_bytes()).into_owned();
    if let Some(edited) = keep {
        // Kept before anything is removed: the backup is what makes removing
        // an edited file acceptable.
        let bak = cstr(std::ffi::OsStr::new(&format!("{file}{BACKUP_SUFFIX}")))?;
        let bak_shown = suffixed(&shown, BACKUP_SUFFIX);
        atomic_replace(&dir, &bak, edited, 0o600, &bak_shown)
            .map_err(|e| e.context("keeping the edited file as a backup"))?;
    }
    match &orig.content {
        Some(old) => {
            atomic_replace(&dir, &name, old, orig.mode.unwrap_or(0o644), &shown)?;
            unlink_at(&dir, &format!("{file}{ORIGINAL_SUFFIX}"), &shown, 0)?;
        }
        None => unlink_at(&dir, &file, &shown, 0)?,
    }
    if keep.is_none() {
        unlink_at(&dir, &format!("{file}{BACKUP_SUFFIX}"), &shown, 0)?;
    }
    // SAFETY: valid fd.
    if unsafe { libc::fsync(dir.as_raw_fd()) } != 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            format!("syncing the directory of {}", shown.display()),
        ));
    }
    drop(dir);
    // A networkd drop-in directory left empty goes too (it was made for the drop-in).
    if let Some(parent) = hp.parent() {
        if parent.extension().is_some_and(|e| e == "d")
            && parent.to_string_lossy().ends_with(".network.d")
        {
            if let Some((pdir, pname)) = walk_parent(base, parent, false)? {
                // rmdir fails (ENOTEMPTY) when other drop-ins are there: fine.
                // SAFETY: valid fd and NUL-terminated name.
                unsafe { libc::unlinkat(pdir.as_raw_fd(), pname.as_ptr(), libc::AT_REMOVEDIR) };
            }
        }
    }
    Ok(())
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `content` to a fresh temp file in `dir`, set `mode`, fsync, and rename it
/// to `name`. The temp file is removed on failure.
fn atomic_replace(
    dir: &OwnedFd,
    name: &CString,
    content: &[u8],
    mode: u32,
    shown: &Path,
) -> Result<()> {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(
        ".{}.roce-net-tmp.{}.{n}",
        String::from_utf8_lossy(name.as_bytes()),
        std::process::id()
    );
    let tmp = CString::new(tmp_name.clone()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("{} contains a NUL byte", shown.display()),
        )
    })?;
    // SAFETY: valid fd and NUL-terminated name; the fd is owned by the File.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            format!("creating temp file {tmp_name} next to {}", shown.display()),
        ));
    }
    // SAFETY: fd is a fresh, valid descriptor we own.
    let mut f = unsafe { File::from_raw_fd(fd) };
    let result = (|| -> Result<()> {
        f.write_all(content)
            .map_err(|e| Error::io(e, format!("writing temp file for {}", shown.display())))?;
        // SAFETY: valid fd.
        if unsafe { libc::fchmod(f.as_raw_fd(), mode as libc::mode_t) } != 0 {
            return Err(Error::io(
                std::io::Error::last_os_error(),
                format!("setting mode {mode:o} on {}", shown.display()),
            ));
        }
        f.sync_all()
            .map_err(|e| Error::io(e, format!("syncing {}", shown.display())))?;
        // SAFETY: valid fds and NUL-terminated names.
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                dir.as_raw_fd(),
                name.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(Error::io(
                std::io::Error::last_os_error(),
                format!("renaming temp file over {}", shown.display()),
            ));
        }
        Ok(())
    })();
    if result.is_err() {
        // SAFETY: valid fd and NUL-terminated name; failure to unlink is ignored
        // because the original error is the one to report.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    }
    result
}

/// Add `f` (and the backups of what it replaces) to the set `items` that
/// [`super::switch::write_all`] writes all or nothing; the host-wide lock of
/// the table names, when `f` is that file, goes to `held`.
fn stage_one(
    items: &mut Vec<super::switch::Item>,
    held: &mut Vec<crate::rt_tables::NamesHeld>,
    root: &Path,
    hp: &Path,
    f: &RenderedFile,
    before: &Existing,
    keep_orig: bool,
) -> Result<()> {
    use super::switch::{Item, Target};
    let shown = root.join(relative(hp)?);
    let Some((dir, name)) = walk_parent(root, hp, true)? else {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "could not create the parent directories of {}",
                shown.display()
            ),
        ));
    };
    // roce-net's table-names file is shared by every writer on the host (apply
    // edits it from any namespace): hold the host-wide lock its owner
    // (rt_tables) defines until the set is switched (the caller keeps it in
    // `held`), and back up what it holds now.
    // Merged with the file as it is under the lock, not as it was when
    // checked: another writer may have changed other tables' lines since.
    let fresh;
    let before = if f.path == Path::new(super::RT_TABLES_PATH) {
        held.push(crate::rt_tables::lock_names_dir(&dir, &shown)?);
        // `hp` is relative to `root` (the etc root may be elsewhere).
        fresh = inspect(root, hp)?;
        &fresh
    } else {
        before
    };
    let f = &*merged_names(f, before);
    // Re-check the target right before replacing it (it may have changed since
    // the first pass); rename replaces a symlink itself but we refuse anyway.
    if let Some(st) = lstat_at(&dir, &name, &shown)? {
        if is_kind(&st, libc::S_IFLNK) {
            return Err(symlink_refused(&shown));
        }
    }
    let dup = |d: &OwnedFd| {
        d.try_clone()
            .map_err(|e| Error::io(e, format!("opening the directory of {}", shown.display())))
    };
    if let Some(old) = &before.content {
        let bak_name = format!(
            "{}{BACKUP_SUFFIX}",
            String::from_utf8_lossy(name.as_bytes())
        );
        let bak = CString::new(bak_name)
            .map_err(|_| Error::new(ErrorKind::InvalidInput, "backup name contains a NUL byte"))?;
        let bak_shown = PathBuf::from(format!("{}{BACKUP_SUFFIX}", shown.display()));
        if let Some(st) = lstat_at(&dir, &bak, &bak_shown)? {
            if !is_kind(&st, libc::S_IFREG) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "{} exists and is not a regular file; remove it so the backup can be kept",
                        bak_shown.display()
                    ),
                ));
            }
        }
        let mode = before.mode.unwrap_or(0o600);
        items.push(Item {
            target: Target {
                dir: dup(&dir)?,
                name: bak,
                shown: bak_shown,
            },
            content: Some(old.clone()),
            mode,
        });
        if keep_orig {
            let orig_name = format!(
                "{}{ORIGINAL_SUFFIX}",
                String::from_utf8_lossy(name.as_bytes())
            );
            let orig = CString::new(orig_name).map_err(|_| {
                Error::new(ErrorKind::InvalidInput, "original name contains a NUL byte")
            })?;
            items.push(Item {
                target: Target {
                    dir: dup(&dir)?,
                    name: orig,
                    shown: suffixed(&shown, ORIGINAL_SUFFIX),
                },
                content: Some(old.clone()),
                mode,
            });
        }
    }
    items.push(Item {
        target: Target { dir, name, shown },
        content: Some(f.content.as_bytes().to_vec()),
        mode: f.mode & 0o7777,
    });
    Ok(())
}
