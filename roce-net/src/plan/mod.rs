//! The pure planner: `(HostState, Policy) -> Plan` (placeholder types; the planner
//! itself is filled in by the plan work).

mod change;

pub use change::Change;

use crate::model::{Route, Rule, Sysctl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What roce-net wants for one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicDesired {
    /// Interface name.
    pub ifname: String,
    /// The NIC's address used as the rule's source.
    pub address: IpAddr,
    /// Its prefix length.
    pub prefix_len: u8,
    /// The NIC's routing table id.
    pub table: u32,
    /// The table's name.
    pub table_name: String,
    /// The `from <address> lookup <table>` rule's priority.
    pub rule_priority: u32,
}

/// The full desired state a policy produces on a host; the plan is its diff
/// against the current state, and persistence renders it whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DesiredState {
    /// Per-NIC layout.
    pub nics: Vec<NicDesired>,
    /// Routes roce-net owns.
    pub routes: Vec<Route>,
    /// Rules roce-net owns.
    pub rules: Vec<Rule>,
    /// Sysctls and their values.
    pub sysctls: Vec<(Sysctl, String)>,
    /// Table names to register.
    pub table_names: BTreeMap<u32, String>,
    /// The protocol number that marks roce-net's routes and rules.
    pub protocol: u8,
}

/// An ordered list of changes, with the state it was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Host name the plan was made on.
    pub hostname: String,
    /// Namespace the plan was made in.
    pub netns: Option<String>,
    /// Fingerprint of the state it was made from (drift check).
    pub base_fingerprint: String,
    /// The changes, in application order.
    pub changes: Vec<Change>,
    /// The whole desired state.
    pub desired: DesiredState,
}

impl Plan {
    /// True when the host already complies.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}
