//! The one writer of roce-net's table-names file, `rt_tables.d/roce-net.conf`.
//!
//! The file is shared by every network namespace of the host (and by every state
//! directory), so:
//!
//! - every read-modify-write holds a **host-wide lock**: an exclusive `flock(2)` on
//!   [`LOCK_FILE`] in the `rt_tables.d` directory, which every writer of this
//!   file on the host takes, whatever namespace it works in. The lock file is
//!   private (0600, owned by root or the writer; one others could open is
//!   replaced), as the namespace locks are: `flock` works on any descriptor, so
//!   a lock others can open is a lock any local user can hold. It exists only
//!   while a writer holds it: the holder removes it before letting go
//!   ([`crate::files::lock::Held::remove_file`], safe for a writer waiting on
//!   it), so the admin's `rt_tables.d` holds nothing of roce-net's between
//!   commands but the names file;
//! - the new text goes to a **unique temporary file** created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW` next to the target, then renamed over it;
//! - every update says what it **expects** the file to hold for its table id, and
//!   only lines that are exactly roce-net's own `<id> <name>` are replaced or
//!   removed: another writer's change since the plan is a conflict, reported, not
//!   overwritten.

use super::{check_table_name, parse_line, TABLE_NAMES_FILE};
use crate::error::{Error, ErrorKind, Result};
use crate::input::{read_input_if_exists, InputKind};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::NAMES_HEADER as HEADER;
/// How long a writer waits for another to finish (a write takes well under a
/// millisecond; this only bounds a writer that is stopped or stuck).
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// The largest names file read.
const MAX_FILE: u64 = 1 << 20;

/// One update of the names file: table `id` must be named `expect` in it now
/// (`None`: no line for it), and is then named `set` (`None`: its line removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameUpdate<'a> {
    /// Table id.
    pub id: u32,
    /// What the file must hold for `id` before the update.
    pub expect: Option<&'a str>,
    /// What it holds after.
    pub set: Option<&'a str>,
}

/// The host-wide lock's file in `rt_tables.d`: iproute2 reads only `*.conf`
/// there, and a dot file is out of an admin's way.
pub(crate) const LOCK_FILE: &str = ".roce-net.lock";

/// The host-wide lock of the names file, held while it lives; its file is
/// removed when it is let go.
pub(crate) struct NamesHeld {
    dir: crate::files::statedir::StateDir,
    held: crate::files::lock::Held,
}

impl Drop for NamesHeld {
    fn drop(&mut self) {
        // Still held here: `held` lets go after this.
        self.held.remove_file(&self.dir, LOCK_FILE);
    }
}

/// The names file's directory, open, with the host-wide lock held.
struct NamesLock {
    dir: OwnedFd,
    path: PathBuf,
    _held: NamesHeld,
}

/// A temporary-name suffix unique within this process (with the pid in the name
/// and `O_EXCL`, unique on the host): a counter and the clock.
fn unique() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{n:x}{t:08x}")
}

fn c_name(s: &str) -> CString {
    // Only our own constant names reach this.
    CString::new(s).unwrap_or_default()
}

/// Open the names file's directory (`iproute2/rt_tables.d` under `etc_root`)
/// component by component without following a symbolic link, creating what is
/// missing, as persist opens every path it writes: a link planted as
/// `iproute2/` or `rt_tables.d/` is refused, never written through. Then take
/// the host-wide lock on it.
fn lock(etc_root: &Path) -> Result<NamesLock> {
    let file = etc_root.join(TABLE_NAMES_FILE);
    let host = Path::new("/").join(TABLE_NAMES_FILE);
    let Some((fd, _)) = crate::files::walk::walk_parent(etc_root, &host, true)? else {
        return Err(Error::new(
            ErrorKind::Io,
            format!("could not create the directories of {}", file.display()),
        ));
    };
    let held = lock_names_dir(&fd, &file)?;
    Ok(NamesLock {
        dir: fd,
        path: file,
        _held: held,
    })
}

