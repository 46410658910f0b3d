//! Sysctls through `/proc/sys`, by (interface, key) (docs/architecture.md, decision 7).
//!
//! Files under `/proc/sys/net` belong to the network namespace of the thread that
//! opens them, so run these functions inside `NetnsTarget::run` (as
//! [`Host::snapshot`](crate::host::Host::snapshot) does) to read a namespace.
//! The root is a parameter so tests can use a plain directory tree.
//!
//! Interface names are only ever used as one path component (`conf/<name>/`): names
//! with dots (`eth0.100`) work, and a dotted sysctl string is never split.

use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    ConfKey, ConfTarget, ConfValues, Family, Sysctl, SysctlAccess, SysctlView, Tuning, TuningKey,
    Warning,
};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The real `/proc/sys`.
pub const PROC_SYS: &str = "/proc/sys";

/// The `conf/<dir>` directory of `key`'s family under a `/proc/sys` root:
/// `net/ipv4/conf/<dir>` or `net/ipv6/conf/<dir>`.
fn conf_path(proc_sys: &Path, family: Family, dir: impl AsRef<std::ffi::OsStr>) -> PathBuf {
    proc_sys
        .join(crate::model::conf_dir(family))
        .join(dir.as_ref())
}

fn warn(warnings: &mut Vec<Warning>, path: &Path, message: String) {
    warnings.push(crate::model::Warning::about_file(path, message));
}

/// The `conf/<iface>` directory name of a model interface name: the kernel's
/// exact bytes (the model escapes names that are not UTF-8, see
/// `model::ifname`), `None` when they cannot be a single path component.
fn conf_component(name: &str) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    let raw = crate::model::ifname_to_kernel(name).ok()?;
    let ok =
        !raw.is_empty() && raw != b"." && raw != b".." && !raw.contains(&b'/') && !raw.contains(&0);
    ok.then(|| std::ffi::OsString::from_vec(raw))
}

/// Read the sysctls roce-net cares about that only `/proc/sys` shows:
/// `conf/all` and `conf/default` (all [`ConfKey`]s) and the host tuning keys,
/// with whether each tuning key exists and is writable here. The per-interface
/// values come from the link dump (`Netlink::links_inet`, the same kernel
/// array); [`interface_conf`] turns them into the view's `interfaces`.
///
/// Never fails as a whole: unreadable or malformed values are `None` plus a
/// [`Warning`]. Host-wide tuning keys that the namespace does not show
/// (`udp_mem` and `netdev_max_backlog` exist only in the initial namespace) are
/// `None` without a warning.
pub fn read_shared_sysctls(proc_sys: &Path, warnings: &mut Vec<Warning>) -> SysctlView {
    read_shared(proc_sys, &ConfKey::ALL, &ConfKey::ALL, true, warnings)
}

/// [`read_shared_sysctls`] of only the `conf/all` and `conf/default` keys among
/// `which`, and the tuning keys when `which` names one (apply's plan snapshot:
/// the planner reads no other, and each `/proc/sys` file costs an `openat`).
/// The rest of the view is `None`; without a tuning key, so are the tuning
/// access and whether this is the initial namespace.
pub fn read_shared_sysctls_of(
    proc_sys: &Path,
    which: &[Sysctl],
    warnings: &mut Vec<Warning>,
) -> SysctlView {
    let keys_of = |dir: &ConfTarget| -> Vec<ConfKey> {
        ConfKey::ALL
            .into_iter()
            .filter(|k| {
                which
                    .iter()
                    .any(|s| matches!(s, Sysctl::Conf { target, key } if target == dir && key == k))
            })
            .collect()
    };
    let tuning = which.iter().any(|s| matches!(s, Sysctl::Tuning(_)));
    read_shared(
        proc_sys,
        &keys_of(&ConfTarget::All),
        &keys_of(&ConfTarget::Default),
        tuning,
        warnings,
    )
}

