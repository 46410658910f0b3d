//! One lock per network namespace serialises appliers (docs/architecture.md, decision 5).

use crate::error::{Error, ErrorKind, Result};
use crate::files::lock::{take, who_holds, Held};
use crate::files::statedir::StateDir;
#[cfg(any(test, feature = "testing"))]
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An exclusive `flock(2)` on `<state_dir>/<key>.lock`, released on drop (and by
/// the kernel when the process dies, so a killed applier never leaves it stuck).
/// The key is the namespace's [`super::NamespaceId::key`], so a namespace that
/// reuses a freed one's inode or name never shares its lock.
#[derive(Debug)]
pub struct NsLock {
    _held: Held,
    #[cfg(any(test, feature = "testing"))]
    path: PathBuf,
}

impl NsLock {
    /// Take the lock without waiting; `ErrorKind::Locked` if another process holds it.
    #[cfg(any(test, feature = "testing"))]
    pub fn acquire(state_dir: &Path, key: &str) -> Result<NsLock> {
        Self::acquire_in(&StateDir::create(state_dir)?, key, None)
    }

    /// Take the lock, waiting up to `wait` for another holder to let go (`None`:
    /// do not wait). `ErrorKind::Locked` when it is still held then, naming
    /// the process that holds it.
    pub(crate) fn acquire_in(dir: &StateDir, key: &str, wait: Option<Duration>) -> Result<NsLock> {
        let name = format!("{key}.lock");
        let path = dir.file(&name);
        let file = match take(dir, &name, wait, Duration::from_millis(20))? {
            Ok(held) => {
                return Ok(NsLock {
                    _held: held,
                    #[cfg(any(test, feature = "testing"))]
                    path,
                })
            }
            Err(busy) => busy,
        };
        let waited = match wait {
            Some(w) => format!(" (waited {} s)", w.as_secs()),
            None => String::new(),
        };
        let who = who_holds(
            &file,
            "the lock for this namespace",
            "apply, rollback or watchdog",
        );
        Err(Error::new(
            ErrorKind::Locked,
            format!(
                "{who} ({}){waited}; wait for it to finish and try again",
                path.display()
            ),
        )
        .with_errno(libc::EWOULDBLOCK))
    }

    /// The lock file.
    #[cfg(any(test, feature = "testing"))]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    #[test]
    fn second_lock_is_refused_until_first_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let a = NsLock::acquire(d.path(), "net-1").unwrap();
        let e = NsLock::acquire(d.path(), "net-1").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Locked);
        assert!(e.to_string().contains("net-1.lock"));
        // Another namespace is independent.
        let _c = NsLock::acquire(d.path(), "net-2").unwrap();
        drop(a);
        NsLock::acquire(d.path(), "net-1").unwrap();
    }

    /// A child forked while the lock is held (by another thread starting a
    /// program) keeps a copy of the descriptor until it execs or exits: the
    /// lock is let go when dropped all the same, so taking it again at once
    /// works (it failed with Locked before the explicit unlock).
    #[test]
    fn a_dropped_lock_is_free_while_a_forked_child_keeps_its_descriptor() {
        let d = tempfile::tempdir().unwrap();
        let a = NsLock::acquire(d.path(), "fork").unwrap();
        // SAFETY: the child only sleeps and exits (async-signal-safe calls).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // Keep only the lock's descriptor: the copies of other tests'
            // files (a binary being written, then run) would fail their exec
            // with ETXTBSY while this child lives.
            let keep = a._held.as_raw_fd();
            unsafe {
                for fd in 3..4096 {
                    if fd != keep {
                        libc::close(fd);
                    }
                }
                libc::sleep(3);
                libc::_exit(0);
            }
        }
        drop(a);
        let again = NsLock::acquire(d.path(), "fork");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        again.unwrap();
    }

    #[test]
    fn a_waiting_lock_gets_it_when_the_holder_lets_go() {
        let d = tempfile::tempdir().unwrap();
        let dir = StateDir::create(d.path()).unwrap();
        let a = NsLock::acquire(d.path(), "k").unwrap();
        let e = NsLock::acquire_in(&dir, "k", Some(Duration::from_millis(100))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Locked);
        assert!(e.to_string().contains("waited"), "{e}");
        std::thread::scope(|s| {
            let h = s.spawn(|| NsLock::acquire_in(&dir, "k", Some(Duration::from_secs(20))));
            std::thread::sleep(Duration::from_millis(100));
            drop(a);
            h.join().unwrap().unwrap();
        });
    }
}