/// Take the host-wide lock of the names file `file` for a writer that opened
/// its directory `dir` itself, waiting up to [`LOCK_WAIT`] for another writer.
/// Held while the result lives (and released by the kernel when the process
/// dies). Every writer of the names file takes it: apply's and rollback's
/// (through [`update_table_names`]) and persist's, which writes the whole
/// file under a target root.
pub(crate) fn lock_names_dir(dir: &OwnedFd, file: &Path) -> Result<NamesHeld> {
    lock_names_dir_within(dir, file, LOCK_WAIT)
}

fn lock_names_dir_within(dir: &OwnedFd, file: &Path, wait: Duration) -> Result<NamesHeld> {
    use crate::files::lock::{take, who_holds};
    let dir_path = file.parent().unwrap_or(file);
    let dup = dir
        .try_clone()
        .map_err(|e| Error::io(e, format!("opening {}", dir_path.display())))?;
    let dir = crate::files::statedir::StateDir::from_open(dup, dir_path);
    match take(&dir, LOCK_FILE, Some(wait), Duration::from_millis(5))? {
        Ok(held) => Ok(NamesHeld { dir, held }),
        Err(busy) => {
            let who = who_holds(
                &busy,
                "the host-wide lock of the table names",
                "apply, rollback, watchdog or persist",
            );
            Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "{who} ({}) (waited {} s); nothing was written to {}. Wait for it to finish \
                     and try again",
                    dir.file(LOCK_FILE).display(),
                    wait.as_secs(),
                    file.display(),
                ),
            ))
        }
    }
}

