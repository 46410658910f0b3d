//! Writing a persistence set all or nothing: stage every file, then switch.
//!
//! The files of one rendering work together at boot (an `if-up.d` hook adds the
//! rules its `if-down.d` twin deletes), so a set written file by file and stopped
//! half way (a full `/etc`, a `kill -9`) leaves a configuration no policy
//! described. Here:
//!
//! 1. **Stage.** Every new file (and its `.roce-net.bak` / `.roce-net.orig`) is
//!    written in full next to its target as `.<name>.roce-net-new.<pid>`, given
//!    its mode and fsynced; then each target that exists is hard-linked as
//!    `.<name>.roce-net-old.<pid>` (a link takes no data blocks), and one that does
//!    not gets an empty `.<name>.roce-net-absent.<pid>` marker. A failure here
//!    (no space, no inodes) removes what was staged: nothing changed.
//! 2. **Switch.** Each staged file is renamed over its target (a rename needs no
//!    new blocks). A failure puts every target back from its `-old` link (or
//!    removes it, when `-absent`): the previous set.
//! 3. **Done.** The links and markers are removed.
//!
//! A removal (an item without content) stages an empty `-new` marker and the
//! `-old` link; its switch unlinks the target, then the marker.
//!
//! A process killed between step 1 and the end of step 3 leaves its links and
//! markers behind (names that no boot tool reads: `run-parts` skips names with
//! dots, the others read `*.conf` or `*.yaml`). They decide what its set
//! becomes, as one: while any `-new` file of that persist (its pid) is left, the
//! switch did not finish and every target is put back from its `-old` link (or
//! removed, where `-absent` says it did not exist); when none is left, every
//! target was switched, and only the links and markers go. The last item
//! switched is therefore the commit point. [`repair`] does it for the next
//! `persist` (or `persist --remove`) before it looks at anything, and says so;
//! markers of a process that is still running are left alone. At boot, before
//! the network starts, the script `super::boot_repair` installs does the same.

use crate::error::{Error, ErrorKind, Result};
use crate::files::walk::{lstat_at, walk_parent};
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The extended attribute persist records on each file it writes: a digest of
/// the content ([`digest`]), so that `--remove` can tell a file someone edited
/// since (and keep it) from the one roce-net wrote.
pub(crate) const WRITTEN_XATTR: &str = "user.roce-net.written";