/// `keys` of `conf/all` and of `conf/default` (a directory with none is not
/// opened), and with `tuning` every tuning key and its access.
fn read_shared(
    proc_sys: &Path,
    all: &[ConfKey],
    default: &[ConfKey],
    tuning: bool,
    warnings: &mut Vec<Warning>,
) -> SysctlView {
    let mut view = SysctlView {
        all: read_conf_target(proc_sys, "all", all, warnings).unwrap_or_default(),
        default: read_conf_target(proc_sys, "default", default, warnings).unwrap_or_default(),
        ..SysctlView::default()
    };
    if tuning {
        view.tuning = read_tuning(proc_sys, warnings);
        let access = tuning_access(proc_sys);
        view.initial_netns =
            Some(access.get(&TuningKey::NetdevMaxBacklog) != Some(&SysctlAccess::Absent));
        view.tuning_access = Some(access);
    }
    view
}

/// `keys` of the `conf/<dir>` of each family they belong to (a family none of
/// them is in is not opened); `None` when every directory needed is missing.
fn read_conf_target(
    proc_sys: &Path,
    dir: impl AsRef<std::ffi::OsStr>,
    keys: &[ConfKey],
    warnings: &mut Vec<Warning>,
) -> Option<ConfValues> {
    let mut out: Option<ConfValues> = None;
    for family in [Family::Inet, Family::Inet6] {
        let mine: Vec<ConfKey> = keys
            .iter()
            .copied()
            .filter(|k| k.family() == family)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let path = conf_path(proc_sys, family, &dir);
        if let Some(v) = read_conf_dir(&path, family, &mine, warnings) {
            let merged = out.get_or_insert_with(ConfValues::default);
            for k in mine {
                merged.set(k, v.get(k));
            }
        }
    }
    out
}

/// One interface's configured values from the kernel's `int`s (its link
/// message's `IFLA_INET_CONF` and `IFLA_INET6_CONF`); `value` is `None` for a
/// key of a family the interface has no settings of.
pub fn interface_conf(value: impl Fn(ConfKey) -> Option<i32>) -> ConfValues {
    let mut values = ConfValues::default();
    for key in ConfKey::ALL {
        values.set(key, value(key));
    }
    values
}

#[cfg(test)]
/// [`read_shared_sysctls`] and `conf/<iface>` of each of `ifnames` read from
/// `/proc/sys` files (the reference the link dump's values are checked against,
/// and the reader of fixture trees). An interface without a `conf/<iface>`
/// directory is left out without a warning.
pub fn read_sysctls(
    proc_sys: &Path,
    ifnames: &[String],
    warnings: &mut Vec<Warning>,
) -> SysctlView {
    let mut view = read_shared_sysctls(proc_sys, warnings);
    for name in ifnames {
        if view.interfaces.contains_key(name) {
            continue;
        }
        let Some(dir) = conf_component(name) else {
            warn(
                warnings,
                &conf_path(proc_sys, Family::Inet, ""),
                format!(
                    "interface name {} cannot be a sysctl directory; skipped",
                    crate::input::excerpt(name, 64)
                ),
            );
            continue;
        };
        if let Some(configured) = read_conf_target(proc_sys, &dir, &ConfKey::ALL, warnings) {
            let effective = ConfValues::effective(&view.all, &configured);
            view.interfaces.insert(
                name.clone(),
                crate::model::InterfaceConf {
                    configured,
                    effective,
                },
            );
        }
    }
    view
}

/// Whether each tuning key's file exists under `proc_sys` and is writable (the
/// owner's write bit: `/proc/sys` applies the mode even to root, so a 0444 file
/// refuses every write with EACCES).
fn tuning_access(proc_sys: &Path) -> std::collections::BTreeMap<TuningKey, SysctlAccess> {
    use std::os::unix::fs::PermissionsExt;
    TuningKey::ALL
        .into_iter()
        .map(|key| {
            let a = match std::fs::metadata(proc_sys.join(key.proc_path())) {
                Ok(m) if m.permissions().mode() & 0o200 != 0 => SysctlAccess::Writable,
                Ok(_) => SysctlAccess::ReadOnly,
                Err(_) => SysctlAccess::Absent,
            };
            (key, a)
        })
        .collect()
}