impl NamesLock {
    fn name(&self) -> &'static str {
        TABLE_NAMES_FILE
            .rsplit('/')
            .next()
            .unwrap_or("roce-net.conf")
    }

    fn openat(&self, name: &str, flags: libc::c_int) -> std::io::Result<File> {
        use std::os::fd::AsFd;
        crate::input::open_at(self.dir.as_fd(), name, flags | libc::O_NOFOLLOW)
    }

    fn read(&self) -> Result<String> {
        let f = match self.openat(self.name(), libc::O_RDONLY) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(String::new()),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(Error::new(
                    ErrorKind::Permission,
                    format!(
                        "{} is a symbolic link; roce-net only writes its own regular file there. \
                         Remove the link and try again",
                        self.path.display()
                    ),
                ))
            }
            Err(e) => return Err(Error::io(e, format!("reading {}", self.path.display()))),
        };
        let mut b = Vec::new();
        f.take(MAX_FILE + 1)
            .read_to_end(&mut b)
            .map_err(|e| Error::io(e, format!("reading {}", self.path.display())))?;
        if b.len() as u64 > MAX_FILE {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "{} is larger than 1 MiB; it is not roce-net's names file. Move it aside",
                    self.path.display()
                ),
            ));
        }
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    fn write(&self, text: Option<&str>) -> Result<()> {
        let target = c_name(self.name());
        let Some(text) = text else {
            // SAFETY: unlinkat in the locked directory.
            if unsafe { libc::unlinkat(self.dir.as_raw_fd(), target.as_ptr(), 0) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ENOENT) {
                    return Err(Error::io(e, format!("removing {}", self.path.display())));
                }
            }
            return Ok(());
        };
        let mut attempt = 0;
        let (mut f, tmp) = loop {
            let tmp = format!(".{}.{}.{}.tmp", self.name(), std::process::id(), unique());
            match self.openat(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL) {
                Ok(f) => break (f, tmp),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && attempt < 8 => attempt += 1,
                Err(e) => {
                    return Err(Error::io(
                        e,
                        format!("creating a temporary file next to {}", self.path.display()),
                    ))
                }
            }
        };
        let c_tmp = c_name(&tmp);
        let res = f.write_all(text.as_bytes()).and_then(|_| {
            // SAFETY: renameat within the locked directory.
            let rc = unsafe {
                libc::renameat(
                    self.dir.as_raw_fd(),
                    c_tmp.as_ptr(),
                    self.dir.as_raw_fd(),
                    target.as_ptr(),
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
        if let Err(e) = res {
            // SAFETY: unlinkat of our own temporary file.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), c_tmp.as_ptr(), 0) };
            return Err(Error::io(e, format!("writing {}", self.path.display())));
        }
        Ok(())
    }
}

/// roce-net's own table names: the lines of its names file only (not the names
/// other files give), later lines winning as in iproute2.
pub(crate) fn own_table_names(etc_root: &Path) -> Result<BTreeMap<u32, String>> {
    let path = etc_root.join(TABLE_NAMES_FILE);
    let text = match read_input_if_exists(&path, InputKind::TableNames)? {
        Some(b) => String::from_utf8_lossy(&b).into_owned(),
        None => String::new(),
    };
    Ok(parse(&text))
}

fn parse(text: &str) -> BTreeMap<u32, String> {
    text.lines()
        .filter_map(|l| parse_line(l).ok().flatten())
        .map(|(id, n)| (id, n.to_string()))
        .collect()
}

/// Apply `updates` in order with one read and one atomic write of the names
/// file, under the host-wide lock. Every update's expectation is checked against
/// the file as it is then; on a mismatch (another writer changed that table's
/// name since the plan) or an invalid name, nothing is written.
///
/// `tolerant` (rollback): an update whose table already holds `set` is done.
/// Otherwise an update whose table already holds `set` is skipped too, and the
/// returned flag for it is `false`: someone else made the same change, so it is
/// not this update's to undo.
pub(crate) fn update_table_names(
    etc_root: &Path,
    updates: &[NameUpdate<'_>],
    tolerant: bool,
) -> Result<Vec<bool>> {
    for u in updates {
        if let Some(n) = u.set {
            check_table_name(u.id, n)?;
        }
    }
    let lock = lock(etc_root)?;
    let old = lock.read()?;
    let mut lines: Vec<String> = old.lines().map(str::to_string).collect();
    let mut changed = Vec::with_capacity(updates.len());
    for u in updates {
        let ours: Vec<(usize, String)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match parse_line(l) {
                Ok(Some((id, n))) if id == u.id => Some((i, n.to_string())),
                _ => None,
            })
            .collect();
        let current = ours.last().map(|(_, n)| n.as_str());
        if current == u.set {
            changed.push(false);
            continue;
        }
        if current != u.expect {
            let shown = |v: Option<&str>| match v {
                Some(n) => format!("names it {n:?}"),
                None => "has no name for it".to_string(),
            };
            return Err(Error::new(
                ErrorKind::Drift,
                format!(
                    "table {}: {} {}, but roce-net expected it to {}; another writer changed it \
                     since the plan was made, so it is left as is{}",
                    u.id,
                    lock.path.display(),
                    shown(current),
                    match u.expect {
                        Some(n) => format!("name it {n:?}"),
                        None => "have no name for it".to_string(),
                    },
                    if tolerant {
                        ""
                    } else {
                        "; nothing was written"
                    }
                ),
            ));
        }
        // A rollback leaves a name `persist` wrote as boot configuration since
        // the apply: it is not the apply's any more.
        if tolerant && u.set.is_none() && super::is_boot_name(&lines, u.id) {
            changed.push(false);
            continue;
        }
        let at = ours
            .iter()
            .find(|(_, n)| Some(n.as_str()) == u.expect)
            .map(|(i, _)| *i);
        // Exactly the expected `<id> <name>` line(s) go; nothing else is touched.
        if let Some(want) = u.expect {
            lines
                .retain(|l| !matches!(parse_line(l), Ok(Some((id, n))) if id == u.id && n == want));
        }
        if let Some(n) = u.set {
            let line = format!("{}\t{n}", u.id);
            // A new line goes before the first line of a higher table, so that
            // a name a rollback puts back is where it was in a file kept in
            // table order (the planner registers names in table order).
            let higher = || {
                lines
                    .iter()
                    .position(|l| matches!(parse_line(l), Ok(Some((id, _))) if id > u.id))
            };
            match at.or_else(higher) {
                Some(i) if i <= lines.len() => lines.insert(i, line),
                _ => lines.push(line),
            }
        }
        changed.push(true);
    }
    if !changed.iter().any(|c| *c) {
        return Ok(changed);
    }
    let only_comments = lines
        .iter()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
    let text = if only_comments {
        None
    } else {
        if !lines.iter().any(|l| l.trim_end() == HEADER) {
            lines.insert(0, HEADER.to_string());
        }
        Some(lines.join("\n") + "\n")
    };
    lock.write(text.as_deref())?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(etc: &Path) -> Option<String> {
        std::fs::read_to_string(etc.join(TABLE_NAMES_FILE)).ok()
    }

    fn put(etc: &Path, s: &str) {
        let p = etc.join(TABLE_NAMES_FILE);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    }

    fn set<'a>(id: u32, expect: Option<&'a str>, set: Option<&'a str>) -> NameUpdate<'a> {
        NameUpdate { id, expect, set }
    }

    /// A FIFO planted as the names file is refused at once: the read waited
    /// for a writer forever before it went through `input.rs` (checked: this
    /// test timed out on the old `File::open`).
    #[test]
    fn own_names_from_a_fifo_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(TABLE_NAMES_FILE);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let c = CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let etc = d.path().to_path_buf();
        std::thread::spawn(move || tx.send(own_table_names(&etc).map_err(|e| e.to_string())));
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("reading roce-net's names file blocked on a FIFO");
        let e = got.unwrap_err();
        assert!(e.contains("FIFO") && e.contains("roce-net.conf"), "{e}");
    }

    #[test]
    fn updates_replace_and_remove_exactly_their_own_lines() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "# a note\n1000\tother\n");
        let r = update_table_names(
            d.path(),
            &[set(1001, None, Some("a")), set(1002, None, Some("b"))],
            false,
        )
        .unwrap();
        assert_eq!(r, vec![true, true]);
        assert_eq!(
            read(d.path()).unwrap(),
            format!("{HEADER}\n# a note\n1000\tother\n1001\ta\n1002\tb\n")
        );
        // Rename in place, remove one; the foreign line and note stay.
        update_table_names(
            d.path(),
            &[set(1001, Some("a"), Some("a2")), set(1002, Some("b"), None)],
            false,
        )
        .unwrap();
        assert_eq!(
            read(d.path()).unwrap(),
            format!("{HEADER}\n# a note\n1000\tother\n1001\ta2\n")
        );
        assert_eq!(own_table_names(d.path()).unwrap().get(&1001).unwrap(), "a2");
        // Nothing but comments left: the file goes.
        update_table_names(
            d.path(),
            &[set(1001, Some("a2"), None), set(1000, Some("other"), None)],
            false,
        )
        .unwrap();
        assert_eq!(read(d.path()), None);
    }

    #[test]
    fn one_rule_for_names_and_the_file_persist_writes_is_apply_s_own() {
        // A name persist used to refuse (after policy and apply had accepted
        // it) is refused by the one rule every writer uses.
        for bad in ["roce_eth+1", "two words", "", "1234", &"x".repeat(65)] {
            let e = super::super::check_table_name(1001, bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
            let e = update_table_names(
                tempfile::tempdir().unwrap().path(),
                &[set(1001, None, Some(bad))],
                false,
            )
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
        }
        for good in ["roce_eth1", "roce_ens1f0np0", "rnet-bond0.100", "a1"] {
            super::super::check_table_name(1001, good).unwrap();
        }
        // The text persist renders (the same header) is read by apply's writer
        // as roce-net's own lines: it can rename and remove them exactly.
        let d = tempfile::tempdir().unwrap();
        let names: BTreeMap<u32, String> =
            [(1001, "roce_a".to_string()), (1002, "roce_b".to_string())].into();
        let text = super::super::render_names_file(&names).unwrap();
        assert!(text.starts_with(&format!("{HEADER}\n")), "{text}");
        put(d.path(), &text);
        assert_eq!(own_table_names(d.path()).unwrap(), names);
        update_table_names(d.path(), &[set(1002, Some("roce_b"), None)], false).unwrap();
        assert_eq!(
            read(d.path()).unwrap(),
            format!(
                "{HEADER}\n{} 1001 1002\n1001\troce_a\n",
                super::super::BOOT_MARK
            )
        );
        let bad: BTreeMap<u32, String> = [(1001, "roce_eth+1".to_string())].into();
        assert!(super::super::render_names_file(&bad).is_err());
    }

    /// A name an apply registered and `persist` then wrote as boot
    /// configuration stays when the apply is rolled back; a name only the apply
    /// wrote goes. The rollback once removed both.
    #[test]
    fn a_rollback_keeps_the_names_persist_wrote_for_boot() {
        let d = tempfile::tempdir().unwrap();
        // The apply registers two names.
        update_table_names(
            d.path(),
            &[
                set(1001, None, Some("roce_a")),
                set(1002, None, Some("roce_b")),
            ],
            false,
        )
        .unwrap();
        // persist writes 1001 for boot, keeping the live line of 1002.
        let boot: BTreeMap<u32, String> = [(1001, "roce_a".to_string())].into();
        let rendered = super::super::render_names_file(&boot).unwrap();
        let merged =
            super::super::merge_names_file(&rendered, read(d.path()).as_deref().map(str::as_bytes));
        put(d.path(), &merged);
        // The rollback removes what the apply registered.
        update_table_names(
            d.path(),
            &[
                set(1002, Some("roce_b"), None),
                set(1001, Some("roce_a"), None),
            ],
            true,
        )
        .unwrap();
        let left = read(d.path()).unwrap();
        let names = own_table_names(d.path()).unwrap();
        assert_eq!(names, boot, "{left}");
        assert!(left.contains(super::super::BOOT_MARK), "{left}");
    }

    #[test]
    fn a_name_changed_by_another_writer_is_a_conflict_and_nothing_is_written() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "1001\ttheirs\n");
        let e = update_table_names(
            d.path(),
            &[set(1002, None, Some("b")), set(1001, Some("mine"), None)],
            true,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Drift);
        assert!(e.to_string().contains("\"theirs\""), "{e}");
        assert_eq!(read(d.path()).unwrap(), "1001\ttheirs\n", "untouched");
        // Already what the update wants: done, not ours.
        let r = update_table_names(d.path(), &[set(1001, None, Some("theirs"))], false).unwrap();
        assert_eq!(r, vec![false]);
        // An invalid name writes nothing.
        let e =
            update_table_names(d.path(), &[set(1003, None, Some("two words"))], false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(read(d.path()).unwrap(), "1001\ttheirs\n");
    }

    #[test]
    fn a_planted_link_is_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let p = d.path().join(TABLE_NAMES_FILE);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = update_table_names(d.path(), &[set(1001, None, Some("a"))], false).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        // A link planted at a temporary name is irrelevant: names are unique.
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&victim, p.with_extension("conf.roce-net-tmp")).unwrap();
        update_table_names(d.path(), &[set(1001, None, Some("a"))], false).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    }

    /// Apply once wrote the names file through a symlinked
    /// `iproute2/` or `rt_tables.d/` (persist refused the same path).
    #[test]
    fn a_planted_directory_link_is_never_written_through() {
        for planted in ["iproute2", "iproute2/rt_tables.d"] {
            let d = tempfile::tempdir().unwrap();
            let etc = d.path().join("etc");
            let victim = d.path().join("victim");
            std::fs::create_dir_all(&victim).unwrap();
            let link = etc.join(planted);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            if planted == "iproute2" {
                std::fs::create_dir(victim.join("rt_tables.d")).unwrap();
            }
            let e = update_table_names(&etc, &[set(1001, None, Some("a"))], false).unwrap_err();
            assert!(e.to_string().contains("symlink"), "{planted}: {e}");
            assert!(
                e.to_string().contains(&link.display().to_string()),
                "{planted}: {e}"
            );
            let written: Vec<_> = walk(&victim);
            assert!(
                written.iter().all(|p| p.is_dir()),
                "{planted}: nothing written into the link's target: {written:?}"
            );
        }
    }

    fn walk(d: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
        out
    }

    fn flock(f: &File) -> bool {
        // SAFETY: flock on a descriptor the test owns.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    }

    /// The host-wide lock is a private file (0600) in
    /// `rt_tables.d`, not the directory, which any local user can open and
    /// `flock`; a lock file others could open is replaced (whoever holds it
    /// holds nothing), and a `locked` error names the process holding the lock
    /// without blaming roce-net. On main a holder of the directory stalled
    /// every writer for 30 s and the error blamed "another roce-net process".
    /// The file exists only while held: a write leaves only the names file.
    #[test]
    fn the_host_wide_lock_is_private_and_names_its_holder() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("iproute2/rt_tables.d");
        std::fs::create_dir_all(&dir).unwrap();
        let lock = dir.join(LOCK_FILE);
        let file = d.path().join(TABLE_NAMES_FILE);
        let (fd, _) = crate::files::walk::walk_parent(
            d.path(),
            &Path::new("/").join(TABLE_NAMES_FILE),
            false,
        )
        .unwrap()
        .unwrap();
        // What the lock used to be, held (as a local user could).
        let squatter = File::open(&dir).unwrap();
        assert!(flock(&squatter));
        update_table_names(d.path(), &[set(1001, None, Some("a"))], false).unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["roce-net.conf"], "the lock file is not left behind");
        let ours = lock_names_dir_within(&fd, &file, Duration::from_millis(50)).unwrap();
        let meta = std::fs::symlink_metadata(&lock).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        drop(ours);
        assert!(!lock.exists(), "removed when let go");
        drop(squatter);
        // A lock file others could open (made by hand), held: replaced.
        std::fs::write(&lock, "").unwrap();
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
        let old = File::open(&lock).unwrap();
        assert!(flock(&old));
        let ours = lock_names_dir_within(&fd, &file, Duration::from_millis(50)).unwrap();
        let meta = std::fs::metadata(&lock).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_ne!(meta.ino(), old.metadata().unwrap().ino(), "replaced");
        drop(ours);
        update_table_names(d.path(), &[set(1002, None, Some("b"))], false).unwrap();
        drop(old);
        // Held by a program that is not roce-net (this test): named, not
        // blamed on roce-net, nothing written.
        std::fs::write(&lock, "").unwrap();
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).unwrap();
        let held = File::open(&lock).unwrap();
        assert!(flock(&held));
        let before = read(d.path());
        let e = lock_names_dir_within(&fd, &file, Duration::from_millis(50))
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
        let t = e.to_string();
        assert!(
            t.contains(&format!("process {}", std::process::id())),
            "{t}"
        );
        assert!(t.contains("not a roce-net"), "{t}");
        assert!(!t.contains("another roce-net"), "{t}");
        assert!(t.contains(&lock.display().to_string()), "{t}");
        assert_eq!(read(d.path()), before);
        drop(held);
        // A link planted as the lock file is refused, never followed.
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        let e = update_table_names(d.path(), &[set(1003, None, Some("c"))], false).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let mode = std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777;
        assert_ne!(mode, 0o600, "the link's target was not touched");
    }

    #[test]
    fn concurrent_writers_lose_no_update() {
        let d = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let etc = d.path();
                s.spawn(move || {
                    for i in 0..50u32 {
                        let id = 2000 + t * 100 + i;
                        let name = format!("t{t}_{i}");
                        update_table_names(etc, &[set(id, None, Some(&name))], false).unwrap();
                    }
                });
            }
        });
        let names = own_table_names(d.path()).unwrap();
        assert_eq!(names.len(), 200, "every writer's every name is there");
        // Each let go removed the lock file under the others' waits: had
        // that split the lock, two writers would have lost a name above.
        let lock = d.path().join(TABLE_NAMES_FILE).with_file_name(LOCK_FILE);
        assert!(!lock.exists(), "{} left behind", lock.display());
        // And removing them all concurrently leaves no orphan.
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let etc = d.path();
                s.spawn(move || {
                    for i in 0..50u32 {
                        let id = 2000 + t * 100 + i;
                        let name = format!("t{t}_{i}");
                        update_table_names(etc, &[set(id, Some(&name), None)], true).unwrap();
                    }
                });
            }
        });
        assert_eq!(read(d.path()), None);
    }
}
