//! One error type for the whole library (docs/architecture.md, decision 9).
//!
//! An [`Error`] has a [`ErrorKind`] (which maps to a Python exception class and a
//! CLI exit code), a message that says what failed on which object and what to do,
//! a context chain (outermost last), the errno when the kernel gave one, and the
//! kernel's extended-ack text when netlink supplied it, and the error that caused
//! it ([`Error::with_source`]): an apply that failed and was rolled back keeps the
//! kernel's refusal as its source, kind, errno, extack and context intact.

use schemars::JsonSchema;
use std::fmt;

crate::named::named_enum! {
    /// The class of an error; its name is the one JSON, the CLI and the
    /// Python exception's `kind` use.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, JsonSchema)]
    #[non_exhaustive]
    pub enum ErrorKind (fn name, serde) {
        /// The operation needs privileges the caller lacks (EPERM / EACCES).
        Permission = "permission",
        /// A named object (namespace, interface, file) does not exist.
        NotFound = "not_found",
        /// Input from the user is malformed.
        InvalidInput = "invalid_input",
        /// A policy document is invalid or conflicts with the host.
        Policy = "policy",
        /// A file or document could not be parsed.
        Parse = "parse",
        /// The kernel refused a netlink request.
        Netlink = "netlink",
        /// Another I/O failure.
        Io = "io",
        /// The host changed since the plan was made.
        Drift = "drift",
        /// Another roce-net apply holds the lock for this namespace.
        Locked = "locked",
        /// After applying, the host does not match the plan.
        Verify = "verify",
        /// A change failed and was rolled back (see the message for what was restored).
        RolledBack = "rolled_back",
        /// Rollback itself failed: the host may be in a mixed state.
        RollbackFailed = "rollback_failed",
        /// The kernel or build does not support this operation.
        Unsupported = "unsupported",
        /// A wait ran out of time.
        Timeout = "timeout",
        /// RDMA cannot be used here: no libibverbs, no kernel support, no devices,
        /// no `/dev/infiniband`, or a build without the `verbs` feature (the message
        /// says which).
        NoRdma = "no_rdma",
    }
}

/// The library's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    context: Vec<String>,
    errno: Option<i32>,
    extack: Option<String>,
    source: Option<Box<Error>>,
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of a kind with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            context: Vec::new(),
            errno: None,
            extack: None,
            source: None,
        }
    }

    /// Keep `cause` as the error this one follows from. [`Error::errno_value`] and
    /// [`Error::extack`] fall back to the cause's, and the text shows the cause
    /// first, once: `<cause>; <this message>`.
    pub fn with_source(mut self, cause: Error) -> Error {
        self.source = Some(Box::new(cause));
        self
    }

    /// The error this one follows from, if any.
    pub fn cause(&self) -> Option<&Error> {
        self.source.as_deref()
    }

    /// The innermost error of the chain (this one when it has no cause).
    pub fn root_cause(&self) -> &Error {
        let mut e = self;
        while let Some(c) = e.cause() {
            e = c;
        }
        e
    }

    /// From an I/O error, with what was being done. The kind follows the errno.
    pub fn io(e: std::io::Error, doing: impl Into<String>) -> Error {
        let errno = e.raw_os_error();
        let kind = match e.kind() {
            std::io::ErrorKind::PermissionDenied => ErrorKind::Permission,
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Io,
        };
        let mut err = Error::new(kind, format!("{}: {}", doing.into(), e));
        err.errno = errno;
        if kind == ErrorKind::Permission {
            err.message
                .push_str(" (run as root or with CAP_NET_ADMIN / CAP_SYS_ADMIN)");
        }
        err
    }

    /// From a positive errno, with what was being done.
    pub fn errno(errno: i32, doing: impl Into<String>) -> Error {
        Error::io(std::io::Error::from_raw_os_error(errno), doing)
    }

    /// Set the errno.
    pub fn with_errno(mut self, errno: i32) -> Error {
        self.errno = Some(errno);
        self
    }

    /// Set the kernel's extended-ack message.
    pub fn with_extack(mut self, extack: impl Into<String>) -> Error {
        self.extack = Some(extack.into());
        self
    }

    /// Change the kind.
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }

    /// Add an outer context line ("while applying change 3 of 12").
    pub fn context(mut self, ctx: impl Into<String>) -> Error {
        self.context.push(ctx.into());
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The innermost message.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Context lines, innermost first.
    pub fn context_chain(&self) -> &[String] {
        &self.context
    }
    /// The errno, when the kernel reported one (this error's, else its cause's).
    pub fn errno_value(&self) -> Option<i32> {
        self.errno
            .or_else(|| self.cause().and_then(Error::errno_value))
    }
    /// The kernel's extended-ack text, when netlink supplied one (this error's,
    /// else its cause's).
    pub fn extack(&self) -> Option<&str> {
        self.extack
            .as_deref()
            .or_else(|| self.cause().and_then(Error::extack))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(cause) = &self.source {
            write!(f, "{cause}; ")?;
        }
        for c in self.context.iter().rev() {
            write!(f, "{c}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(x) = &self.extack {
            write!(f, " (kernel: {x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn display_has_context_and_extack() {
        let e = Error::errno(libc::EEXIST, "adding route 198.18.0.0/24 table 100")
            .with_extack("Route already exists")
            .context("applying change 2 of 5");
        assert_eq!(e.errno_value(), Some(libc::EEXIST));
        let s = e.to_string();
        assert!(s.starts_with("applying change 2 of 5: adding route"), "{s}");
        assert!(s.ends_with("(kernel: Route already exists)"), "{s}");
    }

    #[test]
    fn a_wrapped_error_keeps_its_cause_and_shows_the_kernel_text_once() {
        let cause = Error::errno(libc::ENETDOWN, "adding route 198.18.0.0/24 dev r1")
            .with_kind(ErrorKind::Netlink)
            .with_extack("Nexthop device is not up")
            .context("change 9 of 59");
        let e = Error::new(ErrorKind::RolledBack, "rolled back 8 change(s)").with_source(cause);
        assert_eq!(e.kind(), ErrorKind::RolledBack);
        assert_eq!(e.errno_value(), Some(libc::ENETDOWN));
        assert_eq!(e.extack(), Some("Nexthop device is not up"));
        let c = e.cause().unwrap();
        assert_eq!(c.kind(), ErrorKind::Netlink);
        assert_eq!(c.context_chain(), ["change 9 of 59"]);
        assert!(std::ptr::eq(e.root_cause(), c));
        let s = e.to_string();
        assert_eq!(s.matches("Nexthop device is not up").count(), 1, "{s}");
        assert!(s.starts_with("change 9 of 59: adding route"), "{s}");
        assert!(s.ends_with("; rolled back 8 change(s)"), "{s}");
        assert!(!s.contains("(kernel: )"), "{s}");
        use std::error::Error as _;
        assert!(e.source().is_some());
    }
}
