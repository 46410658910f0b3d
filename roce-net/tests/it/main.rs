//! The library's integration tests, in one test binary: each former
//! `tests/<name>.rs` is the module `<name>` here, so a test keeps its name under
//! that module (`cargo test -p roce-net --test it lab_guard::`) and a
//! `cargo test NAME` filter still finds it. One binary links the library and its
//! dependencies once instead of once per file; docs/architecture.md
//! ("Testing") has the layout and what it saves.
//!
//! The tests run as threads of one process. None relies on being alone in it:
//! namespaces are named by pid plus a per-lab counter or a per-module prefix,
//! mount and network namespaces are entered on threads of their own, and no test
//! sets the environment, the umask or signal dispositions of this process.
//! A test that needs any of that belongs in a binary of its own, as
//! `tests/lab_prop.rs` does (why: there).

// Shared helpers: the namespace guard, `require_root` and the golden files
// come from the dev-only crate `roce-net-testkit` (testkit/), as for the unit
// tests; the builders of the library's own types are modules here.
mod apply_support;
mod doctor_support;
mod fib_support;
// The file-level import graph the layering test checks for circles.
mod imports;
mod lab_support;
use roce_net_testkit as test_support;
use roce_net_testkit::golden as golden_support;

mod docs_links;
mod doctor_checks;
mod doctor_fleet;
mod doctor_hw;
mod doctor_ipv6;
mod doctor_nccl;
mod doctor_verbs;
mod fleet_cross_host;
mod fleet_ties;
mod health;
mod lab_apply;
mod lab_doctor;
mod lab_fib;
mod lab_fleet;
mod lab_guard;
mod lab_ifindex;
mod lab_input;
mod lab_ipv6;
mod lab_ipv6_doctor;
mod lab_mesh;
mod lab_netlink_writes;
mod lab_nic_hw;
mod lab_observe;
mod lab_shared_names;
mod layering;
mod metrics;
mod nccl_model;
mod persist_discover;
mod persist_render;
mod persist_write;
mod plan_golden;
mod plan_neigh;
mod plan_persisted;
mod plan_policy;
mod plan_stable;
mod probe_arp;
mod probe_nd;
mod prop_plan;
mod public_api;
mod scope_agreement;
mod scope_families;
