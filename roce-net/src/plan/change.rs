use crate::model::{Neighbor, Route, Rule, Sysctl};
use serde::{Deserialize, Serialize};

/// One typed change to a host, with what it replaces, so it can be shown as a
/// diff, applied, and inverted for rollback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// Write a sysctl. `before` is `None` when it could not be read.
    SetSysctl {
        /// Which sysctl.
        sysctl: Sysctl,
        /// Previous value.
        before: Option<String>,
        /// New value.
        after: String,
    },
    /// Add a route.
    AddRoute {
        /// The route.
        route: Route,
    },
    /// Delete a route.
    DeleteRoute {
        /// The route.
        route: Route,
    },
    /// Replace a route with another of the same key (table, dst, metric, tos).
    ReplaceRoute {
        /// Previous route.
        before: Route,
        /// New route.
        after: Route,
    },
    /// Add a policy rule.
    AddRule {
        /// The rule.
        rule: Rule,
    },
    /// Delete a policy rule.
    DeleteRule {
        /// The rule.
        rule: Rule,
    },
    /// Delete neighbour entries on one interface.
    FlushNeighbors {
        /// Interface name.
        ifname: String,
        /// The entries that will be removed (restored as STALE on rollback).
        entries: Vec<Neighbor>,
    },
    /// Register a routing table name (`rt_tables.d/roce-net.conf`).
    RegisterTableName {
        /// Table id.
        id: u32,
        /// Name.
        name: String,
        /// The name previously registered for this id, if any.
        before: Option<String>,
    },
}