/// The `keys` (all of `family`) of one `conf/<dir>` (the others stay `None`);
/// `None` when the directory is missing (a missing IPv4 `all`/`default` is
/// warned about; a missing interface is not, nor a missing IPv6 directory: a
/// kernel booted with `ipv6.disable=1` has none).
///
/// The directory is opened once and its files with `openat(2)`: a snapshot reads
/// six files for each of hundreds of interfaces, and resolving every full
/// `/proc/sys/net/ipv4/conf/<iface>/<key>` path again was most of that cost.
fn read_conf_dir(
    dir: &Path,
    family: Family,
    keys: &[ConfKey],
    warnings: &mut Vec<Warning>,
) -> Option<ConfValues> {
    let fd = match open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            warn(warnings, dir, "not a directory".to_string());
            return None;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let shared = matches!(
                dir.file_name().and_then(|n| n.to_str()),
                Some("all") | Some("default")
            );
            if shared && family == Family::Inet {
                warn(
                    warnings,
                    dir,
                    "missing; is IPv4 enabled in this kernel?".to_string(),
                );
            }
            return None;
        }
        Err(e) => {
            warn(warnings, dir, format!("cannot read: {e}"));
            return None;
        }
    };
    let mut values = ConfValues::default();
    for &key in keys {
        let v = match read_small_at(&fd, key.file_name()) {
            Ok(text) => match parse_conf_value(&text) {
                Ok(v) => Some(v),
                Err(why) => {
                    warn(warnings, &dir.join(key.file_name()), why);
                    None
                }
            },
            Err(e) => {
                warn(
                    warnings,
                    &dir.join(key.file_name()),
                    format!("cannot read: {e}"),
                );
                None
            }
        };
        values.set(key, v);
    }
    Some(values)
}

/// Open a directory for `openat(2)`.
fn open_dir(dir: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid NUL-terminated path; the fd is owned by the OwnedFd below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a freshly opened descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// `openat(2)` of `name` in the directory `dir` with `flags` (and `O_CLOEXEC`).
fn open_in(
    dir: &std::os::fd::OwnedFd,
    name: &str,
    flags: libc::c_int,
) -> io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    crate::input::open_at(dir.as_fd(), name, flags)
}

/// Read a small file (a sysctl value) relative to a directory fd, trimmed.
fn read_small_at(dir: &std::os::fd::OwnedFd, name: &str) -> io::Result<String> {
    use std::io::Read;
    let mut f = open_in(dir, name, libc::O_RDONLY)?;
    let mut buf = [0u8; 128];
    let mut n = 0;
    loop {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
        if n == buf.len() {
            // Longer than any value here: read the rest, bounded like every
            // kernel attribute (`crate::input::read_attribute`).
            let max = crate::input::InputKind::KernelAttribute.max_bytes();
            let mut all = buf.to_vec();
            (&mut f).take(max + 1 - n as u64).read_to_end(&mut all)?;
            if all.len() as u64 > max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("it is larger than the limit of {max} bytes"),
                ));
            }
            return Ok(String::from_utf8_lossy(&all).trim().to_string());
        }
    }
    Ok(String::from_utf8_lossy(&buf[..n]).trim().to_string())
}

fn read_tuning(proc_sys: &Path, warnings: &mut Vec<Warning>) -> Tuning {
    let mut t = Tuning::default();
    for key in TuningKey::ALL {
        let path = proc_sys.join(key.proc_path());
        let text = match read_trimmed(&path) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                warn(warnings, &path, format!("cannot read: {e}"));
                continue;
            }
        };
        if !set_tuning(&mut t, key, &text) {
            warn(warnings, &path, not_kernel_format(&text));
        }
    }
    t
}

/// A `conf/<dir>/<key>` value: an `int`, or why it is not one (the snapshot
/// warns with it, verify fails with it).
fn parse_conf_value(text: &str) -> std::result::Result<i32, String> {
    text.parse::<i32>().map_err(|_| {
        format!(
            "value {} is not an integer",
            crate::input::excerpt(text, 64)
        )
    })
}

fn not_kernel_format(text: &str) -> String {
    format!(
        "value {} is not in the kernel's format",
        crate::input::excerpt(text, 64)
    )
}

