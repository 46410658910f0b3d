//! Running work inside a network namespace (docs/architecture.md, decision 3).
//!
//! Netlink sockets and `/proc/sys/net` files belong to the namespace of the thread
//! that opens them. [`NetnsTarget::run`] runs a closure on a thread that has entered
//! the namespace, so the caller's own thread (and process) never changes namespace,
//! unless the caller moved it there itself with [`NetnsTarget::enter`] (then the
//! work runs on the calling thread, without a worker thread).

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

    /// Move the calling thread into this namespace (nothing for
    /// [`NetnsTarget::Current`]), for a process or thread that works on this one
    /// namespace, like the CLI: every later [`NetnsTarget::run`] on it then runs
    /// on the calling thread, saving a worker thread (its start, `setns(2)` and
    /// end) per call. The thread stays in the namespace.
    pub fn enter(&self) -> Result<()> {
        match self.file() {
            Some(f) => enter(&f),
            None => Ok(()),
        }
    }

    /// Whether the calling thread is in this namespace: its
    /// `/proc/thread-self/ns/net` and the namespace file are the same nsfs inode
    /// (as `ip netns identify` compares them; both are live at this moment, so an
    /// equal inode is the same namespace).
    fn is_entered(&self, file: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Ok(here), Ok(there)) = (
            std::fs::metadata("/proc/thread-self/ns/net"),
            std::fs::metadata(file),
        ) else {
            return false;
        };
        here.dev() == there.dev() && here.ino() == there.ino()
    }

    /// Run `f` inside the namespace. For [`NetnsTarget::Current`], or when the
    /// calling thread already is in the namespace ([`NetnsTarget::enter`]), it
    /// runs on the calling thread; otherwise on a scoped thread that entered the
    /// namespace with `setns(2)` and ends with `f`.
    pub fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send,
        F: FnOnce() -> Result<T> + Send,
    {
        let Some(file) = self.file() else {
            return f();
        };
        if self.is_entered(&file) {
            return f();
        }
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
    // O_NONBLOCK: a FIFO named as a namespace file fails setns(2) instead of
    // blocking the open forever.
    let f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(file)
    }
    .map_err(|e| entering_error(e, format!("opening network namespace {}", file.display())))?;
    // SAFETY: setns on a valid fd we own; it only affects the calling thread.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(entering_error(
            std::io::Error::last_os_error(),
            format!("entering network namespace {}", file.display()),
        ));
    }
    Ok(())
}

/// An error opening or entering a namespace; refused permission says what
/// entering one needs (setns(2) of a network namespace: CAP_SYS_ADMIN, in the
/// caller's and the namespace's user namespace), not the generic hint.
fn entering_error(e: std::io::Error, doing: String) -> Error {
    if e.kind() != std::io::ErrorKind::PermissionDenied {
        return Error::io(e, doing);
    }
    let err = Error::new(
        ErrorKind::Permission,
        format!("{doing}: {e} (entering a network namespace needs CAP_SYS_ADMIN: run as root)"),
    );
    match e.raw_os_error() {
        Some(n) => err.with_errno(n),
        None => err,
    }
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

/// `mount(2)` with an optional source (`none` when absent) and no data; the
/// error says what was being done.
fn mount(
    src: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
    doing: impl FnOnce() -> String,
) -> Result<()> {
    let none = c"none";
    // SAFETY: mount(2) with valid NUL-terminated strings and no data.
    let rc = unsafe {
        libc::mount(
            src.unwrap_or(none).as_ptr(),
            target.as_ptr(),
            none.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(Error::io(std::io::Error::last_os_error(), doing()));
    }
    Ok(())
}

/// Make `/run/netns` exist and be a shared mount point, as `ip netns add` does, so
/// namespace bind mounts made here propagate to other mount namespaces.
fn prepare_run_dir() -> Result<()> {
    let dir = Path::new(NETNS_RUN_DIR);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(e, format!("creating {NETNS_RUN_DIR}")))?;
    let cdir = c_path(dir)?;
    let shared = libc::MS_SHARED | libc::MS_REC;
    let doing_shared = || format!("making {NETNS_RUN_DIR} a shared mount");
    match mount(None, &cdir, shared, doing_shared) {
        Ok(()) => return Ok(()),
        // EINVAL: not a mount point yet; anything else is a real failure.
        Err(e) if e.errno_value() != Some(libc::EINVAL) => return Err(e),
        Err(_) => {}
    }
    // Bind it onto itself, then make it shared.
    mount(Some(&cdir), &cdir, libc::MS_BIND | libc::MS_REC, || {
        format!("bind-mounting {NETNS_RUN_DIR} onto itself")
    })?;
    mount(None, &cdir, shared, doing_shared)
}

fn c_path(p: &Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("path {} contains a NUL byte", p.display()),
        )
    })
}

