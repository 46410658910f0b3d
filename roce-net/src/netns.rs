//! Running work inside a network namespace (DESIGN decision 3).
//!
//! Netlink sockets and `/proc/sys/net` files belong to the namespace of the thread
//! that opens them. [`NetnsTarget::run`] runs a closure on a thread that has entered
//! the namespace, so the caller's own thread (and process) never changes namespace.

use crate::error::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// Where named namespaces live (`ip netns`'s convention).
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// Which network namespace a handle works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetnsTarget {
    /// The namespace of the calling thread.
    Current,
    /// A named namespace under `/run/netns/`.
    Named(String),
    /// A namespace file anywhere (`/proc/<pid>/ns/net`, a bind mount).
    Path(PathBuf),
}

impl NetnsTarget {
    /// A named namespace; fails with `NotFound` when `/run/netns/<name>` is missing.
    pub fn named(name: &str) -> Result<NetnsTarget> {
        validate_name(name)?;
        let p = Path::new(NETNS_RUN_DIR).join(name);
        if !p.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "network namespace {name:?} does not exist ({} is missing); list them with `ip netns list`",
                    p.display()
                ),
            ));
        }
        Ok(NetnsTarget::Named(name.to_string()))
    }

    /// A namespace file; fails with `NotFound` when it is missing.
    pub fn path(path: &Path) -> Result<NetnsTarget> {
        if !path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("network namespace file {} does not exist", path.display()),
            ));
        }
        Ok(NetnsTarget::Path(path.to_path_buf()))
    }

    /// The namespace's name, when it has one.
    pub fn name(&self) -> Option<&str> {
        match self {
            NetnsTarget::Named(n) => Some(n),
            _ => None,
        }
    }

    /// The namespace file, or `None` for the current namespace.
    pub fn file(&self) -> Option<PathBuf> {
        match self {
            NetnsTarget::Current => None,
            NetnsTarget::Named(n) => Some(Path::new(NETNS_RUN_DIR).join(n)),
            NetnsTarget::Path(p) => Some(p.clone()),
        }
    }

    /// Run `f` inside the namespace. For [`NetnsTarget::Current`] it runs on the
    /// calling thread; otherwise on a scoped thread that entered the namespace
    /// with `setns(2)` and ends with `f`.
    pub fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send,
        F: FnOnce() -> Result<T> + Send,
    {
        let Some(file) = self.file() else {
            return f();
        };
        std::thread::scope(|s| {
            let h = s.spawn(move || {
                enter(&file)?;
                f()
            });
            h.join().unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Io,
                    "a worker thread inside the network namespace panicked",
                ))
            })
        })
    }
}

/// Enter the namespace in `file` on the calling thread.
fn enter(file: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(file)
        .map_err(|e| Error::io(e, format!("opening network namespace {}", file.display())))?;
    // SAFETY: setns on a valid fd we own; it only affects the calling thread.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            format!("entering network namespace {}", file.display()),
        ));
    }
    Ok(())
}

/// Check a namespace name the way `ip netns` does: non-empty, no `/`, not `.`/`..`.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.len() > 255 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("invalid network namespace name {name:?}"),
        ));
    }
    Ok(())
}
