//! One lock per network namespace serialises appliers (DESIGN decision 5).

use crate::error::{Error, ErrorKind, Result};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// An exclusive `flock(2)` on `<state_dir>/<key>.lock`, released on drop (and by
/// the kernel when the process dies, so a killed applier never leaves it stuck).
#[derive(Debug)]
pub struct NsLock {
    _file: File,
    path: PathBuf,
}

impl NsLock {
    /// Take the lock without waiting; `ErrorKind::Locked` if another process holds it.
    pub fn acquire(state_dir: &Path, key: &str) -> Result<NsLock> {
        std::fs::create_dir_all(state_dir).map_err(|e| {
            Error::io(
                e,
                format!("creating state directory {}", state_dir.display()),
            )
        })?;
        let path = state_dir.join(format!("{key}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(e, format!("opening lock file {}", path.display())))?;
        // SAFETY: flock on an fd we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(Error::new(
                    ErrorKind::Locked,
                    format!(
                        "another roce-net apply or rollback holds the lock for this namespace ({}); \
                         wait for it to finish and try again",
                        path.display()
                    ),
                )
                .with_errno(libc::EWOULDBLOCK));
            }
            return Err(Error::io(err, format!("locking {}", path.display())));
        }
        Ok(NsLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
