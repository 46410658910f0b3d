//! The state directory (`/run/roce-net`), opened so that nobody else's files are
//! ever followed, trusted or overwritten.
//!
//! - The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`) and every file in it
//!   is reached relative to that descriptor (`openat`, `renameat`), so replacing
//!   the directory or a path component half way changes nothing.
//! - The directory and every file read from it must be owned by the effective
//!   user or by root, and not writable by group or others; a symbolic link is
//!   refused (`O_NOFOLLOW`), as is anything but a directory or regular file.
//! - Files are written through a fresh temporary file created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW` under a unique name, then renamed over the
//!   target: a planted file or link at any name is replaced, never written through.
//! - Reads are bounded.

use crate::error::{Error, ErrorKind, Result};
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The largest state file read (a journal of a very large plan is a few MB).
pub(crate) const MAX_STATE_FILE: u64 = 64 << 20;

/// An open, trusted state directory.
#[derive(Debug)]
pub(crate) struct StateDir {
    fd: OwnedFd,
    path: PathBuf,
    kind: DirKind,
}

/// What a [`StateDir`] is, for its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirKind {
    /// roce-net's state directory (`--state-dir`).
    State,
    /// Another directory roce-net keeps a lock file in (`rt_tables.d` under
    /// the etc root), opened by the caller.
    Other,
}

impl DirKind {
    fn file(self) -> &'static str {
        match self {
            DirKind::State => "state file",
            DirKind::Other => "file",
        }
    }

    fn trusted(self) -> &'static str {
        match self {
            DirKind::State => "state",
            DirKind::Other => "a file",
        }
    }

    fn elsewhere(self) -> &'static str {
        match self {
            DirKind::State => " or use another --state-dir",
            DirKind::Other => "",
        }
    }
}

/// An error writing into a directory, from `e` and what was being done. A
/// read-only file system or a full disk (or quota) is not a fault of the
/// file: the message says which directory must be writable, with free space,
/// and what to do.
fn write_error(kind: DirKind, dir: &Path, e: std::io::Error, doing: String) -> Error {
    let what = match kind {
        DirKind::State => "roce-net records the undo data of every change there before making it",
        DirKind::Other => "roce-net keeps its lock file there",
    };
    let fix = match e.raw_os_error() {
        Some(libc::EROFS) => format!(
            "{} is on a read-only file system ({what}): remount it read-write{}, then run \
             the command again",
            dir.display(),
            kind.elsewhere()
        ),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => format!(
            "no space left for {} ({what}): free space there{}, then run the command again",
            dir.display(),
            kind.elsewhere()
        ),
        _ => return Error::io(e, doing),
    };
    let errno = e.raw_os_error().unwrap_or(libc::EIO);
    Error::new(ErrorKind::Io, format!("{doing}: {e}; {fix}")).with_errno(errno)
}

