//! The kernel I/O layer: every read from and write to the kernel goes through here.
//!
//! - [`netlink`]: a small synchronous rtnetlink socket (links, addresses,
//!   neighbours, routes, rules) with dumps and `ip`-named writes;
//! - [`ethtool`]: driver statistics (`ethtool -S`) over the ethtool ioctl;
//! - [`procfs`]: sysctls under `/proc/sys`, by (interface, key);
//! - [`sysfs`]: RDMA devices, ports, GID tables and counters under
//!   `/sys/class/infiniband` (root injectable);
//! - [`verbs`]: the same devices through libibverbs, loaded at run time (the
//!   `verbs` cargo feature).
//!
//! Sockets and `/proc/sys/net` files belong to the namespace of the thread that
//! opens them; [`crate::Host`] runs this layer on a thread inside its namespace.

pub(crate) mod ethtool;
pub(crate) mod netlink;
pub(crate) mod procfs;
pub(crate) mod sysfs;
pub(crate) mod verbs;
