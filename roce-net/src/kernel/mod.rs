//! The kernel I/O layer: every read from and write to the kernel goes through here.
//!
//! - [`netlink`]: a small synchronous rtnetlink socket (links, addresses,
//!   neighbours, routes, rules) with dumps and `ip`-named writes;
//! - [`ethtool`]: driver statistics (`ethtool -S`) over the ethtool ioctl;
//! - [`procfs`]: sysctls under `/proc/sys`, by (interface, key);
//! - [`sysfs`]: RDMA devices, ports, GID tables and counters under
//!   `/sys/class/infiniband` (root injectable);
//! - [`verbs`]: the same devices through libibverbs, loaded at run time (the
//!   `verbs` cargo feature).
//!
//! Sockets and `/proc/sys/net` files belong to the namespace of the thread that
//! opens them; [`crate::Host`] runs this layer on a thread inside its namespace.

pub(crate) mod ethtool;
pub(crate) mod netlink;
pub(crate) mod procfs;
pub(crate) mod sysfs;
pub(crate) mod verbs;

/// `openat(2)` of `name` relative to the directory `dir`, with `flags` plus
/// `O_CLOEXEC` (and mode 0644 when `flags` create the file). The one place the
/// state directory, the table-names file and `/proc/sys` reach files by a
/// directory descriptor, so a path component swapped half way changes nothing;
/// callers that must never follow a link pass `O_NOFOLLOW`.
pub(crate) fn open_at(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &str,
    flags: libc::c_int,
) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let c = std::ffi::CString::new(name)
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid directory fd and NUL-terminated name; the new fd is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a freshly opened descriptor nobody else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Fill `buf` from the kernel's random pool (`getrandom(2)`, flags 0); `false`
/// when the kernel cannot (before 3.17, or a short read), so callers fall back.
///
/// The raw system call, not glibc's `getrandom()` wrapper, which glibc added in
/// 2.25: the portable binary and wheel keep a glibc 2.17 floor (docs/install.md).
pub(crate) fn getrandom(buf: &mut [u8]) -> bool {
    // SAFETY: buf is a valid, writable buffer of buf.len() bytes; flags 0.
    let n = unsafe { libc::syscall(libc::SYS_getrandom, buf.as_mut_ptr(), buf.len(), 0u32) };
    usize::try_from(n).is_ok_and(|n| n == buf.len())
}

/// `renameat2(2)` with `flags` (e.g. `RENAME_NOREPLACE`), through the raw system
/// call: glibc's wrapper is 2.28, above the artifacts' glibc 2.17 floor (the
/// system call itself is Linux 3.15). `Err` carries errno.
pub(crate) fn renameat2(
    olddirfd: libc::c_int,
    oldpath: &std::ffi::CStr,
    newdirfd: libc::c_int,
    newpath: &std::ffi::CStr,
    flags: libc::c_uint,
) -> std::io::Result<()> {
    // SAFETY: two valid NUL-terminated paths and directory fds the caller owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            olddirfd,
            oldpath.as_ptr(),
            newdirfd,
            newpath.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
