//! Checking a saved plan (`apply --plan FILE`, or a plan shown at a prompt)
//! against the host as it is under the lock.
//!
//! The plan is re-made from its own policy on the current host. That is both
//! checks in one:
//!
//! - **only what the planner itself could make**: a change the fresh plan does not
//!   hold is refused. When it could never be roce-net's (a route or rule without
//!   the policy's protocol, a sysctl or table name the policy does not manage, a
//!   neighbour flush off the managed NICs, a kind of change the planner never
//!   makes) the whole plan is refused as invalid input, naming the change: a
//!   hand-edited plan never touches a foreign object.
//! - **drift in what the plan touches and reads**: the fresh plan depends on
//!   exactly the inputs of the planner's decisions (the managed NICs and their
//!   addresses, the tables, rules and priorities it uses, the sysctls it sets,
//!   the table names). If those changed, the plans differ and the apply is refused
//!   as drift; a change anywhere else (a route in an unrelated table, a counter)
//!   does not matter.
//!
//! Neighbour entries come and go by themselves, so a saved flush is applied for
//! the entries the fresh plan would still flush and not for others.

use crate::error::{Error, ErrorKind, Result};
use crate::model::{HostState, Neighbor};
use crate::plan::{self, Change, Plan};
use std::collections::BTreeSet;

/// Why `c` could never be a change of `fresh`'s planner, if so.
fn foreign(c: &Change, fresh: &Plan) -> Option<String> {
    let p = fresh.policy.protocol;
    let not_ours = |what: String, proto: u8| {
        (proto != p).then(|| {
            format!("{what} is not roce-net's: its protocol is {proto}, the policy's is {p}")
        })
    };
    let d = &fresh.desired;
    match c {
        Change::AddRoute { route } | Change::DeleteRoute { route } => {
            not_ours(format!("route {route}"), route.protocol)
        }
        Change::ReplaceRoute { before, after } => {
            not_ours(format!("route {before}"), before.protocol)
                .or_else(|| not_ours(format!("route {after}"), after.protocol))
        }
        Change::AddRule { rule } | Change::DeleteRule { rule } => {
            not_ours(format!("rule {rule}"), rule.protocol)
        }
        Change::SetSysctl { sysctl, after, .. } => {
            match d.sysctls.iter().find(|(s, _)| s == sysctl) {
                None => Some(format!(
                    "sysctl {sysctl} is not one this policy manages here"
                )),
                Some((_, want)) if want.split_whitespace().ne(after.split_whitespace()) => Some(
                    format!("it sets sysctl {sysctl} to {after:?}; the policy says {want:?}"),
                ),
                Some(_) => None,
            }
        }
        Change::RegisterTableName { id, name, .. } => match d.table_names.get(id) {
            None => Some(format!("table {id} is not one this policy names here")),
            Some(want) if want != name => Some(format!(
                "it names table {id} {name:?}; the policy says {want:?}"
            )),
            Some(_) => None,
        },
        Change::FlushNeighbors { ifname, .. } => (!d.nics.iter().any(|n| n.ifname == *ifname))
            .then(|| format!("{ifname} is not a NIC this policy manages here")),
        // Only the name of a table of this namespace the policy no longer
        // uses, from roce-net's own names file: exactly what the planner makes.
        Change::UnregisterTableName { id, .. } => (!fresh.changes.contains(c))
            .then(|| format!("table {id}'s name is not one roce-net's planner removes here")),
        Change::RestoreNeighbors { .. } => {
            Some("the planner never makes this kind of change (only rollback does)".into())
        }
    }
}

fn neigh_key(n: &Neighbor) -> (String, std::net::IpAddr, Option<String>) {
    (
        n.ifname.clone(),
        n.ip,
        n.mac.as_ref().map(|m| m.to_string()),
    )
}

/// How many changes a drift error names of each list before it counts the rest.
const LIST_MAX: usize = 5;

