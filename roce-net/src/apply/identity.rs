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
//!
//! Kernels before 5.14 have no cookie. There the **initial** network namespace
//! (where a node's NICs live) is still identified: it is never freed and never
//! reused within a boot, so the boot id names it, given a proof that the caller
//! is in it: its namespace is the one of the kernel's fixed initial inode
//! number (kernels that fix it), or the caller is in the initial PID namespace
//! (whose inode number is fixed) and its network namespace is that of PID 1,
//! the machine's init. It is recorded as cookie 0, which no kernel gives. Any
//! other namespace without a cookie is refused, saying why.

use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use serde::{Deserialize, Serialize};
use std::os::fd::{FromRawFd, OwnedFd};

/// `SO_NETNS_COOKIE` (include/uapi/asm-generic/socket.h; not in the libc crate).
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_NETNS_COOKIE: libc::c_int = 71;
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_NETNS_COOKIE: libc::c_int = 0x0050;

/// The cookie recorded for the initial namespace identified without one.
pub(crate) const INITIAL_WITHOUT_COOKIE: u64 = 0;

/// `PROC_PID_INIT_INO` (include/linux/proc_ns.h, fixed since Linux 3.8).
const PID_INIT_INO: u64 = 0xEFFF_FFFC;
/// The initial network namespace's inode number on kernels that fix it (below
/// the dynamic range, 0xF0000000 on, that every other namespace gets).
const NET_INIT_INO: u64 = 0xEFFF_FFF9;

#[cfg(test)]
thread_local! {
    /// Test seam: this thread's kernel "has no" `SO_NETNS_COOKIE`.
    pub(crate) static NO_COOKIE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Where the kernel publishes this boot's random id.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The identity of one network namespace in one boot of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NamespaceId {
    /// The kernel's namespace cookie (never reused within a boot); 0 for the
    /// initial namespace on a kernel without cookies (before 5.14).
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
        if self.cookie == INITIAL_WITHOUT_COOKIE {
            return write!(
                f,
                "the initial namespace, without a cookie (boot {})",
                self.boot_id
            );
        }
        write!(f, "cookie {} (boot {})", self.cookie, self.boot_id)
    }
}

/// The boot id, trimmed.
fn boot_id() -> Result<String> {
    let s = crate::input::read_attribute_text(std::path::Path::new(BOOT_ID))
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
    #[cfg(test)]
    if NO_COOKIE.with(|c| c.get()) {
        return Err(no_cookie());
    }
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
    match crate::sys::getsockopt::<u64>(&sock, libc::SOL_SOCKET, SO_NETNS_COOKIE) {
        Ok(cookie) => Ok(cookie),
        Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => Err(no_cookie()),
        Err(e) => Err(Error::io(e, "reading the network namespace cookie")),
    }
}

fn no_cookie() -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "this kernel cannot identify a network namespace (SO_NETNS_COOKIE needs Linux 5.14 \
         or later)",
    )
    .with_errno(libc::ENOPROTOOPT)
}

/// The (device, inode) of a namespace file.
fn ns_inode(path: &str) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// Whether the calling thread is in the initial network namespace, proven
/// without a cookie (see the module documentation); `Err` says why not.
fn initial_namespace_proof() -> std::result::Result<(), String> {
    let net = ns_inode("/proc/thread-self/ns/net")
        .map_err(|e| format!("its namespace could not be read: {e}"))?;
    if net.1 == NET_INIT_INO {
        return Ok(());
    }
    let pid = ns_inode("/proc/thread-self/ns/pid")
        .map_err(|e| format!("its PID namespace could not be read: {e}"))?;
    if pid.1 != PID_INIT_INO {
        return Err(format!(
            "it runs in a PID namespace of its own (inode {}), so PID 1 is not the machine's \
             init and cannot vouch for it",
            pid.1
        ));
    }
    let init = ns_inode("/proc/1/ns/net")
        .map_err(|e| format!("the namespace of PID 1 could not be read: {e}"))?;
    if init != net {
        return Err(format!(
            "its network namespace (inode {}) is not that of PID 1 (inode {})",
            net.1, init.1
        ));
    }
    Ok(())
}

/// The identity of the calling thread's namespace.
pub(crate) fn thread_namespace() -> Result<NamespaceId> {
    let cookie = match thread_cookie() {
        Ok(c) => c,
        Err(e) if e.errno_value() == Some(libc::ENOPROTOOPT) => match initial_namespace_proof() {
            Ok(()) => INITIAL_WITHOUT_COOKIE,
            Err(why) => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "this kernel cannot identify a network namespace (SO_NETNS_COOKIE \
                         needs Linux 5.14 or later); without it roce-net's apply, rollback and \
                         watchdog work only in the initial network namespace (where a node's \
                         NICs live, identified by the boot), and this is not provably it: {why}. \
                         Nothing was changed; run roce-net in the initial namespace or on a \
                         newer kernel"
                    ),
                )
                .with_errno(libc::ENOPROTOOPT))
            }
        },
        Err(e) => return Err(e),
    };
    Ok(NamespaceId {
        cookie,
        boot_id: boot_id()?,
    })
}

/// The identity of the host's namespace.
pub fn namespace_id(host: &Host) -> Result<NamespaceId> {
    host.target().run(thread_namespace)
}

/// The key of the host's namespace lock and journal ([`NamespaceId::key`]).
#[cfg(any(test, feature = "testing"))]
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
    use std::os::fd::AsRawFd;

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

    /// Without `SO_NETNS_COOKIE` (a seam pretends the
    /// sockopt is ENOPROTOOPT), the initial namespace is still identified (as
    /// cookie 0 and the boot), and any other namespace is refused, saying why.
    /// The test process runs in the machine's initial namespace (as
    /// `scripts/test.sh` runs it on the VM). Both were once "unsupported".
    #[test]
    #[ignore = "needs root: builds network namespaces (scripts/test.sh runs it)"]
    fn without_cookies_only_the_initial_namespace_is_identified() {
        crate::test_support::require_root(
            "without_cookies_only_the_initial_namespace_is_identified",
        );
        let real = thread_namespace().unwrap();
        NO_COOKIE.with(|c| c.set(true));
        let got = thread_namespace();
        NO_COOKIE.with(|c| c.set(false));
        let id = got.unwrap();
        assert_eq!(id.cookie, INITIAL_WITHOUT_COOKIE);
        assert_eq!(id.boot_id, real.boot_id);
        assert!(id.to_string().contains("initial namespace"), "{id}");
        assert!(id.key().starts_with("netns-0-"), "{}", id.key());
        // A namespace of its own is refused, naming why.
        let name = format!("rnt-nocookie-{}", std::process::id());
        let ok = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(ok.success());
        let f = std::fs::File::open(format!("/run/netns/{name}"));
        let res = std::thread::scope(|s| {
            s.spawn(|| {
                let f = f.as_ref().unwrap();
                // SAFETY: setns on this short-lived thread only.
                assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
                NO_COOKIE.with(|c| c.set(true));
                thread_namespace()
            })
            .join()
        });
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &name])
            .status();
        let e = res.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        let m = e.to_string();
        assert!(
            m.contains("only in the initial network namespace")
                && m.contains("Nothing was changed"),
            "{m}"
        );
    }
}
