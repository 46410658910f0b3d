//! roce-net: observe, diagnose and fix host networking on multi-NIC RoCE/RDMA servers.
//!
//! The flow reads top to bottom, and every step is one call:
//!
//! ```no_run
//! # fn main() -> roce_net::Result<()> {
//! use roce_net::{Host, Policy, ApplyOptions};
//! let host = Host::current();                     // or Host::netns("gpu0")?
//! let state = host.snapshot()?;                   // observe: one typed snapshot
//! for f in roce_net::doctor(&state) {             // diagnose: findings with evidence
//!     println!("{} {} {}", f.severity, f.id, f.message);
//! }
//! let policy = Policy::default();                 // the desired state (YAML/JSON)
//! let plan = roce_net::plan(&state, &policy)?;    // a reviewable diff
//! print!("{}", plan.render_diff());
//! roce_net::apply(&host, &plan, &ApplyOptions::default())?; // a transaction
//! let nccl = roce_net::nccl_env(&state);          // NCCL settings that match
//! # let _ = nccl; Ok(()) }
//! ```
//!
//! The modules are private; everything a user needs is re-exported here, grouped
//! by the step it belongs to (`docs/architecture.md` draws the modules and the
//! flow). The library prints nothing and never exits the process.
#![deny(missing_docs)]

// Lets the crate's own tests name items as users do (`roce_net::Route`).
#[cfg(test)]
extern crate self as roce_net;

mod apply;
mod doctor;
mod error;
mod fib;
mod files;
mod fleet;
mod health;
mod host;
mod input;
mod kernel;
mod lab;
mod mesh;
mod metrics;
mod model;
mod named;
mod nccl;
mod netns;
mod persist;
mod plan;
mod policy;
mod probe;
mod rt_tables;
mod scope;
mod sys;
#[cfg(test)]
use roce_net_testkit as test_support;
// Fuzz harnesses: only for `cargo fuzz` (cfg(fuzzing)) and this crate's tests,
// never in the product (docs/fuzzing.md).
#[cfg(any(fuzzing, test))]
#[doc(hidden)]
pub mod fuzzing;
mod views;

// Errors (docs/architecture.md, decision 9).
pub use error::{Error, ErrorKind, Result};

// The model: the snapshot and its parts.
pub use model::{
    active_mtu_for_netdev_mtu, ifname_from_kernel, ifname_to_kernel, ifname_word, in_netns,
    over_ssh, port_is_active, protocol, shell_word, Address, AddressFamilies, AddressFlag, Combine,
    ConfKey, ConfTarget, ConfValues, DcbApp, Family, GidEntry, GidType, HostState, HwAddr,
    Interface, InterfaceConf, IpVerb, LinkLayer, LinkStats, NeighState, Neighbor, NextHop,
    OperState, PhysState, PortRef, PortState, Qos, RdmaCmPort, RdmaDevice, RdmaPort, Route,
    RouteDecision, RouteKey, RouteQuery, RouteReply, RouteType, Rule, RuleAction, RuleKey, Scope,
    SnapshotFormat, Sysctl, SysctlAccess, SysctlAssignment, SysctlValue, SysctlView, TableId,
    Trust, Tuning, TuningKey, Warning, WithTableNames, RT_TABLE_LOCAL, RT_TABLE_MAIN,
};
pub use model::{relative_time, utc_time};
pub use model::{GidQuery, NoRdma, NoRdmaReason, VerbsDevice, VerbsGid, VerbsPort, VerbsView};

// Bounded reading of outside files (docs/reliability.md lists the limits).
pub use input::{open_input, read_input, read_input_text, terminal_safe, InputKind};
// A whole file written under a name the user gives, never through a planted link.
pub use files::atomic::write_file_atomically;

// Observe: the namespace-scoped host handle and the kernel I/O it drives.
pub use host::{hostname, Host};
pub use kernel::sysfs::read_rdma_sysfs;
pub use kernel::verbs::{verbs_view, VerbsOptions};
pub use netns::NetnsTarget;

// Which NICs are managed, and which address of each.
pub use scope::{
    gid_of, natural_cmp, nic_address, nic_addresses, nic_scope, nics_in_scope, port_netdev,
    roce_v2_gid_index, roce_v2_gid_indices, NicScope, ScopeMode, ScopedNic,
};

// Diagnose.
pub use doctor::{
    doctor, doctor_with, max_severity, sort_findings, summarize, DoctorOptions, Finding,
    Remediation, Severity, Subject, Summary, CHECK_IDS,
};
pub use fib::{fib_lookup, fib_lookup_with, FibDecision, FibError, FibMode, Flow};
pub use fleet::{
    fleet_host_label, fleet_report, fleet_report_with, FleetBuilder, FleetReport, HostSummary,
    FLEET_CHECK_IDS,
};
pub use nccl::check::{nccl_check, NCCL_CHECK_IDS};
pub use nccl::model::{nccl_select_gid, NcclEnv, NcclVersion, Selection};
pub use nccl::{
    nccl_env, nccl_env_with, target_gid, GidChoice, GidPick, NcclAdvice, NcclOptions, NcclVar,
    PickOutcome,
};
pub use probe::{probe_arp, ArpProbeOptions, ArpProbeResult, ArpReply};
pub use probe::{probe_nd, NdProbeOptions, NdProbeResult, NdReply};
// RDMA traffic between two hosts (the `verbs` feature): `Host::probe_rdma`.
#[cfg(feature = "verbs")]
pub use probe::rdma::{
    Bandwidth, Cause, EndpointSummary, FailureValue, Latency, ProbeFailure, ProbeRole, ProbeToken,
    RdmaProbeOptions, RdmaProbeReport, RdmaServerReport, RejectedConnection, Stage,
    MAX_PENDING_CONNECTIONS,
};

