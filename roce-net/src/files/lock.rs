//! Private lock files: an exclusive `flock(2)` on a file in a [`StateDir`],
//! taken with a bounded wait, let go explicitly, and, when another process
//! holds it, a sentence naming that process from `/proc/locks`. The
//! namespace lock of apply ([`crate::NsLock`]) and the lock of the shared
//! table names file (`rt_tables/write.rs`) are both built on it.

use super::statedir::StateDir;
use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// A lock file whose `flock` this process holds, let go explicitly on drop
/// (`LOCK_UN`) rather than by closing it: a child that another thread forks
/// at that moment holds a copy of the descriptor until it execs (close-on-exec
/// only closes it then), and a lock let go by closing lasts until its last
/// copy is closed, so a caller taking the lock again right away (rollback after
/// apply) found it held by no one it could name.
#[derive(Debug)]
pub(crate) struct Held(File);

#[cfg(test)]
impl AsRawFd for Held {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

impl Held {
    /// Remove this lock's file `name` from `dir` while the lock is still
    /// held, if it is still the file at that name: a lock file that holds
    /// nothing between two commands does not stay behind in a directory
    /// that is not roce-net's. Safe with [`take`], which every taker of
    /// such a lock goes through: a process that opened the file before it
    /// was removed gets its `flock` only once this one lets go, finds the
    /// file no longer at its name, and takes the one there then (a new one
    /// when none is), so two processes never both think they hold it.
    pub(crate) fn remove_file(&self, dir: &StateDir, name: &str) {
        if dir.same_file(&self.0, name) {
            dir.unlink(name);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: flock on an fd we own; failing to unlock leaves the close to
        // do it, as before.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

fn try_flock(f: &File) -> std::io::Result<bool> {
    // SAFETY: flock on an fd we own.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(e)
}

/// Take an exclusive `flock` on the private lock file `name` in `dir`
/// ([`StateDir::open_lock`]: 0600, one others could open replaced), trying
/// every `poll` for up to `wait` (`None`: once). `Ok(Ok(held))`: held until
/// `held` is dropped; `Ok(Err(file))`: another process still holds it (see
/// [`who_holds`]).
pub(crate) fn take(
    dir: &StateDir,
    name: &str,
    wait: Option<Duration>,
    poll: Duration,
) -> Result<std::result::Result<Held, File>> {
    let mut file = dir.open_lock(name)?;
    let t0 = Instant::now();
    loop {
        match try_flock(&file) {
            // A lock on a file no longer at its name (replaced by a
            // private one) is no lock: take the one there now.
            Ok(true) if !dir.same_file(&file, name) => {
                file = dir.open_lock(name)?;
                continue;
            }
            Ok(true) => return Ok(Ok(Held(file))),
            Ok(false) => {}
            Err(e) => {
                return Err(Error::io(
                    e,
                    format!("locking {}", dir.file(name).display()),
                ))
            }
        }
        match wait {
            Some(w) if t0.elapsed() < w => std::thread::sleep(poll),
            _ => return Ok(Err(file)),
        }
    }
}

/// Who holds `lock` (what it is, e.g. "the lock for this namespace") on
/// `f`'s file, as the start of a sentence: the processes `/proc/locks`
/// names, and whether they are roce-net (`ours`: which roce-net commands
/// take it) or another program, which is then not blamed on roce-net.
pub(crate) fn who_holds(f: &File, lock: &str, ours: &str) -> String {
    match holders(f).as_slice() {
        [] => format!("another roce-net {ours} holds {lock}"),
        hs if hs.iter().all(|h| h.roce_net) => {
            format!("another roce-net {ours} ({}) holds {lock}", describe(hs))
        }
        hs => format!(
            "{} holds {lock}; it is not a roce-net {ours}, so find out why it holds it (or end \
             it)",
            describe(hs)
        ),
    }
}

/// Whether a process's `comm` (its name as the kernel keeps it, at most 15
/// bytes) is roce-net's.
fn is_roce_net_comm(comm: &str) -> bool {
    comm.starts_with("roce-net")
}

/// A process holding a lock.
struct Holder {
    pid: u32,
    comm: String,
    uid: Option<u32>,
    roce_net: bool,
}

fn describe(hs: &[Holder]) -> String {
    hs.iter()
        .map(|h| {
            format!(
                "process {} ({}{})",
                h.pid,
                h.comm,
                h.uid.map(|u| format!(", uid {u}")).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The processes `/proc/locks` says hold a `flock` on `f`'s file (empty when
/// it cannot tell).
fn holders(f: &File) -> Vec<Holder> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = f.metadata() else {
        return Vec::new();
    };
    let (dev, ino) = (meta.dev(), meta.ino());
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let Ok(text) = crate::input::read_kernel_list(Path::new("/proc/locks"), 1 << 20) else {
        return Vec::new();
    };
    let mut out: Vec<Holder> = Vec::new();
    for line in text.lines() {
        // `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`; waiters have `->`.
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 6 || w[1] != "FLOCK" {
            continue;
        }
        let id: Vec<&str> = w[5].split(':').collect();
        let same = id.len() == 3
            && u32::from_str_radix(id[0], 16).ok() == Some(major)
            && u32::from_str_radix(id[1], 16).ok() == Some(minor)
            && id[2].parse::<u64>().ok() == Some(ino);
        let Some(pid) = w[4].parse::<u32>().ok().filter(|_| same) else {
            continue;
        };
        if out.iter().any(|h| h.pid == pid) {
            continue;
        }
        let raw = crate::input::read_attribute_text(Path::new(&format!("/proc/{pid}/comm")));
        // Judged on the name itself: the shown excerpt is quoted.
        let roce_net = raw
            .as_deref()
            .is_ok_and(|s| is_roce_net_comm(s.trim_end_matches('\n')));
        let comm = raw
            .map(|s| crate::input::excerpt(s.trim(), 32))
            .unwrap_or_else(|_| "?".into());
        let uid = std::fs::metadata(format!("/proc/{pid}"))
            .ok()
            .map(|m| m.uid());
        out.push(Holder {
            pid,
            roce_net,
            comm,
            uid,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roce_net_holder_is_named_as_roce_net() {
        // A program called roce-net (flock(1) under that name) holds the
        // lock: the message says another roce-net holds it, not that an
        // unknown program does (the shown name is quoted; the judgement
        // used to test the quoted text and never matched).
        let d = tempfile::tempdir().unwrap();
        let dir = StateDir::create(d.path()).unwrap();
        let lock_file = dir.open_lock("k").unwrap();
        drop(lock_file);
        let exe = d.path().join("roce-net");
        std::fs::copy("/usr/bin/flock", &exe).unwrap();
        let mut child = std::process::Command::new(&exe)
            .arg(dir.file("k"))
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        let f = loop {
            match take(&dir, "k", None, Duration::from_millis(10)).unwrap() {
                Err(f) => break f,
                Ok(_) if t0.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(_) => panic!("flock never took the lock"),
            }
        };
        let who = who_holds(&f, "the lock", "apply");
        child.kill().ok();
        child.wait().ok();
        assert!(who.starts_with("another roce-net apply (process "), "{who}");
        assert!(who.contains("\"roce-net\""), "{who}");
    }
}
