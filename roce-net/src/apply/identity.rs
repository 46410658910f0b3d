//! Which network namespace an apply touched (docs/architecture.md, decision 11).
//!
//! A namespace is identified by its **cookie** (`SO_NETNS_COOKIE`, Linux 5.14+):
//! a 64-bit number the kernel gives each network namespace when it is created and
//! never gives another one until the machine reboots. Inode numbers of
//! `/run/netns/NAME` or `/proc/PID/ns/net` are reused as soon as a namespace is
//! freed, and names are reused by whoever creates the next namespace of that
//! name, so neither can tell "the namespace this journal was written for" from
//! "a new namespace that happens to look the same". The cookie counter restarts
//! at boot, so the identity also holds the boot id
//! (`/proc/sys/kernel/random/boot_id`): a state directory that survives a reboot
//! never matches a journal to a namespace of another boot.
//!
//! Locks and journals are keyed by [`NamespaceId::key`], and every journal
//! records the full identity, which is checked again whenever one is used.

use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SO_NETNS_COOKIE` (include/uapi/asm-generic/socket.h; not in the libc crate).
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_NETNS_COOKIE: libc::c_int = 71;
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_NETNS_COOKIE: libc::c_int = 0x0050;

/// Where the kernel publishes this boot's random id.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The identity of one network namespace in one boot of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NamespaceId {
    /// The kernel's namespace cookie (never reused within a boot).
    pub cookie: u64,
    /// The machine's boot id when the cookie was read.
    pub boot_id: String,
}

impl NamespaceId {
    /// The file-name key of this namespace's lock and journal:
    /// `netns-<cookie>-<first 8 hex digits of the boot id>`.
    pub fn key(&self) -> String {
        let short: String = self
            .boot_id
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(8)
            .collect();
        format!("netns-{}-{short}", self.cookie)
    }
}

impl std::fmt::Display for NamespaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cookie {} (boot {})", self.cookie, self.boot_id)
    }
}

/// The boot id, trimmed.
fn boot_id() -> Result<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(BOOT_ID)
        .and_then(|f| f.take(64).read_to_string(&mut s))
        .map_err(|e| Error::io(e, format!("reading the boot id from {BOOT_ID}")))?;
    let s = s.trim().to_string();
    if s.is_empty() {
        return Err(Error::new(
            ErrorKind::Io,
            format!("{BOOT_ID} is empty; cannot tell this boot from another"),
        ));
    }
    Ok(s)
}

/// The cookie of the calling thread's network namespace, read from a throwaway
/// socket opened on this thread (a socket belongs to its creator's namespace).
pub(crate) fn thread_cookie() -> Result<u64> {
    // SAFETY: plain socket(2); the fd is owned right away.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            "opening a socket to read the network namespace cookie",
        ));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: getsockopt into a u64 of the given length.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "this kernel cannot identify a network namespace (SO_NETNS_COOKIE needs \
                 Linux 5.14 or later); roce-net's apply, rollback and watchdog need it to be \
                 sure a journal belongs to this namespace",
            )
            .with_errno(libc::ENOPROTOOPT));
        }
        return Err(Error::io(e, "reading the network namespace cookie"));
    }
    Ok(cookie)
}

/// The identity of the calling thread's namespace.
pub(crate) fn thread_namespace() -> Result<NamespaceId> {
    Ok(NamespaceId {
        cookie: thread_cookie()?,
        boot_id: boot_id()?,
    })
}

/// The identity of the host's namespace.
pub fn namespace_id(host: &Host) -> Result<NamespaceId> {
    host.target().run(thread_namespace)
}

/// The key of the host's namespace lock and journal ([`NamespaceId::key`]).
pub fn namespace_key(host: &Host) -> Result<String> {
    namespace_id(host).map(|id| id.key())
}

/// How a journal names the namespace it belongs to, for messages.
pub(crate) fn describe_target(host: &Host) -> String {
    match (host.target().name(), host.target().file()) {
        (Some(n), _) => format!("network namespace {n:?}"),
        (None, Some(p)) => format!("network namespace {}", p.display()),
        (None, None) => "this process's network namespace".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_is_stable_within_a_namespace() {
        let a = thread_namespace().unwrap();
        let b = thread_namespace().unwrap();
        assert_eq!(a, b);
        assert!(a.cookie > 0);
        assert_eq!(a.boot_id.len(), 36, "{}", a.boot_id);
        let k = a.key();
        assert!(k.starts_with(&format!("netns-{}-", a.cookie)), "{k}");
        assert_eq!(k.len(), format!("netns-{}-", a.cookie).len() + 8);
    }
}