/// The plan to apply for `saved` on the host `current`, or why not: empty when
/// the host already matches it.
pub(crate) fn check_saved(saved: &Plan, current: &HostState) -> Result<Plan> {
    // First the host and namespace the plan names: a plan made elsewhere is
    // refused as that, not as a change "something else" made (its changes are
    // another host's, so they would all look foreign or drifted).
    if saved.hostname != current.hostname || saved.netns != current.netns {
        let place = |host: &str, ns: &Option<String>| match ns {
            Some(n) => format!("{host}/{n}"),
            None => format!("{host} (its own namespace)"),
        };
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "this plan was made for {}; this is {}: nothing was applied. Make a plan here \
                 (`roce-net plan -o FILE`), review it, and apply that",
                place(&saved.hostname, &saved.netns),
                place(&current.hostname, &current.netns)
            ),
        ));
    }
    saved
        .policy
        .check()
        .map_err(|e| e.context("the plan's policy is invalid; nothing was applied"))?;
    let fresh = plan::plan(current, &saved.policy).map_err(|e| {
        Error::new(
            ErrorKind::Drift,
            "the host changed so that the plan's own policy no longer applies; nothing was \
             applied. Make a new plan with `roce-net plan` and review it",
        )
        .with_source(e)
    })?;
    // Computed only when needed: hashing a whole snapshot costs as much as
    // planning a small host.
    let mut host_changed = None;
    for (i, c) in saved.changes.iter().enumerate() {
        if let Some(why) = foreign(c, &fresh) {
            // The plan's own desired state holds this change (its NIC, sysctl
            // or table), and the host is not the one the plan was made from: a
            // NIC deleted, renamed, stripped of its address or enslaved since
            // `plan -o` is drift, not an edited plan. Refused all the same.
            let consistent = foreign(c, saved).is_none();
            if consistent
                && *host_changed
                    .get_or_insert_with(|| plan::fingerprint(current) != saved.base_fingerprint)
            {
                return Err(Error::new(
                    ErrorKind::Drift,
                    format!(
                        "the host changed since the plan was made: change {} of {} ({}) no \
                         longer fits it ({why}; a NIC the plan manages may have been deleted, \
                         renamed, lost its address or joined a bridge); nothing was applied. \
                         Make a new plan with `roce-net plan` and review it",
                        i + 1,
                        saved.changes.len(),
                        c.describe()
                    ),
                ));
            }
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "change {} of {} ({}) is not one roce-net's planner makes for this plan's \
                     policy on this host: {why}. The plan was edited or made by something else; \
                     nothing was applied",
                    i + 1,
                    saved.changes.len(),
                    c.describe()
                ),
            ));
        }
    }
    let lasting = |p: &Plan| -> Vec<Change> {
        p.changes
            .iter()
            .filter(|c| !matches!(c, Change::FlushNeighbors { .. }))
            .cloned()
            .collect()
    };
    let (was, now) = (lasting(saved), lasting(&fresh));
    // Nothing left to do: the host already holds what the plan's policy wants
    // (the plan was applied, or the same changes were made otherwise). That is
    // the plan in effect, not drift: an empty plan, and `apply` says so.
    if was != now && !now.is_empty() {
        let stale: Vec<String> = was
            .iter()
            .filter(|c| !now.contains(c))
            .map(Change::describe)
            .collect();
        let needed: Vec<String> = now
            .iter()
            .filter(|c| !was.contains(c))
            .map(Change::describe)
            .collect();
        let mut what = Vec::new();
        if !stale.is_empty() {
            what.push(format!(
                "no longer right: {}",
                crate::input::cut_list(&stale, LIST_MAX)
            ));
        }
        if !needed.is_empty() {
            what.push(format!(
                "now needed instead: {}",
                crate::input::cut_list(&needed, LIST_MAX)
            ));
        }
        if what.is_empty() {
            what.push("the same changes in another order".into());
        }
        return Err(Error::new(
            ErrorKind::Drift,
            format!(
                "the host changed in what the plan touches since it was made ({}); nothing was \
                 applied. Make a new plan with `roce-net plan` and review it",
                what.join("; ")
            ),
        ));
    }
    // Flushes: the saved plan's entries that are still polluted now.
    let still: BTreeSet<_> = fresh
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::FlushNeighbors { entries, .. } => Some(entries.iter().map(neigh_key)),
            _ => None,
        })
        .flatten()
        .collect();
    let mut changes = now;
    for c in &saved.changes {
        if let Change::FlushNeighbors { ifname, entries } = c {
            let keep: Vec<Neighbor> = entries
                .iter()
                .filter(|n| still.contains(&neigh_key(n)))
                .cloned()
                .collect();
            if !keep.is_empty() {
                changes.push(Change::FlushNeighbors {
                    ifname: ifname.clone(),
                    entries: keep,
                });
            }
        }
    }
    Ok(Plan { changes, ..fresh })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{protocol, Route};
    use crate::policy::Policy;
    use std::path::Path;

    fn fixture() -> (HostState, Policy) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plan/fresh");
        let host = HostState::load(&dir.join("current.json")).unwrap();
        let policy = Policy::load(&dir.join("policy.yaml")).unwrap();
        (host, policy)
    }

    fn main_kernel_route(h: &HostState) -> Route {
        h.routes
            .iter()
            .find(|r| r.table == 254 && r.protocol == protocol::KERNEL)
            .unwrap()
            .clone()
    }

    #[test]
    fn an_untouched_plan_is_applied_as_made() {
        let (host, policy) = fixture();
        let p = plan::plan(&host, &policy).unwrap();
        assert!(!p.is_empty());
        assert_eq!(check_saved(&p, &host).unwrap().changes, p.changes);
    }

    /// A plan made in another namespace (or on another host) is refused as
    /// that, naming both places, before its changes are compared.
    #[test]
    fn a_plan_made_for_another_namespace_is_refused_as_that() {
        let (mut host, policy) = fixture();
        host.netns = Some("a".into());
        let p = plan::plan(&host, &policy).unwrap();
        let h = host.hostname.clone();
        for (hostname, netns, here) in [
            (h.clone(), Some("b".to_string()), format!("{h}/b")),
            (h.clone(), None, format!("{h} (its own namespace)")),
            (
                "other".to_string(),
                Some("a".to_string()),
                "other/a".to_string(),
            ),
        ] {
            let mut there = host.clone();
            there.hostname = hostname;
            there.netns = netns;
            let e = check_saved(&p, &there).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            let m = e.to_string();
            assert!(
                m.contains(&format!("this plan was made for {h}/a; this is {here}")),
                "{m}"
            );
            assert!(m.contains("`roce-net plan -o FILE`"), "{m}");
            assert!(!m.contains("edited or made by something else"), "{m}");
        }
        assert_eq!(check_saved(&p, &host).unwrap().changes, p.changes);
    }

    #[test]
    fn a_hand_edited_plan_touching_a_foreign_object_is_refused() {
        let (host, policy) = fixture();
        let good = plan::plan(&host, &policy).unwrap();
        let victim = main_kernel_route(&host);
        let mut edits: Vec<(Change, &str)> = vec![
            (
                Change::DeleteRoute {
                    route: victim.clone(),
                },
                "protocol is 2",
            ),
            (
                Change::SetSysctl {
                    sysctl: crate::model::Sysctl::Conf {
                        target: crate::model::ConfTarget::Interface("eth0".into()),
                        key: crate::model::ConfKey::ArpIgnore,
                    },
                    before: Some("0".into()),
                    after: "8".into(),
                },
                "not one this policy manages",
            ),
            (
                Change::UnregisterTableName {
                    id: 254,
                    name: "main".into(),
                },
                "not one roce-net's planner removes here",
            ),
        ];
        // The same route with roce-net's protocol is owned, but not in the plan:
        // the plan is refused as not matching the host (drift), not applied.
        let mut owned = victim.clone();
        owned.protocol = policy.protocol;
        for (c, why) in edits.drain(..) {
            let mut p = good.clone();
            p.changes.insert(1, c);
            let e = check_saved(&p, &host).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(why), "{why}: {e}");
            assert!(e.to_string().contains("nothing was applied"), "{e}");
        }
        let mut p = good.clone();
        p.changes.push(Change::DeleteRoute { route: owned });
        assert_eq!(check_saved(&p, &host).unwrap_err().kind(), ErrorKind::Drift);
        // A policy that would claim the kernel's own routes is refused too.
        let mut p = good.clone();
        p.policy.protocol = protocol::KERNEL;
        p.changes.push(Change::DeleteRoute { route: victim });
        let e = check_saved(&p, &host).unwrap_err();
        assert!(e.to_string().contains("policy is invalid"), "{e}");
    }

    /// A drifted plan's lists are cut with a count. (A plan already in effect
    /// is applied as an empty plan: `tests/it/cli.rs`
    /// `plan_then_apply_the_saved_plan_then_persist_dry_run`, on a lab host.)
    #[test]
    fn long_drift_lists_are_cut_with_a_count() {
        let items: Vec<String> = (0..40).map(|i| format!("change {i}")).collect();
        let cut = crate::input::cut_list(&items, LIST_MAX);
        assert!(cut.starts_with("change 0; change 1;"), "{cut}");
        assert!(cut.ends_with("change 4; and 35 more"), "{cut}");
        assert_eq!(
            crate::input::cut_list(&items[..2], LIST_MAX),
            "change 0; change 1"
        );
    }

    #[test]
    fn drift_counts_only_in_what_the_plan_touches_and_reads() {
        let (host, policy) = fixture();
        let p = plan::plan(&host, &policy).unwrap();
        // Churn in a table the policy does not use: not drift.
        let mut churned = host.clone();
        for i in 0..50u8 {
            let mut r = main_kernel_route(&host);
            r.table = 5000;
            r.protocol = protocol::STATIC;
            r.dst = format!("198.19.{i}.0/24").parse().unwrap();
            churned.routes.push(r);
        }
        assert_ne!(plan::fingerprint(&churned), p.base_fingerprint);
        assert_eq!(check_saved(&p, &churned).unwrap().changes, p.changes);
        // A sysctl the plan sets changed behind its back: drift, named.
        let mut moved = host.clone();
        let arp = crate::model::Sysctl::Conf {
            target: crate::model::ConfTarget::All,
            key: crate::model::ConfKey::ArpIgnore,
        };
        moved.sysctls.all.arp_ignore = Some(2);
        let e = check_saved(&p, &moved).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Drift, "{e}");
        assert!(e.to_string().contains(&arp.to_string()), "{e}");
        assert!(e.to_string().contains("roce-net plan"), "{e}");
    }
}