fn cstr(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("state file name {name:?} contains a NUL byte"),
        )
    })
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn fstat(fd: &impl AsRawFd) -> std::io::Result<libc::stat> {
    // SAFETY: fstat into a zeroed struct on a valid descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// Refuse what another user could have written: owned by someone other than us
/// or root, or writable by group or others.
fn check_trust(st: &libc::stat, what: &str, path: &Path, kind: DirKind) -> Result<()> {
    let me = euid();
    let (trusted, elsewhere) = (kind.trusted(), kind.elsewhere());
    if st.st_uid != me && st.st_uid != 0 {
        return Err(Error::new(
            ErrorKind::Permission,
            format!(
                "{what} {} is owned by uid {}, not by uid {me} or root: roce-net does not trust \
                 {trusted} another user could have written; nothing was changed. Check who made \
                 it, then remove it{elsewhere}",
                path.display(),
                st.st_uid
            ),
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(Error::new(
            ErrorKind::Permission,
            format!(
                "{what} {} is writable by group or others (mode {:o}): roce-net does not trust \
                 {trusted} another user could have written; nothing was changed. Run \
                 `chmod go-w {}` if its contents are yours{}",
                path.display(),
                st.st_mode & 0o7777,
                path.display(),
                if elsewhere.is_empty() {
                    ""
                } else {
                    ", or use another --state-dir"
                }
            ),
        ));
    }
    Ok(())
}

fn is_symlink_error(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

pub(crate) fn random_suffix() -> String {
    let mut b = [0u8; 8];
    if !crate::sys::getrandom(&mut b) {
        // Unique enough with O_EXCL retrying: pid and time.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        return format!("{:x}{t:x}", std::process::id());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A random 64-bit identifier as 16 hex digits.
pub(crate) fn random_id() -> String {
    random_suffix().chars().take(16).collect()
}

impl StateDir {
    /// Open the state directory for writing, creating it (mode 0755) when missing.
    pub(crate) fn create(path: &Path) -> Result<StateDir> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                write_error(
                    DirKind::State,
                    path,
                    e,
                    format!("creating the parent of state directory {}", path.display()),
                )
            })?;
        }
        let c = c_path(path)?;
        // SAFETY: mkdir with a valid NUL-terminated path.
        if unsafe { libc::mkdir(c.as_ptr(), 0o755) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(write_error(
                    DirKind::State,
                    path,
                    e,
                    format!("creating state directory {}", path.display()),
                ));
            }
        }
        Self::open(path)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "state directory {} vanished while opening it",
                    path.display()
                ),
            )
        })
    }

    /// Open an existing state directory; `None` when it does not exist.
    pub(crate) fn open(path: &Path) -> Result<Option<StateDir>> {
        let c = c_path(path)?;
        // SAFETY: open with a valid path; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => Err(Error::new(
                    ErrorKind::Permission,
                    format!(
                        "state directory {} is a symbolic link or not a directory; roce-net \
                         refuses to follow it. Remove it or use another --state-dir",
                        path.display()
                    ),
                )),
                _ => Err(Error::io(
                    e,
                    format!("opening state directory {}", path.display()),
                )),
            };
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = fstat(&fd).map_err(|e| Error::io(e, format!("checking {}", path.display())))?;
        check_trust(&st, "state directory", path, DirKind::State)?;
        Ok(Some(StateDir {
            fd,
            path: path.to_path_buf(),
            kind: DirKind::State,
        }))
    }

    /// A directory the caller opened itself (without following links), shown
    /// as `path`, to keep lock files in ([`StateDir::open_lock`]): its files
    /// are held to the same rules, its own owner and mode are the caller's
    /// business (`rt_tables.d` under the etc root).
    pub(crate) fn from_open(fd: OwnedFd, path: &Path) -> StateDir {
        StateDir {
            fd,
            path: path.to_path_buf(),
            kind: DirKind::Other,
        }
    }

    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The path of a file in it (for messages and reports).
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn openat(&self, name: &str, flags: libc::c_int) -> std::io::Result<File> {
        use std::os::fd::AsFd;
        crate::input::open_at(self.fd.as_fd(), name, flags | libc::O_NOFOLLOW)
    }

    /// An error writing into this directory (see [`write_error`]).
    fn write_err(&self, e: std::io::Error, doing: String) -> Error {
        write_error(self.kind, &self.path, e, doing)
    }

    fn refuse_link(&self, name: &str) -> Error {
        Error::new(
            ErrorKind::Permission,
            format!(
                "{} is a symbolic link; roce-net never follows links in its {}. Remove it (it \
                 was not made by roce-net) and try again",
                self.file(name).display(),
                match self.kind {
                    DirKind::State => "state directory",
                    DirKind::Other => "own files",
                }
            ),
        )
    }

    fn check_file(&self, f: &File, name: &str) -> Result<()> {
        let st = fstat(f)
            .map_err(|e| Error::io(e, format!("checking {}", self.file(name).display())))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(Error::new(
                ErrorKind::Permission,
                format!(
                    "{} is not a regular file; roce-net refuses to use it. Remove it and try again",
                    self.file(name).display()
                ),
            ));
        }
        check_trust(&st, self.kind.file(), &self.file(name), self.kind)
    }

    /// Read a file whole (at most [`MAX_STATE_FILE`] bytes); `None` when missing.
    pub(crate) fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let f = match self.openat(name, libc::O_RDONLY) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) if is_symlink_error(&e) => return Err(self.refuse_link(name)),
            Err(e) => {
                return Err(Error::io(
                    e,
                    format!("opening {}", self.file(name).display()),
                ))
            }
        };
        self.check_file(&f, name)?;
        let mut buf = Vec::new();
        f.take(MAX_STATE_FILE + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(e, format!("reading {}", self.file(name).display())))?;
        if buf.len() as u64 > MAX_STATE_FILE {
            return Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "{} is larger than {} MiB; it is not a roce-net state file. Move it aside with \
                     `roce-net archive`",
                    self.file(name).display(),
                    MAX_STATE_FILE >> 20
                ),
            ));
        }
        Ok(Some(buf))
    }

    /// A new, empty temporary file (`O_EXCL`, unique name); returns it and its name.
    fn temp(&self, name: &str) -> Result<(File, String)> {
        self.temp_mode(name, 0o644)
    }

    /// [`StateDir::temp`] created with `mode` (less the umask): a private
    /// file is never open to others, not even for a moment.
    fn temp_mode(&self, name: &str, mode: libc::c_uint) -> Result<(File, String)> {
        for _ in 0..8 {
            let tmp = format!(".{name}.{}.tmp", random_suffix());
            let c = cstr(&tmp)?;
            // SAFETY: openat in our directory with a valid name; the fd is
            // owned right away.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    mode,
                )
            };
            let made = if fd < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                // SAFETY: a fresh descriptor nobody else owns.
                Ok(unsafe { File::from_raw_fd(fd) })
            };
            match made {
                Ok(f) => return Ok((f, tmp)),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(e) => {
                    return Err(self.write_err(
                        e,
                        format!(
                            "creating a temporary file for {}",
                            self.file(name).display()
                        ),
                    ))
                }
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "could not create a unique temporary file in {}",
                self.path.display()
            ),
        ))
    }

    fn rename_in(&self, from: &str, to: &str) -> std::io::Result<()> {
        let (a, b) = (
            cstr(from).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?,
            cstr(to).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?,
        );
        // SAFETY: renameat within our directory with valid names.
        let rc = unsafe {
            libc::renameat(
                self.fd.as_raw_fd(),
                a.as_ptr(),
                self.fd.as_raw_fd(),
                b.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Remove `name` (nothing when it is gone already or cannot be removed).
    pub(crate) fn unlink(&self, name: &str) {
        if let Ok(c) = cstr(name) {
            // SAFETY: unlinkat within our directory.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) };
        }
    }

    /// Replace `name` atomically with `bytes` (temporary file, rename).
    pub(crate) fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let (mut f, tmp) = self.temp(name)?;
        let res = f.write_all(bytes).and_then(|_| self.rename_in(&tmp, name));
        if let Err(e) = res {
            self.unlink(&tmp);
            return Err(self.write_err(e, format!("writing {}", self.file(name).display())));
        }
        Ok(())
    }

    /// Replace `name` with a new empty file and return it open for writing.
    pub(crate) fn create_fresh(&self, name: &str) -> Result<File> {
        let (f, tmp) = self.temp(name)?;
        if let Err(e) = self.rename_in(&tmp, name) {
            self.unlink(&tmp);
            return Err(self.write_err(e, format!("creating {}", self.file(name).display())));
        }
        Ok(f)
    }

    /// Open (creating if missing) a lock file, readable by its owner only
    /// (`flock` works on any descriptor, read-only too: a lock file others can
    /// open is a lock others can hold). One others could open (made by an
    /// older roce-net, or by hand) is replaced by a private one: whoever holds
    /// the old file holds nothing (see [`StateDir::same_file`]).
    pub(crate) fn open_lock(&self, name: &str) -> Result<File> {
        for _ in 0..8 {
            let open = match self.openat(name, libc::O_RDWR) {
                Ok(f) => {
                    self.check_file(&f, name)?;
                    let st = fstat(&f).map_err(|e| {
                        Error::io(e, format!("checking {}", self.file(name).display()))
                    })?;
                    if st.st_mode & 0o077 == 0 {
                        return Ok(f);
                    }
                    Some(f)
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
                Err(e) if is_symlink_error(&e) => return Err(self.refuse_link(name)),
                Err(e) => {
                    return Err(self.write_err(
                        e,
                        format!("opening lock file {}", self.file(name).display()),
                    ))
                }
            };
            // Private from its creation: nobody else can open it.
            let (tmp, tmp_name) = self.temp_mode(name, 0o600)?;
            let placed = tmp
                .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .and_then(|()| match &open {
                    // Replace the open one, unless another roce-net did already.
                    Some(old) if self.same_file(old, name) => self.rename_in(&tmp_name, name),
                    Some(_) => Err(std::io::Error::from_raw_os_error(libc::EEXIST)),
                    // A new one never replaces one made meanwhile.
                    None => {
                        let (from, to) = (cstr(&tmp_name), cstr(name));
                        match (from, to) {
                            (Ok(from), Ok(to)) => crate::sys::renameat2(
                                self.fd.as_raw_fd(),
                                &from,
                                self.fd.as_raw_fd(),
                                &to,
                                libc::RENAME_NOREPLACE,
                            ),
                            _ => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
                        }
                    }
                });
            match placed {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    self.unlink(&tmp_name);
                    continue;
                }
                Err(e) => {
                    self.unlink(&tmp_name);
                    return Err(self.write_err(
                        e,
                        format!(
                            "creating lock file {} (mode 0600)",
                            self.file(name).display()
                        ),
                    ));
                }
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "lock file {} kept being replaced while opening it; try again",
                self.file(name).display()
            ),
        ))
    }

    /// Whether `f` is still the file at `name` (a lock taken on a file since
    /// replaced is no lock).
    pub(crate) fn same_file(&self, f: &File, name: &str) -> bool {
        let Ok(c) = cstr(name) else { return false };
        let Ok(a) = fstat(f) else { return false };
        // SAFETY: fstatat into a zeroed struct, not following links.
        let mut b: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut b,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        rc == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// Whether `name` exists (as anything).
    pub(crate) fn exists(&self, name: &str) -> bool {
        let Ok(c) = cstr(name) else { return false };
        // SAFETY: fstatat into a zeroed struct, not following links.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            ) == 0
        }
    }

    /// Move `name` into the `archive/` subdirectory as `archived` (never replacing
    /// an existing archive: a counter is appended). Returns the new path, or `None`
    /// when `name` did not exist.
    pub(crate) fn archive(&self, name: &str, archived: &str) -> Result<Option<PathBuf>> {
        if !self.exists(name) {
            return Ok(None);
        }
        let dir = c"archive";
        // SAFETY: mkdirat within our directory.
        if unsafe { libc::mkdirat(self.fd.as_raw_fd(), dir.as_ptr(), 0o755) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(
                    self.write_err(e, format!("creating {}", self.file("archive").display()))
                );
            }
        }
        let sub = StateDir::open(&self.file("archive"))?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("{} vanished", self.file("archive").display()),
            )
        })?;
        let from = cstr(name)?;
        for n in 0..1000 {
            let target = if n == 0 {
                archived.to_string()
            } else {
                format!("{archived}.{n}")
            };
            let to = cstr(&target)?;
            // Between two directory fds we own, never replacing.
            let e = match crate::sys::renameat2(
                self.fd.as_raw_fd(),
                &from,
                sub.fd.as_raw_fd(),
                &to,
                libc::RENAME_NOREPLACE,
            ) {
                Ok(()) => return Ok(Some(sub.file(&target))),
                Err(e) => e,
            };
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(self.write_err(
                    e,
                    format!(
                        "archiving {} as {}",
                        self.file(name).display(),
                        sub.file(&target).display()
                    ),
                ));
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!(
                "too many archived copies of {archived} in {}",
                sub.path.display()
            ),
        ))
    }
}

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("path {} contains a NUL byte", p.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_replace_planted_links_instead_of_following_them() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let s = StateDir::create(&d.path().join("state")).unwrap();
        std::os::unix::fs::symlink(&victim, s.file("j.json")).unwrap();
        // Reading through the link is refused, with what to do.
        let e = s.read("j.json").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Permission, "{e}");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // Writing replaces the link; the victim is untouched.
        s.write_atomic("j.json", b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(s.read("j.json").unwrap().unwrap(), b"new");
        // A planted lock link is refused.
        std::os::unix::fs::symlink(&victim, s.file("x.lock")).unwrap();
        assert!(s
            .open_lock("x.lock")
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(s.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_state_dir_others_can_write_or_a_linked_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = StateDir::create(&p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Permission);
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        assert!(e.to_string().contains("chmod go-w"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let s = StateDir::create(&p).unwrap();
        // A group-writable file inside is refused too.
        std::fs::write(s.file("f"), "x").unwrap();
        std::fs::set_permissions(s.file("f"), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(s.read("f").unwrap_err().kind(), ErrorKind::Permission);
        // A link as the directory itself.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = StateDir::create(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(StateDir::open(&d.path().join("missing")).unwrap().is_none());
    }

    #[test]
    fn archive_never_replaces() {
        let d = tempfile::tempdir().unwrap();
        let s = StateDir::create(d.path()).unwrap();
        s.write_atomic("a", b"1").unwrap();
        let p1 = s.archive("a", "a.old").unwrap().unwrap();
        s.write_atomic("a", b"2").unwrap();
        let p2 = s.archive("a", "a.old").unwrap().unwrap();
        assert_ne!(p1, p2);
        assert_eq!(std::fs::read(&p1).unwrap(), b"1");
        assert_eq!(std::fs::read(&p2).unwrap(), b"2");
        assert!(s.archive("a", "a.old").unwrap().is_none());
    }
}
