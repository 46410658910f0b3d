//! The CLI's integration tests, in one test binary: each former
//! `tests/<name>.rs` is the module `<name>` here, so a test keeps its name under
//! that module (`cargo test --test it crash::`) and a `cargo test NAME` filter
//! still finds it. One binary links the CLI's dependencies once instead of once
//! per file; docs/architecture.md ("Tests") has the layout and what it saves.
//! `tests/cli_rdma.rs` stays a binary of its own: `scripts/test.sh` builds and
//! runs it alone with the `verbs` feature, which would otherwise run every test
//! here a second time.
//!
//! The tests run as threads of one process. None relies on being alone in it:
//! the CLI runs as a child process (signals go to the child's pid), namespaces
//! are named by pid plus a sequence number or a per-module prefix, a network
//! namespace is entered on a thread of its own or in the child before exec, and
//! no test sets the environment, the umask or signal dispositions of this
//! process. A test that needs any of that belongs in a binary of its own.

// Shared helpers; `require_root` is the dev-only crate `roce-net-testkit`'s
// (one definition for the unit tests and both crates' integration tests).
mod support;
use roce_net_testkit as test_support;

mod announce;
mod cli;
mod cli_input;
mod cli_mesh;
mod cli_review;
mod cli_snapshot;
mod cli_views;
mod crash;
mod first_day;
mod first_hour;
mod health;
mod health_metrics;
mod health_packaging;
mod lab_interrupt;
mod output_files;
mod persist_boot;
mod printed_commands;
mod reliability;
mod reliability_faults;
mod rollback_persisted;
mod slurm_health;
mod slurm_mesh;
mod watchdog_superseded;
