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
//! A process killed in step 2 leaves its links and markers behind (names that no
//! boot tool reads: `run-parts` skips names with dots, the others read `*.conf`
//! or `*.yaml`). The next `persist` (or `persist --remove`) finds them before it
//! looks at anything, puts the previous set back from them, and says so
//! ([`recover`]). Markers of a process that is still running are left alone.

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

/// One file to switch: `content` with `mode` at `target`.
pub(crate) struct Item {
    pub target: Target,
    pub content: Vec<u8>,
    pub mode: u32,
}

/// A staged item: its `-new` file written, its `-old` link or `-absent` marker
/// made.
struct Staged {
    dir: std::os::fd::RawFd,
    name: CString,
    shown: PathBuf,
    new: CString,
    /// `-old` link when the target existed, else the `-absent` marker.
    undo: CString,
    existed: bool,
}

#[cfg(test)]
thread_local! {
    /// Test seam: stop the switch after this many renames, leaving everything
    /// as a `kill -9` at that point would (no clean-up).
    pub(crate) static STOP_AFTER: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// Write `items` all or nothing (see the module docs). Backups come first in
/// `items` so that a target is replaced only after its backup is in place.
pub(crate) fn write_all(items: &[Item]) -> Result<()> {
    let pid = std::process::id();
    let mut staged: Vec<Staged> = Vec::with_capacity(items.len());
    let stage = |it: &Item, staged: &mut Vec<Staged>| -> Result<()> {
        let dir = it.target.dir.as_raw_fd();
        let name = it.target.name.as_bytes();
        let new = marker(name, NEW, pid)?;
        // A leftover of an earlier process with our pid (pid reuse) is ours to drop.
        // SAFETY: valid fd and NUL-terminated name.
        unsafe { libc::unlinkat(dir, new.as_ptr(), 0) };
        // SAFETY: valid fd and NUL-terminated name; the fd is owned by the File.
        let fd = unsafe {
            libc::openat(
                dir,
                new.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(errno_err(format!(
                "creating the new {} next to it",
                it.target.shown.display()
            )));
        }
        let existed = lstat_at(&it.target.dir, &it.target.name, &it.target.shown)?.is_some();
        let undo = marker(name, if existed { OLD } else { ABSENT }, pid)?;
        staged.push(Staged {
            dir,
            name: it.target.name.clone(),
            shown: it.target.shown.clone(),
            new,
            undo,
            existed,
        });
        // SAFETY: fd is a fresh descriptor we own.
        let mut f = unsafe { File::from_raw_fd(fd) };
        f.write_all(&it.content)
            .map_err(|e| Error::io(e, format!("writing the new {}", it.target.shown.display())))?;
        // SAFETY: valid fd.
        if unsafe { libc::fchmod(f.as_raw_fd(), it.mode as libc::mode_t) } != 0 {
            return Err(errno_err(format!(
                "setting mode {:o} on the new {}",
                it.mode,
                it.target.shown.display()
            )));
        }
        record_digest(&f, &it.content);
        f.sync_all()
            .map_err(|e| Error::io(e, format!("syncing the new {}", it.target.shown.display())))?;
        let s = staged.last().map(|s| (s.undo.clone(), s.existed));
        if let Some((undo, existed)) = s {
            // SAFETY: valid fds and NUL-terminated names.
            let rc = unsafe {
                libc::unlinkat(dir, undo.as_ptr(), 0);
                if existed {
                    libc::linkat(dir, it.target.name.as_ptr(), dir, undo.as_ptr(), 0)
                } else {
                    let fd = libc::openat(
                        dir,
                        undo.as_ptr(),
                        libc::O_WRONLY
                            | libc::O_CREAT
                            | libc::O_EXCL
                            | libc::O_NOFOLLOW
                            | libc::O_CLOEXEC,
                        0o600 as libc::c_uint,
                    );
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
                    it.target.shown.display()
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
    for (switched, s) in staged.iter().enumerate() {
        #[cfg(test)]
        if STOP_AFTER.with(|c| c.get()) == Some(switched) {
            return Err(Error::new(ErrorKind::Io, "stopped by the test seam"));
        }
        // SAFETY: valid fds and NUL-terminated names.
        let rc = unsafe { libc::renameat(s.dir, s.new.as_ptr(), s.dir, s.name.as_ptr()) };
        if rc != 0 {
            let e = errno_err(format!("renaming the new {} into place", s.shown.display()));
            let back = undo(&staged[..switched]);
            discard(&staged);
            return Err(match back {
                Ok(()) => e.context(
                    "persisting stopped half way; every file switched so far was put back: \
                     the previous set is in place",
                ),
                Err(b) => e.context(format!(
                    "persisting stopped half way and putting the previous set back failed too \
                     ({b}); the next `roce-net persist` puts it back from the .roce-net-old \
                     links"
                )),
            });
        }
    }
    // Make the renames durable, then drop the links and markers.
    let mut dirs: Vec<std::os::fd::RawFd> = staged.iter().map(|s| s.dir).collect();
    dirs.dedup();
    for d in &dirs {
        // SAFETY: valid fd.
        unsafe { libc::fsync(*d) };
    }
    for s in &staged {
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

/// Put back the previous set of an interrupted persist (a process that died
/// while switching, see the module docs) in the directories of `paths` (host
/// paths under `base`). Returns what was put back, as sentences for the report;
/// `dry_run` only says what it would do.
pub(crate) fn recover(base: &Path, paths: &[PathBuf], dry_run: bool) -> Result<Vec<String>> {
    let mut dirs: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut said = Vec::new();
    for hdir in dirs {
        let probe = hdir.join("x");
        let Some((dir, _)) = walk_parent(base, &probe, false)? else {
            continue;
        };
        let shown_dir = base.join(hdir.strip_prefix("/").unwrap_or(&hdir));
        let Ok(rd) = std::fs::read_dir(&shown_dir) else {
            continue;
        };
        let mut found: Vec<(String, String, u32)> = Vec::new();
        for e in rd.filter_map(|e| e.ok()).take(65536) {
            let n = e.file_name();
            let n = n.to_string_lossy();
            let Some(rest) = n.strip_prefix('.') else {
                continue;
            };
            for kind in [NEW, OLD, ABSENT] {
                let Some((target, pid)) = rest.rsplit_once('.') else {
                    continue;
                };
                let Some(target) = target.strip_suffix(&format!(".{kind}")) else {
                    continue;
                };
                let Ok(pid) = pid.parse::<u32>() else {
                    continue;
                };
                if !alive(pid) {
                    found.push((target.to_string(), kind.to_string(), pid));
                }
            }
        }
        found.sort();
        for (target, kind, pid) in found {
            let shown = shown_dir.join(&target);
            let t = CString::new(target.as_bytes())
                .map_err(|_| Error::new(ErrorKind::InvalidInput, "file name holds a NUL byte"))?;
            let m = marker(target.as_bytes(), &kind, pid)?;
            let what = match kind.as_str() {
                OLD => format!("put back the previous {} (persist, pid {pid}, was interrupted while switching files)", shown.display()),
                ABSENT => format!("removed {}, which did not exist before persist (pid {pid}) was interrupted while switching files", shown.display()),
                _ => format!("removed a half-written new {} left by persist (pid {pid})", shown.display()),
            };
            if !dry_run {
                // SAFETY: valid fds and NUL-terminated names.
                let rc = unsafe {
                    match kind.as_str() {
                        OLD => {
                            // Links to one file (a target not switched yet):
                            // rename does nothing, so the link goes by unlink.
                            let r = libc::renameat(
                                dir.as_raw_fd(),
                                m.as_ptr(),
                                dir.as_raw_fd(),
                                t.as_ptr(),
                            );
                            if r == 0 {
                                libc::unlinkat(dir.as_raw_fd(), m.as_ptr(), 0);
                            }
                            r
                        }
                        ABSENT => {
                            let r = libc::unlinkat(dir.as_raw_fd(), t.as_ptr(), 0);
                            if r != 0
                                && std::io::Error::last_os_error().raw_os_error()
                                    != Some(libc::ENOENT)
                            {
                                r
                            } else {
                                libc::unlinkat(dir.as_raw_fd(), m.as_ptr(), 0)
                            }
                        }
                        _ => libc::unlinkat(dir.as_raw_fd(), m.as_ptr(), 0),
                    }
                };
                if rc != 0 {
                    return Err(errno_err(format!(
                        "putting back the set an interrupted persist (pid {pid}) left at {}",
                        shown.display()
                    )));
                }
            }
            if kind != NEW {
                said.push(what);
            }
        }
        if !dry_run {
            // SAFETY: valid fd.
            unsafe { libc::fsync(dir.as_raw_fd()) };
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
        [
            ("/etc/sysctl.d/90-roce-net.conf", 0o644),
            ("/etc/network/if-up.d/roce-net", 0o755),
            ("/etc/network/if-down.d/roce-net", 0o755),
        ]
        .iter()
        .map(|(p, mode)| RenderedFile {
            path: PathBuf::from(p),
            content: format!("{}\n# {p} {v}\n", super::super::common::HEADER),
            mode: *mode,
            note: None,
        })
        .collect()
    }

    /// Every file under `dir` with its content (links and markers included).
    fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    /// A persist killed while switching (the seam stops after 1..n renames and
    /// cleans nothing up, as `kill -9` would) leaves a mixed set; the next
    /// persist first puts the previous set back exactly, says so, then writes.
    #[test]
    fn a_persist_killed_while_switching_is_put_back_by_the_next() {
        let root = tempfile::tempdir().unwrap();
        let target = PersistRoot::new(root.path());
        write_persistence_at(&set("v1"), &target, false).unwrap();
        write_persistence_at(&set("v2"), &target, false).unwrap();
        let v2 = files(root.path());
        // v2 -> v3 has 6 items to switch: 3 backups, 3 files.
        for stop in 1..6 {
            STOP_AFTER.with(|c| c.set(Some(stop)));
            let e = write_persistence_at(&set("v3"), &target, false);
            STOP_AFTER.with(|c| c.set(None));
            assert!(e.is_err(), "stop after {stop}");
            assert_ne!(
                files(root.path()),
                v2,
                "stop after {stop}: left half switched"
            );
            let r = crate::persist::remove_persistence(&target, &set("v3"), true).unwrap();
            assert!(
                !r.recovered.is_empty(),
                "a dry run says what it would put back"
            );
            let said = super::super::write::recover_for_test(&target).unwrap();
            assert!(
                said.iter().any(|s| s.contains("put back the previous")),
                "stop after {stop}: {said:?}"
            );
            assert_eq!(
                files(root.path()),
                v2,
                "stop after {stop}: exactly the previous set"
            );
        }
        // And a persist after a kill recovers first, then writes the new set.
        STOP_AFTER.with(|c| c.set(Some(3)));
        assert!(write_persistence_at(&set("v3"), &target, false).is_err());
        STOP_AFTER.with(|c| c.set(None));
        let r = write_persistence_at(&set("v3"), &target, false).unwrap();
        assert!(!r.recovered.is_empty(), "{r:?}");
        let after = files(root.path());
        for f in set("v3") {
            let p = root.path().join(f.path.strip_prefix("/").unwrap());
            assert_eq!(after[&p], f.content.as_bytes(), "{}", p.display());
        }
        assert!(
            after
                .keys()
                .all(|p| !p.to_string_lossy().contains(".roce-net-")),
            "no links or markers left: {:?}",
            after.keys().collect::<Vec<_>>()
        );
    }
}
