//! Bounded reading of every file that comes from outside the library.
//!
//! A path a user names (`--from`, `-f POLICY`, `apply --plan`, fleet snapshots,
//! `rt_tables` files under an `--etc-root`, attributes under a `--sysfs-root`) may
//! be anything: a FIFO that never delivers EOF, `/dev/zero`, a directory, a file of
//! gigabytes. Every such read goes through this module, which
//!
//! - opens with `O_NONBLOCK` (opening a FIFO for reading would otherwise wait for a
//!   writer forever) and `O_CLOEXEC`, following symlinks (the user named the path);
//! - checks with `fstat` on the opened descriptor that it is a regular file, and
//!   refuses anything else with an error naming the file type;
//! - reads at most the limit of its [`InputKind`] and refuses a longer file rather
//!   than silently truncating it.
//!
//! The limits are documented in `docs/reliability.md` and `docs/fuzzing.md`.

use crate::error::{Error, ErrorKind, Result};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What kind of outside file is read; each has its own size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// A policy document (YAML or JSON): at most 1 MiB.
    Policy,
    /// A saved plan (`roce-net plan -o`, `apply --plan`): at most 64 MiB.
    Plan,
    /// A saved snapshot (`--from`, `fleet`): at most 1 GiB.
    Snapshot,
    /// An iproute2 name database (`rt_tables`, `rt_tables.d/*.conf`): at most 1 MiB.
    TableNames,
    /// A configuration file of the node that persistence reads before replacing
    /// it (netplan, networkd, NetworkManager, ifupdown): at most 16 MiB.
    NodeConfig,
    /// An NCCL environment file (`nccl.conf`, `nccl-env --check --env-file`): at
    /// most 1 MiB.
    NcclConf,
    /// A health verdict cached by `roce-net check -o` (`check --cached`): at most
    /// 16 MiB (a verdict lists its findings; thousands fit).
    HealthVerdict,
    /// A cluster mesh document (a plan, an inventory, a node's result,
    /// `roce-net mesh`): at most 256 MiB.
    Mesh,
    /// One sysfs or procfs attribute (a GID, a counter, a sysctl): at most 4 KiB.
    /// The kernel fills such files from one page at most; a larger one is not an
    /// attribute (a planted file under a `--sysfs-root`, say).
    KernelAttribute,
    /// The shared token of `probe rdma` (`--token-file`): at most 4 KiB.
    ProbeToken,
}

impl InputKind {
    /// The largest file of this kind that is read, in bytes.
    pub const fn max_bytes(self) -> u64 {
        match self {
            InputKind::Policy => 1 << 20,
            InputKind::Plan => 64 << 20,
            InputKind::Snapshot => 1 << 30,
            InputKind::TableNames => 1 << 20,
            InputKind::NodeConfig => 16 << 20,
            InputKind::NcclConf => 1 << 20,
            InputKind::HealthVerdict => 16 << 20,
            InputKind::Mesh => 256 << 20,
            InputKind::KernelAttribute => 4096,
            InputKind::ProbeToken => 4096,
        }
    }

    /// The file as a noun phrase ending in "file" ("policy file", "table-name
    /// file"), for "give the path of a ..." hints.
    fn file_noun(self) -> String {
        let n = self.noun();
        if n.ends_with("file") {
            n.to_string()
        } else {
            format!("{n} file")
        }
    }

    /// What the file is, for messages ("policy", "snapshot").
    pub const fn noun(self) -> &'static str {
        match self {
            InputKind::Policy => "policy",
            InputKind::Plan => "plan",
            InputKind::Snapshot => "snapshot",
            InputKind::TableNames => "table-name file",
            InputKind::NodeConfig => "configuration file",
            InputKind::NcclConf => "NCCL environment file",
            InputKind::HealthVerdict => "cached health verdict",
            InputKind::Mesh => "mesh file",
            InputKind::KernelAttribute => "kernel attribute",
            InputKind::ProbeToken => "probe token file",
        }
    }
}

/// A readable name of a non-regular file type, or `None` for a regular file.
fn non_regular(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() {
        None
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Open `path` for reading without blocking on a FIFO and check that the
/// descriptor is a regular file. Errors are `io::Error`s (`InvalidInput` for a
/// non-regular file) so callers that classify errnos (sysfs) keep doing so.
pub(crate) fn open_regular_io(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let ft = f.metadata()?.file_type();
    if let Some(what) = non_regular(ft) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}, not a regular file"),
        ));
    }
    Ok(f)
}

