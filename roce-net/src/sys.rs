//! The two raw system calls roce-net makes through `libc::syscall` because
//! glibc's wrappers are newer than the artifacts' glibc 2.17 floor
//! (docs/install.md): random bytes for ids and packet sequence numbers, and an
//! atomic rename that refuses to replace. Below every module that uses them
//! (the private state files, the names writer, the RDMA probe).

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
