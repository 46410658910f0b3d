//! The pure planner: `(HostState, Policy) -> Plan`.
//!
//! [`plan`] validates the policy against the snapshot, computes the
//! [`DesiredState`], and diffs it against the snapshot into ordered, typed
//! [`Change`]s. It never touches a host, so a snapshot from one machine can be
//! planned on another and the planner is tested with golden files.
//!
//! Order of changes (each step only depends on earlier ones):
//! 1. table names are registered;
//! 2. sysctls (ARP, `rp_filter`, tuning);
//! 3. routes are added or replaced (subnet route first, so gateways resolve);
//! 4. source rules are added (their tables are already populated);
//! 5. stale rules roce-net owns are deleted, then stale owned routes (gateway
//!    routes before direct ones);
//! 6. neighbour entries are flushed, last, once ARP and routing are right.
//!
//! Ownership: a route or rule is roce-net's when its protocol number equals the
//! policy's `protocol`. Objects with any other protocol are never changed; if one
//! sits where the policy wants to put something, validation refuses the policy.

mod change;
mod fingerprint;
mod neigh;
mod planner;

pub use change::Change;
pub use fingerprint::fingerprint;
pub use neigh::{polluted_neighbors, PollutedNeighbor, PollutionReason};
pub(crate) use planner::plan_past_obstacles;
pub(crate) use planner::plan_with;
pub(crate) use planner::shared_sysctls;
pub use planner::{desired_state, plan};

use crate::model::{Route, Rule, Sysctl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What roce-net wants for one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NicDesired {
    /// Interface name.
    pub ifname: String,
    /// The NIC's managed addresses with their prefix lengths (`198.18.0.11/24`,
    /// `fd00:198:18::11/64`), one per managed family, IPv4 first: each the source
    /// of its family's rule into the NIC's table.
    #[schemars(with = "Vec<String>")]
    pub addresses: Vec<ipnet::IpNet>,
    /// The NIC's routing table id (the same for both families).
    pub table: u32,
    /// The table's name.
    pub table_name: String,
    /// The `from <address> lookup <table>` rules' priority (the same for both
    /// families: the kernel keeps IPv4 and IPv6 rules apart).
    pub rule_priority: u32,
}

impl NicDesired {
    /// Whether `ip` is one of its managed addresses.
    pub fn has_address(&self, ip: IpAddr) -> bool {
        self.addresses.iter().any(|a| a.addr() == ip)
    }
}

/// The full desired state a policy produces on a host; the plan is its diff
/// against the current state, and persistence renders it whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    /// The policy the plan was made from; apply re-plans with it to verify.
    /// (Plain data in the JSON Schema: a policy is validated by
    /// [`Policy::from_value`](crate::Policy::from_value).)
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub policy: crate::policy::Policy,
}

impl Plan {
    /// True when the host already complies.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// A readable diff, one line per object: `+` added, `-` deleted, `~` changed
    /// (`before -> after`), in `ip` vocabulary. Empty for an empty plan.
    ///
    /// ```text
    /// ~ sysctl net.ipv4.conf.all.arp_ignore 0 -> 1
    /// + route 198.18.0.0/24 dev r1 src 198.18.0.11 table roce_r1(1001) proto 201
    /// + rule from 198.18.0.11 lookup roce_r1(1001) pref 1001 proto 201
    /// - neigh 198.18.0.100 dev r2 lladdr 02:00:00:00:01:02 STALE
    /// ```
    pub fn render_diff(&self) -> String {
        let names = &self.desired.table_names;
        let mut out = String::new();
        for c in &self.changes {
            for line in c.diff_lines(names) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }

    /// The plan as pretty JSON (the stable, documented plan format).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Read a plan written by [`Plan::to_json`].
    pub fn from_json(text: &str) -> crate::Result<Plan> {
        serde_json::from_str(text).map_err(|e| {
            crate::Error::new(
                crate::ErrorKind::Parse,
                format!("plan is not a valid roce-net plan: {e}"),
            )
        })
    }

    /// Read a plan file (`roce-net plan -o FILE`): a regular file of at most
    /// [`InputKind::Plan`](crate::InputKind::Plan)'s limit, then [`Plan::from_json`].
    pub fn load(path: &std::path::Path) -> crate::Result<Plan> {
        let text = crate::input::read_input_text(path, crate::input::InputKind::Plan)?;
        Plan::from_json(&text).map_err(|e| e.context(format!("in plan {}", path.display())))
    }

    /// The tables whose existing name the plan keeps instead of the policy's
    /// (`(table, kept name, policy's name)`): the host-wide names file already
    /// names that table for something that is not this namespace's NIC (another
    /// namespace numbers its tables from the same base). Names are display
    /// only; routing uses the numbers.
    pub fn kept_table_names(&self) -> Vec<(u32, &str, &str)> {
        self.desired
            .nics
            .iter()
            .filter_map(|n| {
                let have = self.desired.table_names.get(&n.table)?;
                (*have != n.table_name).then_some((n.table, have.as_str(), n.table_name.as_str()))
            })
            .collect()
    }

    /// What the user should know about this plan besides its changes, one line
    /// each (empty when nothing): the `rp_filter` changes no doctor finding
    /// asked for ([`Plan::rp_filter_by_policy`]), the table names it keeps
    /// ([`Plan::kept_table_names`]) and how to get names of its own.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let by_policy = self.rp_filter_by_policy();
        if let Some((_, after)) = by_policy.first() {
            let targets: Vec<&str> = by_policy.iter().map(|(t, _)| t.as_str()).collect();
            out.push(format!(
                "rp_filter becomes {after} on {} because the policy says so (`rp_filter`, \
                 `loose` by default), not for a finding: the doctor reports strict \
                 rp_filter (1) only, and none of these was strict; `rp_filter: keep` in the \
                 policy leaves it as it is",
                targets.join(", ")
            ));
        }
        out.extend(self.table_name_notes());
        out
    }

    /// The `rp_filter` sysctls the plan changes that were not strict (1)
    /// before, with the value they get: what the policy sets, not what a
    /// finding (`rp-filter-strict`) asked for. As (target, value).
    pub fn rp_filter_by_policy(&self) -> Vec<(String, String)> {
        self.changes
            .iter()
            .filter_map(|c| match c {
                Change::SetSysctl {
                    sysctl:
                        Sysctl::Conf {
                            target,
                            key: crate::model::ConfKey::RpFilter,
                        },
                    before,
                    after,
                } if before.as_deref().map(str::trim) != Some("1") => {
                    Some((target.dir_name().to_string(), after.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn table_name_notes(&self) -> Vec<String> {
        let kept = self.kept_table_names();
        if kept.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<String> = kept
            .iter()
            .map(|(id, have, want)| {
                format!(
                    "table {id} keeps the name {have} from the host-wide table names file \
                     (not {want}: that name is not this namespace's to change)"
                )
            })
            .collect();
        out.push(
            "table names are shared by every namespace of the host and are display only \
             (routing uses the numbers); for names of its own, give each namespace a distinct \
             routing.table_base (or routing.tables)"
                .into(),
        );
        out
    }

    /// One line per change ([`Change::describe`]).
    pub fn describe(&self) -> Vec<String> {
        self.changes.iter().map(Change::describe).collect()
    }
}