/// Read at most `max` bytes from `r`; more is an `InvalidData` error.
fn read_capped_io(r: impl Read, max: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(max.min(64 << 10) as usize);
    r.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is larger than the limit of {max} bytes"),
        ));
    }
    Ok(buf)
}

/// Read a small kernel attribute (sysfs, procfs): a regular file of at most
/// [`InputKind::KernelAttribute`]'s limit. Keeps the kernel's errno (EINVAL for an
/// empty GID slot, EOPNOTSUPP for an unsupported counter) in the `io::Error`.
pub(crate) fn read_attribute(path: &Path) -> io::Result<Vec<u8>> {
    let f = open_regular_io(path)?;
    read_capped_io(f, InputKind::KernelAttribute.max_bytes())
}

/// [`read_attribute`] as UTF-8 text (`/proc/sys/kernel/random/boot_id`,
/// `/proc/PID/comm`, `/proc/PID/stat`); invalid UTF-8 is an `InvalidData` error.
pub(crate) fn read_attribute_text(path: &Path) -> io::Result<String> {
    String::from_utf8(read_attribute(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The first `max` bytes of a kernel list that may be long (`/proc/locks`),
/// as text (invalid UTF-8 replaced): what lies beyond is not read.
pub(crate) fn read_kernel_list(path: &Path, max: u64) -> io::Result<String> {
    let mut buf = Vec::new();
    open_regular_io(path)?.take(max).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn to_error(e: io::Error, path: &Path, kind: InputKind) -> Error {
    let what = format!("reading {} {}", kind.noun(), path.display());
    match e.kind() {
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData if e.raw_os_error().is_none() => {
            Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{what}: {e}; give the path of a {} (at most {} bytes)",
                    kind.file_noun(),
                    kind.max_bytes()
                ),
            )
        }
        // A path that cannot name a file (a symbolic link loop, a file used as a
        // directory, a name too long) is the user's input, not a failure of the
        // system: say so, keeping the errno and the kernel's text.
        _ if matches!(
            e.raw_os_error(),
            Some(libc::ELOOP | libc::ENOTDIR | libc::ENAMETOOLONG)
        ) =>
        {
            let hint = if e.raw_os_error() == Some(libc::ELOOP) {
                "its symbolic links form a loop (or a chain of more than 40)"
            } else {
                "the path cannot name a file"
            };
            Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{what}: {e}: {hint}; give the path of a {}",
                    kind.file_noun()
                ),
            )
            .with_errno(e.raw_os_error().unwrap_or(0))
        }
        _ => Error::io(e, what),
    }
}

/// Open a user-named file of `kind` for reading: symlinks are followed, a FIFO,
/// device, directory or socket is refused without blocking. The caller must still
/// bound what it reads (see [`read_stream`]).
pub fn open_input(path: &Path, kind: InputKind) -> Result<File> {
    open_regular_io(path).map_err(|e| to_error(e, path, kind))
}

/// Read a whole user-named file of `kind`: a regular file of at most
/// [`InputKind::max_bytes`] bytes.
pub fn read_input(path: &Path, kind: InputKind) -> Result<Vec<u8>> {
    let f = open_input(path, kind)?;
    read_capped_io(f, kind.max_bytes()).map_err(|e| to_error(e, path, kind))
}

/// [`read_input`] of a file that may be missing: `None` when it does not exist,
/// without building an error for it (a table-name search looks for several
/// files where most hosts have one or two).
pub fn read_input_if_exists(path: &Path, kind: InputKind) -> Result<Option<Vec<u8>>> {
    let f = match open_regular_io(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(to_error(e, path, kind)),
    };
    read_capped_io(f, kind.max_bytes())
        .map(Some)
        .map_err(|e| to_error(e, path, kind))
}

