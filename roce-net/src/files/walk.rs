//! The link-safe walk to a file's directory under an injectable root: each
//! component reached from its parent's descriptor with `openat(O_NOFOLLOW)`,
//! a symlink on the way refused, missing directories made on request. The
//! persistence writer and the table names writer (`rt_tables/write.rs`) reach
//! every file they write through it.

use crate::error::{Error, ErrorKind, Result};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// The path as components relative to the root; refuses anything but a plain
/// absolute path.
pub(crate) fn relative(p: &Path) -> Result<PathBuf> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is not a plain absolute file path (no `.`, `..` or trailing `/`)",
                p.display()
            ),
        )
    };
    // Components() silently drops `.` and doubled slashes; check the raw bytes.
    let raw = p.as_os_str().as_bytes();
    if raw
        .split(|&b| b == b'/')
        .skip(1)
        .any(|c| c.is_empty() || c == b"." || c == b"..")
    {
        return Err(bad());
    }
    let mut comps = p.components();
    if comps.next() != Some(Component::RootDir) {
        return Err(bad());
    }
    let mut rel = PathBuf::new();
    for c in comps {
        match c {
            Component::Normal(n) => rel.push(n),
            _ => return Err(bad()),
        }
    }
    if rel.as_os_str().is_empty() {
        return Err(bad());
    }
    Ok(rel)
}

pub(crate) fn cstr(s: &std::ffi::OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("path component {s:?} contains a NUL byte"),
        )
    })
}

fn open_root(root: &Path) -> Result<OwnedFd> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)
        .map_err(|e| Error::io(e, format!("opening root directory {}", root.display())))?;
    Ok(OwnedFd::from(f))
}

pub(crate) fn symlink_refused(shown: &Path) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "refusing to write through {}: it is a symlink (roce-net never follows symlinks \
             when persisting; replace it with a real file or directory, or remove it)",
            shown.display()
        ),
    )
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)`; `None` when absent.
pub(crate) fn lstat_at(dir: &OwnedFd, name: &CString, shown: &Path) -> Result<Option<libc::stat>> {
    // SAFETY: `st` is a plain C struct fully written by a successful fstatat; the
    // name is a valid NUL-terminated string and the fd is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        return Ok(Some(st));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(None)
    } else {
        Err(Error::io(e, format!("checking {}", shown.display())))
    }
}

pub(crate) fn is_kind(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Open a directory entry as a directory without following a symlink.
fn open_dir_at(dir: &OwnedFd, name: &CString, shown: &Path) -> Result<OwnedFd> {
    // SAFETY: valid fd and NUL-terminated name; the returned fd is owned below.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
            if let Ok(Some(st)) = lstat_at(dir, name, shown) {
                if is_kind(&st, libc::S_IFLNK) {
                    return Err(symlink_refused(shown));
                }
            }
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{} is not a directory", shown.display()),
            ));
        }
        return Err(Error::io(
            e,
            format!("opening directory {}", shown.display()),
        ));
    }
    // SAFETY: fd is a fresh, valid descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Walk to the parent directory of `path` under `root`. With `create`, missing
/// directories are made; without, `Ok(None)` means a parent does not exist yet.
pub(crate) fn walk_parent(
    root: &Path,
    path: &Path,
    create: bool,
) -> Result<Option<(OwnedFd, CString)>> {
    let rel = relative(path)?;
    let comps: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let (last, parents) = match comps.split_last() {
        Some(x) => x,
        None => return Err(Error::new(ErrorKind::InvalidInput, "empty path")),
    };
    if create && !root.exists() {
        std::fs::create_dir_all(root)
            .map_err(|e| Error::io(e, format!("creating directory {}", root.display())))?;
    }
    if !create && !root.exists() {
        return Ok(None);
    }
    let mut dir = open_root(root)?;
    let mut shown = root.to_path_buf();
    for c in parents {
        shown.push(c);
        let name = cstr(c)?;
        match lstat_at(&dir, &name, &shown)? {
            None if create => {
                // SAFETY: valid fd and NUL-terminated name.
                let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
                if rc != 0 {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(Error::io(
                            e,
                            format!("creating directory {}", shown.display()),
                        ));
                    }
                }
            }
            None => return Ok(None),
            Some(st) if is_kind(&st, libc::S_IFLNK) => return Err(symlink_refused(&shown)),
            Some(_) => {}
        }
        dir = open_dir_at(&dir, &name, &shown)?;
    }
    Ok(Some((dir, cstr(last)?)))
}