/// Parse a tuning key's text into `t`; false when it is not in the kernel's format.
fn set_tuning(t: &mut Tuning, key: TuningKey, text: &str) -> bool {
    match key {
        TuningKey::UdpMem => parse_triple(text).map(|v| t.udp_mem = Some(v)).is_some(),
        _ => match text.parse::<u64>() {
            Ok(v) => {
                match key {
                    TuningKey::NetdevMaxBacklog => t.netdev_max_backlog = Some(v),
                    TuningKey::RmemMax => t.rmem_max = Some(v),
                    _ => t.wmem_max = Some(v),
                }
                true
            }
            Err(_) => false,
        },
    }
}

/// Read the `/proc/sys`-only sysctls among `which` (`conf/all`, `conf/default`,
/// tuning) again into `view`, then recompute the effective values: apply's verify
/// re-reads what the plan reads, the sysctls its desired state names (the
/// per-interface ones come with the link dump it also re-reads). Each
/// `conf/<dir>` is opened once. A sysctl that cannot be read or parsed is an
/// error naming it (verify must not pass on a value it could not see).
pub fn reread_sysctls(proc_sys: &Path, view: &mut SysctlView, which: &[Sysctl]) -> Result<()> {
    let mut dirs: Vec<((&ConfTarget, Family), Vec<ConfKey>)> = Vec::new();
    for s in which {
        match s {
            Sysctl::Conf {
                target: ConfTarget::Interface(_),
                ..
            } => {}
            Sysctl::Conf { target, key } => {
                let at = (target, key.family());
                match dirs.iter_mut().find(|(t, _)| *t == at) {
                    Some((_, keys)) => keys.push(*key),
                    None => dirs.push((at, vec![*key])),
                }
            }
            Sysctl::Tuning(key) => {
                let path = proc_sys.join(key.proc_path());
                let text = read_trimmed(&path).map_err(|e| read_error(e, s, &path))?;
                if !set_tuning(&mut view.tuning, *key, &text) {
                    return Err(Error::new(
                        ErrorKind::Parse,
                        format!(
                            "reading sysctl {s} ({}): {}",
                            path.display(),
                            not_kernel_format(&text)
                        ),
                    ));
                }
            }
        }
    }
    for ((target, family), keys) in dirs {
        let first = Sysctl::Conf {
            target: target.clone(),
            key: keys[0],
        };
        let dir = conf_path(proc_sys, family, target.dir_name());
        let fd = open_dir(&dir).map_err(|e| read_error(e, &first, &dir))?;
        let values = match target {
            ConfTarget::Default => &mut view.default,
            _ => &mut view.all,
        };
        for key in keys {
            let s = Sysctl::Conf {
                target: target.clone(),
                key,
            };
            let path = dir.join(key.file_name());
            let text = read_small_at(&fd, key.file_name()).map_err(|e| read_error(e, &s, &path))?;
            let v = parse_conf_value(&text).map_err(|why| {
                Error::new(
                    ErrorKind::Parse,
                    format!("reading sysctl {s} ({}): {why}", path.display()),
                )
            })?;
            values.set(key, Some(v));
        }
    }
    view.recompute_effective();
    Ok(())
}

/// `udp_mem`'s three numbers (the kernel separates them with tabs; any whitespace
/// is accepted).
fn parse_triple(s: &str) -> Option<[u64; 3]> {
    let mut it = s.split_whitespace().map(|p| p.parse::<u64>());
    let v = [it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?];
    if it.next().is_some() {
        return None;
    }
    Some(v)
}

fn read_trimmed(path: &Path) -> io::Result<String> {
    let b = crate::input::read_attribute(path)?;
    String::from_utf8(b)
        .map(|s| s.trim().to_string())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content is not valid UTF-8"))
}

/// The file of a sysctl under `proc_sys`, refusing interface names that are not a
/// single path component.
fn sysctl_path(proc_sys: &Path, s: &Sysctl) -> Result<PathBuf> {
    if let Sysctl::Conf {
        target: ConfTarget::Interface(name),
        ..
    } = s
    {
        let Some(dir) = conf_component(name) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{} is not a valid interface name for a sysctl",
                    crate::input::excerpt(name, 64)
                ),
            ));
        };
        if let Sysctl::Conf { key, .. } = s {
            return Ok(conf_path(proc_sys, key.family(), dir).join(key.file_name()));
        }
    }
    Ok(proc_sys.join(s.proc_path()))
}

