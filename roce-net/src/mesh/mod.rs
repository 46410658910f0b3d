//! The cluster mesh: every NIC of every node probed on its rail in a bounded
//! time, and the broken NIC, host or rail named (docs/mesh.md).
//!
//! The pure half, tested without root: the inventory of the nodes' NICs and
//! rails ([`inventory`]), the schedule that says which NIC probes which in
//! which round ([`schedule`]), the node result document ([`result`]) and the
//! merge that finds the faults by elimination ([`localize`]). The node half,
//! run on each node by whatever runs commands there (Ansible, Slurm's
//! `srun`): a responder on every NIC at once, bounded in time and sessions,
//! and the node's probes at the neighbour, IP and RDMA levels.
//! The library does no orchestration of its own beyond what one host runs.

mod echo;
mod files;
mod inventory;
mod localize;
mod prober;
mod responder;
mod result;
mod run;
mod schedule;

pub use files::{mesh_token, MeshPlanFile};
pub use inventory::{
    mesh_node, mesh_node_with, MeshInventory, MeshNic, MeshNode, MeshUnprobedNic, RailBy,
    MESH_MAX_NICS, MESH_MAX_NODES,
};
pub use localize::{
    mesh_report, FaultElement, MeshFault, MeshMerger, MeshReport, MeshReportNode, MeshSummary,
};
pub use result::{
    causes as mesh_causes, AnsweredProbe, LevelResult, MeshLevel, MeshNodeResult, MeshStatus,
    NicSeen, ProbeRecord, ResponderReport, MESH_RESULT_VERSION,
};
pub use run::{MeshRunOptions, MESH_MAX_WAIT_MS};
pub use schedule::{
    mesh_plan, MeshLevels, MeshNodePlan, MeshOptions, MeshPlan, MeshProbe, MeshRdmaWorkload, NicId,
    NodeSchedule, ScheduledProbe, MESH_DEFAULT_PORT, MESH_END_GRACE_MS, MESH_MAX_PEERS,
    MESH_MAX_ROUNDS, MESH_PLAN_VERSION, MESH_ROUND_SLACK_MS,
};

#[cfg(test)]
pub(crate) mod tests;
#[cfg(all(test, feature = "verbs"))]
mod tests_rdma;