/// [`read_input`] as UTF-8 text.
pub fn read_input_text(path: &Path, kind: InputKind) -> Result<String> {
    let bytes = read_input(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::Parse,
            format!(
                "{} {} is not UTF-8 text (invalid byte at offset {})",
                kind.noun(),
                path.display(),
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Read a whole stream (standard input, say) of `kind`, at most its limit.
pub fn read_stream(r: impl Read, kind: InputKind, what: &str) -> Result<Vec<u8>> {
    read_capped_io(r, kind.max_bytes()).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData if e.raw_os_error().is_none() => Error::new(
            ErrorKind::InvalidInput,
            format!("reading {} from {what}: {e}", kind.noun()),
        ),
        _ => Error::io(e, format!("reading {} from {what}", kind.noun())),
    })
}

/// At most `max_chars` characters of `s` for a message, every control character,
/// quote and backslash escaped (`\n`, `\u{1b}`), with the full length when cut:
/// outside text never reaches a terminal or a log verbatim.
pub fn excerpt(s: &str, max_chars: usize) -> String {
    excerpt_bytes(s.as_bytes(), max_chars)
}

/// [`excerpt`] of raw bytes: bytes that are not UTF-8 are shown as `\xNN`.
pub fn excerpt_bytes(b: &[u8], max_chars: usize) -> String {
    let (body, cut) = escape_cut(b, max_chars, true);
    if cut {
        format!("\"{body}\"... ({} bytes in all)", b.len())
    } else {
        format!("\"{body}\"")
    }
}

/// Unicode's format characters (general category `Cf`: the bidirectional
/// controls U+202A..U+202E and U+2066..U+2069, zero-width characters, the BOM,
/// tag characters, ...) and its line and paragraph separators (`Zl` U+2028,
/// `Zp` U+2029), from `DerivedGeneralCategory.txt` of Unicode 15.1. A terminal
/// shows none of them as a glyph: they reorder, hide or break the text around
/// them (U+202E shows "OK ... deifirev atad" as "data verified ... KO").
/// `input::tests` checks the table against Python's `unicodedata`.
const FORMAT_CHARS: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether a terminal would obey `c` rather than show it: a control
/// character (`Cc`: ESC, BEL, CR, DEL, the C1 codes, newline, tab) or one of
/// [`FORMAT_CHARS`].
fn not_shown(c: char) -> bool {
    let n = c as u32;
    c.is_control()
        || FORMAT_CHARS
            .binary_search_by(|&(lo, hi)| {
                if hi < n {
                    std::cmp::Ordering::Less
                } else if lo > n {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> String {
    if !s.chars().any(&escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !escape(c) {
            out.push(c);
            continue;
        }
        // `\n`, `\t`, `\r` as Rust writes them, the rest as `\u{..}` (also
        // where Rust's own table would show the character as it is).
        let e = c.escape_debug();
        if e.len() > 1 {
            out.extend(e);
        } else {
            out.extend(c.escape_unicode());
        }
    }
    out
}

/// `s` made safe for a terminal: every control character but newline and tab
/// (ESC, BEL, CR, DEL, the C1 codes) and every Unicode format character and
/// line separator (the bidirectional overrides U+202E/U+2066.., zero-width
/// characters, U+2028; [`FORMAT_CHARS`]) escaped visibly (`\u{1b}`,
/// `\u{202e}`), so a name from a host or a snapshot (`r0\e]0;pwned\a`) is
/// shown, never obeyed. The CLI passes all of its text output through it
/// (`show_gids` lays out its columns with tabs); text from a network peer is
/// also made one line first ([`terminal_safe_line`]).
pub fn terminal_safe(s: &str) -> String {
    escape_where(s, |c| not_shown(c) && c != '\n' && c != '\t')
}

/// [`terminal_safe`] that also escapes newlines and tabs: text that must stay
/// one line of a report (what a `probe rdma` peer sends: its host name, its
/// abort message), so it cannot start a line of its own.
#[cfg(any(test, feature = "verbs"))]
pub fn terminal_safe_line(s: &str) -> String {
    escape_where(s, not_shown)
}

/// A list for a message: at most `max` items joined by `; `, then how many more
/// there are (`a; b; and 38 more`), so an error stays one readable line.
pub(crate) fn cut_list(items: &[String], max: usize) -> String {
    let mut shown: Vec<String> = items.iter().take(max).cloned().collect();
    if items.len() > max {
        shown.push(format!("and {} more", items.len() - max));
    }
    shown.join("; ")
}

/// Escape `b` (control characters, and quotes and backslashes when `quotes`) and
/// cut it after `max_chars` characters; whether it was cut.
pub(crate) fn escape_cut(b: &[u8], max_chars: usize, quotes: bool) -> (String, bool) {
    let mut out = String::new();
    let mut shown = 0;
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown == max_chars {
                return (out, true);
            }
            if quotes || c.is_control() {
                out.extend(c.escape_debug());
            } else {
                out.push(c);
            }
            shown += 1;
        }
        for byte in chunk.invalid() {
            if shown == max_chars {
                return (out, true);
            }
            out.push_str(&format!("\\x{byte:02x}"));
            shown += 1;
        }
    }
    (out, false)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The hint names each kind of file once ("a table-name file", never "a
    /// table-name file file").
    #[test]
    fn terminal_safe_escapes_every_control_character_but_newlines_and_tabs() {
        assert_eq!(terminal_safe("a\nb"), "a\nb");
        assert_eq!(
            terminal_safe("r0\u{1b}]0;pwned\u{7}\u{9b}\r\t\n"),
            "r0\\u{1b}]0;pwned\\u{7}\\u{9b}\\r\t\n"
        );
    }

    /// A peer's text cannot forge a line of a report: no newline, no
    /// bidirectional override, no zero-width or separator character reaches
    /// the terminal raw (a host name `x\nOK ... data verified`, or one with
    /// U+202E that shows its text reversed).
    #[test]
    fn text_from_a_peer_stays_one_line_without_format_characters() {
        let forged = "nodeB\nOK fake mlx5_0:1 \u{202e}deifirev atad\u{202c} \u{2066}x\u{2069}\u{200b}\u{2028}\u{feff}\t.";
        let one = terminal_safe_line(forged);
        assert_eq!(
            one,
            "nodeB\\nOK fake mlx5_0:1 \\u{202e}deifirev atad\\u{202c} \\u{2066}x\\u{2069}\\u{200b}\\u{2028}\\u{feff}\\t."
        );
        assert!(!one.chars().any(not_shown), "{one}");
        // The whole-output filter keeps the CLI's own newlines and tabs, and
        // escapes the format characters too.
        let all = terminal_safe(forged);
        assert_eq!(all.lines().count(), 2);
        assert!(
            all.contains("\\u{202e}") && !all.contains('\u{202e}'),
            "{all}"
        );
        assert_eq!(terminal_safe("plain ascii\tand\n"), "plain ascii\tand\n");
        assert_eq!(terminal_safe_line("ünïcödé ok"), "ünïcödé ok");
    }

    /// [`FORMAT_CHARS`] holds every character of the categories `Cf`, `Zl`
    /// and `Zp` that Python's `unicodedata` (the real Unicode database of the
    /// Python on the test machine) knows, and the table is sorted for its
    /// binary search.
    #[test]
    fn the_format_character_table_covers_pythons_unicode_database() {
        assert!(FORMAT_CHARS.windows(2).all(|w| w[0].1 < w[1].0));
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, unicodedata\n\
                 print(unicodedata.unidata_version)\n\
                 for n in range(sys.maxunicode + 1):\n\
                 \x20   if unicodedata.category(chr(n)) in ('Cf', 'Zl', 'Zp'):\n\
                 \x20       print(n)\n",
            ])
            .output()
            .expect("running python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let version = lines.next().unwrap_or_default().to_string();
        let missing: Vec<String> = lines
            .map(|l| l.parse::<u32>().unwrap())
            .filter(|n| !char::from_u32(*n).is_some_and(not_shown))
            .map(|n| format!("U+{n:04X}"))
            .collect();
        assert!(
            missing.is_empty(),
            "Unicode {version} format characters not escaped: {missing:?}"
        );
    }

    #[test]
    fn an_over_long_file_names_its_kind_once() {
        let t = tempfile::tempdir().unwrap();
        for kind in [
            InputKind::Policy,
            InputKind::TableNames,
            InputKind::NcclConf,
        ] {
            let p = t.path().join("big");
            std::fs::write(&p, vec![b'#'; kind.max_bytes() as usize + 1]).unwrap();
            let e = read_input(&p, kind).unwrap_err().to_string();
            assert!(
                e.contains(&format!("give the path of a {}", kind.file_noun())),
                "{e}"
            );
            assert!(!e.contains("file file"), "{e}");
        }
    }

    /// A missing file is `None`; anything else that cannot be read (a
    /// directory, a file over the limit) is still the error `read_input` gives.
    #[test]
    fn a_missing_file_is_none_and_other_failures_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let k = InputKind::TableNames;
        assert_eq!(
            read_input_if_exists(&d.path().join("none"), k).unwrap(),
            None
        );
        let p = d.path().join("names");
        std::fs::write(&p, "1001 roce_r0\n").unwrap();
        assert_eq!(
            read_input_if_exists(&p, k).unwrap().as_deref(),
            Some(&b"1001 roce_r0\n"[..])
        );
        let dir_err = read_input_if_exists(d.path(), k).unwrap_err();
        assert_eq!(
            dir_err.to_string(),
            read_input(d.path(), k).unwrap_err().to_string()
        );
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; k.max_bytes() as usize + 1]).unwrap();
        assert!(read_input_if_exists(&big, k).is_err());
    }

    #[test]
    fn regular_file_within_the_limit_is_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.yaml");
        std::fs::write(&p, "version: 1\n").unwrap();
        assert_eq!(read_input(&p, InputKind::Policy).unwrap(), b"version: 1\n");
        // A symlink the user named is followed.
        let l = d.path().join("l.yaml");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert_eq!(
            read_input_text(&l, InputKind::Policy).unwrap(),
            "version: 1\n"
        );
    }

    #[test]
    fn fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Without O_NONBLOCK this open would wait for a writer forever.
        let e = read_input(&p, InputKind::Snapshot).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let msg = e.to_string();
        assert!(msg.contains("FIFO") && msg.contains("snapshot"), "{msg}");
        let e = read_attribute(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    /// A symbolic link loop was an I/O error (exit 70, "internal"); it is the
    /// user's input.
    #[test]
    fn a_symlink_loop_is_an_input_error() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.yaml");
        let b = d.path().join("b.yaml");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        for kind in [InputKind::Policy, InputKind::Snapshot] {
            let e = read_input(&a, kind).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert_eq!(e.errno_value(), Some(libc::ELOOP));
            let m = e.to_string();
            assert!(m.contains("a.yaml") && m.contains("loop"), "{m}");
        }
        let e = read_input_if_exists(&a, InputKind::TableNames).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let f = d.path().join("file");
        std::fs::write(&f, "x").unwrap();
        let e = read_input(&f.join("below"), InputKind::Plan).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let e = read_input(Path::new("/dev/zero"), InputKind::Policy).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let e = read_input(d.path(), InputKind::Plan).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_not_truncated() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![b'a'; 4097]).unwrap();
        drop(f);
        let e = read_attribute(&p).unwrap_err();
        assert!(e.to_string().contains("4096"), "{e}");
        // Exactly at the limit is fine.
        std::fs::write(&p, vec![b'a'; 4096]).unwrap();
        assert_eq!(read_attribute(&p).unwrap().len(), 4096);
        std::fs::write(&p, vec![b'a'; (1 << 20) + 1]).unwrap();
        let e = read_input(&p, InputKind::Policy).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("1048576"), "{e}");
    }

    #[test]
    fn streams_are_bounded() {
        let e = read_stream(io::repeat(0), InputKind::Policy, "standard input").unwrap_err();
        assert!(e.to_string().contains("standard input"), "{e}");
        assert_eq!(
            read_stream(&b"ab"[..], InputKind::Policy, "x").unwrap(),
            b"ab"
        );
    }

    #[test]
    fn excerpts_escape_and_cut() {
        assert_eq!(excerpt("ab", 10), "\"ab\"");
        assert_eq!(excerpt("a\nb\u{1b}[2J", 10), "\"a\\nb\\u{1b}[2J\"");
        let long = "x".repeat(1000);
        let e = excerpt(&long, 8);
        assert_eq!(e, "\"xxxxxxxx\"... (1000 bytes in all)");
        assert_eq!(excerpt_bytes(b"r\xff", 10), "\"r\\xff\"");
    }

    #[test]
    fn warnings_are_bounded_and_escaped() {
        let huge = "fe80:".repeat(20_000_000 / 5);
        let w = crate::model::Warning::about_file(
            Path::new("/sys/x\n\u{1b}[31m"),
            format!("GID {huge} is bad\n\u{7}"),
        );
        assert!(
            w.message.chars().count() < crate::model::Warning::MAX_CHARS + 40,
            "{}",
            w.message.len()
        );
        assert!(
            w.message.ends_with("bytes in all)"),
            "{}",
            &w.message[w.message.len() - 40..]
        );
        assert!(!w.message.chars().any(char::is_control));
        assert_eq!(w.source, "/sys/x\\n\\u{1b}[31m");
        let short =
            crate::model::Warning::about_file(Path::new("/a"), "cannot read: \"x\"".to_string());
        assert_eq!(short.message, "cannot read: \"x\"");
    }
}