fn not_found_hint(s: &Sysctl) -> String {
    let fam = |key: &ConfKey| match key.family() {
        Family::Inet => "IPv4",
        Family::Inet6 => "IPv6",
    };
    match s {
        Sysctl::Conf {
            target: ConfTarget::Interface(name),
            key,
        } => format!(
            "interface {name:?} has no {} settings in this namespace; check the name with `ip link`",
            fam(key)
        ),
        Sysctl::Conf { key, .. } => {
            format!("{} sysctls are missing; is {} enabled?", fam(key), fam(key))
        }
        Sysctl::Tuning(_) => {
            "this host-wide sysctl is not visible here (some exist only in the initial \
             network namespace)"
                .to_string()
        }
    }
}

fn read_error(e: io::Error, s: &Sysctl, path: &Path) -> Error {
    let doing = format!("reading sysctl {s} ({})", path.display());
    if e.kind() == io::ErrorKind::NotFound {
        let err = Error::new(
            ErrorKind::NotFound,
            format!("{doing}: {e}; {}", not_found_hint(s)),
        );
        match e.raw_os_error() {
            Some(n) => err.with_errno(n),
            None => err,
        }
    } else {
        Error::io(e, doing)
    }
}

#[cfg(test)]
/// Read one sysctl's current text (whitespace-trimmed; `udp_mem` keeps the kernel's
/// tab separators).
pub fn read_sysctl(proc_sys: &Path, s: &Sysctl) -> Result<String> {
    let path = sysctl_path(proc_sys, s)?;
    read_trimmed(&path).map_err(|e| read_error(e, s, &path))
}

/// Check `value` for `s` and return the canonical text to write: a number inside
/// [`ConfKey::valid_range`] for conf keys, a non-negative `int` for the byte and
/// packet limits, three numbers for `udp_mem` (written tab-separated).
pub fn validate_sysctl_value(s: &Sysctl, value: &str) -> Result<String> {
    let v = value.trim();
    let invalid = |why: String| {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!("invalid value {value:?} for {s}: {why}; nothing was written"),
        ))
    };
    match s {
        Sysctl::Conf { key, .. } => {
            let range = key.valid_range();
            match v.parse::<i32>() {
                Ok(n) if range.contains(&n) => Ok(n.to_string()),
                _ => invalid(format!(
                    "{key} takes an integer from {} to {}",
                    range.start(),
                    range.end()
                )),
            }
        }
        Sysctl::Tuning(TuningKey::UdpMem) => match parse_triple(v) {
            Some([a, b, c]) if a <= b && b <= c && c <= i64::MAX as u64 => {
                Ok(format!("{a}\t{b}\t{c}"))
            }
            Some(_) => invalid("udp_mem's min, pressure and max must be non-decreasing".into()),
            None => invalid("udp_mem takes three numbers (pages): min pressure max".into()),
        },
        Sysctl::Tuning(_) => match v.parse::<u64>() {
            Ok(n) if n <= i32::MAX as u64 => Ok(n.to_string()),
            _ => invalid(format!("takes an integer from 0 to {}", i32::MAX)),
        },
    }
}

/// The text as the kernel prints it, for comparing a read-back with what was written.
fn normalize(s: &Sysctl, text: &str) -> String {
    match s {
        Sysctl::Tuning(TuningKey::UdpMem) => text.split_whitespace().collect::<Vec<_>>().join("\t"),
        _ => text.trim().to_string(),
    }
}

#[cfg(test)]
/// Write a sysctl: range-check `value` first (a bad value is `InvalidInput` and
/// nothing is written), write it, read it back and compare (a mismatch is
/// `Verify`). Returns the previous value, or `None` when it could not be read
/// before writing.
pub fn write_sysctl(proc_sys: &Path, s: &Sysctl, value: &str) -> Result<Option<String>> {
    let canonical = validate_sysctl_value(s, value)?;
    let path = sysctl_path(proc_sys, s)?;
    let previous = match read_trimmed(&path) {
        Ok(p) => Some(p),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(read_error(e, s, &path)),
        Err(_) => None,
    };
    SysctlFiles::new(proc_sys).set(s, &canonical)?;
    Ok(previous)
}

