//! Files roce-net keeps for itself or writes into a node's configuration,
//! reached so that nobody else's file is ever followed, trusted or overwritten:
//!
//! - [`statedir`]: the private state directory (`/run/roce-net`): files opened
//!   relative to one directory descriptor, ownership and mode checked, written
//!   through a fresh temporary file and a rename;
//! - [`lock`]: `flock(2)` on a private lock file in it, with a bounded wait and
//!   the holder named from `/proc/locks`;
//! - [`walk`]: the link-safe walk to a file's directory under an injectable root;
//! - [`atomic`]: a whole file written under a name the user gives (`snapshot
//!   -o`, `metrics -o`, `check -o`), through a random temporary name and a rename.
//!
//! Below `apply`, `persist` and `rt_tables`, which all build on it
//! (docs/architecture.md, "One owner per concept").

pub(crate) mod atomic;
pub(crate) mod lock;
pub(crate) mod statedir;
pub(crate) mod walk;
