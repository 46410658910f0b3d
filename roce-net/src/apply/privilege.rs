//! Least privilege: a change needs `CAP_NET_ADMIN`, checked before anything is
//! touched (no state directory created, no lock taken, no namespace entered), so
//! an unprivileged caller gets one clear error and the host and the state
//! directory stay exactly as they were. Read-only verbs never call this.

use crate::error::{Error, ErrorKind, Result};

/// `CAP_NET_ADMIN` (include/uapi/linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAP_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Whether the calling thread holds `CAP_NET_ADMIN` in its effective set.
pub(crate) fn has_net_admin() -> Result<bool> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget(2) with a v3 header and room for its two data words.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut hdr as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(Error::io(
            std::io::Error::last_os_error(),
            "reading this process's capabilities (capget)",
        ));
    }
    Ok(data[0].effective & (1 << CAP_NET_ADMIN) != 0)
}

/// Refuse a change (`what`: "apply", "rollback", ...) without `CAP_NET_ADMIN`
/// in this thread's effective set: `Permission` (errno `EPERM`), saying nothing
/// was changed. [`crate::apply`], [`crate::rollback`] and the watchdog check it
/// themselves; a caller that asks a person first (the CLI's `apply` prompt)
/// checks it before asking.
pub fn require_net_admin(what: &str) -> Result<()> {
    if has_net_admin()? {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Permission,
        format!(
            "{what} changes the network and needs CAP_NET_ADMIN, which this process does not \
             have; nothing was changed. Run it as root (sudo), or with CAP_NET_ADMIN"
        ),
    )
    .with_errno(libc::EPERM))
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_has_net_admin_and_the_check_says_so() {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let has = super::has_net_admin().unwrap();
        if root {
            assert!(has, "root (as CI runs the suite) holds CAP_NET_ADMIN");
            super::require_net_admin("apply").unwrap();
        } else if !has {
            let e = super::require_net_admin("apply").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Permission);
            assert!(e.to_string().contains("nothing was changed"), "{e}");
        }
    }
}