/// A sysctl file opened for reading and writing, truncated.
fn open_rw(path: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .truncate(true)
        .open(path)
}

/// Sysctl writes through `conf/<dir>` descriptors opened once each, for a caller
/// that writes many (apply sets three per NIC): each write then opens one path
/// component with `openat(2)` instead of walking the whole
/// `/proc/sys/net/ipv4/conf/<iface>/<key>` again. Like the files, the
/// descriptors belong to the namespace of the thread that opened them.
pub struct SysctlFiles {
    root: PathBuf,
    dirs: std::collections::HashMap<(Family, std::ffi::OsString), std::os::fd::OwnedFd>,
}

/// At most this many `conf/<dir>` descriptors are kept open (room for 256 NICs
/// and their VLANs, well under the usual soft limit of 1024 descriptors); writes
/// to further directories open their whole path, so a host with thousands of
/// interfaces never runs out of file descriptors.
const MAX_CONF_DIRS: usize = 320;

impl SysctlFiles {
    /// No directory opened yet, under the `/proc/sys` root `proc_sys`.
    pub fn new(proc_sys: &Path) -> SysctlFiles {
        SysctlFiles {
            root: proc_sys.to_path_buf(),
            dirs: std::collections::HashMap::new(),
        }
    }

    /// Set one sysctl without reading its previous value first (apply journals
    /// it from the plan): range-check `value` (a bad value is `InvalidInput` and
    /// nothing is written), write it, and read it back through the same
    /// descriptor (a mismatch is `Verify`). Rollback sets values this way.
    pub fn set(&mut self, s: &Sysctl, value: &str) -> Result<()> {
        let (path, f, canonical) = self.open_for(s, value)?;
        write_value(s, &path, &f, &canonical)?;
        read_back(s, &path, f, &canonical)
    }

    /// [`SysctlFiles::set`] without the read-back, for a caller that reads
    /// every value it wrote again afterwards: apply's verify re-reads all the
    /// sysctls of the plan (one `pread(2)` of a `/proc/sys` file costs about
    /// 3.5 us here, and the same check twice is not safer).
    pub fn write(&mut self, s: &Sysctl, value: &str) -> Result<()> {
        let (path, f, canonical) = self.open_for(s, value)?;
        write_value(s, &path, &f, &canonical)
    }

    /// Range-check `value` and open the sysctl's file for writing.
    fn open_for(&mut self, s: &Sysctl, value: &str) -> Result<(PathBuf, std::fs::File, String)> {
        let canonical = validate_sysctl_value(s, value)?;
        let path = sysctl_path(&self.root, s)?;
        let doing = || format!("writing {canonical:?} to sysctl {s} ({})", path.display());
        let opened = match s {
            Sysctl::Conf { target, key } => {
                let dir = match target {
                    ConfTarget::Interface(n) => conf_component(n),
                    _ => Some(target.dir_name().into()),
                };
                match dir {
                    Some(d) => self.open_at(key.family(), &d, key.file_name()),
                    None => open_rw(&path),
                }
            }
            Sysctl::Tuning(_) => open_rw(&path),
        };
        let f = opened.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => read_error(e, s, &path),
            _ => Error::io(e, doing()),
        })?;
        Ok((path, f, canonical))
    }

    /// `conf/<dir>/<file>` opened for reading and writing (truncated, which
    /// `/proc/sys` ignores and a fixture tree's plain file needs).
    fn open_at(
        &mut self,
        family: Family,
        dir: &std::ffi::OsStr,
        file: &str,
    ) -> io::Result<std::fs::File> {
        const FLAGS: libc::c_int = libc::O_RDWR | libc::O_TRUNC;
        let at = (family, dir.to_os_string());
        if let Some(fd) = self.dirs.get(&at) {
            return open_in(fd, file, FLAGS);
        }
        let path = conf_path(&self.root, family, dir);
        if self.dirs.len() >= MAX_CONF_DIRS {
            return open_rw(&path.join(file));
        }
        let fd = open_dir(&path)?;
        let f = open_in(&fd, file, FLAGS);
        self.dirs.insert(at, fd);
        f
    }
}