// The cluster mesh: every NIC probed on its rail, the broken element named (docs/mesh.md).
pub use mesh::{
    mesh_causes, mesh_node, mesh_node_with, mesh_plan, mesh_report, mesh_token, AnsweredProbe,
    FaultElement, LevelResult, MeshFault, MeshInventory, MeshLevel, MeshLevels, MeshMerger,
    MeshNic, MeshNode, MeshNodePlan, MeshNodeResult, MeshOptions, MeshPlan, MeshPlanFile,
    MeshProbe, MeshRdmaWorkload, MeshReport, MeshReportNode, MeshRunOptions, MeshStatus,
    MeshSummary, MeshUnprobedNic, NicId, NicSeen, NodeSchedule, ProbeRecord, RailBy,
    ResponderReport, ScheduledProbe, MESH_DEFAULT_PORT, MESH_END_GRACE_MS, MESH_MAX_NICS,
    MESH_MAX_NODES, MESH_MAX_PEERS, MESH_MAX_ROUNDS, MESH_MAX_WAIT_MS, MESH_PLAN_VERSION,
    MESH_RESULT_VERSION, MESH_ROUND_SLACK_MS,
};

// Views other tools print (show_gids, ibdev2netdev), from a snapshot.
pub use views::{
    ibdev2netdev, render_ibdev2netdev, render_show_gids, show_gids, GidFilter, GidRow,
    Ibdev2NetdevRow,
};

// Monitor: Prometheus text for node_exporter's textfile collector.
pub use metrics::{render_metrics, CONGESTION_COUNTERS, DROP_COUNTERS, RETRANSMIT_COUNTERS};
// Health: the doctor as a verdict for Nagios, node-problem-detector and Slurm.
pub use health::{
    health_verdict, validate_health_policy, HealthStatus, HealthVerdict, IdCount, MeshHealth,
    MESH_CHECK_IDS,
};

// Declare, plan.
pub use plan::{
    desired_state, fingerprint, plan, polluted_neighbors, Change, DesiredState, NicDesired, Plan,
    PollutedNeighbor, PollutionReason,
};
pub use policy::{
    ArpPolicy, Backend, ConfScope, ExtraRoute, FlushMode, Gateways, HealthPolicy, Ipv6Policy,
    NeighborPolicy, NicSelection, PersistBackend, PersistencePolicy, Policy, RoutingPolicy,
    RpFilter, TuningPolicy,
};

// Apply as a transaction.
pub use apply::{
    apply, apply_policy, apply_status, archive_journal, arm_confirm, confirm, persist_for_apply,
    refuse_persist_while_unsettled, require_net_admin, rollback, stop_on_signals, watchdog,
    watchdog_until, AppliedPersist, ApplyOptions, ApplyReport, ArchiveReport, ConfirmGuard,
    Journal, JournalState, NamespaceId, NamespaceRecord, RollbackReport, Step, StepStatus,
    WatchdogOutcome, WatchdogRecord, DEFAULT_STATE_DIR, MAX_CONFIRM_TIMEOUT,
};

// Persist.
pub use persist::{
    choose_backend, diff_persistence, discover_config, prepare_persistence, remove_persistence,
    remove_stale_persistence, render_persistence, write_persistence, write_persistence_at, Claim,
    DiffStatus, FileDiff, NetplanDevice, NetplanRenderer, NicConfig, NmProfile, NodeConfig,
    PersistPlan, PersistRoot, RemoveReport, RenderOptions, RenderedFile, WriteReport,
};
pub use rt_tables::table_name_problem;

// Labs: throwaway network-namespace topologies for demos, tests and benchmarks.
pub use lab::{Lab, LabInterrupted, LabNic, SEED_IPV6_PREFIX, SEED_MAX_NICS};

// Test support, with the `testing` feature only: the raw netlink handle, the
// namespace lock, namespace plumbing and limits the tests check. The test
// targets enable it (a dev-dependency of each crate on this one with the
// feature); the CLI's release build and the Python wheel do not
// (docs/architecture.md, "The public API is a contract").
#[cfg(feature = "testing")]
pub use apply::{namespace_key, NsLock};
#[cfg(feature = "testing")]
pub use fleet::FLEET_MAX_EVIDENCE_HOSTS;
#[cfg(feature = "testing")]
pub use health::NPD_MAX_LINE;
#[cfg(feature = "testing")]
pub use kernel::netlink::Netlink;
#[cfg(feature = "testing")]
pub use lab::SEED_PEER_HOST;
#[cfg(feature = "testing")]
pub use model::RT_TABLE_DEFAULT;
#[cfg(feature = "testing")]
pub use netns::{netns_add, netns_del, netns_list};
#[cfg(feature = "testing")]
pub use persist::BOOT_REPAIR_PATH;
#[cfg(feature = "testing")]
pub use policy::DEFAULT_CRITICAL_CHECKS;
#[cfg(feature = "testing")]
pub use rt_tables::TABLE_NAMES_FILE;
