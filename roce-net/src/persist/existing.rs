//! What is at a target path now ([`Existing`], read by [`inspect`] without
//! following a symlink), and the file as it would be written over it
//! ([`merged_names`]). Below `diff.rs` (which compares) and `write.rs` (which
//! writes); it uses neither.

use super::RenderedFile;
use crate::error::{Error, ErrorKind, Result};
use crate::files::walk::{is_kind, lstat_at, relative, symlink_refused, walk_parent};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;

/// What is at a target path now.
#[derive(Debug, Default)]
pub(crate) struct Existing {
    pub content: Option<Vec<u8>>,
    pub mode: Option<u32>,
    /// The digest persist recorded on the file when it wrote it
    /// ([`super::switch::WRITTEN_XATTR`]), if any.
    pub recorded: Option<String>,
}

/// Read what is at `path` under `root` now, refusing symlinks on the way.
pub(crate) fn inspect(root: &Path, path: &Path) -> Result<Existing> {
    let shown = root.join(relative(path)?);
    let Some((dir, name)) = walk_parent(root, path, false)? else {
        return Ok(Existing::default());
    };
    let Some(st) = lstat_at(&dir, &name, &shown)? else {
        return Ok(Existing::default());
    };
    if is_kind(&st, libc::S_IFLNK) {
        return Err(symlink_refused(&shown));
    }
    if !is_kind(&st, libc::S_IFREG) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} exists and is not a regular file; remove it first",
                shown.display()
            ),
        ));
    }
    // SAFETY: valid fd and NUL-terminated name; the fd is owned by the File.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            format!("opening {}", shown.display()),
        ));
    }
    // SAFETY: fd is a fresh, valid descriptor we own.
    let mut f = unsafe { File::from_raw_fd(fd) };
    let buf = crate::input::read_stream(&mut f, crate::input::InputKind::NodeConfig, "a file")
        .map_err(|e| e.context(format!("reading {}", shown.display())))?;
    Ok(Existing {
        content: Some(buf),
        mode: Some(st.st_mode & 0o7777),
        recorded: super::switch::recorded_digest(&f),
    })
}

/// `f` as it is written over `existing`: the same, except roce-net's
/// table-names file, which is host-wide and keeps the lines of the tables `f`
/// does not name ([`crate::rt_tables::merge_names_file`]).
pub(crate) fn merged_names<'a>(
    f: &'a RenderedFile,
    existing: &Existing,
) -> std::borrow::Cow<'a, RenderedFile> {
    if f.path != Path::new(super::RT_TABLES_PATH) {
        return std::borrow::Cow::Borrowed(f);
    }
    let content = crate::rt_tables::merge_names_file(&f.content, existing.content.as_deref());
    std::borrow::Cow::Owned(RenderedFile {
        content,
        ..f.clone()
    })
}