/// Create a named network namespace, compatible with `ip netns add NAME`: a new,
/// empty namespace (only `lo`, down) bind-mounted on `/run/netns/NAME`.
///
/// The namespace is made on a short-lived thread that calls `unshare(CLONE_NEWNET)`,
/// so neither the caller's thread nor the process changes namespace. Fails with
/// `InvalidInput` if the name is already taken.
pub fn netns_add(name: &str) -> Result<()> {
    validate_name(name)?;
    prepare_run_dir()?;
    let path = Path::new(NETNS_RUN_DIR).join(name);
    let doing = format!("creating network namespace {name:?}");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{doing}: {} already exists; pick another name or `ip netns del {name}`",
                    path.display()
                ),
            ))
        }
        Err(e) => {
            return Err(Error::io(
                e,
                format!("{doing}: creating {}", path.display()),
            ))
        }
    }
    let target = c_path(&path)?;
    let res = std::thread::scope(|s| {
        s.spawn(|| -> Result<()> {
            // SAFETY: unshare only affects this (short-lived) thread.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(Error::io(
                    std::io::Error::last_os_error(),
                    format!("{doing}: unshare(CLONE_NEWNET)"),
                ));
            }
            mount(
                Some(c"/proc/thread-self/ns/net"),
                &target,
                libc::MS_BIND,
                || format!("{doing}: bind-mounting the namespace on {}", path.display()),
            )?;
            Ok(())
        })
        .join()
        .unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Io,
                format!("{doing}: worker thread panicked"),
            ))
        })
    });
    if res.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    res
}

/// Delete a named network namespace, like `ip netns del NAME`: unmount and remove
/// `/run/netns/NAME`. The kernel frees the namespace once nothing else holds it.
/// Fails with `NotFound` when it does not exist.
pub fn netns_del(name: &str) -> Result<()> {
    validate_name(name)?;
    let path = Path::new(NETNS_RUN_DIR).join(name);
    let doing = format!("deleting network namespace {name:?}");
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("{doing}: {} does not exist", path.display()),
        ));
    }
    let cpath = c_path(&path)?;
    // SAFETY: umount2 on a valid path; MNT_DETACH makes it lazy like iproute2.
    let rc = unsafe { libc::umount2(cpath.as_ptr(), libc::MNT_DETACH) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        // EINVAL: not a mount point (half-created); still remove the file.
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(Error::io(
                e,
                format!("{doing}: unmounting {}", path.display()),
            ));
        }
    }
    std::fs::remove_file(&path)
        .map_err(|e| Error::io(e, format!("{doing}: removing {}", path.display())))
}

/// Names of the namespaces under `/run/netns` (like `ip netns list`), sorted.
#[cfg(any(test, feature = "testing"))]
pub fn netns_list() -> Result<Vec<String>> {
    let rd = match std::fs::read_dir(NETNS_RUN_DIR) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(e, format!("listing {NETNS_RUN_DIR}"))),
    };
    let mut out: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::NetnsTarget;
    use crate::test_support::{require_namespaces, Netns};

    /// After `enter`, `run` works on the calling thread (no worker thread), in
    /// that namespace; a thread elsewhere still gets a worker thread.
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn run_stays_on_a_thread_that_entered() {
        require_namespaces("run_stays_on_a_thread_that_entered");
        let ns = Netns::new("enter");
        let target = NetnsTarget::named(&ns.name).unwrap();
        let cookie = || std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        let inside = target.run(|| Ok(cookie())).unwrap();
        assert_ne!(inside, cookie(), "the namespace is not this thread's");
        let here = std::thread::current().id();
        let worker = target.run(|| Ok(std::thread::current().id())).unwrap();
        assert_ne!(worker, here, "not entered: a worker thread");
        // On a thread of its own, which ends in the namespace.
        let t = target.clone();
        std::thread::spawn(move || {
            let here = std::thread::current().id();
            t.enter().unwrap();
            let (id, c) = t
                .run(|| Ok((std::thread::current().id(), cookie())))
                .unwrap();
            assert_eq!(id, here, "entered: the calling thread");
            assert_eq!(c, inside, "and in the namespace");
        })
        .join()
        .unwrap();
    }
}
