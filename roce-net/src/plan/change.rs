use crate::model::{Family, Neighbor, Route, Rule, Sysctl, SysctlValue};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One typed change to a host, with what it replaces, so it can be shown as a
/// diff, applied, and inverted for rollback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    /// Re-add neighbour entries (the inverse of [`Change::FlushNeighbors`]; entries
    /// come back as STALE, so the kernel re-confirms them before trusting them).
    RestoreNeighbors {
        /// Interface name.
        ifname: String,
        /// The entries to re-add.
        entries: Vec<Neighbor>,
    },
    /// Remove a routing table name registration (the inverse of registering a name
    /// that had none before).
    UnregisterTableName {
        /// Table id.
        id: u32,
        /// The name to remove.
        name: String,
    },
}

impl Change {
    /// The change that undoes this one, for rollback. `None` when it cannot be
    /// undone: a sysctl whose previous value could not be read.
    pub fn inverse(&self) -> Option<Change> {
        Some(match self {
            Change::SetSysctl {
                sysctl,
                before,
                after,
            } => Change::SetSysctl {
                sysctl: sysctl.clone(),
                before: Some(after.clone()),
                after: before.clone()?,
            },
            Change::AddRoute { route } => Change::DeleteRoute {
                route: route.clone(),
            },
            Change::DeleteRoute { route } => Change::AddRoute {
                route: route.clone(),
            },
            Change::ReplaceRoute { before, after } => Change::ReplaceRoute {
                before: after.clone(),
                after: before.clone(),
            },
            Change::AddRule { rule } => Change::DeleteRule { rule: rule.clone() },
            Change::DeleteRule { rule } => Change::AddRule { rule: rule.clone() },
            Change::FlushNeighbors { ifname, entries } => Change::RestoreNeighbors {
                ifname: ifname.clone(),
                entries: entries.clone(),
            },
            Change::RestoreNeighbors { ifname, entries } => Change::FlushNeighbors {
                ifname: ifname.clone(),
                entries: entries.clone(),
            },
            Change::RegisterTableName { id, name, before } => match before {
                None => Change::UnregisterTableName {
                    id: *id,
                    name: name.clone(),
                },
                Some(old) => Change::RegisterTableName {
                    id: *id,
                    name: old.clone(),
                    before: Some(name.clone()),
                },
            },
            Change::UnregisterTableName { id, name } => Change::RegisterTableName {
                id: *id,
                name: name.clone(),
                before: None,
            },
        })
    }

    /// True when the change adds, deletes or replaces an IPv6 route or rule
    /// (apply's verify then reads the IPv6 ones again; roce-net changes no
    /// other IPv6 object: neighbour flushes are not verified, sysctls are
    /// re-read by name, table names have no family).
    pub(crate) fn changes_ipv6_object(&self) -> bool {
        match self {
            Change::AddRoute { route } | Change::DeleteRoute { route } => {
                route.family == Family::Inet6
            }
            Change::ReplaceRoute { before, after } => {
                before.family == Family::Inet6 || after.family == Family::Inet6
            }
            Change::AddRule { rule } | Change::DeleteRule { rule } => rule.family == Family::Inet6,
            Change::SetSysctl { .. }
            | Change::FlushNeighbors { .. }
            | Change::RestoreNeighbors { .. }
            | Change::RegisterTableName { .. }
            | Change::UnregisterTableName { .. } => false,
        }
    }

    /// One line saying what the change does, e.g.
    /// `add route 198.18.0.0/24 dev r1 src 198.18.0.11 table 1001 proto 201`.
    pub fn describe(&self) -> String {
        match self {
            Change::SetSysctl {
                sysctl,
                before,
                after,
            } => format!(
                "set sysctl {sysctl} from {} to {}",
                SysctlValue(before.as_deref()),
                SysctlValue(Some(after))
            ),
            Change::AddRoute { route } => format!("add route {}", route),
            Change::DeleteRoute { route } => format!("delete route {}", route),
            Change::ReplaceRoute { before, after } => {
                format!("replace route {} with {}", before, after)
            }
            Change::AddRule { rule } => format!("add rule {}", rule),
            Change::DeleteRule { rule } => format!("delete rule {}", rule),
            Change::FlushNeighbors { ifname, entries } => format!(
                "flush {} neighbour entr{} on {ifname}: {}",
                entries.len(),
                if entries.len() == 1 { "y" } else { "ies" },
                neigh_list(entries)
            ),
            Change::RestoreNeighbors { ifname, entries } => format!(
                "restore {} neighbour entr{} on {ifname} as STALE: {}",
                entries.len(),
                if entries.len() == 1 { "y" } else { "ies" },
                neigh_list(entries)
            ),
            Change::RegisterTableName { id, name, before } => match before {
                None => format!("register table name {name} for table {id}"),
                Some(old) => format!("rename table {id} from {old} to {name}"),
            },
            Change::UnregisterTableName { id, name } => {
                format!("unregister table name {name} of table {id}")
            }
        }
    }

    /// [`Change::describe`] with each route's and rule's table shown by the
    /// name `names` has for it, as the plan's diff shows them (`lookup
    /// roce_r1(1002)`); tables without a name stay numbers.
    pub fn describe_named(&self, names: &BTreeMap<u32, String>) -> String {
        match self {
            Change::AddRoute { route } => format!("add route {}", route.with_table_names(names)),
            Change::DeleteRoute { route } => {
                format!("delete route {}", route.with_table_names(names))
            }
            Change::ReplaceRoute { before, after } => format!(
                "replace route {} with {}",
                before.with_table_names(names),
                after.with_table_names(names)
            ),
            Change::AddRule { rule } => format!("add rule {}", rule.with_table_names(names)),
            Change::DeleteRule { rule } => format!("delete rule {}", rule.with_table_names(names)),
            other => other.describe(),
        }
    }

    /// The change as diff lines (`+` add, `-` delete, `~` change), tables shown
    /// with the given names.
    pub(crate) fn diff_lines(&self, names: &BTreeMap<u32, String>) -> Vec<String> {
        match self {
            Change::SetSysctl {
                sysctl,
                before,
                after,
            } => vec![format!(
                "~ sysctl {sysctl} {} -> {}",
                SysctlValue(before.as_deref()),
                SysctlValue(Some(after))
            )],
            Change::AddRoute { route } => {
                vec![format!("+ route {}", route.with_table_names(names))]
            }
            Change::DeleteRoute { route } => {
                vec![format!("- route {}", route.with_table_names(names))]
            }
            Change::ReplaceRoute { before, after } => vec![format!(
                "~ route {} -> {}",
                before.with_table_names(names),
                after.with_table_names(names)
            )],
            Change::AddRule { rule } => vec![format!("+ rule {}", rule.with_table_names(names))],
            Change::DeleteRule { rule } => vec![format!("- rule {}", rule.with_table_names(names))],
            Change::FlushNeighbors { entries, .. } => {
                entries.iter().map(|n| format!("- neigh {}", n)).collect()
            }
            Change::RestoreNeighbors { entries, .. } => {
                entries.iter().map(|n| format!("+ neigh {}", n)).collect()
            }
            Change::RegisterTableName { id, name, before } => match before {
                None => vec![format!("+ table-name {id} {name}")],
                Some(old) => vec![format!("~ table-name {id} {old} -> {name}")],
            },
            Change::UnregisterTableName { id, name } => {
                vec![format!("- table-name {id} {name}")]
            }
        }
    }
}

fn neigh_list(entries: &[Neighbor]) -> String {
    entries
        .iter()
        .map(|n| match &n.mac {
            Some(m) => format!("{} ({m})", n.ip),
            None => n.ip.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
