//! A whole file written under a name the user gives (`snapshot -o`, `metrics
//! -o`, `check -o`), so that a reader sees the old file or the whole new one
//! and nothing another account planted is ever followed or overwritten.
//!
//! The directory may belong to someone else: node_exporter's textfile
//! directory belongs to its service account, and a snapshot may go to a shared
//! directory. A predictable temporary name there (`.<name>.<pid>.tmp`, opened
//! with `O_CREAT|O_TRUNC`) let that account plant a link under it and have
//! root overwrite any file the link named. So the temporary file gets a random
//! name and is created with `O_CREAT|O_EXCL|O_NOFOLLOW` (an existing name, a
//! link included, is never opened: another random name is tried), relative to
//! one descriptor of the directory, then renamed over the target. A link
//! planted at the target's own name is replaced, never followed (`rename(2)`
//! replaces a link itself). The same rules the persistence writer and the
//! state directory follow (`persist/write.rs`, [`super::statedir`]).

use crate::error::{Error, Result};
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How many random temporary names are tried before giving up (each one that
/// exists, however it came there, is left alone).
const TRIES: usize = 8;

/// Write `path` whole and atomically: a temporary file with a random name in
/// the same directory (`.<name>.<random>.tmp`, mode 0644 less the umask,
/// created with `O_EXCL|O_NOFOLLOW`), `contents` written and synced, then
/// renamed over `path`. The temporary file is removed when anything fails, and
/// the error names `path`. A reader of `*.prom` (node_exporter's textfile
/// collector) or of `path` never sees a partial file.
pub fn write_file_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    replace_with(path, &mut |f| f.write_all(contents))
}

/// [`write_file_atomically`] with the contents written by `write` into the
/// open temporary file (a snapshot streams its JSON or gzip into it).
pub(crate) fn replace_with(
    path: &Path,
    write: &mut dyn FnMut(&mut File) -> std::io::Result<()>,
) -> Result<()> {
    let doing = || format!("writing {}", path.display());
    let name = path.file_name().ok_or_else(|| {
        Error::new(
            crate::error::ErrorKind::InvalidInput,
            format!("{}: give a file name to write to", path.display()),
        )
    })?;
    let dir_path = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = open_dir(&dir_path).map_err(|e| Error::io(e, doing()))?;
    let target = cstring(name.as_bytes(), path)?;
    let (mut file, tmp) = create_temp(&dir, &name.to_string_lossy())
        .map_err(|e| Error::io(e, format!("{} (creating its temporary file)", doing())))?;
    let result = (|| {
        write(&mut file)?;
        file.sync_all()?;
        // SAFETY: a directory descriptor we own and two NUL-terminated names in it.
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                dir.as_raw_fd(),
                target.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The rename itself durable; a file system that cannot sync a
        // directory has still renamed.
        // SAFETY: a directory descriptor we own.
        unsafe { libc::fsync(dir.as_raw_fd()) };
        Ok(())
    })();
    result.map_err(|e| {
        // SAFETY: the directory descriptor and the temporary name we created;
        // failing to unlink leaves the original error the one to report.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        Error::io(
            e,
            format!(
                "{} (via the temporary file {})",
                doing(),
                dir_path.join(tmp.to_string_lossy().as_ref()).display()
            ),
        )
    })
}

fn cstring(bytes: &[u8], shown: &Path) -> Result<CString> {
    CString::new(bytes).map_err(|_| {
        Error::new(
            crate::error::ErrorKind::InvalidInput,
            format!("{}: the name holds a NUL byte", shown.display()),
        )
    })
}

/// The directory, opened for `openat(2)`/`renameat(2)` relative to it (and
/// its `fsync`); it is the one the user named, links in its path included.
fn open_dir(dir: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a NUL-terminated path; the descriptor is owned right away.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A new temporary file in `dir` under a random name; an existing name (a
/// file, a link, anything) is skipped, never opened.
fn create_temp(dir: &OwnedFd, name: &str) -> std::io::Result<(File, CString)> {
    for _ in 0..TRIES {
        let tmp = format!(".{name}.{}.tmp", super::statedir::random_suffix());
        let c = CString::new(tmp).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: openat in a directory we hold with a valid name; the
        // descriptor is owned right away.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nobody else owns.
            return Ok((unsafe { File::from_raw_fd(fd) }, c));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{TRIES} random temporary names were all taken"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file is replaced whole, nothing else is left in the directory, and
    /// a link at the target's name is replaced rather than written through.
    #[test]
    fn replaces_the_file_and_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.prom");
        std::fs::write(&p, "old").unwrap();
        write_file_atomically(&p, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("l.prom");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_file_atomically(&link, b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // A missing directory: an error naming the file, nothing created.
        let e = write_file_atomically(&dir.path().join("no/x.prom"), b"x").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::NotFound);
        assert!(e.to_string().contains("no/x.prom"), "{e}");
    }

    /// A failing writer leaves no temporary file behind and the old file as it was.
    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, "old").unwrap();
        let e = replace_with(&p, &mut |_| {
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert!(e.to_string().contains("s.json"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