/// The most of a sysctl file read back after a write (values are a few bytes;
/// the same bound as every other kernel attribute read).
const READBACK_MAX: u64 = crate::input::InputKind::KernelAttribute.max_bytes();

/// Write `canonical` to the sysctl file `f` (at `path`); the kernel refusing it
/// is `InvalidInput`.
fn write_value(s: &Sysctl, path: &Path, mut f: &std::fs::File, canonical: &str) -> Result<()> {
    let doing = || format!("writing {canonical:?} to sysctl {s} ({})", path.display());
    if let Err(e) = f.write_all(format!("{canonical}\n").as_bytes()) {
        let refused = e.raw_os_error() == Some(libc::EINVAL);
        let err = Error::io(e, doing());
        return Err(if refused {
            err.with_kind(ErrorKind::InvalidInput)
                .context("the kernel refused the value")
        } else {
            err
        });
    }
    Ok(())
}

/// Read the sysctl file `f` (at `path`) back on the same descriptor and compare
/// with `canonical`, just written (a mismatch is `Verify`).
fn read_back(s: &Sysctl, path: &Path, mut f: std::fs::File, canonical: &str) -> Result<()> {
    use std::io::{Read, Seek};
    // Read back with one pread(2) from offset 0 (no rewind, no size probe):
    // sysctl values are short; a longer one falls back to a bounded whole read.
    let mut buf = [0u8; 256];
    let n =
        std::os::unix::fs::FileExt::read_at(&f, &mut buf, 0).map_err(|e| read_error(e, s, path))?;
    let now = if n < buf.len() {
        String::from_utf8_lossy(&buf[..n]).into_owned()
    } else {
        let mut long = Vec::new();
        f.rewind()
            .and_then(|_| (&mut f).take(READBACK_MAX).read_to_end(&mut long))
            .map_err(|e| read_error(e, s, path))?;
        String::from_utf8_lossy(&long).into_owned()
    };
    let now = now.trim();
    if normalize(s, now) != canonical {
        return Err(Error::new(
            ErrorKind::Verify,
            format!(
                "wrote {canonical:?} to sysctl {s} ({}) but it reads back {now:?}; \
                 something else manages this value or the kernel adjusted it",
                path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn triples() {
        assert_eq!(parse_triple("1\t2\t3"), Some([1, 2, 3]));
        assert_eq!(parse_triple("1 2  3\n"), Some([1, 2, 3]));
        assert_eq!(parse_triple("1 2"), None);
        assert_eq!(parse_triple("1 2 3 4"), None);
        assert_eq!(parse_triple("1 x 3"), None);
    }

    #[test]
    fn values_are_checked_before_writing() {
        let ai = Sysctl::Conf {
            target: ConfTarget::All,
            key: ConfKey::ArpIgnore,
        };
        assert_eq!(validate_sysctl_value(&ai, " 8\n").unwrap(), "8");
        let e = validate_sysctl_value(&ai, "9").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.message().contains("from 0 to 8"), "{e}");
        assert!(validate_sysctl_value(&ai, "-1").is_err());
        assert!(validate_sysctl_value(&ai, "one").is_err());
        let rp = Sysctl::Conf {
            target: ConfTarget::Interface("eth0.100".into()),
            key: ConfKey::RpFilter,
        };
        assert!(validate_sysctl_value(&rp, "3").is_err());
        let udp = Sysctl::Tuning(TuningKey::UdpMem);
        assert_eq!(
            validate_sysctl_value(&udp, "1 2 3").unwrap(),
            "1\t2\t3".to_string()
        );
        assert!(validate_sysctl_value(&udp, "3 2 1").is_err());
        let rmem = Sysctl::Tuning(TuningKey::RmemMax);
        assert!(validate_sysctl_value(&rmem, "4294967296").is_err());
        assert_eq!(
            validate_sysctl_value(&rmem, "16777216").unwrap(),
            "16777216"
        );
    }
}

#[cfg(test)]
mod tests;
