//! The helpers roce-net's tests share, as one dev-only crate (a
//! dev-dependency of `roce-net` and `roce-net-cli`; never a dependency of
//! anything shipped):
//!
//! - lab namespaces and the rule that a lab test needs root and fails, never
//!   skips, without it: [`require_root`], [`require_namespaces`], [`Netns`]
//!   (named `rnt-sf-<tag>-<pid>`, deleted on drop), [`run`], [`output`];
//! - [`golden`]: the one golden-file helper (`UPDATE_GOLDEN=1` rewrites, a
//!   missing file fails);
//! - [`copy_tree`]: a fixture tree copied under a test's root;
//! - [`tree_listing`]: a tree's files, modes and bytes, to compare with `==`;
//! - [`run_measured`]: a child run to completion with its time, peak memory
//!   and output (the benchmarks);
//! - [`hang_guard`]: the ceiling a deadline test puts on a bounded run.
//!
//! Helpers that build the library's own types (`HostState` fixtures, FIB
//! queries) stay modules of the test binaries: a crate that depended on
//! `roce-net` would hand the library's unit tests a second copy of its types
//! (docs/architecture.md, "Testing").

pub mod golden;
mod measure;
mod ns;
mod tree;

pub use measure::{run_measured, Measured};
pub use ns::{output, require_namespaces, require_root, run, Netns};
pub use tree::{copy_tree, tree_listing, Entry};

/// The ceiling a test puts on a run whose own documented bound (its timeout,
/// its duration plus its timeout, ...) is `bound`: three times the bound plus
/// 10 s. It only catches a run that hangs, never a slow machine: a deadline
/// test asserts the reason the run stopped (the cause or `stopped` it
/// reports) and this ceiling, never a duration figure
/// (docs/architecture.md, "Testing"). A peer that trickles in such a test
/// must keep trickling longer than the ceiling, so a run that waits for the
/// peer instead of its bound hits it.
pub fn hang_guard(bound: std::time::Duration) -> std::time::Duration {
    bound * 3 + std::time::Duration::from_secs(10)
}