/// FNV-1a (64 bits) of `content`, in hex: enough to tell an edit, not meant
/// against someone forging one (who can write the file can set the attribute).
pub(crate) fn digest(content: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in content {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{h:016x}")
}

/// The digest recorded on an open file, if it has one.
pub(crate) fn recorded_digest(f: &File) -> Option<String> {
    let name = CString::new(WRITTEN_XATTR).ok()?;
    let mut buf = [0u8; 64];
    // SAFETY: valid fd, NUL-terminated name, and a buffer of the given length.
    let n = unsafe {
        libc::fgetxattr(
            f.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).ok()?;
    std::str::from_utf8(buf.get(..n)?).ok().map(str::to_string)
}

/// Record `content`'s digest on `f` (best effort: a file system without user
/// extended attributes records nothing, and `--remove` then keeps a backup).
fn record_digest(f: &File, content: &[u8]) {
    let (Ok(name), d) = (CString::new(WRITTEN_XATTR), digest(content)) else {
        return;
    };
    // SAFETY: valid fd, NUL-terminated name, and a value of the given length.
    unsafe { libc::fsetxattr(f.as_raw_fd(), name.as_ptr(), d.as_ptr().cast(), d.len(), 0) };
}

const NEW: &str = "roce-net-new";
const OLD: &str = "roce-net-old";
const ABSENT: &str = "roce-net-absent";

fn marker(name: &[u8], kind: &str, pid: u32) -> Result<CString> {
    let mut v = Vec::with_capacity(name.len() + 32);
    v.push(b'.');
    v.extend_from_slice(name);
    v.extend_from_slice(format!(".{kind}.{pid}").as_bytes());
    CString::new(v).map_err(|_| Error::new(ErrorKind::InvalidInput, "file name holds a NUL byte"))
}

fn errno_err(doing: String) -> Error {
    Error::io(std::io::Error::last_os_error(), doing)
}

/// One file of the set: the directory it lives in (open, never through a
/// link), its name, and where it is shown.
pub(crate) struct Target {
    pub dir: OwnedFd,
    pub name: CString,
    pub shown: PathBuf,
}

/// One file to switch: `content` with `mode` at `target`, or with `None` the
/// target removed (nothing to do when it does not exist).
pub(crate) struct Item {
    pub target: Target,
    pub content: Option<Vec<u8>>,
    pub mode: u32,
}

/// A staged item: its `-new` file written (for a removal, an empty `-new`
/// marker), its `-old` link or `-absent` marker made.
struct Staged {
    dir: std::os::fd::RawFd,
    name: CString,
    shown: PathBuf,
    new: CString,
    /// `-old` link when the target existed, else the `-absent` marker.
    undo: CString,
    existed: bool,
    remove: bool,
}

#[cfg(test)]
thread_local! {
    /// Test seam: stop the switch after this many steps (renames, or the
    /// clean-up after them: `n` past the last rename stops after `n - items`
    /// links or markers removed), leaving everything as a `kill -9` at that
    /// point would (no clean-up).
    pub(crate) static STOP_AFTER: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

#[cfg(test)]
fn stop_here(step: usize) -> Result<()> {
    if STOP_AFTER.with(|c| c.get()) == Some(step) {
        return Err(Error::new(ErrorKind::Io, "stopped by the test seam"));
    }
    Ok(())
}

/// Create `name` in `dir` exclusively, never through a link.
fn create_excl(dir: std::os::fd::RawFd, name: &CString) -> std::os::fd::RawFd {
    // SAFETY: valid fd and NUL-terminated name.
    unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    }
}

/// Write `items` all or nothing (see the module docs). Backups come first in
/// `items` so that a target is replaced only after its backup is in place; the
/// last item is switched last, which makes it the set's commit point: a file a
/// boot tool reads before the boot-time repair can run (netplan's YAML, read by
/// its systemd generator) must be last.
pub(crate) fn write_all(items: &[Item]) -> Result<()> {
    let pid = std::process::id();
    let mut staged: Vec<Staged> = Vec::with_capacity(items.len());
    let stage = |it: &Item, staged: &mut Vec<Staged>| -> Result<()> {
        let dir = it.target.dir.as_raw_fd();
        let name = it.target.name.as_bytes();
        let shown = &it.target.shown;
        let existed = lstat_at(&it.target.dir, &it.target.name, shown)?.is_some();
        if it.content.is_none() && !existed {
            return Ok(());
        }
        let new = marker(name, NEW, pid)?;
        // A leftover of an earlier process with our pid (pid reuse) is ours to drop.
        // SAFETY: valid fd and NUL-terminated name.
        unsafe { libc::unlinkat(dir, new.as_ptr(), 0) };
        let fd = create_excl(dir, &new);
        if fd < 0 {
            return Err(errno_err(format!(
                "creating the new {} next to it",
                shown.display()
            )));
        }
        let undo = marker(name, if existed { OLD } else { ABSENT }, pid)?;
        staged.push(Staged {
            dir,
            name: it.target.name.clone(),
            shown: shown.clone(),
            new,
            undo,
            existed,
            remove: it.content.is_none(),
        });
        // SAFETY: fd is a fresh descriptor we own.
        let mut f = unsafe { File::from_raw_fd(fd) };
        if let Some(content) = &it.content {
            f.write_all(content)
                .map_err(|e| Error::io(e, format!("writing the new {}", shown.display())))?;
            // SAFETY: valid fd.
            if unsafe { libc::fchmod(f.as_raw_fd(), it.mode as libc::mode_t) } != 0 {
                return Err(errno_err(format!(
                    "setting mode {:o} on the new {}",
                    it.mode,
                    shown.display()
                )));
            }
            record_digest(&f, content);
        }
        f.sync_all()
            .map_err(|e| Error::io(e, format!("syncing the new {}", shown.display())))?;
        let s = staged.last().map(|s| s.undo.clone());
        if let Some(undo) = s {
            // SAFETY: valid fds and NUL-terminated names.
            let rc = unsafe {
                libc::unlinkat(dir, undo.as_ptr(), 0);
                if existed {
                    libc::linkat(dir, it.target.name.as_ptr(), dir, undo.as_ptr(), 0)
                } else {
                    let fd = create_excl(dir, &undo);
                    if fd >= 0 {
                        libc::close(fd);
                        0
                    } else {
                        -1
                    }
                }
            };
            if rc != 0 {
                return Err(errno_err(format!(
                    "keeping a link to the current {} until the new set is in place",
                    shown.display()
                )));
            }
        }
        Ok(())
    };
    for it in items {
        if let Err(e) = stage(it, &mut staged) {
            discard(&staged);
            return Err(e.context(
                "persisting stopped before changing any file: the previous set is in place \
                 (free space in the file system, then run persist again)",
            ));
        }
    }
    let mut dirs: Vec<std::os::fd::RawFd> = staged.iter().map(|s| s.dir).collect();
    dirs.sort_unstable();
    dirs.dedup();
    // The staged files, links and markers are on disk before the first
    // target changes: what the boot-time repair needs to put the set back.
    for d in &dirs {
        // SAFETY: valid fd.
        unsafe { libc::fsync(*d) };
    }
    for (switched, s) in staged.iter().enumerate() {
        #[cfg(test)]
        stop_here(switched)?;
        // SAFETY: valid fds and NUL-terminated names.
        let rc = unsafe {
            if s.remove {
                libc::unlinkat(s.dir, s.name.as_ptr(), 0)
            } else {
                libc::renameat(s.dir, s.new.as_ptr(), s.dir, s.name.as_ptr())
            }
        };
        if rc != 0 {
            let e = errno_err(format!(
                "{} {}",
                if s.remove {
                    "removing"
                } else {
                    "renaming the new file into place:"
                },
                s.shown.display()
            ));
            let back = undo(&staged[..switched]);
            discard(&staged);
            return Err(match back {
                Ok(()) => e.context(
                    "persisting stopped half way; every file switched so far was put back: \
                     the previous set is in place",
                ),
                Err(b) => e.context(format!(
                    "persisting stopped half way and putting the previous set back failed too \
                     ({b}); the next `roce-net persist`, or the next boot, puts it back from \
                     the .roce-net-old links"
                )),
            });
        }
        if s.remove {
            // The removal's marker goes once the target is gone.
            // SAFETY: valid fd and NUL-terminated name.
            unsafe { libc::unlinkat(s.dir, s.new.as_ptr(), 0) };
        }
    }
    // Make the switch durable, then drop the links and markers: with no
    // `-new` file left, a repair finishes the switch instead of undoing it.
    for d in &dirs {
        // SAFETY: valid fd.
        unsafe { libc::fsync(*d) };
    }
    // (The step number only counts for the test seam.)
    for (_step, s) in (staged.len()..).zip(&staged) {
        #[cfg(test)]
        stop_here(_step)?;
        // SAFETY: valid fd and NUL-terminated name.
        unsafe { libc::unlinkat(s.dir, s.undo.as_ptr(), 0) };
    }
    for d in &dirs {
        // SAFETY: valid fd.
        if unsafe { libc::fsync(*d) } != 0 {
            return Err(errno_err("syncing the directories of the new set".into()));
        }
    }
    Ok(())
}

/// Put back the targets of `switched` from their `-old` links (or remove the
/// ones that did not exist).
fn undo(switched: &[Staged]) -> Result<()> {
    let mut first_err = None;
    for s in switched.iter().rev() {
        // SAFETY: valid fds and NUL-terminated names.
        let rc = unsafe {
            if s.existed {
                libc::renameat(s.dir, s.undo.as_ptr(), s.dir, s.name.as_ptr())
            } else {
                libc::unlinkat(s.dir, s.name.as_ptr(), 0)
            }
        };
        if rc != 0 && first_err.is_none() {
            first_err = Some(errno_err(format!("putting back {}", s.shown.display())));
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Remove every staged file, link and marker (those already renamed are gone).
fn discard(staged: &[Staged]) {
    for s in staged {
        // SAFETY: valid fd and NUL-terminated names; what is already gone is fine.
        unsafe {
            libc::unlinkat(s.dir, s.new.as_ptr(), 0);
            libc::unlinkat(s.dir, s.undo.as_ptr(), 0);
        }
    }
}

fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(p, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// One directory of persistence with the links and markers an interrupted
/// persist left in it.
pub(crate) struct Leftovers {
    dir: OwnedFd,
    shown: PathBuf,
    /// (target name, kind, pid).
    found: Vec<(String, &'static str, u32)>,
}

/// The links and markers of persists that are no longer running in the
/// directories of `paths` (host paths under `base`).
pub(crate) fn scan(base: &Path, paths: &[PathBuf]) -> Result<Vec<Leftovers>> {
    let mut dirs: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut out = Vec::new();
    for hdir in dirs {
        let probe = hdir.join("x");
        let Some((dir, _)) = walk_parent(base, &probe, false)? else {
            continue;
        };
        let shown = base.join(hdir.strip_prefix("/").unwrap_or(&hdir));
        let Ok(rd) = std::fs::read_dir(&shown) else {
            continue;
        };
        let mut found = Vec::new();
        for e in rd.filter_map(|e| e.ok()).take(65536) {
            let n = e.file_name();
            let n = n.to_string_lossy();
            let Some(rest) = n.strip_prefix('.') else {
                continue;
            };
            let Some((target, pid)) = rest.rsplit_once('.') else {
                continue;
            };
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            for kind in [NEW, OLD, ABSENT] {
                if let Some(target) = target.strip_suffix(&format!(".{kind}")) {
                    if !alive(pid) {
                        found.push((target.to_string(), kind, pid));
                    }
                }
            }
        }
        if !found.is_empty() {
            found.sort();
            out.push(Leftovers { dir, shown, found });
        }
    }
    Ok(out)
}

/// Repair what interrupted persists left (`dirs`, from [`scan`] of every
/// directory persistence writes to), one persist (pid) at a time and as one
/// set: when any of its `-new` files is left, its switch did not finish and
/// every target is put back from its `-old` link (or removed, where `-absent`
/// says it did not exist); when none is, every target was switched, and only
/// its links and markers go. Returns what was done, as sentences for the
/// report; `dry_run` only says what it would do.
pub(crate) fn repair(dirs: &[Leftovers], dry_run: bool) -> Result<Vec<String>> {
    let unfinished: std::collections::BTreeSet<u32> = dirs
        .iter()
        .flat_map(|d| d.found.iter())
        .filter(|(_, kind, _)| *kind == NEW)
        .map(|(_, _, pid)| *pid)
        .collect();
    let mut said = Vec::new();
    for d in dirs {
        let fd = d.dir.as_raw_fd();
        for (target, kind, pid) in &d.found {
            let (target, kind, pid) = (target.as_str(), *kind, *pid);
            let shown = d.shown.join(target);
            let back = unfinished.contains(&pid);
            let t = CString::new(target.as_bytes())
                .map_err(|_| Error::new(ErrorKind::InvalidInput, "file name holds a NUL byte"))?;
            let m = marker(target.as_bytes(), kind, pid)?;
            let what = match (kind, back) {
                (OLD, true) => Some(format!(
                    "put back the previous {} (persist, pid {pid}, was interrupted while \
                     switching files)",
                    shown.display()
                )),
                (ABSENT, true) => Some(format!(
                    "removed {}, which did not exist before persist (pid {pid}) was interrupted \
                     while switching files",
                    shown.display()
                )),
                (OLD | ABSENT, false) => Some(format!(
                    "kept the new {}: persist (pid {pid}) had switched its whole set when it \
                     was interrupted",
                    shown.display()
                )),
                _ => None,
            };
            if !dry_run {
                // SAFETY: valid fds and NUL-terminated names.
                let rc = unsafe {
                    match (kind, back) {
                        (OLD, true) => {
                            // Links to one file (a target not switched yet):
                            // rename does nothing, so the link goes by unlink.
                            let r = libc::renameat(fd, m.as_ptr(), fd, t.as_ptr());
                            if r == 0 {
                                libc::unlinkat(fd, m.as_ptr(), 0);
                            }
                            r
                        }
                        (ABSENT, true) => {
                            let r = libc::unlinkat(fd, t.as_ptr(), 0);
                            if r != 0
                                && std::io::Error::last_os_error().raw_os_error()
                                    != Some(libc::ENOENT)
                            {
                                r
                            } else {
                                libc::unlinkat(fd, m.as_ptr(), 0)
                            }
                        }
                        _ => libc::unlinkat(fd, m.as_ptr(), 0),
                    }
                };
                if rc != 0 {
                    return Err(errno_err(format!(
                        "repairing the set an interrupted persist (pid {pid}) left at {}",
                        shown.display()
                    )));
                }
            }
            said.extend(what);
        }
        if !dry_run {
            // SAFETY: valid fd.
            unsafe { libc::fsync(fd) };
        }
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::STOP_AFTER;
    use crate::persist::{write_persistence_at, PersistRoot, RenderedFile};
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    fn set(v: &str) -> Vec<RenderedFile> {
        set_of(
            v,
            &[
                ("/etc/sysctl.d/90-roce-net.conf", 0o644),
                ("/etc/network/if-up.d/roce-net", 0o755),
                ("/etc/network/if-down.d/roce-net", 0o755),
            ],
        )
    }

    fn set_of(v: &str, paths: &[(&str, u32)]) -> Vec<RenderedFile> {
        paths
            .iter()
            .map(|(p, mode)| RenderedFile {
                path: PathBuf::from(p),
                content: format!("{}\n# {p} {v}\n", super::super::common::HEADER),
                mode: *mode,
                note: None,
            })
            .collect()
    }

    /// A scratch root, on a tmpfs where there is one (`/dev/shm`): the writer
    /// syncs every file and directory, which costs milliseconds each on a disk.
    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap()
    }

    /// Every file under `dir` with its content (links and markers included),
    /// relative to `dir`.
    fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    /// `write_persistence_at` stopped by the seam after `stop` steps, as a
    /// `kill -9` at that point would leave it.
    fn killed(files: &[RenderedFile], target: &PersistRoot, stop: usize) {
        STOP_AFTER.with(|c| c.set(Some(stop)));
        let e = write_persistence_at(files, target, false);
        STOP_AFTER.with(|c| c.set(None));
        assert!(e.is_err(), "stop after {stop}");
    }

    /// The tree of `v`'s set written without interruption over `before`'s.
    fn whole(before: &[RenderedFile], v: &[RenderedFile]) -> BTreeMap<PathBuf, Vec<u8>> {
        let root = scratch();
        let target = PersistRoot::new(root.path());
        write_persistence_at(before, &target, false).unwrap();
        write_persistence_at(v, &target, false).unwrap();
        files(root.path())
    }

    /// A persist killed at every point of its switch (the seam stops after
    /// 0..6 renames of a 6-file switch, 3 backups and 3 files, or after 0..6
    /// of the links and markers removed after them, and cleans nothing up, as
    /// `kill -9` would): the next persist (or `--remove`, also its dry run)
    /// repairs it as one set: killed before the last rename, exactly the
    /// previous set, put back and said so; killed after it, exactly the new
    /// set, the switch finished and said so.
    #[test]
    fn a_persist_killed_while_switching_is_repaired_as_one_set_by_the_next() {
        let (v2, v3) = (whole(&set("v1"), &set("v2")), whole(&set("v2"), &set("v3")));
        for stop in 0..12 {
            let root = scratch();
            let target = PersistRoot::new(root.path());
            write_persistence_at(&set("v1"), &target, false).unwrap();
            write_persistence_at(&set("v2"), &target, false).unwrap();
            killed(&set("v3"), &target, stop);
            assert_ne!(files(root.path()), v2, "stop after {stop}: left unrepaired");
            let r = crate::persist::remove_persistence(&target, &set("v3"), true).unwrap();
            assert!(
                !r.recovered.is_empty(),
                "a dry run says what it would repair"
            );
            let said = super::super::write::recover_for_test(&target).unwrap();
            let (want, words) = if stop < 6 {
                (&v2, "put back the previous")
            } else {
                (&v3, "kept the new")
            };
            assert!(
                said.iter().any(|s| s.contains(words)),
                "stop after {stop}: {said:?}"
            );
            assert_eq!(
                &files(root.path()),
                want,
                "stop after {stop}: one whole set"
            );
        }
        // And a persist after a kill repairs first, then writes the new set.
        let root = scratch();
        let target = PersistRoot::new(root.path());
        write_persistence_at(&set("v2"), &target, false).unwrap();
        killed(&set("v3"), &target, 3);
        let r = write_persistence_at(&set("v3"), &target, false).unwrap();
        assert!(!r.recovered.is_empty(), "{r:?}");
        let after = files(root.path());
        for f in set("v3") {
            let p = f.path.strip_prefix("/").unwrap();
            assert_eq!(after[p], f.content.as_bytes(), "{}", p.display());
        }
        assert!(
            after
                .keys()
                .all(|p| !p.to_string_lossy().contains(".roce-net-")),
            "no links or markers left: {:?}",
            after.keys().collect::<Vec<_>>()
        );
    }

    /// What a reboot boots after a persist killed at every point of its
    /// switch: the tree as the kill left it, repaired by the boot-time repair
    /// itself (`sh roce-net-persist-repair --repair ETC`, the installed file,
    /// run by the real `/bin/sh` as the unit it adds runs it), is one whole
    /// set, the previous or the new, with no link or marker left; and for a
    /// netplan set, the YAML netplan's generator read at that boot (before any
    /// unit runs: the file as the kill left it) is the one of the set the
    /// repair keeps. Before the repair, the next boot booted the mixed set.
    #[test]
    fn a_reboot_after_a_persist_killed_while_switching_boots_one_whole_set() {
        let netplan = [
            ("/etc/sysctl.d/90-roce-net.conf", 0o644),
            ("/etc/iproute2/rt_protos.d/roce-net.conf", 0o644),
            ("/etc/systemd/networkd.conf.d/90-roce-net.conf", 0o644),
            ("/etc/netplan/90-roce-net.yaml", 0o600),
        ];
        let sets: [(&str, &[(&str, u32)]); 2] = [
            (
                "ifupdown",
                &[
                    ("/etc/sysctl.d/90-roce-net.conf", 0o644),
                    ("/etc/network/if-up.d/roce-net", 0o755),
                    ("/etc/network/if-down.d/roce-net", 0o755),
                ],
            ),
            ("netplan", &netplan),
        ];
        let mut tally = (0, 0);
        for (name, paths) in sets {
            let (a, b) = (set_of("a", paths), set_of("b", paths));
            let (old, new) = (whole(&set_of("0", paths), &a), whole(&a, &b));
            // Each file, its backup: two items per file; as many removals.
            let steps = 4 * paths.len();
            for stop in 0..steps {
                let root = scratch();
                let target = PersistRoot::new(root.path());
                write_persistence_at(&set_of("0", paths), &target, false).unwrap();
                write_persistence_at(&a, &target, false).unwrap();
                killed(&b, &target, stop);
                let yaml = std::fs::read(root.path().join("etc/netplan/90-roce-net.yaml")).ok();
                let o = std::process::Command::new("/bin/sh")
                    .arg(
                        root.path()
                            .join(super::super::BOOT_REPAIR_PATH.strip_prefix('/').unwrap()),
                    )
                    .arg("--repair")
                    .arg(root.path().join("etc"))
                    .output()
                    .unwrap();
                let out = String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr);
                assert!(o.status.success(), "{name}, stop after {stop}: {out}");
                let now = files(root.path());
                let kept = if now == old {
                    tally.0 += 1;
                    &old
                } else {
                    assert!(
                        now == new,
                        "{name}, stop after {stop}: one whole set ({out}); left: {:?}",
                        now.keys().collect::<Vec<_>>()
                    );
                    tally.1 += 1;
                    &new
                };
                assert!(
                    !out.is_empty(),
                    "{name}, stop after {stop}: says what it did"
                );
                if let Some(y) = yaml {
                    assert_eq!(
                        Some(&y),
                        kept.get(Path::new("etc/netplan/90-roce-net.yaml")),
                        "{name}, stop after {stop}: netplan's generator read the set kept"
                    );
                }
            }
        }
        assert!(tally.0 > 0 && tally.1 > 0, "both outcomes: {tally:?}");
    }
}
