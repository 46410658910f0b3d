//! The lookup in one routing table, or in the merged local/main trie while a
//! namespace has no custom rules (`fib_table_lookup` in `net/ipv4/fib_trie.c`,
//! `fib_lookup` without rules in `include/net/ip_fib.h`).

use super::{FibError, Flow};
use crate::model::{
    Family, HostState, Route, RouteType, Scope, RT_TABLE_DEFAULT, RT_TABLE_LOCAL, RT_TABLE_MAIN,
};
use std::net::IpAddr;

/// Outcome of a lookup in one table.
pub(super) enum TableResult<'a> {
    /// A usable route.
    Hit {
        route: &'a Route,
        prefix_len: u8,
        dev: Option<String>,
        gateway: Option<IpAddr>,
    },
    /// No route (or `throw`): continue with the next rule.
    Again,
    /// A rejecting route type.
    Reject(FibError),
}

fn dev_alive(state: &HostState, dev: Option<&str>) -> bool {
    match dev {
        // Unknown devices (hand-built snapshots) count as alive.
        Some(d) => state.interface(d).map(|i| i.admin_up).unwrap_or(true),
        None => true,
    }
}

fn default_metric(family: Family) -> u32 {
    match family {
        Family::Inet => 0,
        Family::Inet6 => 1024,
    }
}

pub(super) fn table_lookup<'a>(state: &'a HostState, table: u32, flow: &Flow) -> TableResult<'a> {
    tables_lookup(state, &[table], flow)
}

/// Longest-prefix match over one table or, for the merged local/main trie, two.
fn tables_lookup<'a>(state: &'a HostState, tables: &[u32], flow: &Flow) -> TableResult<'a> {
    let family = Family::of(&flow.dst);
    let mut cands: Vec<(usize, &'a Route)> = state
        .routes
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.family == family && tables.contains(&r.table) && r.dst.contains(&flow.dst)
        })
        .collect();
    // Longest prefix first; within a prefix the higher table id first (the merged
    // trie's alias order), TOS-specific first, then lowest metric, then snapshot
    // order (the kernel's alias list order).
    cands.sort_by(|(ia, a), (ib, b)| {
        b.dst
            .prefix_len()
            .cmp(&a.dst.prefix_len())
            .then(b.table.cmp(&a.table))
            .then(b.tos.cmp(&a.tos))
            .then(
                a.metric
                    .unwrap_or(default_metric(family))
                    .cmp(&b.metric.unwrap_or(default_metric(family))),
            )
            .then(ia.cmp(ib))
    });
    for (_, r) in cands {
        if r.tos != 0 && r.tos != flow.tos {
            continue;
        }
        match r.kind {
            RouteType::Blackhole => return TableResult::Reject(FibError::Blackhole),
            RouteType::Unreachable => return TableResult::Reject(FibError::Unreachable),
            RouteType::Prohibit => return TableResult::Reject(FibError::Prohibit),
            RouteType::Throw => return TableResult::Again,
            RouteType::Nat | RouteType::Other => continue,
            _ => {}
        }
        let hops: Vec<(Option<String>, Option<IpAddr>)> = if r.multipath.is_empty() {
            vec![(r.dev.clone(), r.gateway)]
        } else {
            r.multipath
                .iter()
                .map(|h| (h.dev.clone(), h.gateway))
                .collect()
        };
        for (dev, gw) in hops {
            // A device going down kills the next hops over it, except those of
            // host-scope routes (the `local` routes of its addresses, whose next hop
            // has scope `nowhere`): the kernel keeps them, so a down device's
            // addresses stay local (`fib_sync_down_dev`).
            if r.scope != Scope::Host && !dev_alive(state, dev.as_deref()) {
                continue;
            }
            if let Some(o) = &flow.oif {
                if dev.as_deref() != Some(o.as_str()) {
                    continue;
                }
            }
            return TableResult::Hit {
                route: r,
                prefix_len: r.dst.prefix_len(),
                dev,
                gateway: gw,
            };
        }
    }
    TableResult::Again
}

/// A route found by a lookup, with the table and rule that found it.
pub(super) struct FibHit<'a> {
    pub(super) route: &'a Route,
    pub(super) table: u32,
    pub(super) rule_priority: Option<u32>,
    pub(super) dev: Option<String>,
    pub(super) gateway: Option<IpAddr>,
}

/// The kernel's `fib_lookup` without custom rules: the merged local/main trie, then,
/// only when that found nothing (or hit a `throw` route), the default table. A
/// `blackhole`/`unreachable`/`prohibit` route in local/main is final, as on current
/// kernels (verified on 6.18: `if (err != -EAGAIN) goto out`); older kernels let
/// the default table's answer replace such an error.
pub(super) fn merged_lookup<'a>(state: &'a HostState, flow: &Flow) -> Result<FibHit<'a>, FibError> {
    let hit = |r: TableResult<'a>, table: u32| match r {
        TableResult::Hit {
            route,
            dev,
            gateway,
            ..
        } => Ok(FibHit {
            route,
            table,
            rule_priority: None,
            dev,
            gateway,
        }),
        TableResult::Again => Err(FibError::NoRoute),
        TableResult::Reject(e) => Err(e),
    };
    match tables_lookup(state, &[RT_TABLE_LOCAL, RT_TABLE_MAIN], flow) {
        TableResult::Again => hit(
            table_lookup(state, RT_TABLE_DEFAULT, flow),
            RT_TABLE_DEFAULT,
        ),
        first => hit(first, RT_TABLE_MAIN),
    }
}
